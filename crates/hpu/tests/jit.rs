//! The block JIT (feature `jit`) against the interpreter: random RV32IMA
//! programs (ALU, M, AMOs, every load and store width at aligned and
//! misaligned offsets in two windows, self-loops, calls, and now and then a
//! faulting access) run both ways with every block compiled at its first
//! entry. Stops, registers,
//! counters, access counts and memory must be the same, also when the run
//! is cut into short slices.
#![cfg(feature = "jit")]

mod common;

use common::random::{machine, state};
use common::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::jit::Jit;
use softspin_hpu::TimingModel;

/// Run to a stop other than a slice end, in slices of `slice` cycles.
fn run(m: &mut Machine, mut jit: Option<&mut Jit>, slice: u64) -> Stop {
    loop {
        let until = m.hpu.cycles.saturating_add(slice);
        let stop = match jit.as_deref_mut() {
            Some(j) => m.hpu.run_jit(&m.prog, j, &mut TestRt, until),
            None => m.hpu.run(&m.prog, &mut TestRt, until),
        };
        if stop != Stop::SliceEnd {
            return stop;
        }
    }
}

fn compare(seed: u64, slice: u64) {
    // Host-atomic AMOs on one side, plain ones on the other (both ways
    // round over the seeds): they must not differ either.
    let odd = seed % 2 == 1;
    let mut a = machine(seed);
    a.hpu.mem.set_atomic_amos(odd);
    let sa = run(&mut a, None, slice);
    let mut b = machine(seed);
    b.hpu.mem.set_atomic_amos(!odd);
    let mut jit = Jit::new(&b.prog, &TimingModel::default()).compile_after(1);
    let sb = run(&mut b, Some(&mut jit), slice);
    assert!(jit.compiled > 0, "seed {seed}: nothing was compiled");
    assert_eq!(
        state(&a, sa),
        state(&b, sb),
        "seed {seed}, slices of {slice} cycles"
    );
}

#[test]
fn random_programs_match_the_interpreter() {
    let mut faulted = 0;
    for seed in 1..=300u64 {
        compare(seed, u64::MAX);
        let mut m = machine(seed);
        faulted += matches!(m.run(), Stop::Fault(_)) as u32;
    }
    // The comparison covered faults too (about one program in four can fault).
    assert!(faulted > 10, "only {faulted} programs faulted");
}

#[test]
fn short_slices_match_the_interpreter() {
    for seed in 1..=60u64 {
        for slice in [1, 7, 100] {
            compare(seed, slice);
        }
    }
}

#[test]
fn the_watchdog_stops_a_compiled_loop_at_the_same_instruction() {
    // addi x11, x11, 1; beq x0, x0, -4 (forever)
    let words = [addi(11, 11, 1), b(-4, 0, 0, 0)];
    let mut a = Machine::new(&words);
    a.hpu.instret_limit = 1001;
    let sa = a.run();
    let mut b = Machine::new(&words);
    b.hpu.instret_limit = 1001;
    let mut jit = Jit::new(&b.prog, &TimingModel::default()).compile_after(1);
    let sb = b.hpu.run_jit(&b.prog, &mut jit, &mut TestRt, u64::MAX);
    assert!(matches!(sa, Stop::Fault(f) if f.kind == softspin_hpu::FaultKind::Watchdog));
    assert_eq!(state(&a, sa), state(&b, sb));
}

/// Issue 24: a JIT built for one program and handed another is refused (the
/// slice is interpreted), in release builds too; it used to index the other
/// program's slots with its own, guarded only by a debug_assert.
#[test]
fn a_jit_of_another_program_is_refused() {
    let other = machine(1);
    let mut jit = Jit::new(&other.prog, &TimingModel::default()).compile_after(1);
    let mut a = machine(2);
    let sa = run(&mut a, None, 1000);
    let mut b = machine(2);
    let sb = run(&mut b, Some(&mut jit), 1000);
    assert_eq!(state(&a, sa), state(&b, sb));
    assert_eq!(jit.compiled, 0);
    assert!(jit.refused > 0);
}
