//! Single steps (`Hpu::step`, a debugger's `stepi`) against `Hpu::run`:
//! random programs stepped one instruction at a time end in the same state
//! (registers, cycles, counts, memory, stop) as when run, each step retires
//! exactly one instruction, and hardware loops and faults keep their costs.

mod common;

use common::random::{machine_with, state};
use common::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::TimingModel;

fn compare(seed: u64, t: TimingModel) -> bool {
    let mut a = machine_with(seed, t.clone());
    let sa = a.run();
    let mut b = machine_with(seed, t);
    let prog = b.prog.unfused();
    let mut steps = 0u64;
    let sb = loop {
        let before = b.hpu.instret;
        let stop = b.hpu.step(&prog, &mut TestRt);
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
