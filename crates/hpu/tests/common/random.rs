//! Random RV32IMA programs (ALU, M, AMOs, every load and store width at
//! aligned and misaligned offsets in two windows, self-loops, calls, and
//! now and then a faulting access) and what a run leaves behind, for tests
//! that compare two ways of running them: the JIT (differential.rs, also
//! the fuzz target jit_diff, which includes `common` by path) and single
//! steps (step.rs).
#![allow(dead_code)]

use super::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::TimingModel;

/// Where the generator's choices come from: a seeded RNG (the tests) or
/// the fuzz input (fuzz/fuzz_targets/jit_diff.rs).
pub trait Choices {
    /// 32 random bits or more (the generator uses the low 32).
    fn next(&mut self) -> u64;
    /// A choice in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The tests' seeded generator (softspin-testkit's).
pub use softspin_testkit::Rng;

impl Choices for Rng {
    fn next(&mut self) -> u64 {
        self.next_u64()
    }
}

/// Choices read from bytes, as few per choice as its range needs (so a
/// fuzzer's byte edits map to single choices); all zero once they run out.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> u64 {
        let k = n.min(self.0.len());
        let (head, tail) = self.0.split_at(k);
        self.0 = tail;
        head.iter().rev().fold(0, |v, &b| v << 8 | b as u64)
    }
}

impl Choices for Bytes<'_> {
    fn next(&mut self) -> u64 {
        self.take(4)
    }
    fn below(&mut self, n: u64) -> u64 {
        let bytes = (64 - (n.max(2) - 1).leading_zeros()).div_ceil(8) as usize;
        self.take(bytes) % n
    }
}

const OP: u32 = 0x33;
const OP_IMM: u32 = 0x13;
const LOAD: u32 = 0x03;
const STORE: u32 = 0x23;

const AMO: u32 = 0x2f;

/// One random instruction of a loop body (an AMO comes with the `addi` that
/// makes its address in x22). Results go to x11..x19; x8 points at the
/// data window, x9 at read-only memory, x20/x21 count loops.
pub fn random_inst<G: Choices>(g: &mut G, faults: bool, w: &mut Vec<u32>) {
    let rd = 11 + g.below(9) as u32;
    let rs = |g: &mut G| 11 + g.below(9) as u32;
    if g.below(12) == 0 {
        // Aligned in the data window; rarely misaligned or read-only.
        let (base, off) = match faults.then(|| g.below(20)) {
            Some(0) => (9, 0),
            Some(1) => (8, 2),
            _ => (8, 4 * g.below(DATA_SIZE as u64 / 4 - 1) as i32 % 2048),
        };
        w.push(addi(22, base, off));
        // amoadd, amoswap, amoxor, amoor, amoand, amomin, amomax, amominu, amomaxu
        let f5 = [0, 1, 4, 8, 12, 16, 20, 24, 28][g.below(9) as usize];
        w.push(r(f5 << 2, rs(g), 22, 2, rd, AMO));
        return;
    }
    w.push(match g.below(10) {
        0..=2 => {
            let (f7, f3) = [
                (0, 0),
                (0x20, 0),
                (0, 1),
                (0, 2),
                (0, 3),
                (0, 4),
                (0, 5),
                (0x20, 5),
                (0, 6),
                (0, 7),
            ][g.below(10) as usize];
            r(f7, rs(g), rs(g), f3, rd, OP)
        }
        3 => r(1, rs(g), rs(g), g.below(8) as u32, rd, OP),
        4..=5 => {
            let f3 = [0, 2, 3, 4, 6, 7, 1, 5, 5][g.below(9) as usize];
            let imm = match f3 {
                1 => g.below(32) as i32,
                5 if g.below(2) == 0 => 0x400 | g.below(32) as i32,
                5 => g.below(32) as i32,
                _ => g.below(4096) as i32 - 2048,
            };
            i(imm, rs(g), f3, rd, OP_IMM)
        }
        6..=7 => {
            // Mostly the data window, a quarter the read-only one (loads
            // alternate between two windows: both load ways); rarely a
            // base that faults.
            let f3 = [0, 1, 2, 4, 5][g.below(5) as usize];
            if faults && g.below(40) == 0 {
                i(
                    g.below(DATA_SIZE as u64 - 4) as i32 % 2048,
                    rs(g),
                    f3,
                    rd,
                    LOAD,
                )
            } else if g.below(4) == 0 {
                i(g.below(0x100 - 4) as i32, 9, f3, rd, LOAD)
            } else {
                i(g.below(DATA_SIZE as u64 - 4) as i32 % 2048, 8, f3, rd, LOAD)
            }
        }
        _ => {
            let base = if faults && g.below(40) == 0 { 9 } else { 8 };
            s(
                g.below(DATA_SIZE as u64 - 4) as i32 % 2048,
                rs(g),
                base,
                g.below(3) as u32,
                STORE,
            )
        }
    });
}

/// The program of `seed` (one in four may fault).
pub fn random_program(seed: u64) -> Vec<u32> {
    random_program_from(&mut Rng::new(seed | 1), seed.is_multiple_of(4))
}

/// prologue; outer: li x20,n; inner: body; addi x20,-1; bne inner;
/// jal func; addi x21,-1; bne outer; exit; func: body; jalr x1.
/// Always ends: the body never writes the loop counters x20/x21.
pub fn random_program_from(g: &mut impl Choices, faults: bool) -> Vec<u32> {
    let mut w = Vec::new();
    w.extend(li(8, DATA));
    w.extend(li(9, RO));
    for rd in 11..20 {
        w.extend(li(rd, g.next() as u32));
    }
    w.extend(li(21, 3));
    let outer = w.len();
    w.extend(li(20, 20 + g.below(200) as u32));
    let inner = w.len();
    for _ in 0..5 + g.below(25) {
        random_inst(g, faults, &mut w);
    }
    w.push(addi(20, 20, -1));
    w.push(b(4 * (inner as i32 - w.len() as i32), 0, 20, 1));
    let call = w.len();
    w.push(0); // jal x1, func (patched below)
    w.push(addi(21, 21, -1));
    w.push(b(4 * (outer as i32 - w.len() as i32), 0, 21, 1));
    w.extend(exit());
    let func = w.len();
    w[call] = j(4 * (func - call) as i32, 1);
    for _ in 0..g.below(8) {
        random_inst(g, false, &mut w);
    }
    w.push(i(0, 1, 0, 0, 0x67)); // jalr x0, 0(x1)
    w
}

/// Everything a run leaves behind.
pub fn state(m: &Machine, stop: Stop) -> String {
    let h = &m.hpu;
    format!(
        "{stop:?} pc={:#x} regs={:?} cycles={} instret={} loads={} stores={} taken={} counts={:?} data={:016x}",
        h.pc,
        h.regs(),
        h.cycles,
        h.instret,
        h.loads,
        h.stores,
        h.taken_branches,
        h.mem.counts(),
        // FNV-1a of the data window (the assertion message stays short).
        m.data.to_vec(0, DATA_SIZE as usize).iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
    )
}

/// The program of `seed` on a machine whose data window holds random bytes
/// (so loads see both signs).
pub fn machine(seed: u64) -> Machine {
    seeded_machine(seed, TimingModel::default())
}

/// [`machine`] under timing model `t`.
pub fn seeded_machine(seed: u64, t: TimingModel) -> Machine {
    machine_timed(
        &random_program(seed),
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        t,
    )
}

/// `words` on a machine whose data window holds the bytes of `data_seed`.
pub fn machine_with(words: &[u32], data_seed: u64) -> Machine {
    machine_timed(words, data_seed, TimingModel::default())
}

/// [`machine_with`] under timing model `t`.
pub fn machine_timed(words: &[u32], data_seed: u64, t: TimingModel) -> Machine {
    let m = Machine::with_timing(words, t);
    let mut g = Rng::new(data_seed | 1);
    let bytes: Vec<u8> = (0..DATA_SIZE).map(|_| g.next() as u8).collect();
    m.data.write(0, &bytes);
    m
}
