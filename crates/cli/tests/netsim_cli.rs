//! `softspin netsim` (docs/scale.md): broadcasts verified on 2, 4 and 16
//! nodes in both modes, a sabotaged reference reported and exit 1, bad
//! arguments refused by name. Each run is its own process (SimGrid allows
//! one simulation per process).

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn netsim(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("netsim")
        .args(args)
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

fn broadcast(nodes: u32, size: usize, mode: &str, extra: &[&str]) -> Output {
    let (n, s) = (nodes.to_string(), size.to_string());
    let mut a = vec![
        "--nodes",
        &n,
        "--workload",
        "broadcast",
        "--size",
        &s,
        "--mode",
        mode,
        "--json",
    ];
    a.extend_from_slice(extra);
    netsim(&a)
}

#[test]
fn broadcasts_verify_on_2_4_and_16_nodes_in_both_modes() {
    for nodes in [2u32, 4, 16] {
        for mode in ["streaming", "store"] {
            for size in [8usize, 65536] {
                let o = broadcast(nodes, size, mode, &[]);
                let j = json(&o);
                let what = format!("{nodes} nodes, {mode}, {size} B: {j}");
                assert!(o.status.success(), "{what}");
                assert_eq!(j["verified"], true, "{what}");
                assert_eq!(j["completed"], true, "{what}");
                assert_eq!(j["handler_errors"], 0, "{what}");
                assert_eq!(j["drops"], 0, "{what}");
                assert_eq!(j["counters"], 0, "{what}");
                // Every node but the root ran an engine; each got every
                // packet once (uc.h: 1408 data bytes per packet).
                assert_eq!(j["engines"], nodes - 1, "{what}");
                let packets = size.div_ceil(1408) as u64;
                assert_eq!(j["per_node"]["packets"]["min"], packets, "{what}");
                assert_eq!(j["per_node"]["packets"]["max"], packets, "{what}");
                assert_eq!(j["transfers"], packets * (nodes as u64 - 1), "{what}");
                assert!(j["completion_ns"].as_f64().unwrap() > 0.0, "{what}");
            }
        }
    }
}

/// Beyond the 1,024 nodes a node table once held: each NIC writes only its
/// own, its parent's and its children's entries.
#[test]
fn a_broadcast_on_2048_nodes_verifies() {
    let o = broadcast(2048, 8, "streaming", &[]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(j["verified"], true);
    assert_eq!(j["engines"], 2047);
}

#[test]
fn streaming_is_not_slower_than_store_for_many_packets() {
    let t = |mode| {
        json(&broadcast(16, 65536, mode, &[]))["completion_ns"]
            .as_f64()
            .unwrap()
    };
    let (stream, store) = (t("streaming"), t("store"));
    assert!(stream < store, "streaming {stream} ns, store {store} ns");
}

#[test]
fn the_integrated_nic_is_not_slower_than_the_discrete_one() {
    let t = |nic| {
        json(&broadcast(4, 8, "store", &["--nic", nic]))["completion_ns"]
            .as_f64()
            .unwrap()
    };
    assert!(t("integrated") < t("discrete"));
}

#[test]
fn a_sabotaged_reference_is_not_verified_and_exits_1() {
    let o = broadcast(4, 5000, "streaming", &["--sabotage"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let j = json(&o);
    assert_eq!(j["verified"], false);
    assert_eq!(j["nodes_not_verified"].as_array().unwrap().len(), 4);
    assert_eq!(j["ended"], "done", "complete, only the reference differs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not verified: 4 nodes"), "{err}");
    let o = broadcast(2, 8, "store", &["--sabotage"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1));
    assert!(text.contains("\"verified\": false"), "{text}");
}

#[test]
fn a_run_stopped_by_its_limit_is_incomplete_and_exits_1() {
    let o = broadcast(16, 65536, "store", &["--limit-ms", "0.01"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["completed"], false);
    assert_eq!(j["ended"], "limit");
    assert_eq!(j["verified"], false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not complete") && err.contains("--limit-ms 0.01"),
        "{err}"
    );
}

#[test]
fn the_text_report_names_the_results() {
    let o = netsim(&[
        "--nodes",
        "4",
        "--workload",
        "broadcast",
        "--size",
        "8",
        "--mode",
        "store",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    for want in [
        "completion:",
        "verified: true",
        "slowest node:",
        "engines allocated: 3",
        "peak RSS",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

#[test]
fn bad_arguments_are_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("netsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_params = dir.join("bad.toml");
    std::fs::write(&bad_params, "link_gib_s = 0.0\n").unwrap();
    let bp = bad_params.display().to_string();
    let base = |over: &[(&str, &str)]| {
        let mut v = vec![
            ("--nodes", "4"),
            ("--workload", "broadcast"),
            ("--size", "8"),
            ("--mode", "store"),
        ];
        for (k, val) in over {
            match v.iter_mut().find(|(a, _)| a == k) {
                Some(e) => e.1 = val,
                None => v.push((k, val)),
            }
        }
        v.into_iter()
            .flat_map(|(a, b)| [a.to_string(), b.to_string()])
            .collect::<Vec<_>>()
    };
    for (over, want) in [
        (vec![("--limit-ms", "0")], "--limit-ms 0"),
        (vec![("--workload", "gossip")], "--workload gossip"),
        (vec![("--mode", "flood")], "--mode flood"),
        (vec![("--nodes", "1")], "--nodes 1"),
        (vec![("--nodes", "16385")], "--nodes 16385"),
        (vec![("--size", "0")], "--size 0"),
        (vec![("--size", "2000000")], "--size 2000000"),
        (vec![("--nic", "pcie")], "--nic"),
        (vec![("--params", bp.as_str())], "link_gib_s"),
        (
            vec![("--params", "/nonexistent/p.toml")],
            "/nonexistent/p.toml",
        ),
    ] {
        let args = base(&over);
        let o = Command::new(BIN)
            .arg("netsim")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let o = netsim(&["--nodes", "4"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a missing argument is a usage error"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The baselines (docs/scale.md "Baselines"): the handlers only deposit,
/// then the host (`rdma`) or the triggered puts (`portals`) forward; every
/// node still gets every packet once and verifies, and a sabotaged
/// reference is caught.
#[test]
fn rdma_and_portals_broadcasts_verify() {
    for nodes in [2u32, 4, 16] {
        let mut t = std::collections::HashMap::new();
        for mode in ["rdma", "portals"] {
            for size in [8usize, 65536] {
                let o = broadcast(nodes, size, mode, &[]);
                let j = json(&o);
                let what = format!("{nodes} nodes, {mode}, {size} B: {j}");
                assert!(o.status.success(), "{what}");
                assert_eq!(j["verified"], true, "{what}");
                assert_eq!(j["handler_errors"], 0, "{what}");
                assert_eq!(j["drops"], 0, "{what}");
                assert_eq!(j["counters"], 0, "{what}");
                assert_eq!(j["engines"], nodes - 1, "{what}");
                let packets = size.div_ceil(1408) as u64;
                assert_eq!(j["per_node"]["packets"]["max"], packets, "{what}");
                assert_eq!(j["transfers"], packets * (nodes as u64 - 1), "{what}");
                t.insert((mode, size), j["completion_ns"].as_f64().unwrap());
            }
        }
        // Portals pays no o per forward: faster wherever a node forwards.
        if nodes > 2 {
            for size in [8, 65536] {
                assert!(t[&("portals", size)] < t[&("rdma", size)], "{t:?}");
            }
        }
    }
    let o = broadcast(4, 5000, "rdma", &["--sabotage"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["verified"], false);
}

/// Fig. 5a's small-message side at 1,024 processes (seed 004 §4.4.3):
/// sPIN's streaming broadcast of 8 B beats both baselines on the discrete
/// NIC (about 1 s of wall time per run), through the CLI. The integrated
/// NIC's margins and 64 KiB: crates/netsim/tests/fig5a.rs.
#[test]
fn streaming_beats_rdma_and_portals_for_8_bytes_at_1024_nodes() {
    let t = |mode| {
        json(&broadcast(1024, 8, mode, &["--nic", "discrete"]))["completion_ns"]
            .as_f64()
            .unwrap()
    };
    let s = t("streaming");
    for mode in ["rdma", "portals"] {
        let b = t(mode);
        assert!(s < b, "streaming {s} ns, {mode} {b} ns");
    }
}
