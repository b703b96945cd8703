//! A host program waiting for a NIC that will never signal: the run ends
//! "quiet" and incomplete (no hang, no fixed polling step), and the
//! waiting host is stopped cleanly.

mod common;

use softspin_engine::Engine;
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::{
    HostProgram, HostSend, HostSignal, HostStep, NicProgram, Workload,
};
use softspin_netsim::NicKind;

struct Waits(u32);

impl HostProgram for Waits {
    fn resume(&mut self, _: u64, _: Vec<HostSignal>, _: &mut Engine) -> Result<HostStep, String> {
        self.0 += 1;
        Ok(if self.0 == 1 {
            HostStep::Compute(1e-6)
        } else {
            HostStep::Wait
        })
    }
}

struct Idle(Broadcast);

impl Workload for Idle {
    fn name(&self) -> &str {
        "idle"
    }
    fn program(&self) -> &NicProgram {
        self.0.program()
    }
    fn host_sends(&self, _k: u32) -> Vec<HostSend> {
        Vec::new()
    }
    fn host_program(&self, k: u32) -> Option<Box<dyn HostProgram>> {
        (k == 1).then(|| Box::new(Waits(0)) as Box<dyn HostProgram>)
    }
    fn expected_done(&self) -> u32 {
        1
    }
    fn node_done(&self, _k: u32, _e: &mut Engine) -> bool {
        false
    }
    fn verify(&self, _k: u32, _e: Option<&mut Engine>) -> bool {
        true
    }
}

#[test]
fn a_host_waiting_on_nothing_ends_the_run_quiet() {
    let (b, spec) = common::broadcast(2, 8, Mode::Store, NicKind::Integrated, 5, 1.0);
    let out = softspin_netsim::run(spec, Box::new(Idle(b))).unwrap();
    assert_eq!(out.ended, "quiet", "{out:?}");
    assert!(!out.completed && !out.verified && out.completion_ps.is_none());
    assert_eq!(out.transfers, 0);
}
