//! The decoder cache: a code image decoded once, shared by every HPU.
//!
//! Instructions are laid out densely in program order ("slots"), so a
//! straight-line run advances by one slot whatever the instruction's size and
//! the next fetch never waits on the current one. A parcel map turns any pc
//! into its slot. Jumps into the middle of a 32-bit instruction are legal
//! RISC-V and execute whatever those bits say, so every such parcel gets an
//! out-of-line run of slots, decoded from there until it rejoins the main
//! stream (a `Goto`) or ends.
//!
//! Each slot also carries a [`BlockCost`]: instructions, static cycles, loads
//! and stores from it to the end of its basic block. The interpreter charges
//! these once per block entry instead of counting per instruction.

use crate::isa::{decode16, decode32, inst_len, Class, Inst, Op};
use crate::timing::TimingModel;

/// What remains of a block from one slot on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockCost {
    pub insts: u32,
    pub cycles: u32,
    pub loads: u16,
    pub stores: u16,
}

/// What the interpreter adds at a block entry: a [`BlockCost`]'s cycles in
/// the low and instructions in the high half of `acc` (the interpreter keeps
/// the sum in one register and flushes it often enough that the low half
/// cannot carry). Loads and stores are not charged: the memory path counts
/// them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Charge {
    pub acc: u64,
}

impl Charge {
    fn of(c: BlockCost) -> Charge {
        Charge {
            acc: c.cycles as u64 | (c.insts as u64) << 32,
        }
    }
}

/// An instruction as the interpreter reads it: [`Inst`] without `next`
/// (read from `Program::insts` by the few instructions that need it: links
/// and resume points) and, for JAL and branches, the target slot (or
/// `NO_TARGET`) in `imm` instead of the address (which stays in `insts`
/// for the slow paths). 8 bytes, so a slot is 16.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct SlotInst {
    pub imm: i32,
    pub op: Op,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
}

/// One slot as the interpreter reads it: the instruction and the charge for
/// entering its block there, side by side so a block entry touches one
/// cache line. 16 bytes (four to a line): with 32, Embench's nsichneu, 26 KB
/// of branches, spilled out of L1 (callgrind's cache model). No
/// `align(16)`: the allocator's 16-byte alignment keeps slots within lines
/// anyway, and with the attribute `softspin sim` at 64 B ran 15 % slower
/// (docs/perf-interpreter.md, fifth round).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Slot {
    pub inst: SlotInst,
    pub charge: Charge,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

/// No instruction starts at this parcel (not executable).
const NO_SLOT: u32 = crate::isa::NO_TARGET;

/// A decoded, immutable code image.
pub struct Program {
    /// Unique per decoded program: a JIT records the one it belongs to.
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    pub(crate) id: u64,
    pub(crate) base: u32,
    /// Bytes covered by `entry` (a multiple of 2).
    pub(crate) len: u32,
    pub(crate) insts: Vec<Inst>,
    /// What the interpreter executes: `insts`, except that branches closing a
    /// hardware loop have no direct target, which sends them down the
    /// interpreter's slow branch path (the only one that looks at
    /// `hw_loop`), so ordinary branches test nothing but their condition.
    pub(crate) code: Vec<Slot>,
    pub(crate) cost: Vec<BlockCost>,

    /// Parcel index (pc - base) / 2 -> slot, or NO_SLOT.
    pub(crate) entry: Vec<u32>,
    /// Slot -> address of the instruction (fault reports, slice ends).
    pub(crate) pcs: Vec<u32>,
    /// Slot -> the branch closes a hardware loop (`TimingModel::hw_loops`);
    /// empty when the option is off.
    pub(crate) hw_loop: Vec<bool>,
}

/// Largest executable span we decode.
pub const MAX_CODE_SPAN: u32 = 64 << 20;

/// Out-of-line runs give up (and jump to where they are) after this many
/// instructions; the target has its own run.
const MAX_SIDE_RUN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    #[error("no executable code")]
    Empty,
    #[error("executable segments span {0} bytes, more than the {MAX_CODE_SPAN}-byte limit")]
    TooLarge(u64),
    #[error("executable segment at 0x{0:08x} is not 2-byte aligned")]
    Misaligned(u32),
}

impl Program {
    /// Decode executable ranges `(address, bytes)`. Everything else is not
    /// executable.
    pub fn decode(ranges: &[(u32, &[u8])], timing: &TimingModel) -> Result<Program, ProgramError> {
        let mut ranges: Vec<(u32, &[u8])> = ranges
            .iter()
            .filter(|(_, b)| b.len() >= 2)
            .map(|(a, b)| (*a, &b[..b.len() & !1]))
            .collect();
        ranges.sort_by_key(|r| r.0);
        let lo = ranges.first().ok_or(ProgramError::Empty)?.0;
        let hi = ranges
            .iter()
            .map(|(a, b)| *a as u64 + b.len() as u64)
            .max()
            .unwrap();
        if let Some((a, _)) = ranges.iter().find(|(a, _)| a % 2 != 0) {
            return Err(ProgramError::Misaligned(*a));
        }
        let span = hi - lo as u64;
        if span > MAX_CODE_SPAN as u64 {
            return Err(ProgramError::TooLarge(span));
        }
        let parcels = (span / 2) as usize;
        let mut code: Vec<Option<u16>> = vec![None; parcels];
        for (a, b) in &ranges {
            let first = ((a - lo) / 2) as usize;
            for (k, ch) in b.chunks_exact(2).enumerate() {
                code[first + k] = Some(u16::from_le_bytes([ch[0], ch[1]]));
            }
        }
        let pc_of = |k: usize| lo + 2 * k as u32;
        // Decode at parcel k: the instruction and its length in parcels.
        let decode_at = |k: usize| -> (Inst, usize) {
            let (mut i, len) = match code[k] {
                None => (Inst::no_exec(), 1),
                Some(p) if inst_len(p) == 2 => (decode16(p, pc_of(k)), 1),
                Some(p) => match code.get(k + 1).copied().flatten() {
                    Some(h) => (decode32(p as u32 | (h as u32) << 16, pc_of(k)), 2),
                    None => (Inst::no_exec(), 1), // truncated at the end of code
                },
            };
            i.next = pc_of(k + len);
            (i, len)
        };

        let mut insts = Vec::with_capacity(parcels / 2 + ranges.len() + 1);
        let mut pcs = Vec::with_capacity(insts.capacity());
        let mut entry = vec![NO_SLOT; parcels];
        let mut main_start = vec![false; parcels];
        // Main stream: a linear sweep of each range, ending in a NoExec
        // sentinel so straight-line code never runs off the array. Within it
        // slot s+1 always holds the instruction at s's `next`.
        for (a, b) in &ranges {
            let (first, n) = (((a - lo) / 2) as usize, b.len() / 2);
            let mut k = first;
            while k < first + n {
                let (i, len) = decode_at(k);
                entry[k] = insts.len() as u32;
                main_start[k] = true;
                insts.push(i);
                pcs.push(pc_of(k));
                k += len;
            }
            insts.push(Inst::no_exec());
            pcs.push(pc_of(k));
        }
        // Side runs for parcels inside a 32-bit instruction. A Goto follows
        // every run's last instruction, so "slot s+1 is the sequential
        // successor" holds here too.
        for k0 in 0..parcels {
            if main_start[k0] || code[k0].is_none() {
                continue;
            }
            entry[k0] = insts.len() as u32;
            let mut k = k0;
            for _ in 0..MAX_SIDE_RUN {
                if k >= parcels || code[k].is_none() || (k != k0 && main_start[k]) {
                    break;
                }
                let (i, len) = decode_at(k);
                insts.push(i);
                pcs.push(pc_of(k));
                k += len;
                if i.op.ends_block() {
                    break;
                }
            }
            let stop = if k < parcels && code[k].is_some() {
                Inst::goto(pc_of(k))
            } else {
                Inst::no_exec()
            };
            insts.push(stop);
            pcs.push(pc_of(k));
        }
        // Direct targets of JAL and branches.
        let slot_of = |pc: u32| -> u32 {
            let off = pc.wrapping_sub(lo) as usize / 2;
            if pc.is_multiple_of(2) && pc >= lo && off < parcels {
                entry[off]
            } else {
                NO_SLOT
            }
        };
        for i in insts.iter_mut() {
            if i.op == Op::Jal || i.op.is_branch() {
                i.target = slot_of(i.imm as u32);
            }
        }

        // Hardware loops: their branch and counter update are free.
        let mut hw_loop = Vec::new();
        let mut free = vec![false; insts.len()];
        if timing.hw_loops {
            hw_loop = vec![false; insts.len()];
            for s in 0..insts.len() {
                if let Some(counter) = find_hw_loop(&insts, s) {
                    hw_loop[s] = true;
                    free[s] = true;
                    if let Some(k) = counter {
                        free[k] = true;
                    }
                }
            }
        }
        let mut cost = vec![BlockCost::default(); insts.len()];
        for s in (0..insts.len()).rev() {
            let i = insts[s];
            let cls = i.op.class();
            // Every retired instruction takes at least one cycle (the
            // interpreter's watchdog bound relies on it), except what a
            // hardware loop does for free (the interpreter checks the
            // watchdog at every hardware-loop iteration instead).
            let mut c = if cls == Class::None || free[s] {
                0
            } else {
                timing.base_cost(cls).max(1)
            };
            let n = !matches!(i.op, Op::NoExec | Op::Goto) as u32;
            // AMOs count as a load and a store; LR as a load, SC as a store.
            let atomic = cls == Class::Atomic;
            let ld = (cls == Class::Load) as u16 + (atomic && i.op != Op::ScW) as u16;
            let st = (cls == Class::Store) as u16 + (atomic && i.op != Op::LrW) as u16;
            if i.op.ends_block() {
                cost[s] = BlockCost {
                    insts: n,
                    cycles: c,
                    loads: ld,
                    stores: st,
                };
                continue;
            }
            // Not a terminator, so slot s+1 exists and is in the same block.
            let nx = insts[s + 1];
            if let (Some(rd), Class::Load) = (i.writes(), cls) {
                if nx.reads().contains(&Some(rd)) {
                    c += timing.load_use_stall;
                }
            }
            let rest = cost[s + 1];
            cost[s] = BlockCost {
                insts: n + rest.insts,
                cycles: c.saturating_add(rest.cycles),
                loads: ld.saturating_add(rest.loads),
                stores: st.saturating_add(rest.stores),
            };
        }
        let mut code: Vec<Slot> = (0..insts.len())
            .map(|s| {
                let i = insts[s];
                // A hardware loop's closing branch has no direct target
                // here: it takes the interpreter's slow branch path.
                let imm = if i.op == Op::Jal || i.op.is_branch() {
                    (if hw_loop.get(s) == Some(&true) {
                        NO_SLOT
                    } else {
                        i.target
                    }) as i32
                } else {
                    i.imm
                };
                Slot {
                    inst: SlotInst {
                        imm,
                        op: i.op,
                        rd: i.rd,
                        rs1: i.rs1,
                        rs2: i.rs2,
                    },
                    charge: Charge::of(cost[s]),
                }
            })
            .collect();
        // Every slot gets the longest group `fuse_li_base`, `fuse3` and
        // `fuse` know that starts at it (a triple first), not only the slots
        // left to right grouping would reach: a jump into the middle of a
        // group (a compare chain's shared tail) then runs its own group
        // instead of single instructions. Running from a group's head never
        // dispatches the slots it covers, so their ops matter only there.
        // Ops are read from the decoded instructions, so a slot's fusion
        // never sees a neighbour's. The first of a pair or the first two of
        // a triple are no terminators, so their successors are the next
        // slots (see above).
        for s in 0..code.len().saturating_sub(1) {
            let a = insts[s].op;
            let b = insts[s + 1].op;
            if let Some(f) = fuse_li_base2(&code[s..]) {
                code[s].inst.op = f;
                continue;
            }
            if let Some(f) = fuse_li_base(&code[s].inst, &code[s + 1].inst) {
                code[s].inst.op = f;
                continue;
            }
            if let (false, false, Some(c)) = (a.ends_block(), b.ends_block(), insts.get(s + 2)) {
                if let Some(f) = fuse3(a, b, c.op) {
                    code[s].inst.op = f;
                    continue;
                }
            }
            if let (false, Some(f)) = (a.ends_block(), fuse(a, b)) {
                code[s].inst.op = f;
            }
        }
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Program {
            id,
            base: lo,
            len: (parcels * 2) as u32,
            insts,
            code,
            cost,
            entry,
            pcs,
            hw_loop,
        })
    }

    /// [`Program::decode`], shared: every caller decoding the same ranges
    /// with the same timing model gets the same `Arc` while one is alive
    /// (a network of simulated NICs installs one image in thousands of
    /// engines; issue 29). The cache holds the code bytes and a `Weak`, so
    /// a program no engine uses is freed.
    pub fn decode_shared(
        ranges: &[(u32, &[u8])],
        timing: &TimingModel,
    ) -> Result<std::sync::Arc<Program>, ProgramError> {
        use std::hash::{Hash, Hasher};
        use std::sync::{Arc, Mutex, Weak};
        struct Cached {
            ranges: Vec<(u32, Vec<u8>)>,
            timing: TimingModel,
            program: Weak<Program>,
        }
        static CACHE: Mutex<Vec<(u64, Cached)>> = Mutex::new(Vec::new());
        let mut h = std::collections::hash_map::DefaultHasher::new();
        ranges.hash(&mut h);
        let key = h.finish();
        let same = |c: &Cached| {
            c.timing == *timing
                && c.ranges.len() == ranges.len()
                && c.ranges
                    .iter()
                    .zip(ranges)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
        };
        // A poisoned lock only means another thread panicked mid-update of
        // a cache that holds nothing it could leave half-made.
        let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache
            .iter()
            .filter(|(k, c)| *k == key && same(c))
            .find_map(|(_, c)| c.program.upgrade())
        {
            return Ok(p);
        }
        let p = Arc::new(Program::decode(ranges, timing)?);
        cache.retain(|(_, c)| c.program.strong_count() > 0);
        cache.push((
            key,
            Cached {
                ranges: ranges.iter().map(|(a, b)| (*a, b.to_vec())).collect(),
                timing: timing.clone(),
                program: Arc::downgrade(&p),
            },
        ));
        Ok(p)
    }

    pub fn base(&self) -> u32 {
        self.base
    }

    /// Whether the instruction at `pc` ends its block (where `run` checks
    /// the slice end and the watchdog next).
    pub fn ends_block_at(&self, pc: u32) -> bool {
        self.inst_at(pc).is_some_and(|i| i.op.ends_block())
    }

    /// This program without superinstructions, for [`crate::Hpu::step`]
    /// (a debugger's single step); same slots, costs and pcs.
    pub fn unfused(&self) -> Program {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 63);
        let mut code = self.code.clone();
        for (c, i) in code.iter_mut().zip(&self.insts) {
            c.inst.op = i.op;
        }
        Program {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            base: self.base,
            len: self.len,
            insts: self.insts.clone(),
            code,
            cost: self.cost.clone(),
            entry: self.entry.clone(),
            pcs: self.pcs.clone(),
            hw_loop: self.hw_loop.clone(),
        }
    }

    /// One past the last code byte.
    pub fn end(&self) -> u32 {
        self.base + self.len
    }

    /// The slot an instruction fetch at `pc` starts from, if `pc` holds code.
    #[inline(always)]
    pub(crate) fn slot(&self, pc: u32) -> Option<usize> {
        let off = pc.wrapping_sub(self.base);
        if off >= self.len {
            return None;
        }
        match self.entry[(off >> 1) as usize] {
            NO_SLOT => None,
            s => Some(s as usize),
        }
    }

    /// The decoded instruction at `pc`, if `pc` holds code.
    pub fn inst_at(&self, pc: u32) -> Option<&Inst> {
        self.slot(pc).map(|s| &self.insts[s])
    }

    /// The block cost from `pc` to the end of its block.
    pub fn cost_at(&self, pc: u32) -> Option<BlockCost> {
        self.slot(pc).map(|s| self.cost[s])
    }

    /// Number of decoded slots (for statistics).
    pub fn slots(&self) -> usize {
        self.insts.len()
    }
}

/// `li rd, hi` then a load, store or `addi` at `lo(rd)` (how compilers
/// reach a global) or a `jalr` off `rd` (`auipc` + `jalr`, a far call,
/// `auipc` being a `li` here): the pair that adds the two immediates.
/// (A `li` into x0 has rd `REG_SINK`, which no base register equals.)
fn fuse_li_base(a: &SlotInst, b: &SlotInst) -> Option<Op> {
    use Op::*;
    if a.op != Li || b.rs1 != a.rd {
        return None;
    }
    Some(match b.op {
        Lbu => FLiLbuAbs,
        Sb => FLiSbAbs,
        Lw => FLiLwAbs,
        Sw => FLiSwAbs,
        Addi => FLiAddiAbs,
        Jalr => FLiJalrAbs,
        _ => return None,
    })
}

/// Two `fuse_li_base` pairs in a row whose memory ops are byte loads or
/// stores: how state machines like statemate set and test one flag after
/// another (a third of its guest instructions), four slots for one dispatch.
/// `code` starts at the first `li` and still holds decoded ops from there.
fn fuse_li_base2(code: &[Slot]) -> Option<Op> {
    use Op::*;
    let [a, b, c, d, ..] = code else {
        return None;
    };
    let first = fuse_li_base(&a.inst, &b.inst)?;
    let second = fuse_li_base(&c.inst, &d.inst)?;
    Some(match (first, second) {
        (FLiSbAbs, FLiSbAbs) => FAbsSbSb,
        (FLiSbAbs, FLiLbuAbs) => FAbsSbLbu,
        (FLiLbuAbs, FLiSbAbs) => FAbsLbuSb,
        (FLiLbuAbs, FLiLbuAbs) => FAbsLbuLbu,
        _ => return None,
    })
}

/// The superinstruction running `a` then `b` (the instruction in the next
/// slot), if the interpreter has one: the commonest adjacent pairs over our
/// kernel and Embench-IoT (counted per executed instruction), so that each
/// pays one dispatch instead of two. Counts and faults are unchanged: blocks
/// are charged at entry, and the second half faults from its own slot.
fn fuse(a: Op, b: Op) -> Option<Op> {
    use Op::*;
    Some(match (a, b) {
        (Addi, Addi) => FAddiAddi,
        (Lw, Lw) => FLwLw,
        (Add, Add) => FAddAdd,
        (Mul, Add) => FMulAdd,
        (Slli, Or) => FSlliOr,
        (Srli, Slli) => FSrliSlli,
        (Add, Lw) => FAddLw,
        (Addi, Bne) => FAddiBne,
        (Sw, Lw) => FSwLw,
        (Lw, Mul) => FLwMul,
        (Slli, Add) => FSlliAdd,
        (Add, Sw) => FAddSw,
        (Add, Addi) => FAddAddi,
        (Lw, Blt) => FLwBlt,
        (Lw, Srli) => FLwSrli,
        (Lw, Bne) => FLwBne,
        (Li, Sb) => FLiSb,
        (Xor, Xor) => FXorXor,
        (Li, Addi) => FLiAddi,
        (Li, Lbu) => FLiLbu,
        (Lbu, Lbu) => FLbuLbu,
        (Addi, Bltu) => FAddiBltu,
        (Lw, Andi) => FLwAndi,
        (Srli, Andi) => FSrliAndi,
        (Andi, Add) => FAndiAdd,
        (Lbu, Slli) => FLbuSlli,
        (Slli, Srli) => FSlliSrli,
        (Or, Xor) => FOrXor,
        (Lh, Lh) => FLhLh,
        (Sw, Sw) => FSwSw,
        (Or, Slli) => FOrSlli,
        (Add, Slli) => FAddSlli,
        (Li, Lw) => FLiLw,
        (Or, Or) => FOrOr,
        (Addi, Mul) => FAddiMul,
        (Li, Jalr) => FLiJalr,
        (Sw, Jalr) => FSwJalr,
        (Xor, Andi) => FXorAndi,
        (And, Xor) => FAndXor,
        (Addi, Xor) => FAddiXor,
        (Xor, Bne) => FXorBne,
        (Srli, Srli) => FSrliSrli,
        (Srli, Sw) => FSrliSw,
        (Lhu, Lhu) => FLhuLhu,
        (Sh, Sh) => FShSh,
        (Addi, Sb) => FAddiSb,
        (Sb, Sb) => FSbSb,
        _ => return None,
    })
}

/// The superinstruction running `a`, `b` and `c` from three adjacent slots:
/// the triples that save most dispatches over the pairs above (counted per
/// executed instruction over our kernel and Embench-IoT, each program
/// weighted equally, choosing greedily; most of the gain is nsichneu's and
/// statemate's compare chains and matmult's inner product; the last three,
/// counted over the groups already there, close the kernel's and picojpeg's
/// hottest loops).
fn fuse3(a: Op, b: Op, c: Op) -> Option<Op> {
    use Op::*;
    Some(match (a, b, c) {
        (Lw, Lw, Bne) => FLwLwBne,
        (Lw, Lw, Bge) => FLwLwBge,
        (Lw, Lw, Mul) => FLwLwMul,
        (Srli, Slli, Or) => FSrliSlliOr,
        (Addi, Addi, Bne) => FAddiAddiBne,
        (Mul, Add, Addi) => FMulAddAddi,
        (Add, Addi, Bltu) => FAddAddiBltu,
        (Addi, Mul, Srli) => FAddiMulSrli,
        (Addi, Addi, Sb) => FAddiAddiSb,
        _ => return None,
    })
}

/// Whether the branch at slot `s` closes a loop PULP's compiler turns into a
/// hardware loop, and if so the slot of a pure counter update it drops too.
/// The rule: the branch jumps back to a slot `t` with no other control flow
/// in `t..s` (an innermost single-block loop); exactly one of its operands
/// (the induction variable) is written in the body, once, by a constant
/// step (`addi r, r, imm` or a CORE-V post-increment by an immediate); the
/// other operand is not written in the body (a trip count is computable at
/// the loop's entry); and the body keeps at least one instruction besides
/// the branch and a dropped counter. The counter update is dropped when it
/// is an `addi` whose register nothing else in the body reads.
fn find_hw_loop(insts: &[Inst], s: usize) -> Option<Option<usize>> {
    let b = insts[s];
    let t = b.target as usize;
    if !b.op.is_branch()
        || b.target == NO_SLOT
        || t >= s
        || insts[t..s].iter().any(|i| i.op.ends_block())
    {
        return None;
    }
    let body = t..s;
    // Registers an instruction writes: rd, and rs1 for post-increments.
    use crate::corev::{load_form, store_form, Mode};
    let mode = |i: &Inst| {
        load_form(i.op)
            .map(|f| f.2)
            .or(store_form(i.op).map(|f| f.1))
    };
    let writes = |i: &Inst, r: u8| {
        i.writes() == Some(r)
            || (matches!(mode(i), Some(Mode::PostImm | Mode::PostReg)) && i.rs1 == r)
    };
    let operands: Vec<u8> = match b.op {
        Op::CvBeqImm | Op::CvBneImm => vec![b.rs1],
        _ => vec![b.rs1, b.rs2],
    };
    let written: Vec<u8> = operands
        .iter()
        .copied()
        .filter(|&r| r != 0 && body.clone().any(|k| writes(&insts[k], r)))
        .collect();
    let [ind] = written[..] else { return None };
    let updates: Vec<usize> = body.clone().filter(|&k| writes(&insts[k], ind)).collect();
    let [u] = updates[..] else { return None };
    let step = &insts[u];
    let is_addi = step.op == Op::Addi && step.rs1 == ind && step.writes() == Some(ind);
    if !(is_addi
        || (mode(step) == Some(Mode::PostImm) && step.rs1 == ind && step.writes() != Some(ind)))
    {
        return None;
    }
    let read_elsewhere = body
        .clone()
        .any(|k| k != u && insts[k].reads().contains(&Some(ind)));
    let counter = (is_addi && !read_elsewhere).then_some(u);
    let kept = body.len() - counter.is_some() as usize;
    (kept >= 1).then_some(counter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn block_costs_and_load_use() {
        // lw a0,0(a1); addi a0,a0,1; beq x0,x0,0 (self)
        let code = words(&[0x0005_A503, 0x0015_0513, 0x0000_0063]);
        let p = Program::decode(&[(0x100, &code)], &TimingModel::default()).unwrap();
        // lw (1 + 1 stall) + addi 1 + beq 1
        assert_eq!(
            p.cost_at(0x100),
            Some(BlockCost {
                insts: 3,
                cycles: 4,
                loads: 1,
                stores: 0
            })
        );
        assert_eq!(
            p.cost_at(0x104),
            Some(BlockCost {
                insts: 2,
                cycles: 2,
                loads: 0,
                stores: 0
            })
        );
        assert_eq!(p.inst_at(0x10c), None);
    }

    #[test]
    fn decode_shared_shares_same_code_and_timing_only() {
        let a = words(&[0x0005_A503, 0x0015_0513, 0x0000_0063]);
        let b = words(&[0x0005_A503, 0x0025_0513, 0x0000_0063]);
        let t = TimingModel::default();
        let p1 = Program::decode_shared(&[(0x100, &a)], &t).unwrap();
        let p2 = Program::decode_shared(&[(0x100, &a.clone())], &t).unwrap();
        assert!(std::sync::Arc::ptr_eq(&p1, &p2), "same bytes, same timing");
        for other in [
            Program::decode_shared(&[(0x100, &b)], &t).unwrap(),
            Program::decode_shared(&[(0x200, &a)], &t).unwrap(),
            Program::decode_shared(
                &[(0x100, &a)],
                &TimingModel {
                    load_use_stall: 7,
                    ..t.clone()
                },
            )
            .unwrap(),
        ] {
            assert!(!std::sync::Arc::ptr_eq(&p1, &other));
        }
        // Freed when the last user lets go: a new decode, a new id.
        let id = p1.id;
        drop((p1, p2));
        assert_ne!(Program::decode_shared(&[(0x100, &a)], &t).unwrap().id, id);
        assert!(Program::decode_shared(&[], &t).is_err());
    }

    #[test]
    fn gaps_are_not_executable_and_ranges_end_in_sentinels() {
        let a = words(&[0x0000_0013]); // nop
        let p = Program::decode(&[(0x0, &a), (0x10, &a)], &TimingModel::default()).unwrap();
        assert!(p.inst_at(0x8).is_none());
        // nop then the sentinel at 0x4: one instruction in the block
        assert_eq!(p.cost_at(0x0).unwrap().insts, 1);
    }

    #[test]
    fn mid_instruction_entry_decodes_the_upper_parcel() {
        // 0x00010001 = addi x0,x0,0 style 32-bit word whose upper half 0x0001
        // is c.nop; then ebreak.
        let code = words(&[0x0001_0013, 0x0010_0073]);
        let p = Program::decode(&[(0x0, &code)], &TimingModel::default()).unwrap();
        assert_eq!(p.inst_at(0x2).unwrap().op, Op::Addi); // c.nop
                                                          // c.nop, then the side run rejoins the main stream at 0x4 with a Goto
        assert_eq!(p.cost_at(0x2).unwrap().insts, 1);
        let s = p.slot(0x2).unwrap();
        assert_eq!(p.insts[s + 1], Inst::goto(0x4));
        assert_eq!(p.pcs[s], 0x2);
    }
}
