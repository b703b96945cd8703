//! The closed-form LogGP check (issue 29 item 5; docs/scale.md "Closed
//! forms"): an 8 B streaming broadcast on 1,024 nodes against
//! `loggp::spin_bcast_ns` over the same fat tree. The closed form takes the
//! per-hop handler time as an input: measured once, on node 1 (its packet's
//! arrival to its first forwarded frame leaving), with the leaf's own
//! arrival-to-done time; what is checked is that ten hops of links, switches
//! and handlers, and the root's o, compose as LogGP says (no hidden queueing
//! or lost time in the coupling). netsim may be up to 3 % slower, never
//! faster: the handler's time grows by ~9 ns per level (bc_parent and
//! forward() loop over the rank's bits: 945 ns on node 1, 1,025 ns on node
//! 511, examples/bcast_hop.rs; 1,953 and 2,073 ns before the handlers
//! forwarded in parallel), which one h cannot follow; the root's frame is
//! 76 B on the wire where the closed form charges the 8 B payload's
//! (s-1)G. Each hop's
//! link time is checked exactly.

mod common;

use softspin_netsim::loggp::{binomial_children, spin_bcast_ns, Bcast, Forwarding, Hops};
use softspin_netsim::workload::broadcast::Mode;
use softspin_netsim::{FatTree, NicKind};

#[test]
fn an_8_byte_streaming_broadcast_on_1024_nodes_is_the_closed_form() {
    let n = 1024;
    let (b, spec) = common::broadcast(n, 8, Mode::Streaming, NicKind::Discrete, 11, 1e-2);
    let p = spec.params.clone();
    let out = softspin_netsim::run(spec, Box::new(b)).unwrap();
    assert!(out.verified, "{:?}", out.error_samples);
    let ns = |ps: Option<u64>| ps.unwrap() as f64 / 1e3;
    let one = &out.per_node[1];
    let h = ns(one.first_send_ps) - ns(one.first_arrival_ps);
    let leaf = &out.per_node[n as usize - 1];
    let leaf_done = ns(leaf.done_ps) - ns(leaf.first_arrival_ps);
    // SimGrid's path: a cable and a switch per link, one link more than
    // switches (docs/scale.md "The network").
    let tree = FatTree::new(n, p.switch_ports);
    let hops = |a: u32, c: u32| {
        let k = tree.switch_hops(a, c) + 1;
        Hops {
            switches: k,
            wires: k,
        }
    };
    let kids = |v: u32| binomial_children(v, n);
    let bc = Bcast {
        nodes: n,
        size: 8,
        hops: &hops,
        children: &kids,
        dma: None,
    };
    // The closed form ends h after the last arrival; netsim's leaf ends
    // leaf_done after it.
    let closed = spin_bcast_ns(&p, &bc, h, Forwarding::Streaming).unwrap() - h + leaf_done;
    let sim = out.completion_ps.unwrap() as f64 / 1e3;
    // Every hop of the critical path (0 -> 1 -> 3 -> ... -> 1023, first
    // children all): a forwarded frame reaches the child exactly L after
    // its last byte left the parent (the receiver takes the serialisation
    // back), to 1 ps.
    let mut v = 1u32;
    while 2 * v + 1 < n {
        let (par, kid) = (&out.per_node[v as usize], &out.per_node[2 * v as usize + 1]);
        let l = hops(v, 2 * v + 1).latency_ns(&p);
        let got = ns(kid.first_arrival_ps) - ns(par.first_send_ps);
        assert!(
            (got - l).abs() <= 1e-3,
            "{v} -> {}: {got} ns, L {l} ns",
            2 * v + 1
        );
        v = 2 * v + 1;
    }
    assert!(h > 0.0 && leaf_done > 0.0, "h {h} ns, leaf {leaf_done} ns");
    assert!(
        sim >= closed && sim - closed <= 0.03 * closed,
        "netsim {sim} ns, closed form {closed} ns (h {h} ns, leaf {leaf_done} ns)"
    );
}
