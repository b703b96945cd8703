//! `softspin netsim --workload kvstore` (docs/scale.md "Key-value
//! store"): every node's gets against the Rust HashMap reference on 2 and
//! 16 nodes, a sabotaged reference reported, bad arguments refused. Each
//! run is its own process (SimGrid allows one simulation per process).

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn kv(nodes: &str, size: &str, mode: &str, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args(["netsim", "--nodes", nodes, "--workload", "kvstore"])
        .args(["--size", size, "--mode", mode, "--json"])
        .args(extra)
        .output()
        .expect("run softspin")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

#[test]
fn every_reply_matches_the_reference() {
    for (nodes, size) in [("2", "64"), ("16", "1024")] {
        let o = kv(nodes, size, "spin", &[]);
        let j = json(&o);
        assert_eq!(o.status.code(), Some(0), "{j}");
        assert_eq!(j["verified"], true, "{j}");
        assert_eq!(j["ended"], "done", "{j}");
        assert_eq!(j["handler_errors"], 0);
        assert_eq!(j["drops"], 0);
        // Every node served requests and made them: all NICs ran.
        assert_eq!(j["engines"].as_u64(), Some(nodes.parse().unwrap()), "{j}");
    }
}

#[test]
fn a_sabotaged_reference_is_not_verified_and_exits_1() {
    let o = kv("4", "64", "spin", &["--sabotage"]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(1), "{j}");
    assert_eq!(j["verified"], false);
    assert_eq!(j["nodes_not_verified"], serde_json::json!([0]), "{j}");
}

#[test]
fn bad_arguments_are_refused_by_name() {
    for (nodes, size, mode, says) in [
        ("4", "2000", "spin", "--size 2000"),
        ("4", "0", "spin", "--size 0"),
        ("4", "64", "rdma", "--mode rdma"),
        ("1025", "64", "spin", "--nodes 1025"),
    ] {
        let o = kv(nodes, size, mode, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{says}: {err}");
    }
}
