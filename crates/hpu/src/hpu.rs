//! One handler processing unit: architectural state plus the interpreter loop.
//!
//! The loop is block-structured: at each block entry it checks the pc, the
//! slice and watchdog limits, and charges the block's instruction count and
//! static cycles; then it runs the block's instructions straight from the
//! decoder cache with no per-instruction bookkeeping. Only taken branches,
//! memory latency and misalignment add cycles dynamically.

use crate::corev::{self, Mode};
use crate::isa::{csr, sext, Op, NO_TARGET, REG_SINK};
use crate::mem::{atomic_at, AccessError, AddressSpace, Perm, SEQ};
use crate::program::{Program, Slot};
use crate::timing::TimingModel;

/// Why the guest stopped with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Load from an address no window covers.
    LoadAccess,
    /// Store (or AMO) to an address no window covers.
    StoreAccess,
    /// Load from a window without read permission.
    LoadDenied,
    /// Store to read-only memory.
    StoreDenied,
    /// Instruction fetch from memory that is not executable.
    FetchAccess,
    /// Misaligned AMO / LR / SC (the core splits plain accesses, not atomics).
    Misaligned,
    /// Undecodable or privileged instruction; the raw bits are in `addr`.
    IllegalInstruction,
    /// `ebreak`.
    Breakpoint,
    /// The instruction budget ran out (PsPIN's HPU watchdog, seed 001 §3.2.3).
    Watchdog,
    /// `ecall` with a service number the runtime does not provide.
    UnknownService,
    /// A runtime service rejected the request (e.g. a bad guest pointer).
    ServiceFault,
}

impl FaultKind {
    /// The fault of a failed data access (an AMO counts as a store).
    pub(crate) fn of_access(e: AccessError, store: bool) -> FaultKind {
        match (e, store) {
            (AccessError::Unmapped, false) => FaultKind::LoadAccess,
            (AccessError::Unmapped, true) => FaultKind::StoreAccess,
            (AccessError::Denied, false) => FaultKind::LoadDenied,
            (AccessError::Denied, true) => FaultKind::StoreDenied,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::LoadAccess => "load access fault",
            FaultKind::StoreAccess => "store access fault",
            FaultKind::LoadDenied => "load from non-readable memory",
            FaultKind::StoreDenied => "store to read-only memory",
            FaultKind::FetchAccess => "instruction fetch from non-executable memory",
            FaultKind::Misaligned => "misaligned atomic access",
            FaultKind::IllegalInstruction => "illegal instruction",
            FaultKind::Breakpoint => "breakpoint (ebreak)",
            FaultKind::Watchdog => "watchdog: instruction budget exhausted",
            FaultKind::UnknownService => "unknown ecall service",
            FaultKind::ServiceFault => "runtime service fault",
        }
    }
}

/// A guest fault: cause, pc of the faulting instruction, and the address
/// involved (data address, raw instruction bits, or service number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub pc: u32,
    pub addr: u32,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            FaultKind::IllegalInstruction => "bits",
            FaultKind::UnknownService | FaultKind::ServiceFault => "service",
            FaultKind::Watchdog | FaultKind::Breakpoint => "",
            _ => "address",
        };
        write!(f, "{} at pc=0x{:08x}", self.kind.name(), self.pc)?;
        if !what.is_empty() {
            write!(f, " {what}=0x{:08x}", self.addr)?;
        }
        Ok(())
    }
}

impl std::error::Error for Fault {}

/// Why [`Hpu::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The handler returned to [`Hpu::return_addr`]; `a0` holds its result.
    Returned,
    /// The guest asked to exit (bare-metal `exit` service) with this status.
    Exit(i32),
    /// The cycle slice given to `run` is used up; call `run` again to go on.
    SliceEnd,
    /// A runtime service suspended the HPU (e.g. waiting on a command). The pc
    /// is already past the `ecall`; the embedding sets the result registers and
    /// calls `run` again when it wants the HPU to resume.
    Suspended,
    Fault(Fault),
}

/// What a runtime service tells the interpreter to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ecall {
    /// Continue after the `ecall` (results already written to a0/a1).
    Continue,
    /// Stop the guest with this exit status.
    Exit(i32),
    /// Stop with [`Stop::Suspended`].
    Suspend,
    /// The service number is unknown.
    Unknown,
    /// The request was invalid in a way that must end the guest.
    Fault,
}

/// Runtime services behind `ecall`, implemented by the embedding (the
/// bare-metal runner, the sPIN engine). Service numbers and argument
/// registers are defined in `sdk/include/softspin_abi.h` / [`crate::abi`].
pub trait Runtime {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall;
}

/// What native code (the JIT, `jit.rs`) shares with the interpreter loop
/// while one of its regions runs.
#[repr(C)]
pub(crate) struct NativeCtx {
    pub regs: *mut u32,
    pub mem: *mut AddressSpace,
    /// The loop's `acc` (cycles in the low half, instructions in the high).
    pub acc: u64,
    /// Taken branches.
    pub taken: u64,
    /// The misaligned-access penalty.
    pub mis: u64,
    /// The loop's `lim`: native code goes on from block to block while the
    /// low half of `acc` is below it, and sets it to 0 when a hardware
    /// loop must stop at the loop's top (as the interpreter does).
    pub lim: u32,
    /// A hardware loop's iteration must stop at the loop's top when the
    /// high half of `acc` (instructions) reaches this: the watchdog or the
    /// flush bound, whichever is nearer.
    pub hw_stop: u64,
    /// Why and where an access faulted (with `EXIT_FAULT`).
    pub fault: FaultKind,
    pub fault_addr: u32,
    /// The loads of AMOs (each also counts as a store, through the memory
    /// path), added to `Hpu::loads` when native code returns.
    pub amo_loads: u64,
}

/// An AMO's new memory value from the old one and `rs2` (`op` is an AMO).
#[inline(always)]
pub(crate) fn amo_value(op: Op, v: u32, s: u32) -> u32 {
    match op {
        Op::AmoSwap => s,
        Op::AmoAdd => v.wrapping_add(s),
        Op::AmoXor => v ^ s,
        Op::AmoAnd => v & s,
        Op::AmoOr => v | s,
        Op::AmoMin => (v as i32).min(s as i32) as u32,
        Op::AmoMax => (v as i32).max(s as i32) as u32,
        Op::AmoMinu => v.min(s),
        _ => v.max(s),
    }
}

/// A compiled region: returns the next slot, or `EXIT_PC | pc` (a pc to
/// enter), or `EXIT_FAULT | slot` (the slot whose access faulted).
pub(crate) type NativeFn = unsafe extern "C" fn(*mut NativeCtx) -> u64;
pub(crate) const EXIT_PC: u64 = 1 << 62;
pub(crate) const EXIT_FAULT: u64 = 2 << 62;

/// Native code, entered by the loop at a block entry instead of
/// interpreting from there. Without the JIT (`Interpreted`) every check of it compiles away.
pub(crate) trait Native {
    const ON: bool;
    /// Stop after one instruction (a debugger's single step, `Hpu::step`).
    const STEP: bool = false;
    /// Stepping: whether the first instruction starts a block, where `run`
    /// checks the slice and the watchdog (mid-block, a step does not, as
    /// `run` would not).
    #[inline(always)]
    fn at_block_entry(&self) -> bool {
        true
    }
    /// The code entered at `slot`, if it has (or now gets) some (only the
    /// JIT has any).
    #[inline(always)]
    fn block(&mut self, _prog: &Program, _slot: usize) -> Option<NativeFn> {
        None
    }
    /// The code entered at `slot` if it is compiled already.
    #[inline(always)]
    fn compiled(&self, _slot: usize) -> Option<NativeFn> {
        None
    }
    /// Every window has latency 0 ([`AddressSpace::zero_latency`]), so the
    /// aligned fast path skips the latency add (~2 host instructions per
    /// access). A service that maps a slower window ends such a loop
    /// through `leave`, and [`Hpu::run`] goes on in the general one.
    const ZERO_LATENCY: bool = false;
    fn leave(&mut self) {}
}

struct Interpreted;

impl Native for Interpreted {
    const ON: bool = false;
}

/// The interpreter while no window has a latency (`Native::ZERO_LATENCY`);
/// `left`: it stopped because a service mapped one.
struct ZeroLatency {
    left: bool,
}

impl Native for ZeroLatency {
    const ON: bool = false;
    const ZERO_LATENCY: bool = true;
    fn leave(&mut self) {
        self.left = true;
    }
}

/// The interpreter, one instruction at a time ([`Hpu::step`]).
struct Stepping {
    entry: bool,
}

impl Native for Stepping {
    const ON: bool = false;
    const STEP: bool = true;
    #[inline(always)]
    fn at_block_entry(&self) -> bool {
        self.entry
    }
}

#[cfg(feature = "jit")]
impl Native for crate::jit::Jit {
    const ON: bool = true;
    #[inline(always)]
    fn block(&mut self, prog: &Program, slot: usize) -> Option<NativeFn> {
        crate::jit::Jit::block(self, prog, slot)
    }
    #[inline(always)]
    fn compiled(&self, slot: usize) -> Option<NativeFn> {
        crate::jit::Jit::compiled(self, slot)
    }
}

/// Architectural and accounting state of one HPU.
pub struct Hpu {
    /// x0..x31, then [`REG_SINK`]; 256 entries so a `u8` index never needs a
    /// bounds check.
    regs: [u32; 256],
    pub pc: u32,
    /// Cycles and retired instructions since reset.
    pub cycles: u64,
    pub instret: u64,
    /// The watchdog: executing past this many retired instructions faults.
    pub instret_limit: u64,
    /// Jumping here ends the handler with [`Stop::Returned`].
    pub return_addr: u32,
    /// Added to the cycle-derived time for `rdtime` (embedding's clock).
    pub time_base_ns: u64,
    pub mem: AddressSpace,
    reservation: Option<(u32, u32)>,
    timing: TimingModel,
    /// Taken branches (for statistics).
    pub taken_branches: u64,
    pub loads: u64,
    pub stores: u64,
    /// `start_call` set up a call that has not run yet: the first `run`
    /// looks for an empty handler ([`Hpu::return_at_entry`]).
    at_call: bool,
}

/// Register ABI names, for diagnostics.
pub const REG_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// Default return address: not 2-byte aligned code can never live there, and
/// no map places code at the top page.
pub const DEFAULT_RETURN_ADDR: u32 = 0xFFFF_FFF0;

impl Hpu {
    pub fn new(timing: &TimingModel) -> Hpu {
        Hpu {
            regs: [0; 256],
            pc: 0,
            cycles: 0,
            instret: 0,
            instret_limit: u64::MAX,
            return_addr: DEFAULT_RETURN_ADDR,
            time_base_ns: 0,
            mem: AddressSpace::new(timing),
            reservation: None,
            timing: timing.clone(),
            taken_branches: 0,
            loads: 0,
            stores: 0,
            at_call: false,
        }
    }

    pub fn timing(&self) -> &TimingModel {
        &self.timing
    }

    #[inline]
    pub fn reg(&self, r: usize) -> u32 {
        if r < 32 {
            self.regs[r]
        } else {
            0
        }
    }

    #[inline]
    pub fn set_reg(&mut self, r: usize, v: u32) {
        if r > 0 && r < 32 {
            self.regs[r] = v;
        }
    }

    /// Reset registers and the reservation for a new handler invocation:
    /// `pc` at `entry`, `ra` at the return address, `sp`, and up to four
    /// arguments. Allocation-free.
    pub fn start_call(&mut self, entry: u32, sp: u32, args: &[u32]) {
        self.regs[..33].fill(0);
        self.regs[1] = self.return_addr;
        self.regs[2] = sp;
        for (k, a) in args.iter().take(8).enumerate() {
            self.regs[10 + k] = *a;
        }
        self.pc = entry;
        self.reservation = None;
        self.at_call = true;
    }

    /// Charge extra cycles (runtime services use this for their costs).
    pub fn add_cycles(&mut self, c: u64) {
        self.cycles += c;
    }

    /// Run until the handler returns, faults, exits, suspends, or `cycles`
    /// reaches `until_cycles` (checked at block boundaries, so a slice may
    /// overrun by at most one block).
    #[inline]
    pub fn run<R: Runtime + ?Sized>(
        &mut self,
        prog: &Program,
        rt: &mut R,
        until_cycles: u64,
    ) -> Stop {
        if std::mem::take(&mut self.at_call) {
            if let Some(stop) = self.return_at_entry(prog, until_cycles) {
                return stop;
            }
        }
        if self.mem.zero_latency() {
            let mut z = ZeroLatency { left: false };
            let stop = self.run_in(prog, rt, until_cycles, &mut z);
            if !z.left {
                return stop;
            }
        }
        self.run_in(prog, rt, until_cycles, &mut Interpreted)
    }

    /// Execute one instruction (a debugger's single step): returns
    /// [`Stop::SliceEnd`] with `pc` at the next instruction, or how the
    /// handler ended or stopped in that instruction. Counts and cycles are
    /// exactly those `run` gives for the same instructions (a block is
    /// charged at entry and what did not retire is taken back, as for a
    /// fault). `block_entry`: the previous instruction ended a block
    /// ([`Program::ends_block_at`]) or none ran yet, so the watchdog is
    /// checked here, where `run` checks it. `prog` must be
    /// [`Program::unfused`]: a superinstruction would execute more than one.
    pub fn step<R: Runtime + ?Sized>(
        &mut self,
        prog: &Program,
        rt: &mut R,
        block_entry: bool,
    ) -> Stop {
        self.at_call = false;
        self.run_in(prog, rt, u64::MAX, &mut Stepping { entry: block_entry })
    }

    /// [`Hpu::run`], entering `jit`'s compiled code where it has some
    /// (same counts, cycles and faults; `jit` must be `prog`'s).
    #[cfg(feature = "jit")]
    pub fn run_jit<R: Runtime + ?Sized>(
        &mut self,
        prog: &Program,
        jit: &mut crate::jit::Jit,
        rt: &mut R,
        until_cycles: u64,
    ) -> Stop {
        // A JIT indexes its slots by `prog`'s: another program's would run
        // out of range. Checked in release builds too; such a JIT is
        // refused and the slice is interpreted.
        if jit.program != prog.id {
            jit.refused += 1;
            return self.run(prog, rt, until_cycles);
        }
        if std::mem::take(&mut self.at_call) {
            if let Some(stop) = self.return_at_entry(prog, until_cycles) {
                return stop;
            }
        }
        self.run_in(prog, rt, until_cycles, jit)
    }

    /// An empty handler: the block at `pc` is a lone `jalr` to
    /// [`Hpu::return_addr`] that links nothing. It returns without entering
    /// the loop, charged what the loop charges for it (its block's cycles
    /// and instruction; no access, no taken-branch penalty), or `None`
    /// where the loop's block-entry check would stop first (slice end,
    /// watchdog) or the return address holds code. Only a call's first
    /// slice asks (`at_call`): later ones would pay the lookup for nothing.
    #[inline(never)]
    fn return_at_entry(&mut self, prog: &Program, until_cycles: u64) -> Option<Stop> {
        let slot = &prog.code[prog.slot(self.pc)?];
        let i = slot.inst;
        if i.op != Op::Jalr || i.rd != REG_SINK {
            return None;
        }
        let t = self.regs[i.rs1 as usize].wrapping_add(i.imm as u32) & !1;
        if t != self.return_addr
            || prog.slot(t).is_some()
            || self.cycles >= until_cycles
            || self.instret >= self.instret_limit
        {
            return None;
        }
        self.cycles += slot.charge.acc & 0xFFFF_FFFF;
        self.instret += slot.charge.acc >> 32;
        self.pc = t;
        Some(Stop::Returned)
    }

    fn run_in<R: Runtime + ?Sized, N: Native>(
        &mut self,
        prog: &Program,
        rt: &mut R,
        until_cycles: u64,
        native: &mut N,
    ) -> Stop {
        // Execution walks a pointer over the slots (`ip`); the slot index
        // is computed only where a side table needs it (`idx!`).
        let code = &prog.code[..];
        let base = code.as_ptr();
        // A pointer to slot `s`.
        macro_rules! at {
            ($s:expr) => {{
                let s: usize = $s;
                debug_assert!(s < code.len());
                // SAFETY: `s` is a slot: from the parcel map, or a direct
                // target the decoder checked against it.
                unsafe { base.add(s) }
            }};
        }
        let mut ip: *const Slot;
        // The sequential successor of a non-terminator.
        macro_rules! next {
            () => {
                // SAFETY: only used past instructions that do not end their
                // run of slots, so slot `idx + 1` exists.
                unsafe { ip.add(1) }
            };
        }
        macro_rules! idx {
            () => {
                // SAFETY: `ip` always points into `code` (see `at!` and the
                // advance at the end of the loop).
                unsafe { ip.offset_from(base) as usize }
            };
        }
        let taken = self.timing.branch_taken_penalty as u64;
        let mis = self.timing.misaligned_penalty as u64;
        let hw_setup = self.timing.alu as u64;
        // The counters live in locals (registers) inside the loop and are
        // written back whenever control leaves it (`sync!`). Cycles and
        // instructions since `cyc0`/`ins0` share one u64 (`acc`, cycles in
        // the low half), so a block entry is one add of its `Charge` and a
        // 32-bit compare against `lim`, the cycles left until the next
        // check (see below for why the low half never carries). Loads and
        // stores are not charged per block: the memory path counts every
        // access it serves anyway (`AddressSpace::served`), which is
        // exactly the retired loads and stores (a failed access counts
        // nothing and faults its instruction), except that an AMO is one
        // access but counts as a load and a store (it adds its load
        // itself). While the loop runs, `self.loads` and `self.stores` hold
        // their totals minus `served` (wrapping; `rebase!`), and `sync!`
        // adds it back. Taken branches are counted in `self` directly:
        // fewer values live across the loop keep the rest in registers.
        let mut cyc0 = self.cycles;
        let mut ins0 = self.instret;
        let mut acc: u64 = 0;
        macro_rules! cyc {
            () => {
                cyc0.wrapping_add(acc & 0xFFFF_FFFF)
            };
        }
        macro_rules! ins {
            () => {
                ins0.wrapping_add(acc >> 32)
            };
        }
        // One comparison per block covers the slice end, the watchdog and
        // the flush of `acc`: every retired instruction costs at least one
        // cycle (so the instruction budget cannot run out before the cycles
        // reach `cyc + (limit - instret)`). Between two checks at most 2^30
        // cycles pass plus one block (under 2^31: at most 2^25 instructions
        // of 64 MiB of code, each under 64 cycles with its memory latency),
        // so no half of `acc` reaches 2^32. Crossing `lim` re-checks
        // precisely and starts the halves from zero. Hardware-loop
        // iterations may cost less than their instructions; they check the
        // watchdog and the instruction half themselves.
        const FLUSH_CYCLES: u64 = 1 << 30;
        let lim_for = |cyc: u64, ins: u64, limit: u64| -> u32 {
            let bound = until_cycles
                .min(cyc.saturating_add(limit.saturating_sub(ins)))
                .min(cyc.saturating_add(FLUSH_CYCLES));
            bound.saturating_sub(cyc) as u32
        };
        let mut lim = lim_for(cyc0, ins0, self.instret_limit);

        // Write the local counters back to `self` (on the way out, and
        // before a check or a service, followed by `rebase!`).
        macro_rules! sync {
            () => {{
                self.cycles = cyc!();
                self.instret = ins!();
                let (ld, st) = self.mem.served();
                self.loads = self.loads.wrapping_add(ld);
                self.stores = self.stores.wrapping_add(st);
            }};
        }
        // Undo `sync!` when the loop goes on.
        macro_rules! rebase {
            () => {{
                let (ld, st) = self.mem.served();
                self.loads = self.loads.wrapping_sub(ld);
                self.stores = self.stores.wrapping_sub(st);
            }};
        }
        rebase!();
        // Enter the decoder cache at `pc`, or leave the loop.
        macro_rules! enter {
            ($pc:expr) => {{
                let pc: u32 = $pc;
                match prog.slot(pc) {
                    Some(s) => s,
                    None => {
                        sync!();
                        self.pc = pc;
                        if pc == self.return_addr {
                            return Stop::Returned;
                        }
                        return Stop::Fault(Fault {
                            kind: FaultKind::FetchAccess,
                            pc,
                            addr: pc,
                        });
                    }
                }
            }};
        }
        ip = at!(enter!(self.pc));
        // `jalr` targets (mostly returns) and their slots, direct-mapped by
        // pc, valid for this call only (the pointers are into `code`, each
        // from `at!(enter!(..))`). A target is even, so the initial key
        // u32::MAX never matches.
        const RET_CACHE: usize = 8;
        let mut ret_cache: [(u32, *const Slot); RET_CACHE] = [(u32::MAX, base); RET_CACHE];
        // Stepping: an instruction retired, stop at the next block entry.
        let mut stepped = false;
        'block: loop {
            if N::STEP && stepped {
                sync!();
                self.pc = prog.pcs[idx!()];
                return Stop::SliceEnd;
            }
            if acc as u32 >= lim && (!N::STEP || native.at_block_entry()) {
                sync!();
                self.pc = prog.pcs[idx!()];
                (cyc0, ins0, acc) = (self.cycles, self.instret, 0);
                if ins0 >= self.instret_limit {
                    return Stop::Fault(Fault {
                        kind: FaultKind::Watchdog,
                        pc: self.pc,
                        addr: 0,
                    });
                }
                if cyc0 >= until_cycles {
                    return Stop::SliceEnd;
                }
                rebase!();
                lim = lim_for(cyc0, ins0, self.instret_limit);
            }
            // Fault inside the block: undo the charge for the instructions
            // that did not retire, record the pc, stop.
            macro_rules! fault {
                ($kind:expr, $addr:expr) => {{
                    // SAFETY: `ip` points at a slot.
                    let rest = unsafe { (*ip).charge };
                    acc -= rest.acc;
                    sync!();
                    let fpc = prog.pcs[idx!()];
                    self.pc = fpc;
                    return Stop::Fault(Fault {
                        kind: $kind,
                        pc: fpc,
                        addr: $addr,
                    });
                }};
            }
            macro_rules! mem {
                ($addr:expr, $len:expr, $perm:expr, $is_store:expr) => {{
                    let a: u32 = $addr;
                    // The fast path serves aligned hits only, so it needs no
                    // misalignment test; everything else comes back here.
                    let fast = if $perm == Perm::R {
                        self.mem.load_aligned(a, $len)
                    } else if $perm == Perm::W {
                        self.mem.store_aligned(a, $len)
                    } else {
                        None
                    };
                    let (p, lat) = match fast {
                        Some(r) => r,
                        None => match self.mem.xlate(a, $len, $perm) {
                            Ok(r) => {
                                // Byte accesses are never misaligned
                                // (`is_multiple_of(1)` folds away).
                                if !a.is_multiple_of($len) {
                                    acc += mis;
                                }
                                r
                            }
                            Err(e) => fault!(FaultKind::of_access(e, $is_store), a),
                        },
                    };
                    // Every window's latency is 0 while the zero-latency
                    // loop runs (it is left when a service maps another).
                    debug_assert!(!N::ZERO_LATENCY || lat == 0);
                    if !N::ZERO_LATENCY {
                        acc += lat as u64;
                    }
                    p
                }};
            }
            if N::ON {
                if let Some(mut f) = native.block(prog, idx!()) {
                    let mut cx = NativeCtx {
                        regs: self.regs.as_mut_ptr(),
                        mem: &mut self.mem,
                        acc,
                        taken: 0,
                        mis,
                        lim,
                        hw_stop: self.instret_limit.saturating_sub(ins0).min(FLUSH_CYCLES),
                        fault: FaultKind::LoadAccess,
                        fault_addr: 0,
                        amo_loads: 0,
                    };
                    let r = loop {
                        // SAFETY: native code touches the registers and
                        // memory through the context only, as the loop would.
                        let r = unsafe { f(&mut cx) };
                        // Straight on to the next compiled block while the
                        // slice lasts (the check at the loop's top).
                        if r < EXIT_PC && (cx.acc as u32) < cx.lim {
                            if let Some(g) = native.compiled(r as usize) {
                                f = g;
                                continue;
                            }
                        }
                        break r;
                    };
                    acc = cx.acc;
                    lim = cx.lim;
                    self.taken_branches += cx.taken;
                    self.loads = self.loads.wrapping_add(cx.amo_loads);
                    let v = r as u32;
                    if r & EXIT_FAULT != 0 {
                        ip = at!(v as usize);
                        fault!(cx.fault, cx.fault_addr)
                    }
                    ip = at!(if r & EXIT_PC != 0 {
                        enter!(v)
                    } else {
                        v as usize
                    });
                    continue 'block;
                }
            }
            // SAFETY: `ip` points at a slot (see `idx!`).
            acc += unsafe { (*ip).charge.acc };
            stepped = N::STEP;

            'inst: loop {
                // SAFETY: `ip` points at a slot: it starts at one, and
                // within a block moves one slot forward past non-terminators
                // only, and every run of slots ends in a terminator (a NoExec
                // sentinel or a Goto).
                let mut i = unsafe { &(*ip).inst };
                let mut imm = i.imm as u32;
                // Operands are read inside each arm, so the dispatch itself
                // keeps few values live (and the fetch index in a register).
                macro_rules! rs1 {
                    () => {
                        self.regs[i.rs1 as usize]
                    };
                }
                macro_rules! rs2 {
                    () => {
                        self.regs[i.rs2 as usize]
                    };
                }
                macro_rules! rd {
                    ($v:expr) => {{
                        let v: u32 = $v;
                        self.regs[i.rd as usize] = v;
                    }};
                }
                // Enter the block at `$p` from a block's end: the entry
                // (check, charge) inline, so the common case goes straight
                // on to the dispatch; crossing `lim` takes the loop's top.
                macro_rules! go {
                    ($p:expr) => {{
                        ip = $p;
                        // With native blocks, every entry looks for one.
                        if N::ON || N::STEP || acc as u32 >= lim {
                            continue 'block;
                        }
                        // SAFETY: `ip` points at a slot.
                        acc += unsafe { (*ip).charge.acc };
                        continue 'inst;
                    }};
                }
                // A conditional branch. Ordinary ones (a direct target, not a
                // hardware loop) test their condition and go; the rest take
                // the slow path. A hardware loop (TimingModel::hw_loops)
                // iterates for free and pays its setup, one ALU cycle, once
                // at the exit. Its iterations may cost fewer cycles than
                // instructions, so the watchdog is checked here.
                macro_rules! branch {
                    ($cond:expr) => {{
                        let t: bool = $cond;
                        // The slot's `imm` is the target slot (see `SlotInst`).
                        if i.imm as u32 != NO_TARGET {
                            if t {
                                acc += taken;
                                self.taken_branches += 1;
                                go!(at!(i.imm as u32 as usize));
                            } else {
                                go!(next!());
                            }
                        } else {
                            let hw = prog.hw_loop.get(idx!()) == Some(&true);
                            let target = prog.insts[idx!()].target;
                            if t {
                                self.taken_branches += 1;
                                if hw {
                                    if ins!() >= self.instret_limit || acc >> 32 >= FLUSH_CYCLES {
                                        lim = 0;
                                    }
                                } else {
                                    acc += taken;
                                }
                                ip = at!(if target != NO_TARGET {
                                    target as usize
                                } else {
                                    enter!(prog.insts[idx!()].imm as u32)
                                });
                            } else {
                                if hw {
                                    acc += hw_setup;
                                }
                                ip = next!();
                            }
                        }
                        continue 'block;
                    }};
                }
                // Bodies shared by the plain arms and the superinstructions.
                // A load or store from `rs1`, or from `$base` where the
                // caller knows the register's value (`li_abs!`).
                macro_rules! lw {
                    () => {
                        lw!(rs1!())
                    };
                    ($base:expr) => {{
                        let p = mem!(($base).wrapping_add(imm), 4, Perm::R, false);
                        // SAFETY: xlate checked 4 bytes.
                        rd!(unsafe { (p as *const u32).read_unaligned() });
                    }};
                }
                macro_rules! sw {
                    () => {
                        sw!(rs1!())
                    };
                    ($base:expr) => {{
                        let p = mem!(($base).wrapping_add(imm), 4, Perm::W, true);
                        // SAFETY: xlate checked 4 bytes.
                        unsafe { (p as *mut u32).write_unaligned(rs2!()) };
                    }};
                }
                macro_rules! lbu {
                    () => {
                        lbu!(rs1!())
                    };
                    ($base:expr) => {{
                        let p = mem!(($base).wrapping_add(imm), 1, Perm::R, false);
                        // SAFETY: xlate checked 1 byte.
                        rd!(unsafe { *p } as u32)
                    }};
                }
                macro_rules! sb {
                    () => {
                        sb!(rs1!())
                    };
                    ($base:expr) => {{
                        let p = mem!(($base).wrapping_add(imm), 1, Perm::W, true);
                        // SAFETY: xlate checked 1 byte.
                        unsafe { *p = rs2!() as u8 };
                    }};
                }
                macro_rules! addi {
                    () => {
                        addi!(rs1!())
                    };
                    ($base:expr) => {
                        rd!(($base).wrapping_add(imm))
                    };
                }
                macro_rules! add {
                    () => {
                        rd!(rs1!().wrapping_add(rs2!()))
                    };
                }
                macro_rules! li {
                    () => {
                        rd!(imm)
                    };
                }
                macro_rules! mul {
                    () => {
                        rd!(rs1!().wrapping_mul(rs2!()))
                    };
                }
                macro_rules! slli {
                    () => {
                        rd!(rs1!() << (imm & 31))
                    };
                }
                macro_rules! srli {
                    () => {
                        rd!(rs1!() >> (imm & 31))
                    };
                }
                macro_rules! andi {
                    () => {
                        rd!(rs1!() & imm)
                    };
                }
                macro_rules! or {
                    () => {
                        rd!(rs1!() | rs2!())
                    };
                }
                macro_rules! and {
                    () => {
                        rd!(rs1!() & rs2!())
                    };
                }
                macro_rules! lh {
                    () => {{
                        let p = mem!(rs1!().wrapping_add(imm), 2, Perm::R, false);
                        // SAFETY: xlate checked 2 bytes.
                        rd!(unsafe { (p as *const i16).read_unaligned() } as u32)
                    }};
                }
                macro_rules! lhu {
                    () => {{
                        let p = mem!(rs1!().wrapping_add(imm), 2, Perm::R, false);
                        // SAFETY: xlate checked 2 bytes.
                        rd!(unsafe { (p as *const u16).read_unaligned() } as u32)
                    }};
                }
                macro_rules! sh {
                    () => {{
                        let p = mem!(rs1!().wrapping_add(imm), 2, Perm::W, true);
                        // SAFETY: xlate checked 2 bytes.
                        unsafe { (p as *mut u16).write_unaligned(rs2!() as u16) };
                    }};
                }
                // Through a small direct-mapped cache of target -> slot (see
                // `ret_cache`); a miss goes through the parcel map.
                macro_rules! jalr {
                    () => {
                        jalr!(rs1!())
                    };
                    ($base:expr) => {{
                        let t = ($base).wrapping_add(imm) & !1;
                        if i.rd != REG_SINK {
                            rd!(prog.insts[idx!()].next);
                        }
                        let e = &mut ret_cache[(t >> 1) as usize % RET_CACHE];
                        go!(if e.0 == t {
                            e.1
                        } else {
                            let p = at!(enter!(t));
                            *e = (t, p);
                            p
                        });
                    }};
                }
                macro_rules! xor {
                    () => {
                        rd!(rs1!() ^ rs2!())
                    };
                }
                macro_rules! bne {
                    () => {
                        branch!(rs1!() != rs2!())
                    };
                }
                macro_rules! blt {
                    () => {
                        branch!((rs1!() as i32) < (rs2!() as i32))
                    };
                }
                macro_rules! bltu {
                    () => {
                        branch!(rs1!() < rs2!())
                    };
                }
                macro_rules! bge {
                    () => {
                        branch!((rs1!() as i32) >= (rs2!() as i32))
                    };
                }
                // Superinstruction: the first half, then on to the second in
                // the next slot, which is then the current one (so its faults,
                // pc and charge roll-back are its own).
                macro_rules! then {
                    ($b:ident $(, $base:expr)?) => {{
                        ip = next!();
                        // SAFETY: as for `i` above: a fused slot (and the
                        // middle of a triple) is no terminator, so the next
                        // slot exists.
                        i = unsafe { &(*ip).inst };
                        // Not every later part reads it.
                        #[allow(unused_assignments)]
                        {
                            imm = i.imm as u32;
                        }
                        $b!($($base)?);
                    }};
                }
                macro_rules! pair {
                    ($a:ident, $b:ident) => {{
                        $a!();
                        then!($b);
                    }};
                }
                // `li rd` then an instruction based on `rd` (`lui` + a
                // global's `%lo` in a load, store or addi, `auipc` + `jalr`
                // in a call): the sum comes from the two immediates, not
                // back through the register just written (a store-to-load
                // round trip on the register file).
                macro_rules! li_abs {
                    ($b:ident) => {{
                        let v = imm;
                        li!();
                        then!($b, v);
                    }};
                }
                // Two `li_abs!` pairs in four slots: on to the third slot,
                // whose `li` starts the second pair.
                macro_rules! li_abs2 {
                    ($b:ident, $d:ident) => {{
                        li_abs!($b);
                        ip = next!();
                        // SAFETY: the slot before is a load or store (no
                        // terminator), so this one exists.
                        i = unsafe { &(*ip).inst };
                        imm = i.imm as u32;
                        li_abs!($d);
                    }};
                }
                macro_rules! triple {
                    ($a:ident, $b:ident, $c:ident) => {{
                        $a!();
                        then!($b);
                        then!($c);
                    }};
                }
                match i.op {
                    Op::Addi => addi!(),
                    Op::Add => add!(),
                    Op::Li => li!(),
                    Op::Lw => lw!(),
                    Op::Sw => sw!(),
                    Op::FAddiAddi => pair!(addi, addi),
                    Op::FLwLw => pair!(lw, lw),
                    Op::FAddAdd => pair!(add, add),
                    Op::FMulAdd => pair!(mul, add),
                    Op::FSlliOr => pair!(slli, or),
                    Op::FSrliSlli => pair!(srli, slli),
                    Op::FAddLw => pair!(add, lw),
                    Op::FAddiBne => pair!(addi, bne),
                    Op::FSwLw => pair!(sw, lw),
                    Op::FLwMul => pair!(lw, mul),
                    Op::FSlliAdd => pair!(slli, add),
                    Op::FAddSw => pair!(add, sw),
                    Op::FAddAddi => pair!(add, addi),
                    Op::FLwBlt => pair!(lw, blt),
                    Op::FLwSrli => pair!(lw, srli),
                    Op::FLwBne => pair!(lw, bne),
                    Op::FLiSb => pair!(li, sb),
                    Op::FXorXor => pair!(xor, xor),
                    Op::FLiAddi => pair!(li, addi),
                    Op::FLiLbu => pair!(li, lbu),
                    Op::FLbuLbu => pair!(lbu, lbu),
                    Op::FAddiBltu => pair!(addi, bltu),
                    Op::FLwAndi => pair!(lw, andi),
                    Op::FSrliAndi => pair!(srli, andi),
                    Op::FAndiAdd => pair!(andi, add),
                    Op::FLbuSlli => pair!(lbu, slli),
                    Op::FSlliSrli => pair!(slli, srli),
                    Op::FOrXor => pair!(or, xor),
                    Op::FLhLh => pair!(lh, lh),
                    Op::FSwSw => pair!(sw, sw),
                    Op::FOrSlli => pair!(or, slli),
                    Op::FAddSlli => pair!(add, slli),
                    Op::FLiLw => pair!(li, lw),
                    Op::FLiLbuAbs => li_abs!(lbu),
                    Op::FLiSbAbs => li_abs!(sb),
                    Op::FLiLwAbs => li_abs!(lw),
                    Op::FLiSwAbs => li_abs!(sw),
                    Op::FLiAddiAbs => li_abs!(addi),
                    Op::FLiJalrAbs => li_abs!(jalr),
                    Op::FAbsSbSb => li_abs2!(sb, sb),
                    Op::FAbsSbLbu => li_abs2!(sb, lbu),
                    Op::FAbsLbuSb => li_abs2!(lbu, sb),
                    Op::FAbsLbuLbu => li_abs2!(lbu, lbu),
                    Op::FOrOr => pair!(or, or),
                    Op::FAddiMul => pair!(addi, mul),
                    Op::FLiJalr => pair!(li, jalr),
                    Op::FSwJalr => pair!(sw, jalr),
                    Op::FXorAndi => pair!(xor, andi),
                    Op::FAndXor => pair!(and, xor),
                    Op::FAddiXor => pair!(addi, xor),
                    Op::FXorBne => pair!(xor, bne),
                    Op::FSrliSrli => pair!(srli, srli),
                    Op::FSrliSw => pair!(srli, sw),
                    Op::FLhuLhu => pair!(lhu, lhu),
                    Op::FShSh => pair!(sh, sh),
                    Op::FAddiSb => pair!(addi, sb),
                    Op::FSbSb => pair!(sb, sb),
                    Op::FLwLwBne => triple!(lw, lw, bne),
                    Op::FLwLwBge => triple!(lw, lw, bge),
                    Op::FLwLwMul => triple!(lw, lw, mul),
                    Op::FSrliSlliOr => triple!(srli, slli, or),
                    Op::FAddiAddiBne => triple!(addi, addi, bne),
                    Op::FMulAddAddi => triple!(mul, add, addi),
                    Op::FAddAddiBltu => triple!(add, addi, bltu),
                    Op::FAddiMulSrli => triple!(addi, mul, srli),
                    Op::FAddiAddiSb => triple!(addi, addi, sb),
                    Op::Beq => branch!(rs1!() == rs2!()),
                    Op::Bne => bne!(),
                    Op::Blt => blt!(),
                    Op::Bge => bge!(),
                    Op::Bltu => bltu!(),
                    Op::Bgeu => branch!(rs1!() >= rs2!()),
                    // The rs2 field holds the 5-bit signed immediate.
                    Op::CvBeqImm => branch!(rs1!() == sext(i.rs2 as u32, 5) as u32),
                    Op::CvBneImm => branch!(rs1!() != sext(i.rs2 as u32, 5) as u32),
                    Op::Jal => {
                        rd!(prog.insts[idx!()].next);
                        go!(at!(if i.imm as u32 != NO_TARGET {
                            i.imm as u32 as usize
                        } else {
                            enter!(prog.insts[idx!()].imm as u32)
                        }));
                    }
                    Op::Jalr => jalr!(),
                    Op::Lb => {
                        let p = mem!(rs1!().wrapping_add(imm), 1, Perm::R, false);
                        // SAFETY: xlate checked 1 byte.
                        rd!(unsafe { *p } as i8 as u32)
                    }
                    Op::Lbu => lbu!(),
                    Op::Lh => lh!(),
                    Op::Lhu => lhu!(),
                    Op::Sb => sb!(),
                    Op::Sh => sh!(),
                    Op::Slti => rd!(((rs1!() as i32) < (imm as i32)) as u32),
                    Op::Sltiu => rd!((rs1!() < imm) as u32),
                    Op::Xori => rd!(rs1!() ^ imm),
                    Op::Ori => rd!(rs1!() | imm),
                    Op::Andi => andi!(),
                    Op::Slli => slli!(),
                    Op::Srli => srli!(),
                    Op::Srai => rd!(((rs1!() as i32) >> (imm & 31)) as u32),
                    Op::Sub => rd!(rs1!().wrapping_sub(rs2!())),
                    Op::Sll => rd!(rs1!() << (rs2!() & 31)),
                    Op::Slt => rd!(((rs1!() as i32) < (rs2!() as i32)) as u32),
                    Op::Sltu => rd!((rs1!() < rs2!()) as u32),
                    Op::Xor => xor!(),
                    Op::Srl => rd!(rs1!() >> (rs2!() & 31)),
                    Op::Sra => rd!(((rs1!() as i32) >> (rs2!() & 31)) as u32),
                    Op::Or => or!(),
                    Op::And => and!(),
                    Op::Mul => mul!(),
                    Op::Mulh => rd!(((rs1!() as i32 as i64 * rs2!() as i32 as i64) >> 32) as u32),
                    Op::Mulhsu => {
                        rd!(((rs1!() as i32 as i64).wrapping_mul(rs2!() as i64) >> 32) as u32)
                    }
                    Op::Mulhu => rd!(((rs1!() as u64 * rs2!() as u64) >> 32) as u32),
                    Op::Div => {
                        let (a, b) = (rs1!() as i32, rs2!() as i32);
                        rd!(if b == 0 {
                            u32::MAX
                        } else {
                            a.wrapping_div(b) as u32
                        })
                    }
                    Op::Divu => rd!(rs1!().checked_div(rs2!()).unwrap_or(u32::MAX)),
                    Op::Rem => {
                        let (a, b) = (rs1!() as i32, rs2!() as i32);
                        rd!(if b == 0 {
                            a as u32
                        } else {
                            a.wrapping_rem(b) as u32
                        })
                    }
                    Op::Remu => rd!(rs1!().checked_rem(rs2!()).unwrap_or(rs1!())),
                    Op::Fence => {}
                    Op::LrW => {
                        let a = rs1!();
                        if a & 3 != 0 {
                            fault!(FaultKind::Misaligned, a)
                        }
                        let p = mem!(a, 4, Perm::R, false);
                        // SAFETY: aligned pointer into a live block.
                        let v = unsafe { atomic_at(p) }.load(SEQ);
                        rd!(v);
                        self.reservation = Some((a, v));
                    }
                    Op::ScW => {
                        let a = rs1!();
                        if a & 3 != 0 {
                            fault!(FaultKind::Misaligned, a)
                        }
                        let p = mem!(a, 4, Perm::W, true);
                        let new = rs2!();
                        // Succeeds only on the reserved word and only if no one
                        // changed it since the LR (value-based reservation).
                        let ok = match self.reservation.take() {
                            // SAFETY: aligned pointer into a live block.
                            Some((ra, v)) if ra == a => unsafe { atomic_at(p) }
                                .compare_exchange(v, new, SEQ, SEQ)
                                .is_ok(),
                            _ => false,
                        };
                        rd!((!ok) as u32);
                    }
                    Op::AmoSwap
                    | Op::AmoAdd
                    | Op::AmoXor
                    | Op::AmoAnd
                    | Op::AmoOr
                    | Op::AmoMin
                    | Op::AmoMax
                    | Op::AmoMinu
                    | Op::AmoMaxu => {
                        let a = rs1!();
                        match self.mem.amo(a, i.op, rs2!()) {
                            Ok((old, lat)) => {
                                acc += lat as u64;
                                // Counted as a store by the memory path,
                                // and as a load here.
                                self.loads = self.loads.wrapping_add(1);
                                rd!(old);
                            }
                            Err(k) => fault!(k, a),
                        }
                    }
                    Op::CsrRead => {
                        // The block (ending here) is already charged; report
                        // the counts before this instruction.
                        let cycles = cyc!() - self.timing.csr.max(1) as u64;
                        let instret = ins!() - 1;
                        let time = self.time_base_ns + self.timing.cycles_to_ns(cycles);
                        rd!(match imm as u16 {
                            csr::CYCLE => cycles as u32,
                            csr::CYCLEH => (cycles >> 32) as u32,
                            csr::INSTRET => instret as u32,
                            csr::INSTRETH => (instret >> 32) as u32,
                            csr::TIME => time as u32,
                            csr::TIMEH => (time >> 32) as u32,
                            _ => 0,
                        });
                        ip = next!();
                        continue 'block;
                    }
                    Op::Ecall => {
                        self.pc = prog.pcs[idx!()];
                        sync!();
                        let action = rt.ecall(self);
                        rebase!();
                        // The service may have charged cycles. `acc` keeps
                        // the ecall's charge, which a fault below rolls back.
                        cyc0 = self.cycles.wrapping_sub(acc & 0xFFFF_FFFF);
                        ins0 = self.instret.wrapping_sub(acc >> 32);
                        lim = acc as u32 + lim_for(self.cycles, self.instret, self.instret_limit);
                        match action {
                            Ecall::Continue => {
                                ip = next!();
                                if N::ZERO_LATENCY && !self.mem.zero_latency() {
                                    sync!();
                                    self.pc = prog.pcs[idx!()];
                                    native.leave();
                                    return Stop::SliceEnd;
                                }
                                continue 'block;
                            }
                            Ecall::Exit(code) => {
                                sync!();
                                self.pc = prog.insts[idx!()].next;
                                return Stop::Exit(code);
                            }
                            Ecall::Suspend => {
                                sync!();
                                self.pc = prog.insts[idx!()].next;
                                return Stop::Suspended;
                            }
                            Ecall::Unknown => {
                                let n = self.regs[17];
                                fault!(FaultKind::UnknownService, n)
                            }
                            Ecall::Fault => {
                                let n = self.regs[17];
                                fault!(FaultKind::ServiceFault, n)
                            }
                        }
                    }
                    Op::CvLbPi
                    | Op::CvLhPi
                    | Op::CvLwPi
                    | Op::CvLbuPi
                    | Op::CvLhuPi
                    | Op::CvLbPr
                    | Op::CvLhPr
                    | Op::CvLwPr
                    | Op::CvLbuPr
                    | Op::CvLhuPr
                    | Op::CvLbRr
                    | Op::CvLhRr
                    | Op::CvLwRr
                    | Op::CvLbuRr
                    | Op::CvLhuRr => {
                        let (w, signed, mode) =
                            corev::load_form(i.op).unwrap_or((4, false, Mode::RegReg));
                        let base = rs1!();
                        let (a, new_base) = match mode {
                            Mode::PostImm => (base, base.wrapping_add(imm)),
                            Mode::PostReg => (base, base.wrapping_add(rs2!())),
                            Mode::RegReg => (base.wrapping_add(rs2!()), base),
                        };
                        // A faulting access leaves rs1 unchanged (mem! returns first).
                        let p = match w {
                            1 => mem!(a, 1, Perm::R, false),
                            2 => mem!(a, 2, Perm::R, false),
                            _ => mem!(a, 4, Perm::R, false),
                        };
                        // SAFETY: xlate checked `w` bytes (1, 2 or 4).
                        let v = unsafe {
                            match (w, signed) {
                                (1, true) => *p as i8 as u32,
                                (1, false) => *p as u32,
                                (2, true) => (p as *const i16).read_unaligned() as u32,
                                (2, false) => (p as *const u16).read_unaligned() as u32,
                                _ => (p as *const u32).read_unaligned(),
                            }
                        };
                        // Base update first, then the loaded value: with rd ==
                        // rs1 the load wins, as in CV32E40P, whose LSU writes
                        // back in WB after the EX-stage address update. x0
                        // stays zero.
                        self.regs[i.rs1 as usize] = new_base;
                        self.regs[0] = 0;
                        rd!(v);
                    }
                    Op::CvSbPi
                    | Op::CvShPi
                    | Op::CvSwPi
                    | Op::CvSbPr
                    | Op::CvShPr
                    | Op::CvSwPr
                    | Op::CvSbRr
                    | Op::CvShRr
                    | Op::CvSwRr => {
                        let (w, mode) = corev::store_form(i.op).unwrap_or((4, Mode::RegReg));
                        let base = rs1!();
                        // imm holds the increment (PostImm) or rs3's number.
                        let rs3 = self.regs[(imm & 31) as usize];
                        let (a, new_base) = match mode {
                            Mode::PostImm => (base, base.wrapping_add(imm)),
                            Mode::PostReg => (base, base.wrapping_add(rs3)),
                            Mode::RegReg => (base.wrapping_add(rs3), base),
                        };
                        let v = rs2!();
                        match w {
                            1 => {
                                let p = mem!(a, 1, Perm::W, true);
                                // SAFETY: xlate checked 1 byte.
                                unsafe { *p = v as u8 }
                            }
                            2 => {
                                let p = mem!(a, 2, Perm::W, true);
                                // SAFETY: xlate checked 2 bytes.
                                unsafe { (p as *mut u16).write_unaligned(v as u16) }
                            }
                            _ => {
                                let p = mem!(a, 4, Perm::W, true);
                                // SAFETY: xlate checked 4 bytes.
                                unsafe { (p as *mut u32).write_unaligned(v) }
                            }
                        }
                        self.regs[i.rs1 as usize] = new_base;
                        self.regs[0] = 0;
                    }
                    Op::CvAbs
                    | Op::CvSlet
                    | Op::CvSletu
                    | Op::CvMin
                    | Op::CvMinu
                    | Op::CvMax
                    | Op::CvMaxu
                    | Op::CvExths
                    | Op::CvExthz
                    | Op::CvExtbs
                    | Op::CvExtbz
                    | Op::CvClip
                    | Op::CvClipu
                    | Op::CvClipr
                    | Op::CvClipur
                    | Op::CvAddN
                    | Op::CvAddUN
                    | Op::CvAddRN
                    | Op::CvAddURN
                    | Op::CvSubN
                    | Op::CvSubUN
                    | Op::CvSubRN
                    | Op::CvSubURN
                    | Op::CvAddNr
                    | Op::CvAddUNr
                    | Op::CvAddRNr
                    | Op::CvAddURNr
                    | Op::CvSubNr
                    | Op::CvSubUNr
                    | Op::CvSubRNr
                    | Op::CvSubURNr
                    | Op::CvMac
                    | Op::CvMsu
                    | Op::CvMulsN
                    | Op::CvMulhhsN
                    | Op::CvMulsRN
                    | Op::CvMulhhsRN
                    | Op::CvMulUN
                    | Op::CvMulhhUN
                    | Op::CvMulURN
                    | Op::CvMulhhURN
                    | Op::CvMacsN
                    | Op::CvMachhsN
                    | Op::CvMacsRN
                    | Op::CvMachhsRN
                    | Op::CvMacUN
                    | Op::CvMachhUN
                    | Op::CvMacURN
                    | Op::CvMachhURN => {
                        // The accumulator is the old rd (an rd of x0 reads the
                        // sink, and the result is discarded there anyway).
                        let d = self.regs[i.rd as usize];
                        rd!(corev::alu(i.op, rs1!(), rs2!(), d, imm));
                    }
                    Op::Ebreak => fault!(FaultKind::Breakpoint, 0),
                    Op::Illegal => fault!(FaultKind::IllegalInstruction, imm),
                    Op::NoExec => fault!(FaultKind::FetchAccess, prog.pcs[idx!()]),
                    Op::Goto => {
                        ip = at!(enter!(imm));
                        continue 'block;
                    }
                }
                ip = next!();
                if N::STEP {
                    // Stop inside the block: the rest of it, charged at its
                    // entry, did not retire.
                    // SAFETY: `ip` points at a slot.
                    acc -= unsafe { (*ip).charge.acc };
                    sync!();
                    self.pc = prog.pcs[idx!()];
                    return Stop::SliceEnd;
                }
            }
        }
    }

    /// Read a register by index (0..32) for embedding code and tests.
    pub fn regs(&self) -> &[u32] {
        &self.regs[..32]
    }

    /// Reset the sink register (never observable, kept tidy for debugging).
    pub fn clear_sink(&mut self) {
        self.regs[REG_SINK as usize] = 0;
    }
}
