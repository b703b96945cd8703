//! The streaming handler's forwarding rules on one NIC alone (node 1 of 4:
//! parent 0, child 3; examples/cluster/broadcast/handler.c): a repeated
//! packet is not sent again and is counted (UC_BC_CTR_UNORDERED; without
//! the per-packet bit this test fails), every packet goes to the child
//! once, the end-of-message packet last. (Arriving 1 ns apart, the packets'
//! handlers send in arrival order even without the end-of-message wait:
//! this test does not force that packet's handler ahead of the others.)

mod common;

use softspin_engine::traffic::Arrival;
use softspin_netio::rules::{parse_rules, Matcher};
use softspin_netsim::sim::{nic_config, node_engine};
use softspin_netsim::workload::broadcast::Mode;
use softspin_netsim::workload::{header_define, uc, Workload};
use softspin_netsim::NicKind;

const BROADCAST_H: &str = include_str!("../../../examples/cluster/broadcast/broadcast.h");

#[test]
fn the_end_of_message_goes_last_and_a_repeat_not_at_all() {
    let size = 3 * 1408; // three full packets (UC_CHUNK)
    let (b, spec) = common::broadcast(4, size, Mode::Streaming, NicKind::Discrete, 9, 1e-3);
    let cfg = nic_config(&spec.params, NicKind::Discrete);
    let p = b.program();
    let matcher = parse_rules(&p.rules).and_then(Matcher::new).unwrap();
    let (mut e, id) = node_engine(&cfg, &b, 1, 4, p.udp_port, None).unwrap();
    let mut frames: Vec<Vec<u8>> = b
        .sends_to_children(0, false)
        .into_iter()
        .filter(|s| s.to == 1)
        .map(|s| s.frame)
        .collect();
    assert_eq!(frames.len(), 3);
    // The first packet twice, then the rest, 1 ns apart: all in flight at
    // once on different HPUs.
    frames.insert(1, frames[0].clone());
    for (i, f) in frames.into_iter().enumerate() {
        let v = matcher.classify(&f).unwrap();
        e.inject(Arrival {
            time_ps: 1000 * i as u64,
            frame: f,
            msg_id: v.msg_id.unwrap_or(0),
            eom: v.eom,
            origin: "test".into(),
            ectx: None,
        });
    }
    while let Some(t) = e.next_event_ps() {
        e.run_until(t).unwrap();
    }
    let (out, _, _) = e.drain_outputs();
    let eom = uc("UC_EOM").unwrap() as u32;
    let offsets: Vec<(u32, bool)> = out
        .iter()
        .map(|o| {
            let f = &o.frame;
            assert_eq!(softspin_netsim::node::of_frame(f, 4), Some(3));
            let be = |a: usize| u32::from_be_bytes([f[a], f[a + 1], f[a + 2], f[a + 3]]);
            (be(60), be(48) & eom != 0)
        })
        .collect();
    // Every packet once; the end of the message last.
    let mut sorted: Vec<u32> = offsets.iter().map(|x| x.0).collect();
    sorted.sort();
    assert_eq!(sorted, vec![0, 1408, 2816], "{offsets:?}");
    assert_eq!(offsets.last(), Some(&(2816, true)), "{offsets:?}");
    assert!(offsets[..2].iter().all(|x| !x.1), "{offsets:?}");
    let unordered =
        header_define(BROADCAST_H, "broadcast.h", "UC_BC_CTR_UNORDERED").unwrap() as u32;
    let counted: u64 = e
        .counters(id)
        .iter()
        .filter(|c| c.0 == unordered)
        .map(|c| c.2)
        .sum();
    assert_eq!(counted, 1, "{:?}", e.counters(id));
    assert!(e.stats().errors.is_empty());
}
