//! A packet a NIC's handler forwards costs the path's latency plus one
//! serialisation (docs/scale.md "The coupling"): on 4 nodes node 1's NIC
//! forwards the root's 8 B message to node 3; its packet must reach node 3
//! the path's latency after its last byte left node 1's port.

mod common;

use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::{FatTree, NicKind};

#[test]
fn a_forwarded_packet_arrives_one_latency_after_it_left() {
    let (w, spec) = common::broadcast(4, 8, Mode::Store, NicKind::Discrete, 5, 1e-3);
    let p = spec.params.clone();
    let out = softspin_netsim::run(spec, Box::new(w)).unwrap();
    assert!(out.verified, "{out:?}");
    assert_eq!(Broadcast::children(1, 4), vec![3]);
    let left = out.per_node[1].first_send_ps.expect("node 1 forwarded") as f64;
    let arrived = out.per_node[3].first_arrival_ps.expect("node 3 got it") as f64;
    let tree = FatTree::new(4, p.switch_ports);
    let latency_ps = (tree.switch_hops(1, 3) + 1) as f64 * (p.wire_ns + p.switch_ns) * 1e3;
    assert!(
        (arrived - (left + latency_ps)).abs() <= 1.0,
        "left node 1 at {left} ps, reached node 3 at {arrived} ps, latency {latency_ps} ps"
    );
    assert_eq!(out.max_send_lag_ps, 0);
}
