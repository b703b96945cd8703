//! An 8 B broadcast between two nodes against the hand computation from
//! the parameters (one simulation per process: this binary runs one).

mod common;

use softspin_netsim::workload::broadcast::Mode;
use softspin_netsim::{FatTree, NicKind};

#[test]
fn eight_bytes_on_two_nodes_take_o_plus_the_wire_plus_the_handlers() {
    let (w, spec) = common::broadcast(2, 8, Mode::Streaming, NicKind::Discrete, 4, 1e-3);
    let p = spec.params.clone();
    let out = softspin_netsim::run(spec, Box::new(w)).unwrap();
    assert!(out.verified, "{out:?}");
    assert_eq!(out.engines, 1, "the root's NIC takes no part");
    assert_eq!(out.transfers, 1);

    // By hand: the root's host pays o, then one frame of 14 + 20 + 8
    // (Ethernet, IPv4, UDP) + 26 (uc.h header) + 8 data bytes crosses one
    // switch: two links of (wire + switch) latency each (docs/scale.md
    // "The coupling") and 76 bytes at G = 1 / 50 GiB/s.
    let frame = 14 + 20 + 8 + 26 + 8;
    let g_ps = 1e12 / (p.link_gib_s * (1u64 << 30) as f64);
    let by_hand_ps = p.o_ns * 1e3 + 2.0 * (p.wire_ns + p.switch_ns) * 1e3 + frame as f64 * g_ps;
    let tree = FatTree::new(2, p.switch_ports);
    assert_eq!(tree.switch_hops(0, 1), 1);
    assert!((tree.transfer_s(&p, 0, 1, frame) * 1e12 + p.o_ns * 1e3 - by_hand_ps).abs() < 1e-3);

    let n1 = &out.per_node[1];
    let arrival = n1.first_arrival_ps.expect("node 1 got the packet") as f64;
    // SimGrid's clock is a double in seconds: 1 ps of rounding allowed.
    assert!(
        (arrival - by_hand_ps).abs() <= 1.0,
        "arrival {arrival} ps, by hand {by_hand_ps} ps"
    );
    // Completion = arrival + the handlers' time as the engine reports it
    // (node 1's message done). The message's header, payload and completion
    // handlers run one after the other, so that time is at least their HPU
    // busy time, and above it only by the NIC's control path (HER to
    // cluster, invocation, completion: tens of ns per handler).
    let done = n1.done_ps.unwrap() as f64;
    assert_eq!(out.completion_ps, n1.done_ps);
    let handler_ps = done - arrival;
    let busy = n1.hpu_busy_ps as f64;
    assert!(
        handler_ps >= busy && handler_ps <= busy + 100e3,
        "handlers {handler_ps} ps, HPU busy {} ps",
        n1.hpu_busy_ps
    );
    assert_eq!((n1.errors, n1.drops, n1.counters), (0, 0, 0));
}
