//! `softspin rma lat` and `softspin rma bw` (issue 27, items 4 and 6;
//! docs/rma.md "Benchmarks from the command line") on a two-node cluster
//! (`cluster up --rma`, namespaces prefixed `sL`): every chased value
//! verified and the chain in node 1's memory checked to be one cycle,
//! goodput runs whose bytes and target memory match the test's own
//! SplitMix64 stream, and refusals (a wrong rank, a dead node) that exit 1
//! saying why.

use std::process::{Command, Output};
use std::time::Instant;

use serde_json::Value;
use softspin_cluster::local;
use softspin_testkit::{describe, needs_root, Rng};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");
/// Each node's host memory, exported as window key 1.
const HOST: usize = 1 << 20;
/// The chase's line (docs/cluster.md "Method").
const STRIDE: usize = 64;

fn softspin(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run softspin")
}

struct Cluster {
    prefix: String,
}

impl Cluster {
    fn up(tag: &str) -> Cluster {
        let prefix = format!(
            "{}sL{tag}",
            std::env::var("SS_TEST_NS_PREFIX").unwrap_or_default()
        );
        let c = Cluster { prefix };
        let host = HOST.to_string();
        let o = softspin(&[
            "cluster", "up", "--nodes", "2", "--prefix", &c.prefix, "--rma", "--window", &host,
        ]);
        assert!(o.status.success(), "cluster up: {}", describe(&o));
        c
    }

    fn shm(&self, k: u32) -> Vec<u8> {
        std::fs::read(local::shm_path(&self.prefix, k)).unwrap()
    }

    /// `softspin rma CMD --from 0 --to 1 ARGS... --prefix P --json`.
    fn rma(&self, cmd: &str, args: &[&str]) -> Output {
        let mut a = vec!["rma", cmd, "--from", "0"];
        if !args.contains(&"--to") {
            a.extend(["--to", "1"]);
        }
        a.extend(args);
        a.extend(["--prefix", &self.prefix, "--json"]);
        softspin(&a)
    }

    /// Node k's NIC process id, from `cluster status`.
    fn nic_pid(&self, k: u32) -> i32 {
        let o = softspin(&["cluster", "status", "--prefix", &self.prefix]);
        let text = String::from_utf8_lossy(&o.stdout);
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&k.to_string()))
            .unwrap_or_else(|| panic!("node {k} in `cluster status`: {}", describe(&o)));
        let pid = line.split("pid ").nth(1).expect("a running NIC");
        pid.trim_end_matches(')').parse().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = softspin(&["cluster", "down", "--prefix", &self.prefix]);
    }
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", describe(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(o)))
}

#[test]
fn lat_and_bw_exact_and_refusals_clear() {
    if !needs_root("rma lat/bw test", "network namespaces, XDP") {
        return;
    }
    let cl = Cluster::up("b");

    // lat: every value verified, hostclient's keys, in order.
    let j = json(&cl.rma("lat", &["--count", "200", "--seed", "9"]));
    assert_eq!(j["verified"], 200, "{j}");
    assert_eq!(j["count"], 200, "{j}");
    assert_eq!(j["server"], "nic", "{j}");
    let keys = ["min", "p1", "p5", "p25", "p50", "p75", "p95", "p99", "max"];
    let l = &j["lat_ns"];
    let v: Vec<f64> = keys.iter().map(|k| l[*k].as_f64().unwrap()).collect();
    assert!(v[0] > 0.0 && v.windows(2).all(|w| w[0] <= w[1]), "{l}");
    let mean = l["mean"].as_f64().unwrap();
    assert!(v[0] <= mean && mean <= v[8], "{l}");
    assert_eq!(j["model"]["target_packets_per_read"], 1.0, "{j}");
    // The chain the NIC served, read from node 1's memory directly: one
    // cycle through every 64-byte line of the region.
    let region = j["region"].as_u64().unwrap() as usize;
    assert_eq!(region, HOST, "the default region: the whole host window");
    let m = cl.shm(1);
    let lines = region / STRIDE;
    let (mut cur, mut seen) = (0usize, vec![false; lines]);
    for _ in 0..lines {
        assert!(!seen[cur / STRIDE], "the chain closes early at {cur}");
        seen[cur / STRIDE] = true;
        cur = u64::from_le_bytes(m[cur..cur + 8].try_into().unwrap()) as usize;
        assert!(
            cur.is_multiple_of(STRIDE) && cur < region,
            "a chain value {cur}"
        );
    }
    assert_eq!(cur, 0, "one cycle through all {lines} lines");

    // The chase issued by node 0's NIC (examples/rma_chase): the same
    // report, and its last result in node 0's memory is where 200 steps
    // along the chain in node 1's memory lead.
    let n = json(&cl.rma(
        "lat",
        &[
            "--initiator",
            "nic",
            "--count",
            "200",
            "--hops",
            "30",
            "--seed",
            "9",
        ],
    ));
    assert_eq!(
        (n["initiator"].as_str(), n["verified"].as_u64()),
        (Some("nic"), Some(200)),
        "{n}"
    );
    assert_eq!(n["samples"], 7, "ceil(200 / 30) commands: {n}");
    let nv: Vec<f64> = keys
        .iter()
        .map(|k| n["lat_ns"][*k].as_f64().unwrap())
        .collect();
    assert!(nv[0] > 0.0 && nv.windows(2).all(|w| w[0] <= w[1]), "{n}");
    let mut want = 0usize;
    for _ in 0..200 {
        want = u64::from_le_bytes(m[want..want + 8].try_into().unwrap()) as usize;
    }
    let m0 = cl.shm(0);
    let word = |o: usize| u64::from_le_bytes(m0[o..o + 8].try_into().unwrap());
    assert_eq!(
        (word(8), word(16), word(24)),
        (want as u64, 200 - 6 * 30, 0),
        "last value, reads of the last command, status"
    );
    for bad in [
        &["--initiator", "nic", "--server", "host"][..],
        &["--initiator", "nic", "--hops", "0"],
    ] {
        let o = cl.rma("lat", bad);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("--"), "{bad:?}: {err}");
    }

    // The host-CPU baseline: the same chain, the same report.
    let reg = HOST.to_string();
    let h = json(&cl.rma(
        "lat",
        &[
            "--server", "host", "--count", "200", "--seed", "9", "--region", &reg,
        ],
    ));
    assert_eq!(h["server"], "host", "{h}");
    assert_eq!(h["verified"], 200, "{h}");
    assert_eq!(h["region"], j["region"], "{h}");
    let hv: Vec<f64> = keys
        .iter()
        .map(|k| h["lat_ns"][*k].as_f64().unwrap())
        .collect();
    assert!(hv[0] > 0.0 && hv.windows(2).all(|w| w[0] <= w[1]), "{h}");
    assert_eq!(h["readback"]["mismatched_packets"], 0, "{h}");
    // What the server says it served: the chase's reads among them.
    let served = h["served"]["read_bytes"].as_u64().unwrap_or_default();
    assert!(served >= 200 * 8, "{h}");

    // bw: bytes = whole operations up to --total; node 1 holds the seeded
    // bytes (SplitMix64 from --seed: the testkit's Rng is the same stream).
    for (op, size, w, total) in [
        ("put", 8u64, 1u32, 400u64),
        ("put", 5000, 4, 60_000),
        ("get", 8, 16, 800),
        ("get", 5000, 1, 20_000),
        ("get", 300_000, 8, 1_000_000),
        ("put", 1 << 20, 2, 3 << 20),
    ] {
        let (s, ws, t) = (size.to_string(), w.to_string(), total.to_string());
        let o = cl.rma(
            "bw",
            &[
                "--op",
                op,
                "--size",
                &s,
                "--outstanding",
                &ws,
                "--total",
                &t,
                "--seed",
                "5",
            ],
        );
        let j = json(&o);
        let ops = total.div_ceil(size);
        assert_eq!(j["ops"], ops, "{op} {size} x{w}: {j}");
        assert_eq!(j["bytes"], ops * size, "{op} {size} x{w}: {j}");
        assert!(j["goodput_gbps"].as_f64().unwrap() > 0.0, "{j}");
        let span = (HOST as u64 / size).min(u64::from(w)) * size;
        let mut rng = Rng::new(5);
        let want: Vec<u8> = (0..span.div_ceil(8))
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .take(span as usize)
            .collect();
        assert!(
            cl.shm(1)[..span as usize] == want[..],
            "{op} {size} x{w}: node 1's first {span} bytes"
        );
    }

    // Refusals: a rank the table lacks, a size past the window, a dead node.
    let o = cl.rma("lat", &["--to", "7", "--count", "5"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no rank 7"),
        "{}",
        describe(&o)
    );
    let o = cl.rma("lat", &["--server", "host", "--to", "7", "--count", "5"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no rank 7"));
    let o = cl.rma("bw", &["--to", "7", "--op", "get", "--size", "8"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no rank 7"));
    let o = cl.rma("bw", &["--op", "put", "--size", "8", "--outstanding", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let big = (2 * HOST).to_string();
    let o = cl.rma("bw", &["--op", "put", "--size", &big]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("host window"));

    let pid = cl.nic_pid(1);
    assert_eq!(kill9(pid), 0, "kill node 1's NIC");
    let t = Instant::now();
    for (cmd, args) in [
        ("lat", &["--count", "5"][..]),
        (
            "bw",
            &["--op", "get", "--size", "64", "--outstanding", "4"][..],
        ),
    ] {
        let o = cl.rma(cmd, args);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", describe(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("PEER_FAILED") && err.contains("rank 1"),
            "{cmd}: {}",
            describe(&o)
        );
    }
    assert!(t.elapsed().as_secs() < 30, "a dead node found within 30 s");
}

/// SIGKILL through kill(1) (the test crate has no libc).
fn kill9(pid: i32) -> i32 {
    let s = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    s.code().unwrap_or(-1)
}
