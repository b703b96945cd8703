//! `softspin netsim --workload raid` (docs/scale.md "RAID-5 parity"): the
//! use case's handlers (spin) and the host-CPU baseline (rdma) verified
//! byte for byte against the Rust XOR reference, a sabotaged reference
//! reported, bad arguments refused, and Fig. 7c's shape. Each run is its
//! own process (SimGrid allows one simulation per process).

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn raid(size: usize, mode: &str, extra: &[&str]) -> Output {
    let s = size.to_string();
    Command::new(BIN)
        .args(["netsim", "--nodes", "6", "--workload", "raid", "--size", &s])
        .args(["--mode", mode, "--json"])
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

/// The run's completion (ns) once it verified with a clean exit.
fn verified_ns(size: usize, mode: &str) -> f64 {
    let o = raid(size, mode, &[]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(0), "{size} B {mode}: {j}");
    assert_eq!(j["verified"], true, "{j}");
    assert_eq!(j["ended"], "done", "{j}");
    assert_eq!(
        (j["handler_errors"].as_u64(), j["drops"].as_u64()),
        (Some(0), Some(0))
    );
    // The client, the parity node and the four data nodes all ran.
    assert_eq!(j["engines"], 6, "{j}");
    j["completion_ns"].as_f64().expect("complete")
}

/// One and four packets per data node (as test_raid.py's 64 B and 20,000 B
/// writes), in both modes: every store, the parity and the client's acks
/// as the reference says; a larger write takes longer.
#[test]
fn writes_verify_in_both_modes() {
    for mode in ["spin", "rdma"] {
        let small = verified_ns(64, mode);
        let large = verified_ns(20_000, mode);
        assert!(
            small > 0.0 && large > small,
            "{mode}: {small} ns, {large} ns"
        );
    }
}

#[test]
fn a_sabotaged_parity_is_not_verified_and_exits_1() {
    for mode in ["spin", "rdma"] {
        let o = raid(64, mode, &["--sabotage"]);
        let j = json(&o);
        assert_eq!(o.status.code(), Some(1), "{j}");
        assert_eq!(j["verified"], false);
        // Only the parity node's reference was touched.
        assert_eq!(j["nodes_not_verified"], serde_json::json!([1]), "{j}");
    }
}

#[test]
fn bad_arguments_are_refused_by_name() {
    for (size, mode, nodes, says) in [
        (64, "streaming", "6", "--mode streaming"),
        (6, "spin", "6", "--size 6"),
        (4 * 262_144 + 4, "spin", "6", "--size"),
        (64, "spin", "5", "--nodes 5"),
    ] {
        let s = size.to_string();
        let o = Command::new(BIN)
            .args([
                "netsim",
                "--nodes",
                nodes,
                "--workload",
                "raid",
                "--size",
                &s,
            ])
            .args(["--mode", mode])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{says}: {err}");
    }
}

/// The rdma baseline pays its host CPUs' XOR and copy (docs/scale.md
/// "RAID-5 parity"): a data node's host passes twice over its strip (old
/// XOR new, the store's update), the parity node's host once over each of
/// the four deltas, one after another, at `host_copy_gib_s` (8.7 GiB/s).
/// A host CPU made ~free by `--params` must take about that much off a
/// 256 KiB write (64 KiB a data node: 6 x 65,536 B / 8.7 GiB/s = 42.1 us;
/// less the little the deltas' arrivals at the parity node overlap).
#[test]
fn the_rdma_baseline_pays_the_host_cpus_xor_and_copy() {
    let dir = std::env::temp_dir().join(format!(
        "softspin-netsim-raid-params-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let fast = dir.join("fast-host.toml");
    std::fs::write(&fast, "host_copy_gib_s = 1000000.0\n").unwrap();
    let charged = verified_ns(262_144, "rdma");
    let o = raid(262_144, "rdma", &["--params", fast.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    let j = json(&o);
    assert_eq!(
        (o.status.code(), &j["verified"]),
        (Some(0), &serde_json::json!(true)),
        "{j}"
    );
    let free = j["completion_ns"].as_f64().expect("complete");
    let want = 6.0 * 65_536.0 / (8.7 * (1u64 << 30) as f64) * 1e9;
    let paid = charged - free;
    assert!(
        paid > 0.8 * want && paid < 1.02 * want,
        "host CPU time in the rdma run: {paid} ns, want about {want} ns ({charged} - {free})"
    );
}

/// Seed 004 Fig. 7c's large end: "the significantly higher bandwidth of
/// sPIN for large block transfers". The largest write (1 MiB, 256 KiB a
/// data node: the store) must finish well before the host baseline's, and
/// sPIN's disadvantage must shrink as writes grow (64 KiB against 1 MiB).
#[test]
fn fig_7c_spin_faster_for_the_largest_writes() {
    let (s, r) = (verified_ns(1 << 20, "spin"), verified_ns(1 << 20, "rdma"));
    assert!(s < 0.85 * r, "1 MiB: spin {s} ns, rdma {r} ns");
    let (s64, r64) = (verified_ns(65_536, "spin"), verified_ns(65_536, "rdma"));
    assert!(
        s / r < s64 / r64,
        "spin/rdma 64 KiB {}, 1 MiB {}",
        s64 / r64,
        s / r
    );
}

/// Seed 004 Fig. 7c whole: sPIN comparable to RDMA for small writes and
/// faster for large ones. The small half is not reproduced (docs/scale.md
/// "RAID-5 parity"): a 64 B write takes ~13.5 us with sPIN, two RMA
/// operations on its critical path (the delta put, the ack put) at ~5-7 us
/// of handler time each on 1 GHz HPUs, against ~2 us for the host
/// baseline's four hops (no NIC handler, 16 B of CPU work). Run with
/// --ignored to see it.
#[test]
#[ignore = "Fig. 7c's small writes: sPIN 5.0x the host baseline at 64 B; docs/scale.md, RAID-5 parity"]
fn fig_7c_spin_comparable_for_small_and_faster_for_large_writes() {
    let (s, r) = (verified_ns(64, "spin"), verified_ns(64, "rdma"));
    assert!(s <= 1.5 * r, "64 B: spin {s} ns, rdma {r} ns");
    let (s, r) = (verified_ns(1 << 20, "spin"), verified_ns(1 << 20, "rdma"));
    assert!(s < r, "1 MiB: spin {s} ns, rdma {r} ns");
}
