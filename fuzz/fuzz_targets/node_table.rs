//! Arbitrary text as a cluster's node table (docs/cluster.md). A table that
//! parses must hold ranks 0..N-1 in order with distinct addresses, read back
//! the same from its own TOML, and give NIC-memory bytes (when it fits) that
//! say its size; anything else must be an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_cluster::NodeTable;
use softspin_hpu::abi;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(t) = NodeTable::parse(text, "fuzz") else { return };
    let mut ips = std::collections::HashSet::new();
    let mut macs = std::collections::HashSet::new();
    for (k, n) in t.nodes().iter().enumerate() {
        assert_eq!(n.rank as usize, k);
        assert!(ips.insert(n.ipv4) && macs.insert(n.mac), "duplicate address");
    }
    let again = NodeTable::parse(&t.to_toml(), "again").expect("to_toml reads back");
    assert_eq!(again, t);
    let entries: Vec<abi::NodeEntry> = t
        .nodes()
        .iter()
        .map(|n| abi::NodeEntry { ipv4: n.ipv4.octets(), mac: n.mac.0, udp_port: n.udp_port })
        .collect();
    if let Some(b) = abi::encode_node_table(0, &entries) {
        assert_eq!(b[4..8], (t.len() as u32).to_le_bytes());
    } else {
        assert!(t.len() > abi::MAX_NODES as usize);
    }
});
