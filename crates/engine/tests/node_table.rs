//! Node tables of large networks (issue 29): `Engine::set_node_entries`
//! writes only the entries a node needs, up to `abi::MAX_NODES` nodes, and a
//! handler (examples/cluster_hello) reads them through spin_node.h.

use softspin_engine::traffic::Arrival;
use softspin_engine::{EctxSpec, Engine, NicConfig, NodeTableError};
use softspin_hpu::abi::{self, NodeEntry};
use softspin_hpu::ElfImage;
use softspin_testkit::frame::Frame;

fn node(k: u32) -> NodeEntry {
    let b = k.to_be_bytes();
    NodeEntry {
        ipv4: [10, b[1], b[2], b[3]],
        mac: [2, 0, 0, b[1], b[2], b[3]],
        udp_port: 9000 + (k % 1000) as u16,
    }
}

/// The entries written are where encode_node_table (checked against
/// spin_node.h by crates/hpu/tests/abi.rs) puts them; the others stay zero.
#[test]
fn partial_tables_hold_exactly_the_entries_given() {
    let n = abi::MAX_NODES;
    assert_eq!(n, 16384);
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let me = 9000;
    let peers = [0, 8999, me, me + 1, me + 4096, n - 1];
    let entries: Vec<(u32, NodeEntry)> = peers.iter().map(|&k| (k, node(k))).collect();
    e.set_node_entries(me, n, &entries).unwrap();
    let full: Vec<NodeEntry> = (0..n).map(node).collect();
    let want = abi::encode_node_table(me, &full).unwrap();
    let got = e.node_table_bytes(want.len());
    assert_eq!(got.len(), want.len(), "the region holds MAX_NODES entries");
    assert_eq!(got[..16], want[..16], "header");
    let es = abi::node_table::ENTRY_SIZE as usize;
    for k in 0..n {
        let at = abi::node_entry_offset(k) as usize;
        if peers.contains(&k) {
            assert_eq!(got[at..at + es], want[at..at + es], "entry {k}");
        } else {
            assert!(
                got[at..at + es].iter().all(|&b| b == 0),
                "entry {k} was never given"
            );
        }
    }
    // Later calls add entries and keep the earlier ones.
    e.set_node_entries(me, n, &[(5, node(5))]).unwrap();
    let got = e.node_table_bytes(want.len());
    for k in [5, 0, me, n - 1] {
        let at = abi::node_entry_offset(k) as usize;
        assert_eq!(got[at..at + es], want[at..at + es], "entry {k}");
    }
}

#[test]
fn bad_node_tables_are_refused_and_change_nothing() {
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let before = e.node_table_bytes(64);
    let max = abi::MAX_NODES;
    for (rank, num, entries, want) in [
        (0, max + 1, vec![], NodeTableError::TooManyNodes(max + 1)),
        (
            4,
            4,
            vec![],
            NodeTableError::NoSuchRank {
                what: "my_rank",
                rank: 4,
                num_nodes: 4,
            },
        ),
        (
            1,
            4,
            vec![(1, node(1)), (7, node(7))],
            NodeTableError::NoSuchRank {
                what: "entry",
                rank: 7,
                num_nodes: 4,
            },
        ),
    ] {
        let err = e.set_node_entries(rank, num, &entries).unwrap_err();
        assert_eq!(err, want);
        assert!(!err.to_string().is_empty());
    }
    assert_eq!(
        e.node_table_bytes(64),
        before,
        "a refused table writes nothing"
    );
    assert!(abi::encode_node_table(0, &vec![node(0); max as usize]).is_some());
    assert!(abi::encode_node_table(0, &vec![node(0); max as usize + 1]).is_none());
}

/// A handler on node 12,345 of 16,384 finds its own entry and its sender's
/// (examples/cluster_hello replies with both and the table's header).
#[test]
fn a_handler_reads_entries_of_a_16k_node_table() {
    let (n, me, sender) = (abi::MAX_NODES, 12_345u32, 15_000u32);
    let elf =
        softspin_testkit::handler_image("cluster_hello", &["examples/cluster_hello/handler.c"]);
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let mut s = EctxSpec::new("hello", ElfImage::load(&elf).unwrap());
    s.ph = Some("hello_ph".into());
    let id = e.install(s).unwrap();
    e.activate(id).unwrap();
    e.set_node_entries(me, n, &[(me, node(me)), (sender, node(sender))])
        .unwrap();
    let f = Frame {
        src_mac: node(sender).mac,
        dst_mac: node(me).mac,
        src_ip: node(sender).ipv4,
        dst_ip: node(me).ipv4,
        dport: node(me).udp_port,
        ..Frame::default()
    };
    e.inject(Arrival {
        time_ps: 1000,
        frame: f.udp(b"hello?"),
        msg_id: 0,
        eom: true,
        origin: "test".into(),
        ectx: None,
    });
    e.run_until(10_000_000_000).unwrap();
    assert!(e.errors().is_empty(), "{:?}", e.errors());
    let out = e.outbound();
    assert_eq!(out.len(), 1, "one reply");
    // Ethernet 14 + IPv4 20 + UDP 8, then hello_reply_t.
    let r = &out[0].frame[42..];
    let u32_at = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap());
    assert_eq!(u32_at(0), 0x4f4c_4548, "magic");
    assert_eq!((u32_at(4), u32_at(8), u32_at(12)), (me, n, sender));
    assert_eq!(r[16..32], abi::encode_node_entry(sender, &node(sender)));
    assert_eq!(r[32..48], abi::encode_node_entry(me, &node(me)));
}
