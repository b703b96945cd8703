//! Interpreter tests per instruction group, fault kind, and run-control
//! feature. Programs are encoded by `common`; expected values come from Rust
//! reference computations.

// Tables of (opcode, reference function) read best with their types inline.
#![allow(clippy::type_complexity)]

mod common;
use common::*;

use softspin_hpu::hpu::{FaultKind, Stop};
use softspin_hpu::TimingModel;

const EDGES: [u32; 12] = [
    0,
    1,
    2,
    0xffff_ffff,
    0x8000_0000,
    0x7fff_ffff,
    0x8000_0001,
    0xffff_fffe,
    31,
    32,
    0x1234_5678,
    0xdead_beef,
];

/// Run `op rd=7, rs1=5, rs2=6` over every pair of `EDGES`, storing each result
/// to DATA; return the stored words.
fn rr_results(f7: u32, f3: u32) -> Vec<u32> {
    let mut w = li(8, DATA);
    for a in EDGES {
        for bb in EDGES {
            w.extend(li(5, a));
            w.extend(li(6, bb));
            w.push(r(f7, 6, 5, f3, 7, 0x33));
            w.push(s(0, 7, 8, 2, 0x23));
            w.push(addi(8, 8, 4));
        }
    }
    let m = run(&w);
    (0..EDGES.len() * EDGES.len())
        .map(|k| u32::from_le_bytes(m.data.to_vec(k * 4, 4).try_into().unwrap()))
        .collect()
}

fn check_rr(name: &str, f7: u32, f3: u32, f: impl Fn(u32, u32) -> u32) {
    let got = rr_results(f7, f3);
    let mut k = 0;
    for a in EDGES {
        for bb in EDGES {
            assert_eq!(got[k], f(a, bb), "{name}({a:#x}, {bb:#x})");
            k += 1;
        }
    }
}

#[test]
fn rv32i_register_register() {
    check_rr("add", 0, 0, |a, b| a.wrapping_add(b));
    check_rr("sub", 0x20, 0, |a, b| a.wrapping_sub(b));
    check_rr("sll", 0, 1, |a, b| a << (b % 32));
    check_rr("slt", 0, 2, |a, b| ((a as i32) < (b as i32)) as u32);
    check_rr("sltu", 0, 3, |a, b| (a < b) as u32);
    check_rr("xor", 0, 4, |a, b| a ^ b);
    check_rr("srl", 0, 5, |a, b| a >> (b % 32));
    check_rr("sra", 0x20, 5, |a, b| ((a as i32) >> (b % 32)) as u32);
    check_rr("or", 0, 6, |a, b| a | b);
    check_rr("and", 0, 7, |a, b| a & b);
}

#[test]
fn rv32m_including_division_corner_cases() {
    let sx = |v: u32| v as i32 as i128;
    check_rr("mul", 1, 0, |a, b| a.wrapping_mul(b));
    check_rr("mulh", 1, 1, |a, b| ((sx(a) * sx(b)) >> 32) as u32);
    check_rr("mulhsu", 1, 2, |a, b| ((sx(a) * b as i128) >> 32) as u32);
    check_rr("mulhu", 1, 3, |a, b| ((a as u64 * b as u64) >> 32) as u32);
    // The spec's results for x/0 and INT_MIN/-1, written out independently.
    check_rr("div", 1, 4, |a, b| match (a as i32, b as i32) {
        (_, 0) => u32::MAX,
        (i32::MIN, -1) => 0x8000_0000,
        (x, y) => (x / y) as u32,
    });
    check_rr("divu", 1, 5, |a, b| a.checked_div(b).unwrap_or(u32::MAX));
    check_rr("rem", 1, 6, |a, b| match (a as i32, b as i32) {
        (x, 0) => x as u32,
        (i32::MIN, -1) => 0,
        (x, y) => (x % y) as u32,
    });
    check_rr("remu", 1, 7, |a, b| if b == 0 { a } else { a % b });
}

#[test]
fn rv32i_register_immediate() {
    let imms = [0i32, 1, -1, 2047, -2048, 0x555, -0x556];
    let ops: [(u32, &str, fn(u32, i32) -> u32); 6] = [
        (0, "addi", |a, i| a.wrapping_add(i as u32)),
        (2, "slti", |a, i| ((a as i32) < i) as u32),
        (3, "sltiu", |a, i| (a < i as u32) as u32),
        (4, "xori", |a, i| a ^ i as u32),
        (6, "ori", |a, i| a | i as u32),
        (7, "andi", |a, i| a & i as u32),
    ];
    for (f3, name, f) in ops {
        let mut w = li(8, DATA);
        for a in EDGES {
            for imm in imms {
                w.extend(li(5, a));
                w.push(i(imm, 5, f3, 7, 0x13));
                w.push(s(0, 7, 8, 2, 0x23));
                w.push(addi(8, 8, 4));
            }
        }
        let m = run(&w);
        let mut k = 0;
        for a in EDGES {
            for imm in imms {
                let got = u32::from_le_bytes(m.data.to_vec(k * 4, 4).try_into().unwrap());
                assert_eq!(got, f(a, imm), "{name}({a:#x}, {imm})");
                k += 1;
            }
        }
    }
    // Shifts by immediate.
    for sh in [0u32, 1, 7, 31] {
        let mut w = li(5, 0x8765_4321);
        w.push(i(sh as i32, 5, 1, 6, 0x13)); // slli
        w.push(i(sh as i32, 5, 5, 7, 0x13)); // srli
        w.push(i((0x400 | sh) as i32, 5, 5, 9, 0x13)); // srai
        let m = run(&w);
        assert_eq!(m.x(6), 0x8765_4321u32 << sh);
        assert_eq!(m.x(7), 0x8765_4321u32 >> sh);
        assert_eq!(m.x(9), (0x8765_4321u32 as i32 >> sh) as u32);
    }
}

#[test]
fn lui_auipc_and_x0() {
    let w = vec![
        u(0xABCDE000, 5, 0x37), // lui t0
        u(0x00001000, 6, 0x17), // auipc t1, 1  (at CODE+4)
        addi(0, 0, 123),        // write to x0 is dropped
        r(0, 5, 5, 0, 0, 0x33), // add x0, t0, t0
        addi(7, 0, 0),          // t2 = x0
    ];
    let m = run(&w);
    assert_eq!(m.x(5), 0xABCD_E000);
    assert_eq!(m.x(6), CODE + 4 + 0x1000);
    assert_eq!(m.x(7), 0);
    assert_eq!(m.x(0), 0);
}

#[test]
fn loads_stores_sign_and_zero_extension() {
    let mut w = li(8, DATA);
    w.extend(li(5, 0x80FF_7F81));
    w.push(s(0, 5, 8, 2, 0x23)); // sw
    w.push(s(5, 5, 8, 0, 0x23)); // sb at +5
    w.push(s(6, 5, 8, 1, 0x23)); // sh at +6
    for (k, f3) in [0u32, 1, 2, 4, 5].iter().enumerate() {
        w.push(i(0, 8, *f3, 10 + k as u32, 0x03)); // lb lh lw lbu lhu from +0
    }
    w.push(i(3, 8, 0, 15, 0x03)); // lb +3 (0x80)
    w.push(i(1, 8, 1, 16, 0x03)); // lh +1, misaligned (allowed, split)
    let m = run(&w);
    assert_eq!(m.x(10), 0xFFFF_FF81); // lb 0x81
    assert_eq!(m.x(11), 0x0000_7F81); // lh 0x7f81
    assert_eq!(m.x(12), 0x80FF_7F81);
    assert_eq!(m.x(13), 0x81);
    assert_eq!(m.x(14), 0x7F81);
    assert_eq!(m.x(15), 0xFFFF_FF80);
    assert_eq!(m.x(16), 0xFFFF_FF7F); // bytes 7f ff
    assert_eq!(m.data.to_vec(4, 4), vec![0, 0x81, 0x81, 0x7F]);
}

#[test]
fn branches_taken_and_not_taken() {
    // For each branch op and operand pair: t2 = 1 if taken else 0.
    let pairs = [
        (1u32, 2u32),
        (2, 1),
        (5, 5),
        (0xffff_ffff, 1),
        (1, 0xffff_ffff),
    ];
    let ops: [(u32, fn(u32, u32) -> bool); 6] = [
        (0, |a, b| a == b),
        (1, |a, b| a != b),
        (4, |a, b| (a as i32) < (b as i32)),
        (5, |a, b| (a as i32) >= (b as i32)),
        (6, |a, b| a < b),
        (7, |a, b| a >= b),
    ];
    for (f3, f) in ops {
        for (a, bb) in pairs {
            let mut w = li(5, a);
            w.extend(li(6, bb));
            w.push(addi(7, 0, 1));
            w.push(b(8, 6, 5, f3)); // taken: skip the next instruction
            w.push(addi(7, 0, 0));
            let m = run(&w);
            assert_eq!(m.x(7), f(a, bb) as u32, "branch f3={f3} ({a:#x},{bb:#x})");
        }
    }
}

#[test]
fn jal_and_jalr_link_and_target() {
    let w = vec![
        j(8, 1),              // 0x1000: jal ra, +8 -> 0x1008
        addi(5, 0, 99),       // 0x1004: skipped
        addi(6, 0, 7),        // 0x1008
        u(0, 7, 0x17),        // 0x100c: auipc t2, 0 -> 0x100c
        i(13, 7, 0, 9, 0x67), // 0x1010: jalr s1, 13(t2) -> (0x1019 & !1) = 0x1018
        addi(5, 0, 98),       // 0x1014: skipped
        addi(10, 0, 0),       // 0x1018
    ];
    let m = run(&w);
    assert_eq!(m.x(1), CODE + 4);
    assert_eq!(m.x(9), CODE + 0x14);
    assert_eq!(m.x(5), 0);
    assert_eq!(m.x(6), 7);
}

fn amo(f5: u32, rd: u32, rs2: u32, rs1: u32) -> u32 {
    f5 << 27 | rs2 << 20 | rs1 << 15 | 2 << 12 | rd << 7 | 0x2f
}

#[test]
fn atomics_return_old_value_and_update_memory() {
    let ops: [(u32, fn(u32, u32) -> u32); 9] = [
        (0x01, |_, s| s),
        (0x00, |m, s| m.wrapping_add(s)),
        (0x04, |m, s| m ^ s),
        (0x0C, |m, s| m & s),
        (0x08, |m, s| m | s),
        (0x10, |m, s| (m as i32).min(s as i32) as u32),
        (0x14, |m, s| (m as i32).max(s as i32) as u32),
        (0x18, |m, s| m.min(s)),
        (0x1C, |m, s| m.max(s)),
    ];
    for (f5, f) in ops {
        for (mem, src) in [(5u32, 0xffff_fffbu32), (0x8000_0000, 1), (7, 7)] {
            let mut w = li(8, DATA + 16);
            w.extend(li(5, mem));
            w.push(s(0, 5, 8, 2, 0x23));
            w.extend(li(6, src));
            w.push(amo(f5, 7, 6, 8));
            w.push(i(0, 8, 2, 9, 0x03));
            let m = run(&w);
            assert_eq!(m.x(7), mem, "amo {f5:#x} old value");
            assert_eq!(m.x(9), f(mem, src), "amo {f5:#x}({mem:#x},{src:#x})");
        }
    }
}

#[test]
fn lr_sc_success_and_failure() {
    let mut w = li(8, DATA);
    w.extend(li(6, 42));
    w.push(amo(0x02, 5, 0, 8)); // lr.w t0, (s0)
    w.push(amo(0x03, 7, 6, 8)); // sc.w t2, t1, (s0) -> 0 (success)
    w.push(amo(0x03, 9, 6, 8)); // sc.w s1 again: reservation gone -> 1
    w.push(i(0, 8, 2, 10, 0x03));
    let m = run(&w);
    assert_eq!((m.x(7), m.x(9), m.x(10)), (0, 1, 42));
}

#[test]
fn counters_are_exact() {
    // csrr a0, instret; 10 x addi; csrr a1, instret; csrr a2, cycle ...
    let mut w = vec![0xC020_2573];
    w.extend(std::iter::repeat_n(addi(5, 5, 1), 10));
    w.push(0xC020_25F3); // csrr a1, instret
    w.push(0xC000_2673); // csrr a2, cycle
    w.push(0xC000_26F3); // csrr a3, cycle
    w.push(0xC010_2773); // csrr a4, time
    let m = run(&w);
    assert_eq!(
        m.x(11) - m.x(10),
        11,
        "instret counts the first csrr and the 10 addi"
    );
    assert_eq!(
        m.x(13) - m.x(12),
        1,
        "back-to-back cycle reads differ by one csrr"
    );
    // 1 GHz default clock: time (ns) == cycles.
    assert_eq!(m.x(14), m.x(13) + 1);
}

#[test]
fn compressed_instructions_execute() {
    // c.li a0,5; c.addi a0,3; c.mv a1,a0; c.slli a1,2; c.add a1,a0; c.j +2? (next)
    let parcels: [u16; 6] = [0x4515, 0x050D, 0x85AA, 0x058A, 0x95AA, 0x0001];
    let mut bytes: Vec<u8> = parcels.iter().flat_map(|p| p.to_le_bytes()).collect();
    for wd in exit() {
        bytes.extend(wd.to_le_bytes());
    }
    let mut m = Machine::from_bytes(&bytes, TimingModel::default());
    assert!(matches!(m.run(), Stop::Exit(_)));
    assert_eq!(m.x(10), 8);
    assert_eq!(m.x(11), 8 * 4 + 8);
    assert_eq!(m.hpu.instret, 8);
}

fn fault_of(w: &[u32]) -> (FaultKind, u32, u32) {
    let mut v = w.to_vec();
    v.extend(exit());
    let mut m = Machine::new(&v);
    match m.run() {
        Stop::Fault(f) => (f.kind, f.pc, f.addr),
        s => panic!("expected a fault, got {s:?}"),
    }
}

#[test]
fn every_fault_kind_is_reported_with_pc_and_address() {
    let mut w = li(5, 0x4000_0000);
    w.push(i(0, 5, 2, 6, 0x03));
    assert_eq!(fault_of(&w), (FaultKind::LoadAccess, CODE + 8, 0x4000_0000));

    let mut w = li(5, 0x4000_0000);
    w.push(s(4, 0, 5, 2, 0x23));
    assert_eq!(
        fault_of(&w),
        (FaultKind::StoreAccess, CODE + 8, 0x4000_0004)
    );

    let mut w = li(5, RO);
    w.push(s(0, 0, 5, 2, 0x23));
    assert_eq!(fault_of(&w), (FaultKind::StoreDenied, CODE + 8, RO));

    // Store into code (mapped r-x).
    let w = [s(0, 0, 0, 2, 0x23), u(CODE, 5, 0x37), s(0, 0, 5, 2, 0x23)];
    assert_eq!(fault_of(&w[1..]), (FaultKind::StoreDenied, CODE + 4, CODE));

    // Execute data.
    let mut w = li(5, DATA);
    w.push(i(0, 5, 0, 0, 0x67));
    assert_eq!(fault_of(&w), (FaultKind::FetchAccess, DATA, DATA));

    // A read across the end of a window.
    let mut w = li(5, DATA + DATA_SIZE - 2);
    w.push(i(0, 5, 2, 6, 0x03));
    assert_eq!(fault_of(&w).0, FaultKind::LoadAccess);

    let mut w = li(5, DATA + 2);
    w.push(amo(0x00, 6, 0, 5));
    assert_eq!(fault_of(&w), (FaultKind::Misaligned, CODE + 8, DATA + 2));

    assert_eq!(
        fault_of(&[0xFFFF_FFFF]),
        (FaultKind::IllegalInstruction, CODE, 0xFFFF_FFFF)
    );
    assert_eq!(fault_of(&[0xC005_1073]).0, FaultKind::IllegalInstruction); // csrw cycle
    assert_eq!(fault_of(&[0x3020_0073]).0, FaultKind::IllegalInstruction); // mret
    assert_eq!(
        fault_of(&[addi(5, 0, 1), ebreak()]),
        (FaultKind::Breakpoint, CODE + 4, 0)
    );
    assert_eq!(
        fault_of(&[addi(17, 0, 1234), ecall()]),
        (FaultKind::UnknownService, CODE + 4, 1234)
    );
}

#[test]
fn fault_counts_only_retired_instructions() {
    let mut w = li(5, 0x4000_0000); // 2 instructions
    w.push(addi(6, 0, 1));
    w.push(i(0, 5, 2, 6, 0x03)); // faults
    w.push(addi(6, 0, 2));
    let mut m = Machine::new(&w);
    assert!(matches!(m.run(), Stop::Fault(_)));
    assert_eq!(m.hpu.instret, 3);
    assert_eq!(m.hpu.cycles, 3);
    assert_eq!(m.x(6), 1);
}

#[test]
fn an_unknown_service_retires_nothing_of_its_ecall() {
    let mut m = Machine::new(&[addi(5, 0, 1), addi(17, 0, 1234), ecall(), addi(5, 0, 2)]);
    assert!(matches!(m.run(), Stop::Fault(_)));
    assert_eq!((m.hpu.instret, m.hpu.cycles), (2, 2));
    // Again after a block already charged since the run began.
    let mut m = Machine::new(&[addi(5, 0, 1), j(4, 0), addi(17, 0, 1234), ecall()]);
    assert!(matches!(m.run(), Stop::Fault(_)));
    let jump = TimingModel::default().jal as u64;
    assert_eq!((m.hpu.instret, m.hpu.cycles), (3, 2 + jump));
}

#[test]
fn watchdog_stops_an_infinite_loop() {
    let mut m = Machine::new(&[addi(5, 5, 1), j(-4, 0)]);
    m.hpu.instret_limit = 1_000_000;
    match m.run() {
        Stop::Fault(f) => assert_eq!((f.kind, f.pc), (FaultKind::Watchdog, CODE)),
        s => panic!("{s:?}"),
    }
    assert_eq!(m.hpu.instret, 1_000_000);
    assert_eq!(m.x(5), 500_000);
}

#[test]
fn slices_resume_to_the_same_result() {
    let prog = {
        let mut w = li(5, 10_000);
        w.push(addi(6, 6, 3));
        w.push(addi(5, 5, -1));
        w.push(b(-8, 0, 5, 1)); // bnez t0, -8
        w
    };
    let whole = run(&prog);
    let mut w = prog.clone();
    w.extend(exit());
    let mut m = Machine::new(&w);
    let mut slices = 0;
    let st = loop {
        let until = m.hpu.cycles + 100;
        match m.hpu.run(&m.prog, &mut TestRt, until) {
            Stop::SliceEnd => {
                // Never overruns by more than one block (here 3 instructions + penalty).
                assert!(m.hpu.cycles < until + 8);
                slices += 1
            }
            s => break s,
        }
    };
    assert!(matches!(st, Stop::Exit(_)));
    assert!(slices > 100);
    assert_eq!(
        (m.x(6), m.hpu.instret, m.hpu.cycles),
        (whole.x(6), whole.hpu.instret, whole.hpu.cycles)
    );
}

#[test]
fn suspend_resumes_after_the_ecall() {
    let mut w = vec![addi(17, 0, 7), ecall(), addi(5, 10, 1)];
    w.extend(exit());
    let mut m = Machine::new(&w);
    assert_eq!(m.run(), Stop::Suspended);
    assert_eq!(m.hpu.pc, CODE + 8);
    m.hpu.set_reg(10, 41); // the embedding delivers the service's result
    assert!(matches!(m.run(), Stop::Exit(_)));
    assert_eq!(m.x(5), 42);
}

#[test]
fn returning_to_the_return_address_ends_the_handler() {
    let mut m = Machine::new(&[addi(10, 0, 5), i(0, 1, 0, 0, 0x67)]); // ret
    assert_eq!(m.run(), Stop::Returned);
    assert_eq!(m.x(10), 5);
}

#[test]
fn timing_model_charges_hazards_penalties_and_latency() {
    let t = TimingModel::default();
    // lw t1,0(s0) ; addi t1,t1,1 (load-use) ; exit
    let mut w = li(8, DATA);
    w.push(i(0, 8, 2, 6, 0x03));
    w.push(addi(6, 6, 1));
    let m = run(&w);
    let base = 2 * t.alu + t.load + t.load_use_stall + t.alu + t.alu + t.ecall;
    assert_eq!(m.hpu.cycles, base as u64);

    // The same load from L2 (the RO window is class L2) pays its latency.
    let mut w = li(8, RO);
    w.push(i(0, 8, 2, 6, 0x03));
    w.push(addi(6, 6, 1));
    let m = run(&w);
    assert_eq!(m.hpu.cycles, (base + t.mem_latency[2]) as u64);

    // Taken branch, mulh and div.
    let w = vec![
        b(8, 0, 0, 0),
        addi(5, 0, 1),
        r(1, 6, 5, 1, 7, 0x33),
        r(1, 6, 5, 4, 7, 0x33),
    ];
    let m = run(&w);
    let want = t.branch + t.branch_taken_penalty + t.mulh + t.div + t.alu + t.ecall;
    assert_eq!(m.hpu.cycles, want as u64);
    assert_eq!(m.hpu.taken_branches, 1);
}

/// A decoded program is shared by HPUs on several host threads; guest memory
/// is not (`MemBlock` is neither Send nor Sync), so each thread has its own.
#[test]
fn hpus_on_several_threads_share_one_program() {
    use softspin_hpu::{Hpu, MemBlock, MemClass, Perm, Program};
    use std::sync::Arc;
    // Each HPU adds 1 to its counter 10_000 times with amoadd.w.
    let mut w = li(8, DATA);
    w.extend(li(5, 10_000));
    w.push(addi(6, 0, 1));
    w.push(amo(0x00, 0, 6, 8)); // amoadd.w x0, t1, (s0)
    w.push(addi(5, 5, -1));
    w.push(b(-8, 0, 5, 1));
    w.extend(exit());
    let code: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    let t = TimingModel::default();
    let prog = Arc::new(Program::decode(&[(CODE, &code)], &t).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (prog, t) = (prog.clone(), t.clone());
            std::thread::spawn(move || {
                let data = MemBlock::new(DATA_SIZE as usize);
                let mut hpu = Hpu::new(&t);
                hpu.mem
                    .map(DATA, DATA_SIZE, &data, 0, Perm::RW, MemClass::L2)
                    .unwrap();
                hpu.start_call(CODE, 0, &[]);
                let st = hpu.run(&prog, &mut TestRt, u64::MAX);
                let sum = u32::from_le_bytes(data.to_vec(0, 4).try_into().unwrap());
                (matches!(st, Stop::Exit(_)), hpu.instret, sum)
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), (true, 5 + 3 * 10_000 + 2, 10_000));
    }
}

#[test]
fn a_fault_in_the_second_half_of_a_superinstruction_is_its_own() {
    // lui+addi (li), then add+lw: both pairs run as superinstructions.
    let mut w = li(5, 0x4000_0000);
    w.push(addi(7, 0, 1));
    w.push(r(0, 0, 5, 0, 5, 0x33)); // add x5, x5, x0
    w.push(i(0, 5, 2, 6, 0x03)); // lw x6, 0(x5): faults
    w.push(addi(7, 0, 2));
    let lw = w.len() as u32 - 2;
    let mut m = Machine::new(&w);
    match m.run() {
        Stop::Fault(f) => assert_eq!(
            (f.kind, f.pc, f.addr),
            (FaultKind::LoadAccess, CODE + 4 * lw, 0x4000_0000)
        ),
        s => panic!("expected a fault, got {s:?}"),
    }
    assert_eq!(m.hpu.instret, lw as u64);
    assert_eq!(m.hpu.cycles, lw as u64);
    assert_eq!(m.x(7), 1);
}

/// `lui rd` + a load, store or addi based on `rd` (a global's `%hi`/`%lo`)
/// and `auipc` + `jalr` run as one superinstruction that adds the two
/// immediates: it writes the same memory and registers as the two
/// instructions apart, also when the stored value is `rd` itself, and a
/// fault in its second half is that instruction's.
#[test]
fn lui_and_auipc_pairs_add_their_immediates() {
    let lui = |rd: u32, v: u32| u(v, rd, 0x37);
    let at = |k: i32| DATA as i32 + k; // DATA's low 12 bits are zero
    let mut w = vec![addi(6, 0, 0x5a)];
    w.extend([lui(5, DATA), s(at(0x10) & 0xfff, 6, 5, 0, 0x23)]); // sb x6, 0x10(x5)
    w.extend([lui(5, DATA), s(at(0x20) & 0xfff, 5, 5, 2, 0x23)]); // sw x5, 0x20(x5): the value is rd
    w.extend([lui(7, DATA), i(at(0x10) & 0xfff, 7, 4, 8, 0x03)]); // lbu x8, 0x10(x7)
    w.extend([lui(9, DATA), i(at(0x20) & 0xfff, 9, 2, 9, 0x03)]); // lw x9, 0x20(x9): rd is the base
    w.extend([lui(10, DATA), addi(11, 10, 0x44)]); // a global's address
                                                   // auipc + jalr: a call 12 bytes on from the auipc, over one instruction.
    let call = CODE + 4 * w.len() as u32;
    w.extend([
        u(0, 12, 0x17),
        i(12, 12, 0, 1, 0x67),
        addi(13, 0, 9),
        addi(14, 0, 3),
    ]);
    let m = run(&w);
    assert_eq!(m.data.to_vec(0x10, 1), [0x5a]);
    assert_eq!(m.data.to_vec(0x20, 4), DATA.to_le_bytes());
    assert_eq!((m.x(5), m.x(7), m.x(8), m.x(9)), (DATA, DATA, 0x5a, DATA));
    assert_eq!((m.x(10), m.x(11)), (DATA, DATA + 0x44));
    assert_eq!((m.x(12), m.x(1), m.x(13), m.x(14)), (call, call + 8, 0, 3));

    let mut w = vec![
        addi(7, 0, 1),
        lui(5, 0x4000_0000),
        i(8, 5, 2, 6, 0x03),
        addi(7, 0, 2),
    ];
    w.extend(exit());
    let mut m = Machine::new(&w);
    match m.run() {
        Stop::Fault(f) => assert_eq!(
            (f.kind, f.pc, f.addr),
            (FaultKind::LoadAccess, CODE + 8, 0x4000_0008)
        ),
        s => panic!("expected a fault, got {s:?}"),
    }
    assert_eq!((m.hpu.instret, m.x(5), m.x(7)), (2, 0x4000_0000, 1));
}

#[test]
fn two_lui_byte_pairs_in_a_row_run_as_one_from_any_entry() {
    // lui + sb/lbu twice (the four-slot superinstructions), each order.
    let lui = |rd: u32, v: u32| u(v, rd, 0x37);
    let lo = |k: i32| (DATA as i32 + k) & 0xfff; // DATA's low 12 bits are zero
    let sb = |rs2: u32, base: u32, k: i32| s(lo(k), rs2, base, 0, 0x23);
    let lbu = |rd: u32, base: u32, k: i32| i(lo(k), base, 4, rd, 0x03);
    let mut w = vec![addi(6, 0, 0x5a), addi(16, 0, 0x3c)];
    w.extend([lui(5, DATA), sb(6, 5, 0x10), lui(7, DATA), sb(16, 7, 0x11)]); // sb, sb
    w.extend([lui(5, DATA), sb(16, 5, 0x12), lui(7, DATA), lbu(8, 7, 0x10)]); // sb, lbu
    w.extend([lui(9, DATA), lbu(9, 9, 0x11), lui(7, DATA), sb(9, 7, 0x13)]); // lbu, sb: rd is the base
                                                                             // A jump over the first pair of a four-slot group lands on its second.
    w.push(j(12, 0));
    w.extend([
        lui(10, DATA),
        lbu(11, 10, 0x12),
        lui(12, DATA),
        lbu(13, 12, 0x13),
    ]); // lbu, lbu
    let m = run(&w);
    assert_eq!(m.data.to_vec(0x10, 4), [0x5a, 0x3c, 0x3c, 0x3c]);
    assert_eq!((m.x(5), m.x(7), m.x(8), m.x(9)), (DATA, DATA, 0x5a, 0x3c));
    assert_eq!((m.x(10), m.x(11), m.x(12), m.x(13)), (0, 0, DATA, 0x3c));

    // A fault in the fourth slot is that slot's: three retired, the first
    // store done.
    let mut w = vec![
        addi(6, 0, 0x5a),
        lui(5, DATA),
        sb(6, 5, 0x10),
        lui(7, 0x4000_0000),
        s(8, 6, 7, 0, 0x23),
        addi(6, 0, 2),
    ];
    w.extend(exit());
    let mut m = Machine::new(&w);
    match m.run() {
        Stop::Fault(f) => assert_eq!(
            (f.kind, f.pc, f.addr),
            (FaultKind::StoreAccess, CODE + 16, 0x4000_0008)
        ),
        s => panic!("expected a fault, got {s:?}"),
    }
    assert_eq!((m.hpu.instret, m.x(6), m.x(7)), (4, 0x5a, 0x4000_0000));
    assert_eq!(m.data.to_vec(0x10, 1), [0x5a]);
}

#[test]
fn returns_land_at_their_own_call_site_when_sites_share_a_cache_entry() {
    // Two call sites in a loop whose return addresses are 16 bytes apart
    // (the same entry of the interpreter's 8-entry jalr cache).
    let mut w = vec![addi(12, 0, 3)];
    let l = w.len();
    w.extend([
        0,
        addi(11, 11, 1),
        addi(0, 0, 0),
        addi(0, 0, 0),
        0,
        addi(11, 11, 10),
        addi(12, 12, -1),
    ]);
    w.push(b(-4 * (w.len() - l) as i32, 0, 12, 1)); // bne x12, x0, loop
    w.extend(exit());
    let f = w.len();
    w.extend([addi(10, 10, 1), i(0, 1, 0, 0, 0x67)]); // f: a0 += 1; ret
    w[l] = j(4 * (f - l) as i32, 1);
    w[l + 4] = j(4 * (f - l - 4) as i32, 1);
    let mut m = Machine::new(&w);
    assert!(matches!(m.run(), Stop::Exit(_)));
    assert_eq!((m.x(10), m.x(11)), (6, 33));
}

/// Loads and stores are derived from the memory path's own access counts
/// (not charged per block), so check them against a hand count: AMOs count
/// as both, LR as a load, SC as a store, misaligned accesses once, and a
/// faulting access (here mid-block, after a store of the same block) not at
/// all. Slicing the run at every block must give the same totals.
#[test]
fn loads_and_stores_count_retired_accesses_only() {
    let mut w = li(8, DATA);
    w.extend(li(9, RO));
    w.push(i(0, 8, 2, 5, 0x03)); // lw t0, 0(s0)            load 1
    w.push(s(4, 5, 8, 2, 0x23)); // sw t0, 4(s0)            store 1
    w.push(i(2, 8, 2, 6, 0x03)); // lw t1, 2(s0), misaligned load 2
    w.push(amo(0x00, 0, 6, 8)); // amoadd.w x0, t1, (s0)   load 3, store 2
    w.push(amo(0x02, 5, 0, 8)); // lr.w t0, (s0)            load 4
    w.push(amo(0x03, 7, 6, 8)); // sc.w t2, t1, (s0)        store 3
    w.push(i(0, 9, 4, 6, 0x03)); // lbu t1, 0(s1) from L2   load 5
    w.push(s(8, 5, 8, 2, 0x23)); // sw t0, 8(s0)            store 4
    let faulting = w.len() as u32;
    w.push(s(0, 5, 9, 2, 0x23)); // sw t0, 0(s1): read-only, faults
    w.push(s(12, 5, 8, 2, 0x23)); // never runs
    w.extend(exit());

    let mut m = Machine::new(&w);
    assert!(
        matches!(m.run(), Stop::Fault(f) if f.kind == FaultKind::StoreDenied && f.pc == CODE + 4 * faulting)
    );
    assert_eq!((m.hpu.loads, m.hpu.stores), (5, 4));
    let one = (m.hpu.instret, m.hpu.cycles, m.hpu.mem.counts());

    // The same in one-cycle slices (a check at every block entry).
    let mut m = Machine::new(&w);
    let mut until = 0;
    let stop = loop {
        until += 1;
        match m.hpu.run(&m.prog, &mut TestRt, until) {
            Stop::SliceEnd => continue,
            s => break s,
        }
    };
    assert!(matches!(stop, Stop::Fault(f) if f.kind == FaultKind::StoreDenied));
    assert_eq!((m.hpu.loads, m.hpu.stores), (5, 4));
    assert_eq!((m.hpu.instret, m.hpu.cycles, m.hpu.mem.counts()), one);
}

#[test]
fn triples_fault_and_branch_from_their_own_slots() {
    // lw, lw (faults), bne: the second load's fault is its own.
    let mut w = li(5, DATA);
    w.extend(li(8, 0x4000_0000));
    let first = w.len() as u32;
    w.push(i(0, 5, 2, 6, 0x03)); // lw x6, 0(x5)
    w.push(i(0, 8, 2, 7, 0x03)); // lw x7, 0(x8): faults
    w.push(b(8, 7, 6, 1)); // bne x6, x7, +8
    let mut m = Machine::new(&w);
    match m.run() {
        Stop::Fault(f) => assert_eq!(
            (f.kind, f.pc, f.addr),
            (FaultKind::LoadAccess, CODE + 4 * (first + 1), 0x4000_0000)
        ),
        s => panic!("expected a fault, got {s:?}"),
    }
    assert_eq!((m.hpu.instret, m.hpu.loads), (first as u64 + 1, 1));

    // A jump into the middle of a triple runs from that slot; the triple's
    // branch goes where its own slot says, taken or not.
    for (into_middle, word0, taken) in [(true, 0u32, true), (false, 5, false), (false, 0, true)] {
        let mut w = li(5, DATA);
        w.push(j(if into_middle { 8 } else { 4 }, 0));
        w.push(i(0, 5, 2, 6, 0x03)); // lw x6, 0(x5)
        w.push(i(4, 5, 2, 7, 0x03)); // lw x7, 4(x5): 5
        w.push(b(8, 7, 6, 1)); // bne x6, x7, +8
        w.push(addi(10, 10, 1)); // only when equal
        w.push(addi(11, 11, 1));
        w.extend(exit());
        let mut m = Machine::new(&w);
        m.data.write(0, &word0.to_le_bytes());
        m.data.write(4, &5u32.to_le_bytes());
        assert!(matches!(m.run(), Stop::Exit(_)));
        assert_eq!(
            (m.x(10), m.x(11), m.hpu.taken_branches),
            (!taken as u32, 1, taken as u64),
            "{into_middle} {word0}"
        );
        assert_eq!(m.hpu.loads, 2 - into_middle as u64);
    }
}
