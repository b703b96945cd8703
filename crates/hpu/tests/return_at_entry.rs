//! An empty handler (its first block a lone return) ends without entering
//! the interpreter's loop (`Hpu::return_at_entry`): the same stop, pc,
//! cycles and counts as the loop gives, computed here by single steps
//! (`Hpu::step`, which always runs the loop), and the loop's block-entry
//! stops (slice end, watchdog) still come first.

mod common;

use common::*;
use softspin_hpu::hpu::{FaultKind, Stop};
use softspin_hpu::TimingModel;

const RET: u32 = 0x0000_8067; // jalr x0, 0(ra)
const C_RET: [u8; 2] = [0x82, 0x80]; // c.jr ra
const JALR_RA_RA: u32 = 0x0000_80e7; // jalr ra, 0(ra): links, not empty

fn machines(code: &[u8], t: &TimingModel) -> (Machine, Machine) {
    (
        Machine::from_bytes(code, t.clone()),
        Machine::from_bytes(code, t.clone()),
    )
}

fn snapshot(m: &Machine) -> (u32, u64, u64, u64, u64, u64, u32) {
    let h = &m.hpu;
    (
        h.pc,
        h.cycles,
        h.instret,
        h.loads,
        h.stores,
        h.taken_branches,
        h.reg(1),
    )
}

#[test]
fn an_empty_handler_ends_as_the_loop_ends_it() {
    let pspin = TimingModel {
        hw_loops: true,
        ..TimingModel::default()
    };
    let four: Vec<u8> = RET.to_le_bytes().to_vec();
    let link: Vec<u8> = JALR_RA_RA.to_le_bytes().to_vec();
    for t in [TimingModel::default(), pspin] {
        for code in [&four[..], &C_RET[..], &link[..]] {
            let (mut a, mut b) = machines(code, &t);
            // Something charged before, as in a NIC's long-lived HPU.
            a.hpu.add_cycles(1000);
            b.hpu.add_cycles(1000);
            let sa = a.hpu.run(&a.prog, &mut TestRt, u64::MAX);
            let sb = b.hpu.step(&b.prog.unfused(), &mut TestRt, true);
            assert_eq!(sa, sb, "{code:x?}");
            assert_eq!(snapshot(&a), snapshot(&b), "{code:x?}");
            assert_eq!(sa, Stop::Returned);
            assert_eq!(a.hpu.instret, 1);
            assert!(a.hpu.cycles > 1000);
        }
    }
}

#[test]
fn the_slice_end_and_the_watchdog_come_first() {
    let t = TimingModel::default();
    let (mut a, _) = machines(&RET.to_le_bytes(), &t);
    a.hpu.add_cycles(50);
    assert_eq!(a.hpu.run(&a.prog, &mut TestRt, 50), Stop::SliceEnd);
    assert_eq!((a.hpu.pc, a.hpu.cycles, a.hpu.instret), (CODE, 50, 0));
    // The next slice still returns (from the loop this time).
    assert_eq!(a.hpu.run(&a.prog, &mut TestRt, u64::MAX), Stop::Returned);
    assert_eq!(a.hpu.instret, 1);

    let (mut w, _) = machines(&RET.to_le_bytes(), &t);
    w.hpu.instret_limit = 0;
    match w.hpu.run(&w.prog, &mut TestRt, u64::MAX) {
        Stop::Fault(f) => assert_eq!((f.kind, f.pc), (FaultKind::Watchdog, CODE)),
        s => panic!("{s:?}"),
    }
}

#[test]
fn a_return_address_that_holds_code_runs_it() {
    // ret, then the return address's code: exit(7).
    let t = TimingModel::default();
    let mut words = vec![RET];
    words.extend(exit());
    let mut a = Machine::with_timing(&words, t.clone());
    a.hpu.return_addr = CODE + 4;
    a.hpu.start_call(CODE, STACK_TOP, &[7]);
    assert_eq!(a.hpu.run(&a.prog, &mut TestRt, u64::MAX), Stop::Exit(7));
    assert_eq!(a.hpu.instret, 3);
}
