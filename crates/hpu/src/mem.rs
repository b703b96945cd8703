//! Guest memory: shared backing blocks and per-HPU address spaces.
//!
//! A [`MemBlock`] is a zeroed, 8-byte aligned allocation that several HPUs
//! share: an L1 scratchpad, the L2 packet buffer, handler memory. An
//! [`AddressSpace`] is what one HPU may touch right now: a small fixed table
//! of [`Window`]s, each mapping a guest address range onto part of a block
//! with permissions and a latency class. The engine rewrites the table for
//! every task — that is how PsPIN's per-task PMP protection (seed 001
//! §3.2.2) is modelled — and it costs no allocation.
//!
//! Guest loads and stores go through raw pointers, so guest memory belongs
//! to one host thread: blocks and address spaces are neither `Send` nor
//! `Sync`, and the HPUs sharing a block run interleaved on that thread (the
//! engine's event loop), where a guest-level race is the guest's business
//! and no Rust data race. AMOs are therefore plain read-modify-writes
//! (host atomics only on request, `AddressSpace::set_atomic_amos`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::timing::{MemClass, TimingModel, MEM_CLASSES};

/// Access permissions of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perm(pub u8);

impl Perm {
    pub const R: Perm = Perm(1);
    pub const W: Perm = Perm(2);
    pub const X: Perm = Perm(4);
    pub const RW: Perm = Perm(3);
    pub const RX: Perm = Perm(5);
    pub const RWX: Perm = Perm(7);

    pub fn has(self, p: Perm) -> bool {
        self.0 & p.0 == p.0
    }
}

impl std::ops::BitOr for Perm {
    type Output = Perm;
    fn bitor(self, o: Perm) -> Perm {
        Perm(self.0 | o.0)
    }
}

impl std::fmt::Display for Perm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = |p: Perm, ch| if self.has(p) { ch } else { '-' };
        write!(
            f,
            "{}{}{}",
            c(Perm::R, 'r'),
            c(Perm::W, 'w'),
            c(Perm::X, 'x')
        )
    }
}

/// A block of guest memory, shared by the HPUs of one host thread.
///
/// Neither `Send` nor `Sync` (its raw pointer sees to that): guest loads and
/// stores are plain, so a block reachable from two host threads would make a
/// guest's races data races, undefined behaviour in Rust (issue 24).
/// ```compile_fail
/// fn shareable<T: Sync>() {}
/// shareable::<softspin_hpu::MemBlock>();
/// ```
/// ```compile_fail
/// fn sendable<T: Send>() {}
/// sendable::<std::sync::Arc<softspin_hpu::MemBlock>>();
/// ```
/// ```compile_fail
/// fn sendable<T: Send>() {}
/// sendable::<softspin_hpu::AddressSpace>();
/// ```
pub struct MemBlock {
    ptr: *mut u8,
    len: usize,
    words: usize,
    /// An anonymous mapping of its own (`words * 8` bytes), not a box.
    mapped: bool,
}

/// Blocks from this size on are mapped by `mmap` directly: their pages
/// cost memory only once touched, and unlike the allocator's own large
/// allocations (glibc: at most 65,536 mappings, `M_MMAP_MAX`; beyond,
/// zeroed heap memory that costs as it is handed out) there is no count
/// limit short of the kernel's, which merges adjacent mappings. Thousands
/// of engines in one process (issue 29) hold seven such blocks each.
const MAP_MIN: usize = 64 << 10;

impl MemBlock {
    /// A zeroed block of `len` bytes.
    pub fn new(len: usize) -> Arc<MemBlock> {
        let words = len.div_ceil(8).max(1);
        let (ptr, mapped) = match Self::map(words * 8) {
            Some(p) => (p, true),
            None => {
                let buf: Box<[u64]> = vec![0u64; words].into_boxed_slice();
                (Box::into_raw(buf) as *mut u64 as *mut u8, false)
            }
        };
        // Arc although MemBlock is neither Send nor Sync: only its
        // reference count is wanted (the engine shares blocks among HPU
        // address spaces on one thread); Rc would do the same.
        #[allow(clippy::arc_with_non_send_sync)]
        Arc::new(MemBlock {
            ptr,
            len,
            words,
            mapped,
        })
    }

    /// A zero-filled anonymous mapping of `bytes` (at least `MAP_MIN`), or
    /// `None` (smaller, or the kernel refused: the allocator then).
    fn map(bytes: usize) -> Option<*mut u8> {
        if bytes < MAP_MIN {
            return None;
        }
        // SAFETY: a fresh private anonymous mapping at an address the
        // kernel chooses; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(p as *mut u8)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copy bytes out of the block (host side). Panics on a bad range, which
    /// is a bug in the embedding, not a guest error.
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(
            offset.checked_add(out.len()).is_some_and(|e| e <= self.len),
            "MemBlock::read out of range"
        );
        // SAFETY: range checked above.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) }
    }

    /// Copy bytes into the block (host side).
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(
            offset
                .checked_add(data.len())
                .is_some_and(|e| e <= self.len),
            "MemBlock::write out of range"
        );
        // SAFETY: range checked above.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) }
    }

    /// Let `f` write `len` bytes at `offset` in place (host side: a traffic
    /// source builds a frame straight into its packet-buffer slot, with no
    /// vector in between). Panics on a bad range, as `write` does.
    ///
    /// # Safety
    /// Nothing else may read or write this block while `f` runs (no guest
    /// runs then, and `f` does not reach the block another way): `f` holds
    /// the only reference to those bytes.
    pub unsafe fn write_in_place<R>(
        &self,
        offset: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len),
            "MemBlock::write_in_place out of range"
        );
        // SAFETY: range checked above; exclusive for `f`'s run by the
        // caller's promise.
        f(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) })
    }

    /// Copy `len` bytes at `offset` to `dst` at `dst_offset` (host side; a
    /// DMA between blocks, e.g. L2 to L1, without a buffer in between). The
    /// ranges may overlap when `dst` is this block.
    pub fn copy_to(&self, offset: usize, dst: &MemBlock, dst_offset: usize, len: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len),
            "MemBlock::copy_to source out of range"
        );
        assert!(
            dst_offset.checked_add(len).is_some_and(|e| e <= dst.len),
            "MemBlock::copy_to destination out of range"
        );
        // SAFETY: both ranges checked above; `copy` allows overlap.
        unsafe { std::ptr::copy(self.ptr.add(offset), dst.ptr.add(dst_offset), len) }
    }

    /// Zero a range (host side).
    pub fn fill(&self, offset: usize, len: usize, byte: u8) {
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len),
            "MemBlock::fill out of range"
        );
        // SAFETY: range checked above.
        unsafe { std::ptr::write_bytes(self.ptr.add(offset), byte, len) }
    }

    /// Zero a range (host side) without writing to pages that are already
    /// zero: a new block's pages are mapped lazily by the OS, and reading
    /// them does not map memory, so clearing a fresh block costs none (an
    /// engine per simulated NIC, issue 29).
    pub fn zero(&self, offset: usize, len: usize) {
        const PAGE: usize = 4096;
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len),
            "MemBlock::zero out of range"
        );
        let end = offset + len;
        let mut at = offset;
        while at < end {
            let next = ((at / PAGE + 1) * PAGE).min(end);
            // SAFETY: at..next lies within the range checked above.
            let chunk = unsafe { std::slice::from_raw_parts(self.ptr.add(at), next - at) };
            if chunk.iter().any(|&b| b != 0) {
                // SAFETY: as above.
                unsafe { std::ptr::write_bytes(self.ptr.add(at), 0, next - at) }
            }
            at = next;
        }
    }

    pub fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read(offset, &mut v);
        v
    }
}

impl Drop for MemBlock {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: the mapping `new` made, of this length, unmapped
            // once: no reference into it outlives the block.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.words * 8) };
            return;
        }
        // SAFETY: reconstructs the boxed slice leaked in `new`.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr as *mut u64,
                self.words,
            )));
        }
    }
}

/// One guest-visible mapping.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub base: u32,
    pub size: u32,
    host: *mut u8,
    /// Extra cycles per access (from the timing model's class latency).
    pub latency: u32,
    pub perm: Perm,
    pub class: MemClass,
    /// The guest range kept for this window, `[region.0, region.1)`: the
    /// window itself when mapped, widened by [`AddressSpace::reserve`], and
    /// kept by a remap inside it. No other window may overlap it, so such a
    /// remap needs no overlap check.
    region: (u32, u64),
    /// The host address of `region.0` when the whole kept range lies in
    /// the window's block, else null: [`AddressSpace::move_window`] then
    /// places the window anywhere in it without further checks.
    region_host: *mut u8,
}

impl Window {
    fn new(
        base: u32,
        size: u32,
        host: *mut u8,
        latency: u32,
        perm: Perm,
        class: MemClass,
    ) -> Window {
        Window {
            base,
            size,
            host,
            latency,
            perm,
            class,
            region: (base, base as u64 + size as u64),
            region_host: host,
        }
    }

    fn overlaps(&self, base: u32, size: u32) -> bool {
        (base as u64) < self.region.1 && (self.region.0 as u64) < base as u64 + size as u64
    }
}

const EMPTY: Window = Window {
    base: 0,
    size: 0,
    host: std::ptr::null_mut(),
    latency: 0,
    perm: Perm(0),
    class: MemClass::Ideal,
    region: (0, 0),
    region_host: std::ptr::null_mut(),
};

/// Most windows one address space holds (stack, packet in L1 and L2, handler
/// memory, scratchpads of every cluster, program memory, ...).
pub const MAX_WINDOWS: usize = 32;

/// Why a guest access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No window covers the address (or the access runs past its end).
    Unmapped,
    /// A window covers it but lacks the permission.
    Denied,
}

/// Guest accesses by memory class, and the cycles spent waiting on memory
/// slower than L1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessCounts {
    pub by_class: [u64; MEM_CLASSES],
    pub stall_cycles: u64,
}

/// A copy of one window for the interpreter's fast path, with the access
/// count it has gathered since it was filled. Filled only from a window that
/// grants the access kind it serves, so a hit needs only the range check.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Hot {
    base: u32,
    size: u32,
    /// Aligned 2- and 4-byte accesses that fit: `off.rotate_right(k) < lim`
    /// holds exactly for an offset aligned to `2^k` with `off + 2^k <= size`
    /// (a misaligned offset rotates its low bits to the top, past any
    /// limit). Offsets are aligned like addresses only when `base` is, so a
    /// window at a misaligned base gets limit 0 (misses go the slow way).
    lim2: u32,
    lim4: u32,
    /// `lim4` if the window also grants what an AMO needs (read and
    /// write), else 0: the aligned AMO test on the store way
    /// (`amo_aligned`, and inline in the JIT's code).
    amo4: u32,
    host: *mut u8,
    latency: u32,
    /// Index of the window it copies (meaningless while `size` is 0).
    win: u32,
    hits: u64,
}

const COLD: Hot = Hot {
    base: 0,
    size: 0,
    lim2: 0,
    lim4: 0,
    amo4: 0,
    host: std::ptr::null_mut(),
    latency: 0,
    win: 0,
    hits: 0,
};

impl Hot {
    fn of(w: &Window, win: usize) -> Hot {
        let lim = |k: u32| {
            if w.base.trailing_zeros() >= k {
                w.size >> k
            } else {
                0
            }
        };
        let amo4 = if w.perm.has(Perm::RW) { lim(2) } else { 0 };
        Hot {
            base: w.base,
            size: w.size,
            lim2: lim(1),
            lim4: lim(2),
            amo4,
            host: w.host,
            latency: w.latency,
            win: win as u32,
            hits: 1,
        }
    }
}

/// The fast-path caches: loads and stores go to different regions (a table
/// in program memory, a buffer in L1) often enough that one shared entry
/// thrashes, and loads alternate between two regions (a lookup table and
/// the data it indexes with) often enough to deserve a second way, which
/// holds the window the first one held before its last refill.
const HOT_LOAD: usize = 0;
const HOT_STORE: usize = 1;
const HOT_LOAD_OLD: usize = 2;
/// Stores alternate between regions too (the stack and a global table, in
/// Embench's statemate): a second way, tried out of line, which trades
/// places with the first on a hit so the fast path follows the latest.
const HOT_STORE_OLD: usize = 3;
/// A task's loads go to more regions than two ways hold (SLMP's receive
/// handler: its packet, `task_t`, its slot table, its stack, constants),
/// each miss a search of every window: two more load ways, tried out of
/// line before the search. A hit there moves its window to the first way.
const HOT_LOAD_3: usize = 4;
const HOT_LOAD_4: usize = 5;
const HOTS: usize = 6;
/// Each kind's ways, the most recently filled or promoted first; a refill
/// pushes the last one's window out.
const LOAD_WAYS: [usize; 4] = [HOT_LOAD, HOT_LOAD_OLD, HOT_LOAD_3, HOT_LOAD_4];
const STORE_WAYS: [usize; 2] = [HOT_STORE, HOT_STORE_OLD];

/// Where native code (the JIT) finds the first load and store ways, whose
/// aligned hit test (`hit_aligned`) it inlines; everything else it leaves
/// to [`AddressSpace::load_aligned`], `store_aligned` and `xlate`.
#[cfg(feature = "jit")]
pub(crate) mod hot_layout {
    use super::{AddressSpace, Hot};
    use std::mem::{offset_of, size_of};
    pub const LOAD: usize = offset_of!(AddressSpace, hot) + super::HOT_LOAD * size_of::<Hot>();
    pub const STORE: usize = offset_of!(AddressSpace, hot) + super::HOT_STORE * size_of::<Hot>();
    pub const LOAD_OLD: usize =
        offset_of!(AddressSpace, hot) + super::HOT_LOAD_OLD * size_of::<Hot>();
    pub const BASE: usize = offset_of!(Hot, base);
    pub const SIZE: usize = offset_of!(Hot, size);
    pub const LIM2: usize = offset_of!(Hot, lim2);
    pub const LIM4: usize = offset_of!(Hot, lim4);
    pub const AMO4: usize = offset_of!(Hot, amo4);
    pub const ATOMIC_AMOS: usize = offset_of!(AddressSpace, atomic_amos);
    pub const HOST: usize = offset_of!(Hot, host);
    pub const LATENCY: usize = offset_of!(Hot, latency);
    pub const HITS: usize = offset_of!(Hot, hits);
}

fn is_store_way(k: usize) -> bool {
    STORE_WAYS.contains(&k)
}

/// The memory one HPU sees.
pub struct AddressSpace {
    win: [Window; MAX_WINDOWS],
    owners: [Option<Arc<MemBlock>>; MAX_WINDOWS],
    n: usize,
    hot: [Hot; HOTS],
    latency: [u32; MEM_CLASSES],
    /// Accesses since creation by class and their stall cycles, except
    /// those still counted in a cache entry (see [`AddressSpace::counts`]).
    folded: AccessCounts,
    /// Loads and stores (AMOs: stores) served since creation, except those
    /// still counted in a cache entry (see [`AddressSpace::served`]).
    served: [u64; 2],
    /// AMOs use host atomics (see [`AddressSpace::set_atomic_amos`]).
    atomic_amos: bool,
    /// Bit `i`: window `i` costs extra cycles per access. While none does,
    /// the interpreter runs a loop without the latency add
    /// ([`AddressSpace::zero_latency`]).
    slow: u32,
}

/// Error from [`AddressSpace::map`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("window 0x{base:08x}+0x{size:x} exceeds its backing block ({block} bytes at offset {offset})")]
    OutOfBlock {
        base: u32,
        size: u32,
        offset: usize,
        block: usize,
    },
    #[error("window 0x{base:08x}+0x{size:x} wraps around the 32-bit address space")]
    Wraps { base: u32, size: u32 },
    #[error("window 0x{base:08x}+0x{size:x} overlaps window 0x{other:08x}")]
    Overlap { base: u32, size: u32, other: u32 },
    #[error("more than {MAX_WINDOWS} windows")]
    TooMany,
    #[error("window 0x{base:08x}+0x{size:x} leaves the range 0x{start:08x}..0x{end:09x} kept for it (or that range is not in one block)")]
    OutsideRange {
        base: u32,
        size: u32,
        start: u32,
        end: u64,
    },
}

impl AddressSpace {
    pub fn new(timing: &TimingModel) -> AddressSpace {
        AddressSpace {
            win: [EMPTY; MAX_WINDOWS],
            owners: Default::default(),
            n: 0,
            hot: [COLD; HOTS],
            latency: timing.mem_latency,
            folded: AccessCounts::default(),
            served: [0; 2],
            atomic_amos: false,
            slow: 0,
        }
    }

    /// Whether AMOs use host atomics (default `false`). Blocks never leave
    /// their host thread, so a plain read-modify-write is atomic for every
    /// observer and a locked host instruction (~20 cycles) per AMO is
    /// waste; the atomic path stays for tests that check both give the
    /// same results.
    pub fn set_atomic_amos(&mut self, atomic: bool) {
        self.atomic_amos = atomic;
    }

    /// AMO `op` with operand `src` on the word at guest address `addr`
    /// (the interpreter's and the JIT's one path): alignment, the store
    /// way's AMO fast path or a read-write translation, then the
    /// read-modify-write. The old value and the access latency.
    #[inline(always)]
    pub(crate) fn amo(
        &mut self,
        addr: u32,
        op: crate::isa::Op,
        src: u32,
    ) -> Result<(u32, u32), crate::hpu::FaultKind> {
        use crate::hpu::FaultKind;
        if addr & 3 != 0 {
            return Err(FaultKind::Misaligned);
        }
        let (p, lat) = match self.amo_aligned(addr) {
            Some(r) => r,
            None => self
                .xlate(addr, 4, Perm::RW)
                .map_err(|e| FaultKind::of_access(e, true))?,
        };
        let new = |v| crate::hpu::amo_value(op, v, src);
        let old = if self.atomic_amos {
            // SAFETY: aligned, and translated for 4 bytes in a live block.
            match unsafe { atomic_at(p) }.fetch_update(SEQ, SEQ, |v| Some(new(v))) {
                Ok(v) | Err(v) => v,
            }
        } else {
            let q = p as *mut u32;
            // SAFETY: as above; and no other thread touches the block.
            unsafe {
                let v = q.read();
                q.write(new(v));
                v
            }
        };
        Ok((old, lat))
    }

    /// Access counts since creation: those folded so far plus the caches'
    /// (the fast path only bumps its cache entry's counter).
    pub fn counts(&self) -> AccessCounts {
        let mut c = self.folded;
        for h in self.hot.iter().filter(|h| h.size > 0) {
            c.by_class[self.win[h.win as usize].class as usize] += h.hits;
            c.stall_cycles += h.hits * h.latency as u64;
        }
        c
    }

    /// Count `n` accesses through window `i`.
    fn fold(&mut self, i: usize, n: u64) {
        let w = &self.win[i];
        self.folded.by_class[w.class as usize] += n;
        self.folded.stall_cycles += n * w.latency as u64;
    }

    /// Fold the fast-path counts back into their windows and empty the
    /// caches (before the window table changes).
    fn cool(&mut self) {
        for k in 0..self.hot.len() {
            self.evict(k);
            self.hot[k] = COLD;
        }
    }

    /// Fold cache `k`'s count into the totals and into `served`.
    fn evict(&mut self, k: usize) {
        let h = self.hot[k];
        if h.size > 0 {
            self.fold(h.win as usize, h.hits);
            self.served[is_store_way(k) as usize] += h.hits;
        }
    }

    /// Accesses served since creation through the load path (loads, LR)
    /// and the store path (stores, SC, AMOs), failed ones excluded. Every
    /// access the interpreter makes is counted here exactly once, so the
    /// interpreter derives its load and store totals from these.
    #[inline]
    pub(crate) fn served(&self) -> (u64, u64) {
        let h = |k: usize| {
            if self.hot[k].size > 0 {
                self.hot[k].hits
            } else {
                0
            }
        };
        (
            self.served[0] + LOAD_WAYS.iter().map(|&k| h(k)).sum::<u64>(),
            self.served[1] + STORE_WAYS.iter().map(|&k| h(k)).sum::<u64>(),
        )
    }

    /// Remove every window (keeps the allocation-free table).
    pub fn clear(&mut self) {
        self.cool();
        for o in &mut self.owners[..self.n] {
            *o = None;
        }
        self.n = 0;
        self.win[0] = EMPTY;
        self.slow = 0;
    }

    /// Map `size` bytes of `block` starting at `offset` at guest address `base`.
    pub fn map(
        &mut self,
        base: u32,
        size: u32,
        block: &Arc<MemBlock>,
        offset: usize,
        perm: Perm,
        class: MemClass,
    ) -> Result<(), MapError> {
        if offset
            .checked_add(size as usize)
            .is_none_or(|e| e > block.len())
        {
            return Err(MapError::OutOfBlock {
                base,
                size,
                offset,
                block: block.len(),
            });
        }
        if size > 0 && base.checked_add(size - 1).is_none() {
            return Err(MapError::Wraps { base, size });
        }
        self.check_overlap(None, base, size)?;
        if self.n == MAX_WINDOWS {
            return Err(MapError::TooMany);
        }
        // SAFETY: offset + size <= block.len(), checked above.
        let host = unsafe { block.ptr.add(offset) };
        self.win[self.n] = Window::new(base, size, host, self.latency[class as usize], perm, class);
        self.note_latency(self.n);
        self.owners[self.n] = Some(block.clone());
        self.n += 1;
        Ok(())
    }

    /// Replace window `i` (same checks as [`AddressSpace::map`]): lets an
    /// embedding swap the per-task windows (the packet) and keep the rest.
    #[allow(clippy::too_many_arguments)]
    pub fn remap(
        &mut self,
        i: usize,
        base: u32,
        size: u32,
        block: &Arc<MemBlock>,
        offset: usize,
        perm: Perm,
        class: MemClass,
    ) -> Result<(), MapError> {
        assert!(i < self.n, "remap of a window that is not mapped");
        if offset
            .checked_add(size as usize)
            .is_none_or(|e| e > block.len())
        {
            return Err(MapError::OutOfBlock {
                base,
                size,
                offset,
                block: block.len(),
            });
        }
        if size > 0 && base.checked_add(size - 1).is_none() {
            return Err(MapError::Wraps { base, size });
        }
        let region = self.win[i].region;
        let inside = base >= region.0 && base as u64 + size as u64 <= region.1;
        if !inside {
            self.check_overlap(Some(i), base, size)?;
        }
        // Only the caches holding window i go cold: the other windows stay.
        for k in 0..self.hot.len() {
            if self.hot[k].size > 0 && self.hot[k].win as usize == i {
                self.evict(k);
                self.hot[k] = COLD;
            }
        }
        // SAFETY: offset + size <= block.len(), checked above.
        let host = unsafe { block.ptr.add(offset) };
        self.win[i] = Window::new(base, size, host, self.latency[class as usize], perm, class);
        self.note_latency(i);
        if inside {
            self.win[i].region = region;
        }
        if !self.owners[i]
            .as_ref()
            .is_some_and(|o| Arc::ptr_eq(o, block))
        {
            self.owners[i] = Some(block.clone());
        }
        self.win[i].region_host = self.region_host_of(i);
        Ok(())
    }

    /// Keep `[base, base+size)` for window `i`: it must contain the window
    /// and overlap no other window's range. Later windows may not overlap
    /// it, and remapping `i` inside it skips the overlap check (the
    /// engine's per-task remaps of the packet windows).
    pub fn reserve(&mut self, i: usize, base: u32, size: u32) -> Result<(), MapError> {
        assert!(i < self.n, "reserve for a window that is not mapped");
        let end = base as u64 + size as u64;
        if end > 1 << 32 {
            return Err(MapError::Wraps { base, size });
        }
        let w = self.win[i];
        if w.base < base || w.base as u64 + w.size as u64 > end {
            return Err(MapError::Overlap {
                base,
                size,
                other: w.base,
            });
        }
        self.check_overlap(Some(i), base, size)?;
        self.win[i].region = (base, end);
        self.win[i].region_host = self.region_host_of(i);
        Ok(())
    }

    /// Where window `i`'s kept range starts in its block, or null when the
    /// range does not lie inside the block (then it cannot be moved).
    fn region_host_of(&self, i: usize) -> *mut u8 {
        let w = &self.win[i];
        let Some(block) = &self.owners[i] else {
            return std::ptr::null_mut();
        };
        // Offsets in the block: the window's, then the range's.
        let at = w.host as usize - block.ptr as usize;
        let before = (w.base - w.region.0) as usize;
        let len = (w.region.1 - w.region.0 as u64) as usize;
        match at.checked_sub(before) {
            Some(start) if start + len <= block.len() => {
                // SAFETY: start + len <= block.len().
                unsafe { block.ptr.add(start) }
            }
            _ => std::ptr::null_mut(),
        }
    }

    /// Move window `i` to `[base, base+size)` inside the range
    /// [`AddressSpace::reserve`] kept for it, in the same block at the same
    /// distance from the range's start, with its permissions and class: the
    /// per-task packet windows, of which only base and size change from
    /// task to task (like two PMP address registers). The caches holding
    /// window `i` go cold, so no access reaches its old place.
    pub fn move_window(&mut self, i: usize, base: u32, size: u32) -> Result<(), MapError> {
        assert!(i < self.n, "move of a window that is not mapped");
        let w = &mut self.win[i];
        if w.region_host.is_null() || base < w.region.0 || base as u64 + size as u64 > w.region.1 {
            return Err(MapError::OutsideRange {
                base,
                size,
                start: w.region.0,
                end: w.region.1,
            });
        }
        // SAFETY: [base, base+size) lies in the kept range, which lies in
        // the block (`region_host_of`).
        w.host = unsafe { w.region_host.add((base - w.region.0) as usize) };
        w.base = base;
        w.size = size;
        for k in 0..self.hot.len() {
            if self.hot[k].size > 0 && self.hot[k].win as usize == i {
                self.evict(k);
                self.hot[k] = COLD;
            }
        }
        Ok(())
    }

    /// `[base, base+size)` overlaps no window's kept range but `except`'s.
    fn check_overlap(&self, except: Option<usize>, base: u32, size: u32) -> Result<(), MapError> {
        match self
            .windows()
            .iter()
            .enumerate()
            .find(|(k, w)| Some(*k) != except && w.overlaps(base, size))
        {
            Some((_, o)) => Err(MapError::Overlap {
                base,
                size,
                other: o.base,
            }),
            None => Ok(()),
        }
    }

    /// Record whether window `i` (just written) has an access latency.
    fn note_latency(&mut self, i: usize) {
        let bit = 1u32 << i;
        self.slow = if self.win[i].latency > 0 {
            self.slow | bit
        } else {
            self.slow & !bit
        };
    }

    /// No mapped window costs extra cycles per access, so every access the
    /// caches serve has latency 0 (bare-metal runs, Embench).
    #[inline]
    pub(crate) fn zero_latency(&self) -> bool {
        self.slow == 0
    }

    pub fn windows(&self) -> &[Window] {
        &self.win[..self.n]
    }

    /// Translate a guest load of `len` bytes; returns the host pointer and
    /// the access's extra latency. The last window loaded from is tried
    /// first: handlers touch few regions, mostly one at a time.
    #[inline(always)]
    pub fn xlate_load(&mut self, addr: u32, len: u32) -> Result<(*mut u8, u32), AccessError> {
        match self.load_aligned(addr, len) {
            Some(r) => Ok(r),
            None => self.load_miss(addr, len),
        }
    }

    /// As [`AddressSpace::xlate_load`], for stores.
    #[inline(always)]
    pub fn xlate_store(&mut self, addr: u32, len: u32) -> Result<(*mut u8, u32), AccessError> {
        match self.hit_aligned(HOT_STORE, addr, len) {
            Some(r) => Ok(r),
            None => self.store_miss(addr, len),
        }
    }

    /// The interpreter's fast path for a load of `len` (1, 2 or 4) bytes:
    /// a hit in either load way, for an access aligned to `len`. `None`
    /// sends the access to [`AddressSpace::xlate_load`] (which also serves
    /// misaligned ones); nothing is counted then.
    #[inline(always)]
    pub(crate) fn load_aligned(&mut self, addr: u32, len: u32) -> Option<(*mut u8, u32)> {
        match self.hit_aligned(HOT_LOAD, addr, len) {
            Some(r) => Some(r),
            None => self.hit_aligned(HOT_LOAD_OLD, addr, len),
        }
    }

    /// As [`AddressSpace::load_aligned`], for stores.
    #[inline(always)]
    pub(crate) fn store_aligned(&mut self, addr: u32, len: u32) -> Option<(*mut u8, u32)> {
        self.hit_aligned(HOT_STORE, addr, len)
    }

    /// As [`AddressSpace::store_aligned`], for a word AMO: the store way
    /// holds a window that grants read and write too (`Hot::amo4`).
    #[inline(always)]
    pub(crate) fn amo_aligned(&mut self, addr: u32) -> Option<(*mut u8, u32)> {
        let h = &mut self.hot[HOT_STORE];
        let off = addr.wrapping_sub(h.base);
        if off.rotate_right(2) < h.amo4 {
            h.hits += 1;
            // SAFETY: as in `hit_aligned` (amo4 is lim4 or 0).
            return Some((unsafe { h.host.add(off as usize) }, h.latency));
        }
        None
    }

    /// Translate a guest access of `len` bytes needing `need` (AMOs need
    /// read and write: they go through the store cache and check both).
    #[inline(always)]
    pub fn xlate(
        &mut self,
        addr: u32,
        len: u32,
        need: Perm,
    ) -> Result<(*mut u8, u32), AccessError> {
        if need == Perm::R {
            self.xlate_load(addr, len)
        } else if need == Perm::W {
            self.xlate_store(addr, len)
        } else {
            self.xlate_rw(addr, len, need)
        }
    }

    /// An AMO (`need` is RW): the store cache serves it when its window
    /// grants `need` (a reduction into the scratchpad does one per word).
    #[inline(never)]
    fn xlate_rw(&mut self, addr: u32, len: u32, need: Perm) -> Result<(*mut u8, u32), AccessError> {
        let h = &self.hot[HOT_STORE];
        if h.size > 0 && self.win[h.win as usize].perm.has(need) {
            if let Some(r) = self.hit(HOT_STORE, addr, len) {
                return Ok(r);
            }
        }
        self.xlate_slow(HOT_STORE, addr, len, need)
    }

    /// A hit in cache `k` for an access aligned to `len`: one subtraction,
    /// (a rotation,) one compare.
    #[inline(always)]
    fn hit_aligned(&mut self, k: usize, addr: u32, len: u32) -> Option<(*mut u8, u32)> {
        let h = &mut self.hot[k];
        let off = addr.wrapping_sub(h.base);
        let fits = match len {
            1 => off < h.size,
            2 => off.rotate_right(1) < h.lim2,
            4 => off.rotate_right(2) < h.lim4,
            _ => false,
        };
        if fits {
            h.hits += 1;
            // SAFETY: off + len <= size (see `Hot::lim2`), and the window
            // lies inside its block (checked by `map`/`remap`, which empty
            // the caches).
            return Some((unsafe { h.host.add(off as usize) }, h.latency));
        }
        None
    }

    /// Any access that fits cache `k`'s window, aligned or not.
    #[inline(always)]
    fn hit(&mut self, k: usize, addr: u32, len: u32) -> Option<(*mut u8, u32)> {
        let h = &mut self.hot[k];
        let off = addr.wrapping_sub(h.base);
        // One compare in 64 bits: off + len cannot wrap. An empty cache
        // (size 0) never hits.
        if off as u64 + len as u64 <= h.size as u64 {
            h.hits += 1;
            // SAFETY: as in `hit_aligned`.
            return Some((unsafe { h.host.add(off as usize) }, h.latency));
        }
        None
    }

    #[inline(never)]
    fn load_miss(&mut self, addr: u32, len: u32) -> Result<(*mut u8, u32), AccessError> {
        if let Some(r) = self.hit(HOT_LOAD, addr, len) {
            return Ok(r);
        }
        if let Some(r) = self.hit(HOT_LOAD_OLD, addr, len) {
            return Ok(r);
        }
        for (n, &k) in LOAD_WAYS.iter().enumerate().skip(2) {
            if let Some(r) = self.hit(k, addr, len) {
                let h = self.hot[k];
                for j in (1..=n).rev() {
                    self.hot[LOAD_WAYS[j]] = self.hot[LOAD_WAYS[j - 1]];
                }
                self.hot[HOT_LOAD] = h;
                return Ok(r);
            }
        }
        self.xlate_slow(HOT_LOAD, addr, len, Perm::R)
    }

    #[inline(never)]
    fn store_miss(&mut self, addr: u32, len: u32) -> Result<(*mut u8, u32), AccessError> {
        if let Some(r) = self.hit(HOT_STORE, addr, len) {
            return Ok(r);
        }
        if let Some(r) = self.hit(HOT_STORE_OLD, addr, len) {
            self.hot.swap(HOT_STORE, HOT_STORE_OLD);
            return Ok(r);
        }
        self.xlate_slow(HOT_STORE, addr, len, Perm::W)
    }

    /// Find the window, check it, and make it cache `k`'s entry when it
    /// grants what that cache serves.
    #[inline(never)]
    fn xlate_slow(
        &mut self,
        k: usize,
        addr: u32,
        len: u32,
        need: Perm,
    ) -> Result<(*mut u8, u32), AccessError> {
        for i in 0..self.n {
            let w = self.win[i];
            let off = addr.wrapping_sub(w.base);
            if off < w.size {
                if w.size - off < len {
                    return Err(AccessError::Unmapped);
                }
                if !w.perm.has(need) {
                    return Err(AccessError::Denied);
                }
                let serves = if k == HOT_LOAD { Perm::R } else { Perm::W };
                if w.perm.has(serves) {
                    // Every way's window moves one down, the last out.
                    let ways: &[usize] = if k == HOT_LOAD {
                        &LOAD_WAYS
                    } else {
                        &STORE_WAYS
                    };
                    self.evict(ways[ways.len() - 1]);
                    for j in (1..ways.len()).rev() {
                        self.hot[ways[j]] = self.hot[ways[j - 1]];
                    }
                    self.hot[k] = Hot::of(&w, i);
                } else {
                    self.fold(i, 1);
                    self.served[(k == HOT_STORE) as usize] += 1;
                }
                // SAFETY: as in `hit_aligned`.
                return Ok((unsafe { w.host.add(off as usize) }, w.latency));
            }
        }
        Err(AccessError::Unmapped)
    }

    /// Whether `[addr, addr+len)` lies in one window with permission `need`,
    /// without counting an access (for runtime services validating guest
    /// pointers).
    pub fn check(&self, addr: u32, len: u32, need: Perm) -> Result<(), AccessError> {
        self.host_ptr(addr, len, need).map(|_| ())
    }

    /// Copy guest memory out (runtime services). Checks permissions.
    pub fn read_bytes(&self, addr: u32, out: &mut [u8]) -> Result<(), AccessError> {
        let p = self.host_ptr(addr, out.len() as u32, Perm::R)?;
        // SAFETY: `host_ptr` checked the whole range.
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copy into guest memory (runtime services). Checks permissions.
    pub fn write_bytes(&self, addr: u32, data: &[u8]) -> Result<(), AccessError> {
        let p = self.host_ptr(addr, data.len() as u32, Perm::W)?;
        // SAFETY: `host_ptr` checked the whole range.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }

    /// Copy guest memory out for a debugger: readable or executable
    /// windows (code may be fetch-only), no access counted.
    pub fn peek(&self, addr: u32, out: &mut [u8]) -> Result<(), AccessError> {
        let p = self
            .host_ptr(addr, out.len() as u32, Perm::R)
            .or_else(|_| self.host_ptr(addr, out.len() as u32, Perm::X))?;
        // SAFETY: `host_ptr` checked the whole range.
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    pub fn read_u32(&self, addr: u32) -> Result<u32, AccessError> {
        let mut b = [0u8; 4];
        self.read_bytes(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&self, addr: u32, v: u32) -> Result<(), AccessError> {
        self.write_bytes(addr, &v.to_le_bytes())
    }

    fn host_ptr(&self, addr: u32, len: u32, need: Perm) -> Result<*mut u8, AccessError> {
        for w in self.windows() {
            let off = addr.wrapping_sub(w.base);
            if off < w.size || (len == 0 && off == w.size) {
                if w.size - off < len {
                    return Err(AccessError::Unmapped);
                }
                if !w.perm.has(need) {
                    return Err(AccessError::Denied);
                }
                // SAFETY: [off, off+len) lies inside the window.
                return Ok(unsafe { w.host.add(off as usize) });
            }
        }
        Err(AccessError::Unmapped)
    }
}

/// Atomic view of an aligned guest word.
///
/// # Safety
/// `p` must be 4-byte aligned and point into a live [`MemBlock`].
#[inline(always)]
pub(crate) unsafe fn atomic_at<'a>(p: *mut u8) -> &'a AtomicU32 {
    &*(p as *const AtomicU32)
}

pub(crate) const SEQ: Ordering = Ordering::SeqCst;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_to_moves_bytes_between_and_within_blocks() {
        let (a, b) = (MemBlock::new(16), MemBlock::new(8));
        a.write(0, &(0u8..16).collect::<Vec<_>>());
        a.copy_to(4, &b, 2, 5);
        assert_eq!(b.to_vec(0, 8), [0, 0, 4, 5, 6, 7, 8, 0]);
        // Overlapping, within one block: as memmove.
        a.copy_to(0, &a, 3, 8);
        assert_eq!(a.to_vec(0, 12), [0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7, 11]);
        let r = std::panic::catch_unwind(|| a.copy_to(10, &b, 0, 7));
        assert!(r.is_err(), "a source range past the block's end panics");
    }

    #[test]
    fn zero_clears_only_the_range() {
        let b = MemBlock::new(3 * 4096 + 100);
        b.fill(0, b.len(), 0xAB);
        b.zero(4000, 4096 + 200);
        let v = b.to_vec(0, b.len());
        for (i, &x) in v.iter().enumerate() {
            let want = if (4000..4000 + 4096 + 200).contains(&i) {
                0
            } else {
                0xAB
            };
            assert_eq!(x, want, "byte {i}");
        }
        b.zero(0, b.len());
        assert!(b.to_vec(0, b.len()).iter().all(|&x| x == 0));
        assert!(std::panic::catch_unwind(|| b.zero(b.len() - 1, 2)).is_err());
    }

    /// Blocks from MAP_MIN on are mappings of their own: zeroed, usable to
    /// their last byte, unmapped on drop (many made and dropped).
    #[test]
    fn large_blocks_are_zeroed_mappings() {
        for _ in 0..64 {
            let b = MemBlock::new(4 << 20);
            assert!(b.mapped);
            assert!(b.to_vec(0, 4096).iter().all(|&x| x == 0));
            b.write(b.len() - 3, &[1, 2, 3]);
            assert_eq!(b.to_vec(b.len() - 4, 4), [0, 1, 2, 3]);
        }
        let small = MemBlock::new(MAP_MIN - 8);
        assert!(!small.mapped);
        assert!(small.to_vec(0, small.len()).iter().all(|&x| x == 0));
    }

    #[test]
    fn map_checks_and_translates() {
        let t = TimingModel::default();
        let mut a = AddressSpace::new(&t);
        let b = MemBlock::new(4096);
        a.map(0x1000, 4096, &b, 0, Perm::RW, MemClass::L1Local)
            .unwrap();
        assert!(matches!(
            a.map(0x1800, 16, &b, 0, Perm::RW, MemClass::L2),
            Err(MapError::Overlap { .. })
        ));
        assert!(matches!(
            a.map(0x9000, 4097, &b, 0, Perm::RW, MemClass::L2),
            Err(MapError::OutOfBlock { .. })
        ));
        a.write_u32(0x1ffc, 0xdeadbeef).unwrap();
        assert_eq!(a.read_u32(0x1ffc), Ok(0xdeadbeef));
        assert_eq!(a.read_u32(0x1ffe), Err(AccessError::Unmapped));
        assert_eq!(a.xlate(0x2000, 1, Perm::R), Err(AccessError::Unmapped));
        let r = MemBlock::new(64);
        a.map(0x4000, 64, &r, 0, Perm::R, MemClass::L2).unwrap();
        assert_eq!(a.xlate(0x4000, 4, Perm::W), Err(AccessError::Denied));
        assert_eq!(a.xlate(0x4000, 4, Perm::R).unwrap().1, 24);
        assert_eq!(a.counts().by_class[MemClass::L2 as usize], 1);
        assert_eq!(a.counts().stall_cycles, 24);
    }

    #[test]
    fn fast_path_takes_only_aligned_fits_and_every_access_counts_once() {
        let t = TimingModel::default();
        let mut a = AddressSpace::new(&t);
        let b = MemBlock::new(64);
        // Size not a multiple of 4, base aligned only to 2.
        a.map(0x1002, 10, &b, 0, Perm::RW, MemClass::L2).unwrap();
        assert!(a.xlate_load(0x1002, 4).is_ok()); // fills the cache
        assert!(a.load_aligned(0x1004, 4).is_none()); // base not 4-aligned
        assert!(a.load_aligned(0x1004, 2).is_some());
        assert!(a.load_aligned(0x100a, 2).is_some()); // last halfword
        assert!(a.load_aligned(0x100c, 2).is_none()); // past the end
        assert!(a.load_aligned(0x1005, 2).is_none()); // misaligned
        assert!(a.load_aligned(0x100b, 1).is_some());
        assert!(a.load_aligned(0x100c, 1).is_none());
        assert!(a.xlate_load(0x1005, 2).is_ok()); // the slow way, counted
        assert_eq!(a.xlate_load(0x100a, 4), Err(AccessError::Unmapped));
        let c = a.xlate_store(0x1004, 4).and(a.xlate_store(0x1008, 4));
        assert!(c.is_ok());
        assert!(a.store_aligned(0x1008, 4).is_none());
        assert!(a.store_aligned(0x1008, 2).is_some());
        // 1 + 3 fast loads + 1 slow load + 2 + 1 stores
        assert_eq!(a.counts().by_class[MemClass::L2 as usize], 8);

        let mut a = AddressSpace::new(&t);
        a.map(0x2000, 8, &b, 0, Perm::R, MemClass::L2).unwrap();
        assert!(a.xlate_load(0x2000, 4).is_ok());
        assert!(a.load_aligned(0x2004, 4).is_some());
        assert!(a.load_aligned(0x2006, 4).is_none()); // misaligned, would fit
        assert!(a.load_aligned(0x2008, 4).is_none());
        assert!(a.store_aligned(0x2004, 4).is_none()); // read-only: never cached for stores
        assert_eq!(a.xlate_store(0x2004, 4), Err(AccessError::Denied));
        assert_eq!(a.counts().by_class[MemClass::L2 as usize], 2);
    }

    /// Two 16-byte windows on one block: 0x1000 in L1 with permission
    /// `first`, 0x2000 in L2, read-write.
    fn two_windows(first: Perm) -> (AddressSpace, Arc<MemBlock>) {
        let mut a = AddressSpace::new(&TimingModel::default());
        let b = MemBlock::new(256);
        a.map(0x1000, 16, &b, 0, first, MemClass::L1Local).unwrap();
        a.map(0x2000, 16, &b, 128, Perm::RW, MemClass::L2).unwrap();
        (a, b)
    }

    /// Stores alternating between two windows: the second way serves the
    /// one the fast path does not hold and trades places with it; every
    /// store is counted once, in its own window's class, and in `served`.
    #[test]
    fn store_ways_follow_the_latest_window_and_count_each_store_once() {
        let (mut a, _b) = two_windows(Perm::RW);
        for k in 0..4 {
            a.xlate_store(0x1000 + 4 * k, 4).unwrap();
            a.xlate_store(0x2000 + 4 * k, 4).unwrap();
        }
        assert!(
            a.store_aligned(0x2000, 4).is_some(),
            "the latest window is the fast way's"
        );
        assert!(a.store_aligned(0x1000, 4).is_none());
        a.xlate_store(0x1004, 4).unwrap(); // from the second way: they trade places
        assert!(a.store_aligned(0x1008, 4).is_some());
        let c = a.counts().by_class;
        assert_eq!(
            (c[MemClass::L1Local as usize], c[MemClass::L2 as usize]),
            (6, 5)
        ); // the fast-path hits count too
        assert_eq!(a.served(), (0, 11));
    }

    /// A reserved range keeps other windows out, lets its window move
    /// inside it, and a remap leaves the other windows' caches and counts.
    #[test]
    fn reserve_keeps_a_range_for_one_window() {
        let (mut a, b) = two_windows(Perm::RW);
        assert!(matches!(
            a.reserve(0, 0x1000, 0x1001),
            Err(MapError::Overlap { other: 0x2000, .. })
        ));
        assert!(
            matches!(a.reserve(0, 0x1004, 64), Err(MapError::Overlap { .. })),
            "must contain the window"
        );
        assert!(matches!(
            a.reserve(0, 0xffff_f000, 0x2000),
            Err(MapError::Wraps { .. })
        ));
        a.reserve(0, 0x1000, 64).unwrap();
        assert!(matches!(
            a.map(0x1030, 4, &b, 0, Perm::RW, MemClass::L2),
            Err(MapError::Overlap { other: 0x1000, .. })
        ));
        a.xlate_store(0x2000, 4).unwrap();
        a.xlate_load(0x2004, 4).unwrap();
        a.remap(0, 0x1020, 32, &b, 32, Perm::RW, MemClass::L1Local)
            .unwrap();
        assert!(
            a.store_aligned(0x2008, 4).is_some() && a.load_aligned(0x200c, 4).is_some(),
            "window 1's caches stay"
        );
        assert!(a.xlate_load(0x1000, 4).is_err() && a.xlate_load(0x103c, 4).is_ok());
        // Outside its range a remap is checked again.
        assert!(matches!(
            a.remap(0, 0x1ff0, 32, &b, 0, Perm::RW, MemClass::L1Local),
            Err(MapError::Overlap { other: 0x2000, .. })
        ));
        let c = a.counts().by_class;
        assert_eq!(
            (c[MemClass::L1Local as usize], c[MemClass::L2 as usize]),
            (1, 4)
        );
    }

    /// AMOs go through the store cache only where its window is readable
    /// too, and count once, as stores.
    #[test]
    fn amos_use_the_store_cache_only_with_both_permissions() {
        let (mut a, _b) = two_windows(Perm::W);
        a.xlate_store(0x1000, 4).unwrap(); // the store cache holds the write-only window
        assert!(
            a.amo_aligned(0x1004).is_none(),
            "no AMO fast path in a write-only window"
        );
        assert_eq!(a.xlate(0x1004, 4, Perm::RW), Err(AccessError::Denied));
        for k in 0..3 {
            a.xlate(0x2000 + 4 * k, 4, Perm::RW).unwrap();
        }
        assert!(
            a.store_aligned(0x200c, 4).is_some(),
            "the AMOs' window is cached"
        );
        assert!(
            a.amo_aligned(0x2008).is_some() && a.amo_aligned(0x2006).is_none(),
            "aligned AMOs only"
        );
        let c = a.counts().by_class;
        assert_eq!(
            (c[MemClass::L1Local as usize], c[MemClass::L2 as usize]),
            (1, 5)
        );
        assert_eq!(a.served(), (0, 6));
    }

    /// Loads over four windows stay in the four load ways, the most
    /// recently used first (no window search after each window's first
    /// load); a fifth pushes out the least recent; every load counts once,
    /// in its window's class.
    #[test]
    fn four_load_ways_hold_four_windows_and_count_each_load_once() {
        let t = TimingModel::default();
        let mut a = AddressSpace::new(&t);
        let b = MemBlock::new(64);
        for w in 0..5u32 {
            let class = if w == 0 {
                MemClass::L1Local
            } else {
                MemClass::L2
            };
            a.map(0x1000 * (w + 1), 16, &b, 0, Perm::R, class).unwrap();
        }
        let held = |a: &AddressSpace| LOAD_WAYS.map(|k| a.hot[k].base);
        for _ in 0..3 {
            for w in 1..=4u32 {
                a.xlate_load(0x1000 * w + 4, 4).unwrap();
            }
        }
        assert_eq!(held(&a), [0x4000, 0x3000, 0x2000, 0x1000]);
        a.xlate_load(0x5002, 2).unwrap();
        assert_eq!(held(&a), [0x5000, 0x4000, 0x3000, 0x2000]);
        a.xlate_load(0x2001, 2).unwrap(); // misaligned, from the last way
        assert_eq!(held(&a), [0x2000, 0x5000, 0x4000, 0x3000]);
        assert_eq!(a.served(), (14, 0));
        let c = a.counts().by_class;
        assert_eq!(
            (c[MemClass::L1Local as usize], c[MemClass::L2 as usize]),
            (3, 11)
        );
    }

    /// A window moved to the next task's packet (`move_window`) leaves no
    /// way to its previous place: not the load or store caches that held
    /// it, not the slow path, not a service's check; its new place reads
    /// the block's bytes at the same distance from the kept range's start.
    #[test]
    fn a_moved_window_leaves_nothing_of_its_previous_place() {
        let t = TimingModel::default();
        let mut a = AddressSpace::new(&t);
        let b = MemBlock::new(0x1000);
        let other = MemBlock::new(64);
        a.map(0x1100, 0x40, &b, 0x100, Perm::RW, MemClass::L1Local)
            .unwrap();
        a.reserve(0, 0x1000, 0x1000).unwrap();
        a.map(0x4000, 64, &other, 0, Perm::RW, MemClass::L2)
            .unwrap();
        // Both ways of both caches hold window 0 or the other one.
        a.xlate_store(0x1104, 4).unwrap();
        a.xlate_load(0x4000, 4).unwrap();
        a.xlate_load(0x1100, 4).unwrap();
        a.xlate_store(0x4000, 4).unwrap();
        a.move_window(0, 0x1800, 0x20).unwrap();
        for addr in [0x1100, 0x1104, 0x113c, 0x17fc, 0x1820] {
            assert!(a.load_aligned(addr, 4).is_none(), "{addr:#x} cached");
            assert!(a.store_aligned(addr, 4).is_none(), "{addr:#x} cached");
            assert_eq!(a.xlate(addr, 4, Perm::R), Err(AccessError::Unmapped));
            assert_eq!(a.xlate(addr, 4, Perm::W), Err(AccessError::Unmapped));
            assert_eq!(a.xlate(addr, 4, Perm::RW), Err(AccessError::Unmapped));
            assert_eq!(a.check(addr, 4, Perm::R), Err(AccessError::Unmapped));
        }
        b.write(0x800, &[1, 2, 3, 4]);
        assert_eq!(a.read_u32(0x1800), Ok(0x0403_0201));
        a.xlate_store(0x181c, 4).unwrap();
        assert_eq!(a.xlate_store(0x181e, 4), Err(AccessError::Unmapped));
        // The other window and its caches stay.
        assert!(a.load_aligned(0x4000, 4).is_some());
        // Only inside the kept range, and only where that range lies in
        // the block.
        assert!(matches!(
            a.move_window(0, 0x1ff0, 0x20),
            Err(MapError::OutsideRange { .. })
        ));
        assert!(matches!(
            a.move_window(0, 0x0ff0, 0x20),
            Err(MapError::OutsideRange { .. })
        ));
        a.reserve(1, 0x4000, 0x1000).unwrap();
        assert!(matches!(
            a.move_window(1, 0x4000, 0x10),
            Err(MapError::OutsideRange { .. })
        ));
    }
}
