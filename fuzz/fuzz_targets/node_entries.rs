//! Arbitrary calls of `Engine::set_node_entries` (issue 29: a node's part
//! of a large table): a call is refused exactly when the table is too large
//! or a rank is outside it, a refused call writes nothing, and an accepted
//! one leaves the header and each given entry (the last one given for a
//! rank) as `encode_node_entry` says. Never a panic.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use softspin_engine::{Engine, NicConfig};
use softspin_hpu::abi::{self, NodeEntry};

#[derive(Arbitrary, Debug)]
struct Call {
    my_rank: u32,
    num_nodes: u32,
    entries: Vec<(u32, [u8; 4], [u8; 6], u16)>,
}

fuzz_target!(|calls: Vec<Call>| {
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let len = abi::node_entry_offset(abi::MAX_NODES) as usize;
    for c in calls.iter().take(8) {
        let entries: Vec<(u32, NodeEntry)> = c
            .entries
            .iter()
            .map(|&(r, ipv4, mac, udp_port)| {
                (
                    r % (abi::MAX_NODES + 2),
                    NodeEntry {
                        ipv4,
                        mac,
                        udp_port,
                    },
                )
            })
            .collect();
        let num = c.num_nodes % (abi::MAX_NODES + 2);
        let valid =
            num <= abi::MAX_NODES && c.my_rank < num && entries.iter().all(|(r, _)| *r < num);
        let before = e.node_table_bytes(len);
        match e.set_node_entries(c.my_rank, num, &entries) {
            Ok(()) => {
                assert!(valid, "{c:?} accepted");
                let got = e.node_table_bytes(len);
                assert_eq!(got[..16], abi::node_table_header(c.my_rank, num));
                for (r, n) in &entries {
                    let last = entries.iter().rev().find(|(q, _)| q == r).unwrap();
                    let at = abi::node_entry_offset(*r) as usize;
                    assert_eq!(
                        got[at..at + 16],
                        abi::encode_node_entry(*r, &last.1),
                        "{n:?}"
                    );
                }
            }
            Err(err) => {
                assert!(!valid, "{c:?} refused: {err}");
                assert!(e.node_table_bytes(len) == before, "a refused call wrote");
            }
        }
    }
});
