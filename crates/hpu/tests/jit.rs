//! The block JIT (feature `jit`) against the interpreter: random RV32IMA
//! programs (common/differential.rs, also the fuzz target `jit_diff`) run
//! both ways with every block compiled at its first entry and Cranelift's
//! verifier on. Stops, registers, counters, access counts and memory must be
//! the same, also when the run is cut into short slices.
#![cfg(feature = "jit")]

mod common;
#[path = "common/differential.rs"]
mod differential;

use common::*;
use differential::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::jit::Jit;
use softspin_hpu::TimingModel;

/// The comparisons run with Cranelift's verifier on (a translator bug is a
/// compile error, not wrong code); `Jit::new` has it on exactly in builds
/// with debug assertions (debug, `checked`).
#[test]
fn the_verifier_is_on_in_these_tests_and_in_checked_builds() {
    let m = machine(1);
    assert!(verified_jit(&m).verifier());
    let default = Jit::new(&m.prog, &TimingModel::default());
    assert_eq!(default.verifier(), cfg!(debug_assertions));
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
    let mut jit = verified_jit(&b);
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
    let mut jit = verified_jit(&other);
    let mut a = machine(2);
    let sa = run_sliced(&mut a, None, 1000);
    let mut b = machine(2);
    let sb = run_sliced(&mut b, Some(&mut jit), 1000);
    assert_eq!(state(&a, sa), state(&b, sb));
    assert_eq!(jit.compiled, 0);
    assert!(jit.refused > 0);
}

/// A loop of `body` instructions (one `addi` each, then the counter's
/// decrement and branch) run `iterations` times, then `exit`.
fn counted_loop(body: usize, iterations: u32) -> Vec<u32> {
    let mut w = li(12, iterations);
    w.extend(std::iter::repeat_n(addi(11, 11, 1), body - 2));
    w.push(addi(12, 12, -1));
    // bne x12, x0, back to the loop's first instruction
    w.push(b(-4 * (body as i32 - 1), 0, 12, 1));
    w.extend(exit());
    w
}

/// The threshold counts work, not only entries: at `compile_after(100)` a
/// loop of 64-instruction blocks compiles within 50 iterations (after 25
/// entries, the instructions of 100 entries of a 16-instruction block),
/// a loop of 4-instruction blocks does not. Results stay the interpreter's.
#[test]
fn a_long_block_turns_hot_after_fewer_entries() {
    for (body, compiled) in [(64, true), (4, false)] {
        let words = counted_loop(body, 50);
        let mut a = Machine::new(&words);
        let sa = a.run();
        let mut b = Machine::new(&words);
        let options = softspin_hpu::jit::JitOptions { verifier: true };
        let mut jit =
            Jit::with_options(&b.prog, &TimingModel::default(), options).compile_after(100);
        let sb = b.hpu.run_jit(&b.prog, &mut jit, &mut TestRt, u64::MAX);
        assert_eq!(state(&a, sa), state(&b, sb), "body {body}");
        assert_eq!(b.x(11), 50 * (body as u32 - 2), "body {body}");
        assert_eq!(
            jit.compiled > 0,
            compiled,
            "body {body}: {} compiled",
            jit.compiled
        );
        assert!(jit.errors.is_empty(), "{:?}", jit.errors);
    }
}
