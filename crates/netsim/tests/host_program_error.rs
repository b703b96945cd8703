//! A host program asking for a compute time that is not a time: the run
//! ends with an error naming the node (no panic, no hang), while another
//! node's host is suspended in a wait.

mod common;

use softspin_engine::Engine;
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::{
    HostProgram, HostSend, HostSignal, HostStep, NicProgram, Workload,
};
use softspin_netsim::NicKind;

struct Bad(u32, f64);

impl HostProgram for Bad {
    fn resume(&mut self, _: u64, _: Vec<HostSignal>, _: &mut Engine) -> Result<HostStep, String> {
        self.0 += 1;
        Ok(match self.0 {
            1 => HostStep::Compute(1e-6),
            2 => HostStep::Compute(self.1),
            _ => HostStep::Finished,
        })
    }
}

struct Waits;

impl HostProgram for Waits {
    fn resume(&mut self, _: u64, _: Vec<HostSignal>, _: &mut Engine) -> Result<HostStep, String> {
        Ok(HostStep::Wait)
    }
}

struct W(Broadcast);

impl Workload for W {
    fn name(&self) -> &str {
        "bad"
    }
    fn program(&self) -> &NicProgram {
        self.0.program()
    }
    fn host_sends(&self, _k: u32) -> Vec<HostSend> {
        Vec::new()
    }
    fn host_program(&self, k: u32) -> Option<Box<dyn HostProgram>> {
        Some(match k {
            1 => Box::new(Bad(0, f64::NAN)),
            _ => Box::new(Waits),
        })
    }
    fn expected_done(&self) -> u32 {
        2
    }
    fn node_done(&self, _k: u32, _e: &mut Engine) -> bool {
        false
    }
    fn verify(&self, _k: u32, _e: Option<&mut Engine>) -> bool {
        true
    }
}

#[test]
fn a_compute_time_that_is_not_a_time_is_an_error_naming_the_node() {
    let (b, spec) = common::broadcast(3, 8, Mode::Store, NicKind::Integrated, 5, 1.0);
    let r = softspin_netsim::run(spec, Box::new(W(b)));
    let e = r.expect_err("a NaN compute must fail the run");
    assert!(e.contains("node 1: host program: compute for NaN s"), "{e}");
}
