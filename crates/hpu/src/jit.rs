//! A JIT (cargo feature `jit`): hot regions of basic blocks compiled to host
//! code with Cranelift, entered by the interpreter loop in place of
//! interpreting them ([`Hpu::run_jit`](crate::hpu::Hpu::run_jit)). A region
//! is the block at a hot entry and the blocks its direct edges reach (up to
//! `MAX_REGION`); its loops run natively.
//!
//! Exactness is by construction, not by tuning: each compiled block is the
//! block the interpreter would run (slot `s` to its terminator), charged the
//! same `Charge` at its start, and an edge between two compiled blocks makes
//! the interpreter's own slice and watchdog test (`acc` against `lim`)
//! before it goes on natively; loads and stores go through the same
//! [`AddressSpace`] paths (so latencies, misalignment penalties, access
//! counts and faults are the interpreter's); taken branches add the same
//! penalty. A fault leaves with the faulting slot, and the interpreter rolls
//! back and reports it as its own. CORE-V's loads, stores, immediate
//! branches and hardware loops are translated, its ALU and MAC operations
//! call `corev::alu`; AMOs take the store way inline or a helper on the
//! interpreter's AMO path; blocks with ecalls, CSR reads or LR/SC are never
//! compiled and stay interpreted.
//!
//! Guest registers are cached within one guest block: loaded from the
//! register file at their first use in it, and those it wrote stored back at
//! its end (and on a fault's way out). Nothing guest-visible is live across
//! a block edge, so a region is entered and left without loading or storing
//! the registers it does not touch there, and register allocation (most of
//! the compile time) sees short live ranges.

use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};

use crate::hpu::{FaultKind, NativeCtx, NativeFn, EXIT_FAULT, EXIT_PC};
use crate::isa::{sext, Inst, Op, NO_TARGET};
use crate::mem::{hot_layout as hl, Perm};
use crate::program::Program;
use crate::timing::TimingModel;

/// Blocks in one compiled region: enough for an inner loop with its
/// conditionals. Larger regions (32) compiled too slowly for the state
/// machines' long compare chains, with all their registers live throughout.
const MAX_REGION: usize = 8;

/// At most this many instructions in one region (an entry block longer than
/// that compiles alone): compile time grows faster than a region's size
/// (register allocation is most of it, a block's values live across its
/// memory helper calls), so long blocks compile alone or with few
/// others. 96 cut nettle-sha256's host
/// instructions by a quarter (callgrind; 48 and 160 did no better overall,
/// docs/perf-interpreter.md, "JIT, second round").
const REGION_BUDGET: usize = 96;

/// Compiled regions of one [`Program`], by entry slot.
pub struct Jit {
    /// The [`Program`] it was built for; `Hpu::run_jit` refuses others.
    pub(crate) program: u64,
    /// Freed with the `Jit` (see `Drop`).
    module: std::mem::ManuallyDrop<JITModule>,
    fctx: FunctionBuilderContext,
    cctx: cranelift_codegen::Context,
    /// Per slot, the entries left before its region compiles (counted
    /// down at every block entry the interpreter makes there); 0 once it
    /// is compiled or refused, and `native` says which. One `u32` per slot
    /// keeps the test the interpreter makes at every block entry to a
    /// load, a compare and a decrement.
    heat: Vec<u32>,
    native: Vec<Option<NativeFn>>,
    /// Per slot, the instructions from it to its block's end (its
    /// `Charge`'s high half).
    lens: Vec<u32>,
    /// The timing model's taken-branch penalty (the one dynamic cost a
    /// block adds itself).
    taken_penalty: u32,
    /// A hardware loop's setup cost (paid at its exit).
    hw_setup: u32,
    /// Regions compiled, and entries refused (left interpreted).
    pub compiled: u64,
    pub refused: u64,
    /// Regions Cranelift failed to compile, as "slot N: error" (each also
    /// counted in `refused` and left interpreted). With the verifier on, a
    /// translator bug lands here: the tests require it empty.
    pub errors: Vec<String>,
}

/// Settings of a [`Jit`], fixed when it is built (as wasmtime's `Config`).
#[derive(Clone, Copy, Debug)]
pub struct JitOptions {
    /// Run Cranelift's IR verifier on every region before compiling it (as
    /// wasmtime's `cranelift_debug_verifier`), so a translator bug is a
    /// compile error in [`Jit::errors`] rather than wrong native code. It
    /// costs compile time: on by default in builds with debug assertions
    /// (debug, `checked`), off in release; the JIT tests turn it on.
    pub verifier: bool,
}

// Not derivable: `false` only in builds without debug assertions.
#[allow(clippy::derivable_impls)]
impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            verifier: cfg!(debug_assertions),
        }
    }
}

impl Jit {
    /// A JIT for `prog`'s blocks (and no other program's), decoded with
    /// `timing` (the model of the HPUs that run it), with the default
    /// [`JitOptions`].
    pub fn new(prog: &Program, timing: &TimingModel) -> Jit {
        Self::with_options(prog, timing, JitOptions::default())
    }

    /// [`Jit::new`] with `options`.
    pub fn with_options(prog: &Program, timing: &TimingModel, options: JitOptions) -> Jit {
        let mut flags = settings::builder();
        // "speed" (egraph optimisation) made blocks both slower to compile
        // and, on matmult, slower to run (docs/perf-interpreter.md).
        flags.set("opt_level", "none").expect("cranelift flag");
        flags
            .set(
                "enable_verifier",
                if options.verifier { "true" } else { "false" },
            )
            .expect("cranelift flag");
        let isa = cranelift_native::builder()
            .expect("host machine supported by cranelift")
            .finish(settings::Flags::new(flags))
            .expect("cranelift isa");
        let module = std::mem::ManuallyDrop::new(JITModule::new(JITBuilder::with_isa(
            isa,
            default_libcall_names(),
        )));
        let cctx = module.make_context();
        Jit {
            program: prog.id,
            module,
            fctx: FunctionBuilderContext::new(),
            cctx,
            heat: Vec::new(),
            native: vec![None; prog.code.len()],
            lens: prog
                .code
                .iter()
                .map(|c| (c.charge.acc >> 32) as u32)
                .collect(),
            taken_penalty: timing.branch_taken_penalty,
            hw_setup: timing.alu,
            compiled: 0,
            refused: 0,
            errors: Vec::new(),
        }
        .compile_after(crate::JIT_COMPILE_AFTER)
    }

    /// Whether Cranelift verifies each region before compiling it (read
    /// back from the code generator's own flags, not from the options).
    pub fn verifier(&self) -> bool {
        self.module.isa().flags().enable_verifier()
    }

    /// Compile a region at its entry's `entries`-th use instead (at least
    /// 1; the tests compile everything at once), or sooner if its entry
    /// block is longer than `LONG_BLOCK` instructions (see `heat`).
    /// Entries already compiled or refused stay so.
    pub fn compile_after(mut self, entries: u32) -> Jit {
        let old = std::mem::take(&mut self.heat);
        self.heat = (self.lens.iter().enumerate())
            .map(|(s, &n)| match old.get(s) {
                Some(0) => 0,
                _ => heat(entries, n),
            })
            .collect();
        self
    }

    /// The native code for the region entered at `slot`, compiling it when
    /// it turns hot.
    #[inline(always)]
    pub(crate) fn block(&mut self, prog: &Program, slot: usize) -> Option<NativeFn> {
        let h = &mut self.heat[slot];
        if *h > 1 {
            *h -= 1;
            return None;
        }
        if *h == 1 {
            return self.compile_at(prog, slot);
        }
        self.native[slot]
    }

    #[inline(always)]
    pub(crate) fn compiled(&self, slot: usize) -> Option<NativeFn> {
        self.native.get(slot).copied().flatten()
    }

    #[cold]
    fn compile_at(&mut self, prog: &Program, slot: usize) -> Option<NativeFn> {
        let f = self.compile(prog, slot);
        self.heat[slot] = 0;
        self.native[slot] = f;
        if f.is_some() {
            self.compiled += 1;
        } else {
            self.refused += 1;
        }
        f
    }

    /// The block from `s0` to its terminator, if every instruction in it is
    /// one the JIT translates.
    fn block_slots(prog: &Program, s0: usize) -> Option<usize> {
        let mut s = s0;
        loop {
            let i = &prog.insts[s];
            if !supported(i.op) {
                return None;
            }
            if i.op.ends_block() {
                let direct = !(i.op == Op::Jal || i.op.is_branch()) || i.target != NO_TARGET;
                return direct.then_some(s);
            }
            s += 1;
        }
    }

    /// The blocks compiled together from entry `s0`: `s0`'s and those
    /// reached from it by direct edges (branches both ways, `jal`), in
    /// discovery order, each as (first slot, terminator slot), up to
    /// `MAX_REGION` blocks. `None` if `s0`'s block is not translatable.
    fn region(prog: &Program, s0: usize) -> Option<Vec<(usize, usize)>> {
        let mut blocks = vec![(s0, Self::block_slots(prog, s0)?)];
        let mut seen = std::collections::HashSet::from([s0]);
        let mut k = 0;
        let mut size = blocks[0].1 - s0 + 1;
        while k < blocks.len() && blocks.len() < MAX_REGION {
            let (_, end) = blocks[k];
            k += 1;
            let i = &prog.insts[end];
            let next: &[usize] = match i.op {
                op if op.is_branch() => &[i.target as usize, end + 1],
                Op::Jal => &[i.target as usize],
                _ => &[],
            };
            for &t in next {
                if blocks.len() < MAX_REGION && seen.insert(t) {
                    if let Some(e) = Self::block_slots(prog, t) {
                        if size + (e - t + 1) <= REGION_BUDGET {
                            size += e - t + 1;
                            blocks.push((t, e));
                        }
                    }
                }
            }
        }
        Some(blocks)
    }

    fn compile(&mut self, prog: &Program, s0: usize) -> Option<NativeFn> {
        let region = Self::region(prog, s0)?;
        let costs = (self.taken_penalty, self.hw_setup);
        let frontend = self.module.target_config();
        match self.define(|b, ptr| {
            let mut t = Translator::new(b, ptr, prog, costs);
            t.region(&region);
            t.b.finalize(frontend);
        }) {
            Ok(f) => Some(f),
            Err(e) => {
                self.errors.push(format!("slot {s0}: {e}"));
                None
            }
        }
    }

    /// Build a function of `NativeFn`'s signature with `build` (which
    /// finalizes its builder) and compile it.
    fn define(
        &mut self,
        build: impl FnOnce(FunctionBuilder<'_>, cranelift_codegen::ir::Type),
    ) -> Result<NativeFn, String> {
        let ptr = self.module.target_config().pointer_type();
        let mut sig = self.module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.returns.push(AbiParam::new(I64));
        let id = self
            .module
            .declare_anonymous_function(&sig)
            .map_err(|e| e.to_string())?;
        self.cctx.func.signature = sig;
        build(
            FunctionBuilder::new(&mut self.cctx.func, &mut self.fctx),
            ptr,
        );
        let defined = self.module.define_function(id, &mut self.cctx);
        self.module.clear_context(&mut self.cctx);
        // `{:?}`: the verifier's messages are in the error's detail.
        defined.map_err(|e| format!("{e:?}"))?;
        self.module
            .finalize_definitions()
            .map_err(|e| e.to_string())?;
        let code = self.module.get_finalized_function(id);
        // SAFETY: the function was built with `NativeFn`'s signature.
        Ok(unsafe { std::mem::transmute::<*const u8, NativeFn>(code) })
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: the code is only called through `Hpu::run_jit`, which
        // borrows the `Jit`, so none of it can run after this.
        unsafe { std::mem::ManuallyDrop::take(&mut self.module).free_memory() };
    }
}

fn supported(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Li | Jal
            | Jalr
            | Beq
            | Bne
            | Blt
            | Bge
            | Bltu
            | Bgeu
            | Lb
            | Lh
            | Lw
            | Lbu
            | Lhu
            | Sb
            | Sh
            | Sw
            | Addi
            | Slti
            | Sltiu
            | Xori
            | Ori
            | Andi
            | Slli
            | Srli
            | Srai
            | Add
            | Sub
            | Sll
            | Slt
            | Sltu
            | Xor
            | Srl
            | Sra
            | Or
            | And
            | Mul
            | Mulh
            | Mulhsu
            | Mulhu
            | Div
            | Divu
            | Rem
            | Remu
            | Fence
            | Goto
            | CvBeqImm
            | CvBneImm
            | AmoSwap
            | AmoAdd
            | AmoXor
            | AmoAnd
            | AmoOr
            | AmoMin
            | AmoMax
            | AmoMinu
            | AmoMaxu
    ) || crate::corev::load_form(op).is_some()
        || crate::corev::store_form(op).is_some()
        || crate::corev::is_alu(op)
}

/// A CORE-V ALU or MAC operation for native code (`op` is an `Op`'s value).
extern "C" fn cv_alu(op: u32, a: u32, b: u32, d: u32, imm: u32) -> u32 {
    // SAFETY: the translator passes `op as u8` of a real `Op` (repr(u8)).
    let op = unsafe { std::mem::transmute::<u8, Op>(op as u8) };
    crate::corev::alu(op, a, b, d, imm)
}

/// One region's translation: guest registers as variables.
struct Translator<'a> {
    b: FunctionBuilder<'a>,
    prog: &'a Program,
    ptr: cranelift_codegen::ir::Type,
    cx: Value,
    regs: Value,
    /// The `AddressSpace`.
    mem: Value,
    /// `acc`, and the inline-tested ways' hit counters, kept in
    /// variables between calls to helpers (which read and write them in
    /// memory): through memory, each would be a store-to-load chain.
    acc: Variable,
    hits: [Option<Variable>; WAYS],
    /// Taken branches so far (added to the context at an exit).
    taken: Variable,
    /// The region's blocks by first slot, and the slice limit
    /// (`NativeCtx::lim`).
    headers: std::collections::HashMap<usize, cranelift_codegen::ir::Block>,
    lim: Option<Value>,
    /// The exit block (its parameter: the code to return).
    exit: cranelift_codegen::ir::Block,
    /// The current guest block's registers as values (each defined where
    /// it dominates the rest of the block), and which it wrote.
    vars: [Option<Value>; 32],
    dirty: [bool; 32],
    sig_load: cranelift_codegen::ir::SigRef,
    sig_store: cranelift_codegen::ir::SigRef,
    sig_amo: cranelift_codegen::ir::SigRef,
    sig_alu: cranelift_codegen::ir::SigRef,
    taken_penalty: u32,
    /// A hardware loop's setup cost (`TimingModel::alu`), paid at its exit.
    hw_setup: u32,
}

/// Blocks up to this many instructions compile at their entry's N-th use
/// (`--jit-after N`); a longer one once it has run `N * LONG_BLOCK`
/// instructions, so long unrolled blocks (Embench's nettle-sha256), entered
/// fewer times, still turn hot.
const LONG_BLOCK: u32 = 16;

/// The entries before a block of `len` instructions compiles, for
/// threshold `entries` (at least 1).
fn heat(entries: u32, len: u32) -> u32 {
    let long = (entries as u64 * LONG_BLOCK as u64).div_ceil(len.max(1) as u64);
    long.clamp(1, entries.max(1) as u64) as u32
}

/// The fast-path caches' ways that native code tests inline: 0, the first
/// load way; 1, the first store way; 2, the second load way (where
/// `AddressSpace`, `hot_layout`, has them).
const WAYS: usize = 3;
fn way_offset(w: usize) -> i32 {
    [hl::LOAD, hl::STORE, hl::LOAD_OLD][w] as i32
}

const TRUSTED: MemFlagsData = MemFlagsData::trusted();

impl<'a> Translator<'a> {
    fn new(
        mut b: FunctionBuilder<'a>,
        ptr: cranelift_codegen::ir::Type,
        prog: &'a Program,
        timing: (u32, u32),
    ) -> Translator<'a> {
        let (taken_penalty, hw_setup) = timing;
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let cx = b.block_params(entry)[0];
        let regs = b
            .ins()
            .load(ptr, TRUSTED, cx, offset_of!(NativeCtx, regs) as i32);
        let mem = b
            .ins()
            .load(ptr, TRUSTED, cx, offset_of!(NativeCtx, mem) as i32);
        let acc = b.declare_var(I64);
        let a = b
            .ins()
            .load(I64, TRUSTED, cx, offset_of!(NativeCtx, acc) as i32);
        b.def_var(acc, a);
        let taken = b.declare_var(I64);
        let zero = b.ins().iconst(I64, 0);
        b.def_var(taken, zero);
        let call_conv = b.func.signature.call_conv;
        let mut load = Signature::new(call_conv);
        load.params.extend([AbiParam::new(ptr), AbiParam::new(I32)]);
        load.returns.push(AbiParam::new(I64));
        let mut store = load.clone();
        store.params.push(AbiParam::new(I32));
        let mut amo = store.clone();
        amo.params.push(AbiParam::new(I32));
        let sig_amo = b.import_signature(amo);
        let sig_load = b.import_signature(load);
        let mut alu = Signature::new(call_conv);
        alu.params.extend([AbiParam::new(I32); 5]);
        alu.returns.push(AbiParam::new(I32));
        let sig_alu = b.import_signature(alu);
        let exit = b.create_block();
        let sig_store = b.import_signature(store);
        Translator {
            b,
            prog,
            ptr,
            cx,
            regs,
            mem,
            acc,
            hits: [None; WAYS],
            taken,
            headers: Default::default(),
            lim: None,
            exit,
            vars: [None; 32],
            dirty: [false; 32],
            sig_load,
            sig_store,
            sig_amo,
            sig_alu,
            taken_penalty,
            hw_setup,
        }
    }

    fn c32(&mut self, v: u32) -> Value {
        self.b.ins().iconst(I32, v as i64)
    }

    fn read(&mut self, r: u8) -> Value {
        let r = r as usize;
        if r == 0 || r >= 32 {
            // x0, and the sink (read only as the accumulator of a MAC into
            // x0, whose result is discarded).
            return self.c32(0);
        }
        match self.vars[r] {
            Some(v) => v,
            None => {
                // Read on the block's straight line (before any split of
                // its control flow), so the value dominates its later uses.
                let x = self.b.ins().load(I32, TRUSTED, self.regs, (4 * r) as i32);
                self.vars[r] = Some(x);
                x
            }
        }
    }

    fn write(&mut self, r: u8, x: Value) {
        let r = r as usize;
        if r == 0 || r >= 32 {
            return;
        }
        self.vars[r] = Some(x);
        self.dirty[r] = true;
    }

    /// Store the registers the current block wrote to the register file
    /// (at its end, where every way out leaves or enters another block,
    /// and where an access faults).
    fn store_regs(&mut self) {
        for r in 1..32 {
            if self.dirty[r] {
                let x = self.vars[r].expect("a written register has a value");
                self.b.ins().store(TRUSTED, x, self.regs, (4 * r) as i32);
            }
        }
    }

    fn add_acc(&mut self, x: Value) {
        let a = self.b.use_var(self.acc);
        let a = self.b.ins().iadd(a, x);
        self.b.def_var(self.acc, a);
    }

    /// The hit counter of way `w` (see `way_offset`) as a variable.
    fn hits(&mut self, w: usize) -> Variable {
        match self.hits[w] {
            Some(v) => v,
            None => {
                debug_assert!(
                    self.lim.is_none(),
                    "way {w}'s hits were not loaded on entry"
                );
                let v = self.b.declare_var(I64);
                let x = self
                    .b
                    .ins()
                    .load(I64, TRUSTED, self.mem, way_offset(w) + hl::HITS as i32);
                self.b.def_var(v, x);
                self.hits[w] = Some(v);
                v
            }
        }
    }

    /// Write `acc` and the hit counters to memory (before a helper call or
    /// an exit).
    fn spill(&mut self) {
        let a = self.b.use_var(self.acc);
        self.b
            .ins()
            .store(TRUSTED, a, self.cx, offset_of!(NativeCtx, acc) as i32);
        for w in 0..WAYS {
            if let Some(v) = self.hits[w] {
                let x = self.b.use_var(v);
                self.b
                    .ins()
                    .store(TRUSTED, x, self.mem, way_offset(w) + hl::HITS as i32);
            }
        }
    }

    /// Read them back after a helper call.
    fn reload(&mut self) {
        let a = self
            .b
            .ins()
            .load(I64, TRUSTED, self.cx, offset_of!(NativeCtx, acc) as i32);
        self.b.def_var(self.acc, a);
        for w in 0..WAYS {
            if let Some(v) = self.hits[w] {
                let x = self
                    .b
                    .ins()
                    .load(I64, TRUSTED, self.mem, way_offset(w) + hl::HITS as i32);
                self.b.def_var(v, x);
            }
        }
    }

    /// Store the counters to memory: the region leaves (the registers are
    /// stored already, see `store_regs`).
    fn flush(&mut self) {
        self.spill();
        let n = self.b.use_var(self.taken);
        self.add_ctx(offset_of!(NativeCtx, taken), n);
    }

    /// Leave the region with `code` (through its one exit block, which
    /// stores the counters).
    fn leave(&mut self, code: Value) {
        self.b.ins().jump(self.exit, &[code.into()]);
    }

    fn leave_const(&mut self, code: u64) {
        let c = self.b.ins().iconst(I64, code as i64);
        self.leave(c);
    }

    /// `ctx.field += x` (a u64 field).
    fn add_ctx(&mut self, off: usize, x: Value) {
        let old = self.b.ins().load(I64, TRUSTED, self.cx, off as i32);
        let new = self.b.ins().iadd(old, x);
        self.b.ins().store(TRUSTED, new, self.cx, off as i32);
    }

    /// Call a memory helper; on a fault, leave with the faulting slot.
    fn call_mem(
        &mut self,
        slot: usize,
        helper: usize,
        sig: cranelift_codegen::ir::SigRef,
        args: &[Value],
    ) -> Value {
        let f = self.b.ins().iconst(self.ptr, helper as i64);
        let mut all = vec![self.cx];
        all.extend_from_slice(args);
        self.spill();
        let call = self.b.ins().call_indirect(sig, f, &all);
        let r = self.b.inst_results(call)[0];
        self.reload();
        let fault = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
        let (fault_blk, ok_blk) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(fault, fault_blk, &[], ok_blk, &[]);
        self.b.seal_block(fault_blk);
        self.b.seal_block(ok_blk);
        self.b.switch_to_block(fault_blk);
        // What the block's earlier instructions wrote stays written.
        self.store_regs();
        self.leave_const(EXIT_FAULT | slot as u64);
        self.b.switch_to_block(ok_blk);
        r
    }

    /// Translate a region. Each guest block charges its `Charge` at its
    /// start and keeps registers as `read`/`write` say; an edge between two
    /// of the region's blocks continues natively only within the slice (the
    /// interpreter's `lim` test), otherwise it leaves with the target slot.
    fn region(&mut self, blocks: &[(usize, usize)]) {
        // The hit counters of the ways its accesses test (a region entered
        // and left often pays for each).
        use crate::isa::Class;
        let classes = || {
            blocks
                .iter()
                .flat_map(|&(first, end)| (first..=end).map(|s| self.prog.insts[s].op.class()))
        };
        let loads = classes().any(|c| c == Class::Load);
        // AMOs test the store way.
        let stores = classes().any(|c| matches!(c, Class::Store | Class::Atomic));
        for (w, used) in [(0, loads), (1, stores), (2, loads)] {
            if used {
                self.hits(w);
            }
        }
        let lim = self
            .b
            .ins()
            .load(I32, TRUSTED, self.cx, offset_of!(NativeCtx, lim) as i32);
        self.lim = Some(lim);
        for &(first, _) in blocks {
            let h = self.b.create_block();
            self.headers.insert(first, h);
        }
        self.b.append_block_param(self.exit, I64);
        let entry = self.headers[&blocks[0].0];
        self.b.ins().jump(entry, &[]);
        for &(first, end) in blocks {
            self.b.switch_to_block(self.headers[&first]);
            self.vars = [None; 32];
            self.dirty = [false; 32];
            let charge = self.prog.code[first].charge.acc;
            let c = self.b.ins().iconst(I64, charge as i64);
            self.add_acc(c);
            for s in first..=end {
                self.inst(s, end);
            }
        }
        self.b.switch_to_block(self.exit);
        self.flush();
        let code = self.b.block_params(self.exit)[0];
        self.b.ins().return_(&[code]);
        self.b.seal_all_blocks();
    }

    /// Go on at slot `t`: natively if it is in the region and the slice
    /// lasts, else leave with it.
    fn edge(&mut self, t: usize) {
        if let (Some(h), Some(lim)) = (self.headers.get(&t).copied(), self.lim) {
            let acc = self.b.use_var(self.acc);
            let low = self.b.ins().ireduce(I32, acc);
            let room = self.b.ins().icmp(IntCC::UnsignedLessThan, low, lim);
            let exit = self.b.create_block();
            self.b.ins().brif(room, h, &[], exit, &[]);
            self.b.switch_to_block(exit);
        }
        self.leave_const(t as u64);
    }

    fn inst(&mut self, s: usize, end: usize) {
        use Op::*;
        let i = self.prog.insts[s];
        let imm = i.imm as u32;
        macro_rules! rr {
            ($f:ident) => {{
                let (a, b) = (self.read(i.rs1), self.read(i.rs2));
                let x = self.b.ins().$f(a, b);
                self.write(i.rd, x);
            }};
        }
        macro_rules! ri {
            ($f:ident) => {{
                let a = self.read(i.rs1);
                let b = self.c32(imm);
                let x = self.b.ins().$f(a, b);
                self.write(i.rd, x);
            }};
        }
        macro_rules! cmp {
            ($cc:expr, $b:expr) => {{
                let a = self.read(i.rs1);
                let b = $b;
                let f = self.b.ins().icmp($cc, a, b);
                let x = self.b.ins().uextend(I32, f);
                self.write(i.rd, x);
            }};
        }
        match i.op {
            Li => {
                let x = self.c32(imm);
                self.write(i.rd, x);
            }
            Addi => ri!(iadd),
            Xori => ri!(bxor),
            Ori => ri!(bor),
            Andi => ri!(band),
            Slli => ri!(ishl),
            Srli => ri!(ushr),
            Srai => ri!(sshr),
            Slti => cmp!(IntCC::SignedLessThan, self.c32(imm)),
            Sltiu => cmp!(IntCC::UnsignedLessThan, self.c32(imm)),
            Add => rr!(iadd),
            Sub => rr!(isub),
            // Cranelift's shifts take the amount modulo 32, as RISC-V does.
            Sll => rr!(ishl),
            Srl => rr!(ushr),
            Sra => rr!(sshr),
            Xor => rr!(bxor),
            Or => rr!(bor),
            And => rr!(band),
            Slt => cmp!(IntCC::SignedLessThan, self.read(i.rs2)),
            Sltu => cmp!(IntCC::UnsignedLessThan, self.read(i.rs2)),
            Mul => rr!(imul),
            Mulh => rr!(smulhi),
            Mulhu => rr!(umulhi),
            Mulhsu => {
                let (a, b) = (self.read(i.rs1), self.read(i.rs2));
                let a = self.b.ins().sextend(I64, a);
                let b = self.b.ins().uextend(I64, b);
                let p = self.b.ins().imul(a, b);
                let h = self.b.ins().ushr_imm_u(p, 32);
                let x = self.b.ins().ireduce(I32, h);
                self.write(i.rd, x);
            }
            Div | Rem | Divu | Remu => self.divide(i.op, i.rd, i.rs1, i.rs2),
            Fence => {}
            Lb | Lh | Lw | Lbu | Lhu | Sb | Sh | Sw => self.mem_op(s, i),
            AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu | AmoMaxu => {
                self.amo_op(s, i)
            }
            op if crate::corev::load_form(op).is_some()
                || crate::corev::store_form(op).is_some() =>
            {
                self.mem_op(s, i)
            }
            op if crate::corev::is_alu(op) => {
                // Through `corev::alu` itself (one definition of each), the
                // old rd being the accumulator.
                let (a, b, d) = (self.read(i.rs1), self.read(i.rs2), self.read(i.rd));
                let f = self
                    .b
                    .ins()
                    .iconst(self.ptr, cv_alu as *const () as usize as i64);
                let opv = self.c32(op as u8 as u32);
                let immv = self.c32(imm);
                let call = self
                    .b
                    .ins()
                    .call_indirect(self.sig_alu, f, &[opv, a, b, d, immv]);
                let x = self.b.inst_results(call)[0];
                self.write(i.rd, x);
            }
            Beq | Bne | Blt | Bge | Bltu | Bgeu | CvBeqImm | CvBneImm => {
                let cc = match i.op {
                    Beq | CvBeqImm => IntCC::Equal,
                    Bne | CvBneImm => IntCC::NotEqual,
                    Blt => IntCC::SignedLessThan,
                    Bge => IntCC::SignedGreaterThanOrEqual,
                    Bltu => IntCC::UnsignedLessThan,
                    _ => IntCC::UnsignedGreaterThanOrEqual,
                };
                let a = self.read(i.rs1);
                // CORE-V's immediate branches keep a 5-bit immediate in rs2.
                let b = if matches!(i.op, CvBeqImm | CvBneImm) {
                    self.c32(sext(i.rs2 as u32, 5) as u32)
                } else {
                    self.read(i.rs2)
                };
                let taken = self.b.ins().icmp(cc, a, b);
                self.store_regs();
                let hw_loop = self.prog.hw_loop.get(end) == Some(&true);
                let (t_blk, f_blk) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(taken, t_blk, &[], f_blk, &[]);
                self.b.switch_to_block(t_blk);
                let n = self.b.use_var(self.taken);
                let n = self.b.ins().iadd_imm_u(n, 1);
                self.b.def_var(self.taken, n);
                if hw_loop {
                    // A hardware loop iterates for free; past the watchdog
                    // or flush bound the interpreter's loop must look at
                    // it (`lim` = 0, as the interpreter sets it).
                    let acc = self.b.use_var(self.acc);
                    let ins = self.b.ins().ushr_imm_u(acc, 32);
                    let stop = self.b.ins().load(
                        I64,
                        TRUSTED,
                        self.cx,
                        offset_of!(NativeCtx, hw_stop) as i32,
                    );
                    let over = self
                        .b
                        .ins()
                        .icmp(IntCC::UnsignedGreaterThanOrEqual, ins, stop);
                    let (halt, go) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(over, halt, &[], go, &[]);
                    self.b.switch_to_block(halt);
                    let zero = self.c32(0);
                    self.b
                        .ins()
                        .store(TRUSTED, zero, self.cx, offset_of!(NativeCtx, lim) as i32);
                    self.leave_const(i.target as u64);
                    self.b.switch_to_block(go);
                } else {
                    let pen = self.b.ins().iconst(I64, self.taken_penalty as i64);
                    self.add_acc(pen);
                }
                self.edge(i.target as usize);
                self.b.switch_to_block(f_blk);
                if hw_loop {
                    // The loop's setup, paid once at its exit.
                    let c = self.b.ins().iconst(I64, self.hw_setup as i64);
                    self.add_acc(c);
                }
                self.edge(end + 1);
            }
            Jal => {
                let link = self.c32(i.next);
                self.write(i.rd, link);
                self.store_regs();
                self.edge(i.target as usize);
            }
            Jalr => {
                let base = self.read(i.rs1);
                let off = self.c32(imm);
                let t = self.b.ins().iadd(base, off);
                let t = self.b.ins().band_imm_u(t, !1u32 as i64);
                let link = self.c32(i.next);
                self.write(i.rd, link);
                let t = self.b.ins().uextend(I64, t);
                let code = self.b.ins().bor_imm_u(t, EXIT_PC as i64);
                self.store_regs();
                self.leave(code);
            }
            Goto => {
                self.store_regs();
                self.leave_const(EXIT_PC | imm as u64)
            }
            _ => unreachable!("block_slots admits only translated ops"),
        }
    }

    /// The aligned hit test of way `w` for `len` bytes at `a` (as
    /// `AddressSpace::hit_aligned`, with the way's limits at `lim2_at` and
    /// `lim4_at`): the offset into the way's window, and whether it hits.
    fn way_test(
        &mut self,
        w: usize,
        a: Value,
        len: u32,
        lim2_at: usize,
        lim4_at: usize,
    ) -> (Value, Value) {
        let way = way_offset(w);
        let base = self
            .b
            .ins()
            .load(I32, TRUSTED, self.mem, way + hl::BASE as i32);
        let o = self.b.ins().isub(a, base);
        let (test, lim_at) = match len {
            1 => (o, hl::SIZE),
            2 => (self.b.ins().rotr_imm_u(o, 1), lim2_at),
            _ => (self.b.ins().rotr_imm_u(o, 2), lim4_at),
        };
        let lim = self
            .b
            .ins()
            .load(I32, TRUSTED, self.mem, way + lim_at as i32);
        (o, self.b.ins().icmp(IntCC::UnsignedLessThan, test, lim))
    }

    /// A hit in way `w` at offset `o`: count it, charge its latency; the
    /// host address.
    fn way_hit(&mut self, w: usize, o: Value) -> Value {
        let way = way_offset(w);
        let hits_var = self.hits(w);
        let hits = self.b.use_var(hits_var);
        let hits = self.b.ins().iadd_imm_u(hits, 1);
        self.b.def_var(hits_var, hits);
        let host = self
            .b
            .ins()
            .load(self.ptr, TRUSTED, self.mem, way + hl::HOST as i32);
        let o64 = self.b.ins().uextend(self.ptr, o);
        let p = self.b.ins().iadd(host, o64);
        let lat = self
            .b
            .ins()
            .load(I32, TRUSTED, self.mem, way + hl::LATENCY as i32);
        let lat = self.b.ins().uextend(I64, lat);
        self.add_acc(lat);
        p
    }

    /// A load or store: the aligned hit tests of `load_aligned` (both load
    /// ways) or `store_aligned` inline, anything else through the helper,
    /// which goes the interpreter's whole way (translation, penalties,
    /// faults).
    fn mem_op(&mut self, s: usize, i: Inst) {
        use crate::corev::{load_form, store_form, Mode};
        use Op::*;
        // Bytes, sign extension, store, CORE-V addressing.
        let (len, signed, store, mode) = match i.op {
            Lb => (1, true, false, None),
            Lbu => (1, false, false, None),
            Lh => (2, true, false, None),
            Lhu => (2, false, false, None),
            Lw => (4, false, false, None),
            Sb => (1, false, true, None),
            Sh => (2, false, true, None),
            Sw => (4, false, true, None),
            op => match (load_form(op), store_form(op)) {
                (Some((w, sg, m)), _) => (w, sg, false, Some(m)),
                (_, Some((w, m))) => (w, false, true, Some(m)),
                _ => unreachable!("mem_op on {op:?}"),
            },
        };
        let base = self.read(i.rs1);
        // CORE-V's register offset: rs2 for loads, rs3 (its number in
        // `imm`) for stores.
        let reg = if store { (i.imm & 31) as u8 } else { i.rs2 };
        let (a, new_base) = match mode {
            None | Some(Mode::PostImm) => {
                let imm = self.c32(i.imm as u32);
                let sum = self.b.ins().iadd(base, imm);
                if mode.is_none() {
                    (sum, None)
                } else {
                    (base, Some(sum))
                }
            }
            Some(Mode::PostReg) => {
                let r = self.read(reg);
                (base, Some(self.b.ins().iadd(base, r)))
            }
            Some(Mode::RegReg) => {
                let r = self.read(reg);
                (self.b.ins().iadd(base, r), None)
            }
        };
        let v = if store { self.read(i.rs2) } else { a };
        let join = self.b.create_block();
        self.b.append_block_param(join, I32);
        // Loads try both load ways inline, as `load_aligned` does; stores
        // the first store way (the second trades places with it on a hit,
        // out of line).
        let ways: &[usize] = if store { &[1] } else { &[0, 2] };
        for &w in ways {
            let (o, fits) = self.way_test(w, a, len, hl::LIM2, hl::LIM4);
            let (hit, next) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(fits, hit, &[], next, &[]);
            self.b.seal_block(hit);
            self.b.seal_block(next);
            self.b.switch_to_block(hit);
            let p = self.way_hit(w, o);
            // Guest memory: aligned (a hit is), never trapping (in bounds).
            let flags = MemFlagsData::new().with_notrap();
            let x = match (store, len, signed) {
                (false, 1, true) => self.b.ins().sload8(I32, flags, p, 0),
                (false, 1, false) => self.b.ins().uload8(I32, flags, p, 0),
                (false, 2, true) => self.b.ins().sload16(I32, flags, p, 0),
                (false, 2, false) => self.b.ins().uload16(I32, flags, p, 0),
                (false, _, _) => self.b.ins().load(I32, flags, p, 0),
                (true, 1, _) => {
                    self.b.ins().istore8(flags, v, p, 0);
                    v
                }
                (true, 2, _) => {
                    self.b.ins().istore16(flags, v, p, 0);
                    v
                }
                (true, _, _) => {
                    self.b.ins().store(flags, v, p, 0);
                    v
                }
            };
            self.b.ins().jump(join, &[x.into()]);
            self.b.switch_to_block(next);
        }

        let helper = match (store, len, signed) {
            (false, 1, true) => ld_b as *const () as usize,
            (false, 1, false) => ld_bu as *const () as usize,
            (false, 2, true) => ld_h as *const () as usize,
            (false, 2, false) => ld_hu as *const () as usize,
            (false, _, _) => ld_w as *const () as usize,
            (true, 1, _) => st_b as *const () as usize,
            (true, 2, _) => st_h as *const () as usize,
            (true, _, _) => st_w as *const () as usize,
        };
        let r = if store {
            self.call_mem(s, helper, self.sig_store, &[a, v])
        } else {
            self.call_mem(s, helper, self.sig_load, &[a])
        };
        let y = if store {
            v
        } else {
            self.b.ins().ireduce(I32, r)
        };
        self.b.ins().jump(join, &[y.into()]);
        self.b.seal_block(join);
        self.b.switch_to_block(join);
        // The base update first, then the loaded value (with rd == rs1 the
        // load wins, as in the interpreter and CV32E40P).
        if let Some(nb) = new_base {
            self.write(i.rs1, nb);
        }
        if !store {
            let x = self.b.block_params(join)[0];
            self.write(i.rd, x);
        }
    }

    /// An AMO: inline when the space's AMOs need no host atomics and the
    /// first store way holds the word in a read-write window (the test of
    /// `AddressSpace::amo_aligned`), else through the helper, which takes
    /// `AddressSpace::amo`, the interpreter's whole AMO path.
    fn amo_op(&mut self, s: usize, i: Inst) {
        use Op::*;
        let (a, v) = (self.read(i.rs1), self.read(i.rs2));
        // The store way's AMO limit (`amo4`) for a 4-byte access.
        let (o, fits) = self.way_test(1, a, 4, hl::LIM2, hl::AMO4);
        let atomic = self
            .b
            .ins()
            .uload8(I32, TRUSTED, self.mem, hl::ATOMIC_AMOS as i32);
        let plain = self.b.ins().icmp_imm_u(IntCC::Equal, atomic, 0);
        let inline = self.b.ins().band(fits, plain);
        let (hit, miss, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.append_block_param(join, I32);
        self.b.ins().brif(inline, hit, &[], miss, &[]);
        self.b.seal_block(hit);
        self.b.seal_block(miss);

        self.b.switch_to_block(hit);
        let p = self.way_hit(1, o);
        let one = self.b.ins().iconst(I64, 1);
        self.add_ctx(offset_of!(NativeCtx, amo_loads), one);
        let flags = MemFlagsData::new().with_notrap();
        let old = self.b.ins().load(I32, flags, p, 0);
        let new = match i.op {
            AmoSwap => v,
            AmoAdd => self.b.ins().iadd(old, v),
            AmoXor => self.b.ins().bxor(old, v),
            AmoAnd => self.b.ins().band(old, v),
            AmoOr => self.b.ins().bor(old, v),
            AmoMin => self.b.ins().smin(old, v),
            AmoMax => self.b.ins().smax(old, v),
            AmoMinu => self.b.ins().umin(old, v),
            _ => self.b.ins().umax(old, v),
        };
        self.b.ins().store(flags, new, p, 0);
        self.b.ins().jump(join, &[old.into()]);

        self.b.switch_to_block(miss);
        let op = self.b.ins().iconst(I32, i.op as u8 as i64);
        let r = self.call_mem(s, amo as *const () as usize, self.sig_amo, &[op, a, v]);
        let y = self.b.ins().ireduce(I32, r);
        self.b.ins().jump(join, &[y.into()]);
        self.b.seal_block(join);
        self.b.switch_to_block(join);
        let x = self.b.block_params(join)[0];
        self.write(i.rd, x);
    }

    /// RISC-V division never traps: by zero it gives all ones (quotient) or
    /// the dividend (remainder); `MIN / -1` overflows to `MIN` (rem 0).
    /// Dividing by 1 instead in the overflow case gives exactly that.
    fn divide(&mut self, op: Op, rd: u8, rs1: u8, rs2: u8) {
        let (a, b) = (self.read(rs1), self.read(rs2));
        let zero = self.b.ins().icmp_imm_u(IntCC::Equal, b, 0);
        let one = self.c32(1);
        let signed = matches!(op, Op::Div | Op::Rem);
        let mut bad = zero;
        if signed {
            let min = self
                .b
                .ins()
                .icmp_imm_u(IntCC::Equal, a, i32::MIN as u32 as i64);
            let m1 = self.b.ins().icmp_imm_u(IntCC::Equal, b, u32::MAX as i64);
            let ovf = self.b.ins().band(min, m1);
            bad = self.b.ins().bor(zero, ovf);
        }
        let d = self.b.ins().select(bad, one, b);
        let q = match op {
            Op::Div => self.b.ins().sdiv(a, d),
            Op::Rem => self.b.ins().srem(a, d),
            Op::Divu => self.b.ins().udiv(a, d),
            _ => self.b.ins().urem(a, d),
        };
        let by_zero = if matches!(op, Op::Div | Op::Divu) {
            self.c32(u32::MAX)
        } else {
            a
        };
        let x = self.b.ins().select(zero, by_zero, q);
        self.write(rd, x);
    }
}

/// The interpreter's memory path (`mem!` in hpu.rs), for native code: the
/// aligned fast path, then translation with its misalignment penalty; the
/// latency goes to `acc`. `None`: a fault, recorded in the context.
#[inline(always)]
unsafe fn access(cx: *mut NativeCtx, a: u32, len: u32, store: bool) -> Option<*mut u8> {
    // SAFETY: the interpreter passes a live context whose `mem` it owns.
    let cx = unsafe { &mut *cx };
    // SAFETY: as above; `mem` is not aliased while native code runs.
    let mem = unsafe { &mut *cx.mem };
    let perm = if store { Perm::W } else { Perm::R };
    let fast = if store {
        mem.store_aligned(a, len)
    } else {
        mem.load_aligned(a, len)
    };
    let (p, lat) = match fast {
        Some(r) => r,
        None => match mem.xlate(a, len, perm) {
            Ok(r) => {
                if !a.is_multiple_of(len) {
                    cx.acc += cx.mis;
                }
                r
            }
            Err(e) => {
                cx.fault = FaultKind::of_access(e, store);
                cx.fault_addr = a;
                return None;
            }
        },
    };
    cx.acc += lat as u64;
    Some(p)
}

const FAULT: u64 = 1 << 63;

macro_rules! load_helper {
    ($name:ident, $len:expr, $t:ty) => {
        /// A load for native code: the value (extended to 32 bits) or `FAULT`.
        unsafe extern "C" fn $name(cx: *mut NativeCtx, a: u32) -> u64 {
            // SAFETY: native code passes its own live context.
            match unsafe { access(cx, a, $len, false) } {
                // SAFETY: `access` checked $len bytes at `p`.
                Some(p) => (unsafe { (p as *const $t).read_unaligned() }) as i32 as u32 as u64,
                None => FAULT,
            }
        }
    };
}
load_helper!(ld_b, 1, i8);
load_helper!(ld_bu, 1, u8);
load_helper!(ld_h, 2, i16);
load_helper!(ld_hu, 2, u16);
load_helper!(ld_w, 4, u32);

macro_rules! store_helper {
    ($name:ident, $len:expr, $t:ty) => {
        /// A store for native code: 0 or `FAULT`.
        unsafe extern "C" fn $name(cx: *mut NativeCtx, a: u32, v: u32) -> u64 {
            // SAFETY: native code passes its own live context.
            match unsafe { access(cx, a, $len, true) } {
                Some(p) => {
                    // SAFETY: `access` checked $len bytes at `p`.
                    unsafe { (p as *mut $t).write_unaligned(v as $t) };
                    0
                }
                None => FAULT,
            }
        }
    };
}
store_helper!(st_b, 1, u8);
store_helper!(st_h, 2, u16);
store_helper!(st_w, 4, u32);

/// An AMO for native code (`op` is an AMO's `Op` value): the old value or
/// `FAULT`, through `AddressSpace::amo` as the interpreter's `amo!`.
unsafe extern "C" fn amo(cx: *mut NativeCtx, op: u32, a: u32, v: u32) -> u64 {
    // SAFETY: as in `access`; `op` comes from a real `Op` (repr(u8)).
    let (c, mem, op) = unsafe {
        (
            &mut *cx,
            &mut *(*cx).mem,
            std::mem::transmute::<u8, Op>(op as u8),
        )
    };
    match mem.amo(a, op, v) {
        Ok((old, lat)) => {
            c.acc += lat as u64;
            c.amo_loads += 1;
            old as u64
        }
        Err(k) => {
            c.fault = k;
            c.fault_addr = a;
            FAULT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function that returns an `i32` where `NativeFn` returns an `i64`:
    /// what a translator bug looks like.
    fn define_ill_typed(jit: &mut Jit) -> Result<NativeFn, String> {
        let frontend = jit.module.target_config();
        jit.define(|mut b, _| {
            let block = b.create_block();
            b.append_block_params_for_function_params(block);
            b.switch_to_block(block);
            b.seal_block(block);
            let v = b.ins().iconst(I32, 0);
            b.ins().return_(&[v]);
            b.finalize(frontend);
        })
    }

    /// Blocks up to `LONG_BLOCK` (16) instructions wait for the threshold's
    /// entries; longer ones for as many instructions; never below one entry.
    #[test]
    fn long_blocks_need_fewer_entries() {
        assert_eq!(heat(65_536, 1), 65_536);
        assert_eq!(heat(65_536, 16), 65_536);
        assert_eq!(heat(65_536, 17), 61_681);
        assert_eq!(heat(65_536, 512), 2_048);
        assert_eq!(heat(100, 64), 25);
        assert_eq!(heat(1, 1_000), 1);
        assert_eq!(heat(3, 0), 3);
        assert_eq!(heat(u32::MAX, 1), u32::MAX);
    }

    /// The verifier option reaches Cranelift, and its verdict reaches
    /// `define`'s caller (the sabotage that shows the tests' check checks).
    #[test]
    fn the_verifier_rejects_ill_typed_code() {
        let timing = TimingModel::default();
        let prog = Program::decode(&[(0x1000, &[0x13, 0, 0, 0])], &timing).unwrap();
        let mut jit = Jit::with_options(&prog, &timing, JitOptions { verifier: true });
        assert!(jit.verifier());
        let err = define_ill_typed(&mut jit).expect_err("the verifier accepted ill-typed code");
        assert!(err.contains("Verifier"), "{err}");
        let off = Jit::with_options(&prog, &timing, JitOptions { verifier: false });
        assert!(!off.verifier());
    }
}
