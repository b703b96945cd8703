//! Single steps (`Hpu::step`, a debugger's `stepi`) against `Hpu::run`:
//! random programs stepped one instruction at a time end in the same state
//! (registers, cycles, counts, memory, stop) as when run, each step retires
//! exactly one instruction, and hardware loops and faults keep their costs.

mod common;

use common::random::{seeded_machine, state};
use common::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::TimingModel;

fn compare(seed: u64, t: TimingModel) -> bool {
    let mut a = seeded_machine(seed, t.clone());
    let sa = a.run();
    let mut b = seeded_machine(seed, t);
    let prog = b.prog.unfused();
    let mut steps = 0u64;
    let mut last_pc = 0;
    let sb = loop {
        let before = b.hpu.instret;
        let entry = steps == 0 || prog.ends_block_at(last_pc);
        last_pc = b.hpu.pc;
        let stop = b.hpu.step(&prog, &mut TestRt, entry);
        if stop != Stop::SliceEnd {
            break stop;
        }
        steps += 1;
        assert_eq!(
            b.hpu.instret,
            before + 1,
            "seed {seed}: a step retired {} instructions at pc {:#x}",
            b.hpu.instret - before,
            b.hpu.pc
        );
        assert!(
            prog.inst_at(b.hpu.pc).is_some(),
            "seed {seed}: stopped at {:#x}, not an instruction",
            b.hpu.pc
        );
    };
    // The last instruction retires (an exit) or not (a fault).
    let n = b.hpu.instret;
    assert!(
        steps == n || steps + 1 == n,
        "seed {seed}: {steps} steps, {n} instructions"
    );
    assert_eq!(state(&a, sa), state(&b, sb), "seed {seed}");
    matches!(sa, Stop::Fault(_))
}

#[test]
fn stepping_random_programs_ends_as_running_them() {
    let mut faulted = 0;
    for seed in 1..=150u64 {
        faulted += compare(seed, TimingModel::default()) as u32;
    }
    assert!(faulted > 5, "only {faulted} programs faulted");
}

#[test]
fn stepping_keeps_hardware_loop_costs() {
    let t = TimingModel {
        hw_loops: true,
        ..TimingModel::default()
    };
    for seed in 1..=60u64 {
        compare(seed, t.clone());
    }
}

/// Steps that end a slice where `run` would (the first block entry at or
/// past the slice's end) and check the watchdog only at block entries stop
/// at the same points, with the same state, as `run` in slices.
#[test]
fn stepped_slices_and_the_watchdog_match_run() {
    for seed in 1..=60u64 {
        for (slice, limit) in [(7u64, u64::MAX), (50, 2000), (1, 500)] {
            let mut a = seeded_machine(seed, TimingModel::default());
            a.hpu.instret_limit = limit;
            let mut ends_a = Vec::new();
            let sa = loop {
                let until = a.hpu.cycles + slice;
                match a.hpu.run(&a.prog, &mut TestRt, until) {
                    Stop::SliceEnd => ends_a.push((a.hpu.pc, a.hpu.cycles)),
                    s => break s,
                }
            };
            let mut b = seeded_machine(seed, TimingModel::default());
            b.hpu.instret_limit = limit;
            let prog = b.prog.unfused();
            let mut ends_b = Vec::new();
            let mut entry = true;
            let mut until = b.hpu.cycles + slice;
            let sb = loop {
                // The watchdog first (the step faults), as in `run`.
                if entry && b.hpu.cycles >= until && b.hpu.instret < limit {
                    ends_b.push((b.hpu.pc, b.hpu.cycles));
                    until = b.hpu.cycles + slice;
                }
                let pc = b.hpu.pc;
                match b.hpu.step(&prog, &mut TestRt, entry) {
                    Stop::SliceEnd => entry = prog.ends_block_at(pc),
                    s => break s,
                }
            };
            assert_eq!(ends_a, ends_b, "seed {seed} slice {slice}");
            assert_eq!(
                state(&a, sa),
                state(&b, sb),
                "seed {seed} slice {slice} limit {limit}"
            );
        }
    }
}
