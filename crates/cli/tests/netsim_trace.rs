//! `softspin netsim --workload trace` (docs/scale.md "Trace replay"): each
//! recorded trace of examples/traces replayed with matching on the NICs
//! and on the hosts, every receive checked against trace::reference; the
//! simulated completion against the LogGP model (`trace::completion`)
//! within a bound stated below; a sabotaged reference exits 1; bad traces
//! and arguments are refused by name (file:line). One process per run
//! (SimGrid runs one simulation per process).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use softspin_netsim::NetParams;

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces")
}

fn netsim(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("netsim")
        .args(args)
        .output()
        .expect("run softspin")
}

fn replay(trace: &Path, mode: &str, extra: &[&str]) -> Output {
    let t = trace.display().to_string();
    let mut a = vec!["--workload", "trace", "--trace", &t, "--mode", mode];
    a.extend_from_slice(extra);
    netsim(&a)
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

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// How far SimGrid's completion may exceed the model's (ns), and why:
/// the model is a lower bound that overlaps what the replay serialises.
/// Each message's CPU and DMA costs (o, the DMA latency, its bytes over the
/// DMA and through a CPU copy) may count once more on the critical path
/// (copies of one wait done one after the other, a packet's DMA behind
/// another's, rendezvous data in MTU packets); with NIC matching also the
/// handlers' time, which the model leaves out: at most what the busiest
/// NIC's HPUs spent (the matching handlers work under one lock).
fn slack_ns(p: &NetParams, j: &serde_json::Value) -> f64 {
    let c = &j["trace"]["counts"];
    let (msgs, bytes) = (f(&c["messages"]), f(&c["bytes"]));
    let gib = (1u64 << 30) as f64 / 1e9; // bytes per ns at 1 GiB/s
    let per_byte =
        1.0 / (p.discrete.bandwidth_gib_s * gib) + 1.0 / (p.integrated.bandwidth_gib_s * gib);
    let cpu_dma = msgs * (p.o_ns + p.discrete.latency_ns) + bytes * per_byte;
    let handlers = match j["mode"].as_str() {
        Some("nic") => f(&j["per_node"]["hpu_busy_ns"]["max"]),
        _ => 0.0,
    };
    cpu_dma + handlers
}

#[test]
fn recorded_traces_replay_verified_with_nic_and_host_matching() {
    let p = NetParams::sc17();
    let runs: Vec<(&str, &str)> = ["ring", "halo", "allreduce", "alltoall"]
        .into_iter()
        .flat_map(|n| [(n, "nic"), (n, "host")])
        .collect();
    // The runs are processes of their own: started together.
    let outs: Vec<Output> = std::thread::scope(|s| {
        let hs: Vec<_> = runs
            .iter()
            .map(|&(n, m)| s.spawn(move || replay(&traces().join(n), m, &["--json"])))
            .collect();
        hs.into_iter().map(|h| h.join().expect("run")).collect()
    });
    for (&(name, mode), o) in runs.iter().zip(&outs) {
        let j = json(o);
        let what = format!("{name} {mode}: {j}");
        assert!(o.status.success(), "{what}");
        assert_eq!(j["verified"], true, "{what}");
        assert_eq!(j["nodes"], 4, "nodes default to the trace's ranks: {what}");
        let t = &j["trace"];
        let c = &t["counts"];
        // Every message received once and checked, by every rank.
        assert_eq!(t["received"], c["messages"], "{what}");
        assert_eq!(
            f(&t["matched_posted"]) + f(&t["matched_unexpected"]),
            f(&c["messages"]),
            "{what}"
        );
        assert_eq!(t["ranks_finished"], 4, "{what}");
        assert_eq!(
            t["check_errors"].as_array().map(Vec::len),
            Some(0),
            "{what}"
        );
        assert_eq!(j["handler_errors"], 0, "{what}");
        assert_eq!(j["drops"], 0, "{what}");
        if mode == "host" {
            // Host matching: no packet is the NIC's.
            assert_eq!(j["per_node"]["handlers"]["max"], 0, "{what}");
        } else if c["rendezvous"] == 0 {
            // The only counter events: rma_target's RMA_CTR_BAD_FRAME
            // for each bare doorbell (22 bytes), one per receive posted.
            assert_eq!(f(&j["counters"]), 22.0 * f(&c["messages"]), "{what}");
        }
        let (sim, model) = (f(&j["completion_ns"]), f(&t["model_completion_ns"]));
        let slack = slack_ns(&p, &j);
        assert!(
            sim >= model * (1.0 - 1e-9) && sim <= model + slack,
            "{what}: SimGrid {sim} ns, model {model} ns, slack {slack} ns"
        );
    }
}

/// Seed 004 §5.1 expects offloaded matching to save o and a copy per
/// message (the model: 2.88 against 3.21 us on alltoall). With
/// examples/cluster/matching's handlers on PsPIN it does not: each
/// message's handlers make several host DMA round trips under one lock
/// (~5 us per packet), far above o + a copy (docs/scale.md "Trace
/// replay").
#[test]
#[ignore = "fails: NIC matching is slower here (docs/scale.md \"Trace replay\")"]
fn nic_matching_is_not_slower_than_host_matching_on_alltoall() {
    let t = traces().join("alltoall");
    let nic = json(&replay(&t, "nic", &["--json"]));
    let host = json(&replay(&t, "host", &["--json"]));
    assert!(
        f(&nic["completion_ns"]) <= f(&host["completion_ns"]),
        "NIC {} ns, host {} ns",
        nic["completion_ns"],
        host["completion_ns"]
    );
}

#[test]
fn the_model_has_nic_matching_faster_and_extra_nodes_stay_idle() {
    let t = traces().join("alltoall");
    let nic = json(&replay(&t, "nic", &["--json", "--nodes", "6"]));
    assert_eq!(nic["verified"], true, "{nic}");
    assert_eq!(nic["nodes"], 6, "{nic}");
    assert_eq!(
        nic["engines"], 4,
        "nodes beyond the ranks get no engine: {nic}"
    );
    let host = json(&replay(&t, "host", &["--json"]));
    assert!(
        f(&nic["trace"]["model_completion_ns"]) < f(&host["trace"]["model_completion_ns"]),
        "{nic}\n{host}"
    );
}

#[test]
fn a_sabotaged_reference_fails_in_both_modes() {
    for mode in ["nic", "host"] {
        let o = replay(&traces().join("ring"), mode, &["--json", "--sabotage"]);
        let j = json(&o);
        assert_eq!(o.status.code(), Some(1), "{mode}: {j}");
        assert_eq!(j["verified"], false, "{mode}: {j}");
        let errs = j["trace"]["check_errors"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(errs.len(), 1, "one message flipped: {j}");
        assert!(
            errs[0]
                .as_str()
                .unwrap_or_default()
                .contains("holds other bytes"),
            "{j}"
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("not verified"));
    }
}

#[test]
fn bad_traces_and_arguments_are_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("netsim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let bad = write(
        "bad.txt",
        "0 init\n1 init\n0 send 1 0 8\n1 recv 0 0 8\n0 alltoallv 1\n",
    );
    let wild = write("wild.txt", "0 send 1 0 8\n1 recv -333 0 8\n");
    let big = write("big.txt", "0 send 1 0 600000 6\n1 recv 0 0 600000 6\n");
    let ring = traces().join("ring").display().to_string();
    let empty = write(
        "empty.txt",
        "0 init\n1 init\n0 barrier\n1 barrier\n0 finalize\n1 finalize\n",
    );
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![bad.display().to_string(), "nic".into()], "bad.txt:5"),
        (
            vec![wild.display().to_string(), "host".into()],
            "wild.txt:2",
        ),
        (vec![big.display().to_string(), "nic".into()], "big.txt:"),
        (vec![big.display().to_string(), "host".into()], "big.txt:"),
        (
            vec!["/nonexistent/trace".into(), "nic".into()],
            "/nonexistent/trace",
        ),
        (vec![ring.clone(), "gossip".into()], "--mode gossip"),
    ];
    for (args, want) in cases {
        let o = netsim(&[
            "--workload",
            "trace",
            "--trace",
            &args[0],
            "--mode",
            &args[1],
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Nothing to flip: a sabotage that could not fail is refused.
    let o = replay(&empty, "host", &["--sabotage"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no byte to flip"));
    for (extra, want) in [
        (["--nodes", "3"], "--nodes 3"),
        (["--size", "8"], "--size 8"),
    ] {
        let o = replay(Path::new(&ring), "nic", &extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    // A trace workload without its trace, a trace for another workload.
    let o = netsim(&["--workload", "trace", "--mode", "nic"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trace"));
    let o = netsim(&[
        "--workload",
        "broadcast",
        "--trace",
        &ring,
        "--mode",
        "store",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trace is for --workload trace"));
    std::fs::remove_dir_all(&dir).ok();
}
