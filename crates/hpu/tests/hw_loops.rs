//! The hardware-loop timing option (`TimingModel::hw_loops`): which loops it
//! takes, what they cost, and that the watchdog still stops them. Cycle
//! counts are worked out by hand from the rule in `program.rs`.

mod common;
use common::*;

use softspin_hpu::hpu::Stop;
use softspin_hpu::{FaultKind, TimingModel};

fn timing(hw: bool) -> TimingModel {
    TimingModel {
        hw_loops: hw,
        ..TimingModel::default()
    }
}

const A0: u32 = 10;
const A1: u32 = 11;
const A2: u32 = 12;
const A3: u32 = 13;

fn bne(rs1: u32, rs2: u32, off: i32) -> u32 {
    b(off, rs2, rs1, 1)
}
fn add(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r(0, rs2, rs1, 0, rd, 0x33)
}
fn lw(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 2, rd, 0x03)
}
/// cv.lw rd, (rs1), imm: CORE-V post-increment load (custom-0, funct3 2).
fn cv_lw_pi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 2, rd, 0x0b)
}

/// Cycles of running `body` then exit, with and without hardware loops.
fn cycles(body: &[u32]) -> (u64, u64, u64) {
    let run_with = |hw| {
        let mut w = body.to_vec();
        w.extend(exit());
        let mut m = Machine::with_timing(&w, timing(hw));
        assert!(matches!(m.run(), Stop::Exit(_)));
        (m.hpu.cycles, m.hpu.instret)
    };
    let ((off, i_off), (on, i_on)) = (run_with(false), run_with(true));
    assert_eq!(
        i_off, i_on,
        "instruction counts are the binary's, with or without the option"
    );
    (off, on, i_off)
}

#[test]
fn counted_loop_drops_branch_and_counter() {
    // a0 = 10; loop: a2 += a1; a0 -= 1; bne a0, zero, loop
    let n = 10u64;
    let (off, on, _) = cycles(&[
        addi(A0, 0, n as i32),
        add(A2, A2, A1),
        addi(A0, A0, -1),
        bne(A0, 0, -8),
    ]);
    // Off: per iteration add 1 + addi 1 + bne 1, +2 when taken (n-1 times).
    // On: per iteration add 1 only; the setup (1 cycle) at the exit.
    assert_eq!(off - on, n * 2 + (n - 1) * 2 - 1);
}

#[test]
fn pointer_loop_keeps_its_post_increment() {
    // a0 = DATA, a1 = DATA + 16: loop: cv.lw a3,(a0),4; add a2,a2,a3; bne a0,a1,loop
    let mut w = li(A0, DATA);
    w.extend(li(A1, DATA + 16));
    w.extend([cv_lw_pi(A3, A0, 4), add(A2, A2, A3), bne(A0, A1, -8)]);
    let (off, on, _) = cycles(&w);
    // 4 iterations; the pointer update is the load itself, so only the
    // branch goes: 4 x 1 + 3 taken x 2, less the 1-cycle setup.
    assert_eq!(off - on, 4 + 3 * 2 - 1);
}

#[test]
fn loops_the_compiler_would_not_convert_cost_the_same() {
    // The bound a1 changes in the body: no trip count at the entry.
    let not_counted = [
        addi(A0, 0, 6),
        addi(A1, A1, 1),
        addi(A0, A0, -1),
        bne(A0, A1, -8),
    ];
    // The induction variable is written twice.
    let twice = [
        addi(A0, 0, 8),
        addi(A0, A0, -1),
        addi(A0, A0, -1),
        bne(A0, 0, -8),
    ];
    // Loaded, not stepped by a constant.
    let mut loaded = li(A3, DATA);
    loaded.extend([lw(A0, A3, 0), bne(A0, A1, -4)]);
    for (name, body) in [
        ("not counted", &not_counted[..]),
        ("twice", &twice[..]),
        ("loaded", &loaded[..]),
    ] {
        let (off, on, _) = cycles(body);
        assert_eq!(off, on, "{name}");
    }
}

#[test]
fn counter_read_in_the_body_is_kept() {
    // loop: a2 += a0; a0 -= 1; bne a0, zero, loop (a0 is data as well)
    let n = 6u64;
    let (off, on, _) = cycles(&[
        addi(A0, 0, n as i32),
        add(A2, A2, A0),
        addi(A0, A0, -1),
        bne(A0, 0, -8),
    ]);
    // Only the branch goes: n x 1 + (n-1) x 2, less the setup.
    assert_eq!(off - on, n + (n - 1) * 2 - 1);
}

#[test]
fn watchdog_stops_a_long_hardware_loop() {
    // 1,000,000 iterations of 3 instructions against a budget of 1000.
    let mut w = li(A0, 1_000_000);
    w.extend([add(A2, A2, A1), addi(A0, A0, -1), bne(A0, 0, -8)]);
    w.extend(exit());
    let mut m = Machine::with_timing(&w, timing(true));
    m.hpu.instret_limit = 1000;
    match m.run() {
        Stop::Fault(f) => assert_eq!(f.kind, FaultKind::Watchdog),
        other => panic!("expected the watchdog, got {other:?}"),
    }
    // Stopped within one iteration of the budget.
    assert!(
        m.hpu.instret >= 1000 && m.hpu.instret < 1000 + 3,
        "{}",
        m.hpu.instret
    );
}
