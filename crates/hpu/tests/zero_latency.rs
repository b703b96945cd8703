//! The interpreter's loop for address spaces without access latency
//! (`Hpu::run` picks it while every window costs 0 extra cycles; bare-metal
//! runs and Embench) against the general loop: the same random programs end
//! in the same state, whole and in slices, and a service that maps a slower
//! window mid-run gets its latency charged from the next access on.

mod common;

use std::sync::Arc;

use common::random::{machine_timed, random_program, state};
use common::*;
use softspin_hpu::hpu::{Ecall, Hpu, Runtime, Stop};
use softspin_hpu::{MemBlock, MemClass, Perm, TimingModel};

/// No class has a latency except `L1Remote`, which only the general-loop
/// side maps (at an address no program touches).
fn timing() -> TimingModel {
    let mut mem_latency = [0; 5];
    mem_latency[MemClass::L1Remote as usize] = 8;
    TimingModel {
        mem_latency,
        ..TimingModel::default()
    }
}

const UNUSED: u32 = 0x4_0000;

fn run_sliced(seed: u64, slow_window: bool, slice: u64) -> String {
    let mut m = machine_timed(
        &random_program(seed),
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        timing(),
    );
    if slow_window {
        let block = MemBlock::new(0x100);
        m.hpu
            .mem
            .map(UNUSED, 0x100, &block, 0, Perm::RW, MemClass::L1Remote)
            .unwrap();
    }
    let stop = loop {
        let until = m.hpu.cycles.saturating_add(slice);
        let stop = m.hpu.run(&m.prog, &mut TestRt, until);
        if stop != Stop::SliceEnd {
            break stop;
        }
    };
    state(&m, stop)
}

#[test]
fn random_programs_end_alike_in_both_loops() {
    for seed in 0..300 {
        for slice in [u64::MAX, 97] {
            assert_eq!(
                run_sliced(seed, false, slice),
                run_sliced(seed, true, slice),
                "seed {seed}, slice {slice}"
            );
        }
    }
}

/// Service 8 remaps the data window as L1Remote (with a latency) when
/// `remap` is set, and does nothing otherwise; exit as `TestRt`.
struct Remapper {
    data: Arc<MemBlock>,
    remap: bool,
}

impl Runtime for Remapper {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        match hpu.reg(17) {
            8 => {
                if self.remap {
                    // Window 1 is the data window (`Machine::from_bytes`).
                    hpu.mem
                        .remap(
                            1,
                            DATA,
                            DATA_SIZE,
                            &self.data,
                            0,
                            Perm::RW,
                            MemClass::L1Remote,
                        )
                        .unwrap();
                }
                Ecall::Continue
            }
            93 => Ecall::Exit(hpu.reg(10) as i32),
            _ => Ecall::Unknown,
        }
    }
}

#[test]
fn a_window_mapped_by_a_service_pays_its_latency_from_the_next_access() {
    // Every window of `Machine` costs nothing until the remap.
    let t = timing();
    let lat = t.mem_latency[MemClass::L1Remote as usize] as u64;
    // lw; ecall 8; lw; lw; lw (the last ones hit the refilled cache); exit
    let mut w = li(8, DATA);
    w.push(i(0, 8, 2, 6, 0x03));
    w.push(addi(17, 0, 8));
    w.push(ecall());
    for k in 0..3 {
        w.push(i(4 * k, 8, 2, 6, 0x03));
    }
    w.extend(exit());
    let run = |remap: bool| {
        let mut m = Machine::with_timing(&w, t.clone());
        let mut rt = Remapper {
            data: m.data.clone(),
            remap,
        };
        assert_eq!(m.hpu.run(&m.prog, &mut rt, u64::MAX), Stop::Exit(0));
        (m.hpu.cycles, m.hpu.mem.counts())
    };
    let (plain, plain_counts) = run(false);
    let (remapped, counts) = run(true);
    assert_eq!(remapped, plain + 3 * lat);
    assert_eq!(plain_counts.stall_cycles, 0);
    assert_eq!(counts.stall_cycles, 3 * lat);
    assert_eq!(counts.by_class[MemClass::L1Remote as usize], 3);
    assert_eq!(counts.by_class[MemClass::L1Local as usize], 1);
}
