//! A host answering its NIC's completed message (`Workload::host_reacts`,
//! what the host-CPU baselines use): on 3 nodes the root sends only to
//! node 1, and node 1's host, once its NIC completed the message, sends
//! node 2 the root's frames for it. Node 2's packet must arrive o plus one
//! transfer after node 1's completion, and both must verify.

mod common;

use softspin_engine::{EctxId, Engine};
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::{HostSend, NicProgram, Workload};
use softspin_netsim::{FatTree, NicKind};

struct Relay(Broadcast);

impl Workload for Relay {
    fn name(&self) -> &str {
        "relay"
    }
    fn program(&self) -> &NicProgram {
        self.0.program()
    }
    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        let mut v = self.0.host_sends(k);
        v.retain(|s| s.to == 1);
        v
    }
    fn host_reacts(&self, k: u32, _msg: u32, _e: &mut Engine) -> Vec<HostSend> {
        if k != 1 {
            return Vec::new();
        }
        let mut v = self.0.host_sends(0);
        v.retain(|s| s.to == 2);
        v
    }
    fn setup_engine(&self, _k: u32, _e: &mut Engine, _id: EctxId) -> Result<(), String> {
        Ok(())
    }
    fn expected_done(&self) -> u32 {
        2
    }
    fn node_done(&self, k: u32, e: &mut Engine) -> bool {
        self.0.node_done(k, e)
    }
    fn verify(&self, k: u32, e: Option<&mut Engine>) -> bool {
        self.0.verify(k, e)
    }
}

#[test]
fn a_host_sends_after_its_nic_completed_a_message() {
    let (b, spec) = common::broadcast(3, 8, Mode::Store, NicKind::Integrated, 9, 1e-3);
    let p = spec.params.clone();
    let out = softspin_netsim::run(spec, Box::new(Relay(b))).unwrap();
    assert!(out.verified, "{out:?}");
    assert_eq!(out.transfers, 2);
    let done1 = out.per_node[1].done_ps.unwrap() as f64;
    let arrival2 = out.per_node[2].first_arrival_ps.unwrap() as f64;
    let frame = 14 + 20 + 8 + 26 + 8;
    let tree = FatTree::new(3, p.switch_ports);
    let by_hand = done1 + p.o_ns * 1e3 + tree.transfer_s(&p, 1, 2, frame) * 1e12;
    assert!(
        (arrival2 - by_hand).abs() <= 1.0,
        "node 2's packet at {arrival2} ps, by hand {by_hand} ps"
    );
}
