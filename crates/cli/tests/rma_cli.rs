//! RMA from host programs beside NIC processes (issue 27, items 3-4;
//! docs/host-interface.md "RMA", docs/rma.md "From host programs"): a
//! cluster of two nodes (`softspin cluster up --rma`, namespaces prefixed
//! `sH`), each running `softspin nic --rma` with examples/rma_target, its
//! host memory in shared memory and a control socket at the cluster's
//! convention (`local::control_path`, `local::shm_path`). Rust (`NicClient`), the CLI
//! (`softspin rma put|get`), Python (`softspin.NicClient`) and C
//! (`ss_client_*`) post put/get/fetch-and-add/compare-and-swap on node 0
//! against node 1; every result is checked against the test's own model and
//! against node 1's shm file, read independently of any client.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use softspin_cluster::local;
use softspin_host::{NicClient, RmaHandle, RmaOp, RmaRequest};
use softspin_testkit::{describe, needs_root, root, scratch, skip, Rng};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");
/// Each node's host memory (one ECTX: its host window), all exported under
/// key 1 with every right.
const HOST: usize = 1 << 20;
const KEY: u32 = 1;

fn softspin(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run softspin")
}

/// `softspin cluster up --nodes N --rma`: every node's NIC serves RMA with
/// key 1 over its whole host memory and a control socket; taken down on
/// drop (`cluster down`), panics included.
struct Cluster {
    prefix: String,
}

impl Cluster {
    /// `cluster up --nodes N --rma --window HOST EXTRA...`.
    fn up(tag: &str, nodes: u32, extra: &[&str]) -> Cluster {
        let prefix = format!(
            "{}sH{tag}",
            std::env::var("SS_TEST_NS_PREFIX").unwrap_or_default()
        );
        let n = nodes.to_string();
        let c = Cluster { prefix };
        let host = HOST.to_string();
        let mut args = vec![
            "cluster", "up", "--nodes", &n, "--prefix", &c.prefix, "--rma", "--window", &host,
        ];
        args.extend(extra);
        let o = softspin(&args);
        assert!(o.status.success(), "cluster up: {}", describe(&o));
        c
    }

    fn control(&self, k: u32) -> PathBuf {
        local::control_path(&self.prefix, k)
    }

    /// Node k's host memory as it is now, read from its shm file (not
    /// through any client).
    fn shm(&self, k: u32) -> Vec<u8> {
        std::fs::read(local::shm_path(&self.prefix, k)).unwrap()
    }

    /// `cluster down` leaves no namespace, socket or shm file.
    fn down(self, nodes: u32) {
        let o = softspin(&["cluster", "down", "--prefix", &self.prefix]);
        assert!(o.status.success(), "cluster down: {}", describe(&o));
        for k in 0..nodes {
            assert!(!self.control(k).exists(), "node {k}: socket left");
            assert!(
                !local::shm_path(&self.prefix, k).exists(),
                "node {k}: shm left"
            );
        }
        let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let left: Vec<String> = String::from_utf8_lossy(&ns.stdout)
            .lines()
            .filter(|l| l.starts_with(&self.prefix))
            .map(str::to_string)
            .collect();
        assert!(left.is_empty(), "namespaces left: {left:?}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = softspin(&["cluster", "down", "--prefix", &self.prefix]);
    }
}

/// A client of node `k` with key 1 exported over its whole host memory.
fn client(c: &Cluster, k: u32) -> NicClient {
    let mut nc = NicClient::connect(c.control(k)).unwrap();
    assert_eq!(nc.hello()["rank"], k, "{}", nc.hello());
    let e = nc.ectxs()[0].clone();
    assert!(e.rma, "the RMA ECTX is flagged in hello");
    assert_eq!(e.shm_offset, Some(0));
    nc.export_window(e.ectx, KEY, 0, HOST as u64, 7).unwrap();
    nc
}

fn word(m: &[u8], off: usize, width: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(&m[off..off + width]);
    u64::from_le_bytes(b)
}

fn random(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

/// Rust, the CLI, Python and C on node 0 against node 1, byte-exact.
#[test]
fn host_programs_put_get_and_atomics_through_their_nics() {
    if !needs_root("rma host test", "network namespaces, XDP") {
        return;
    }
    let cl = Cluster::up("a", 2, &[]);
    let mut c0 = client(&cl, 0);
    let _c1 = client(&cl, 1);
    let mut rng = Rng::new(2735);

    // put: the bytes stored in node 0's memory land in node 1's.
    let data = random(&mut rng, 10_000);
    c0.window_mem(0).unwrap()[..data.len()].copy_from_slice(&data);
    c0.put(1, KEY, 3001, 0, data.len() as u64).unwrap();
    assert_eq!(&cl.shm(1)[3001..13_001], &data[..], "put: node 1's memory");
    // get: they come back into node 0's memory elsewhere.
    c0.get(1, KEY, 3001, 20_000, data.len() as u64).unwrap();
    assert_eq!(&c0.window_mem(0).unwrap()[20_000..30_000], &data[..], "get");

    // fetch-and-add and compare-and-swap, 64 and 32 bit: the old word as
    // node 1's file has it, and the new one there.
    let m = cl.shm(1);
    let old = word(&m, 4000, 8);
    assert_eq!(c0.fetch_add(1, KEY, 4000, 8, 0x1_0000_0005).unwrap(), old);
    assert_eq!(word(&cl.shm(1), 4000, 8), old.wrapping_add(0x1_0000_0005));
    let old32 = word(&m, 4012, 4);
    assert_eq!(c0.fetch_add(1, KEY, 4012, 4, 7).unwrap(), old32);
    assert_eq!(word(&cl.shm(1), 4012, 4), (old32 + 7) & 0xffff_ffff);
    let cur = word(&cl.shm(1), 4016, 8);
    assert_eq!(
        c0.cas(1, KEY, 4016, 8, cur ^ 1, 42).unwrap(),
        cur,
        "no swap"
    );
    assert_eq!(word(&cl.shm(1), 4016, 8), cur);
    assert_eq!(c0.cas(1, KEY, 4016, 8, cur, 42).unwrap(), cur, "swap");
    assert_eq!(word(&cl.shm(1), 4016, 8), 42);

    // A wrong key: an error naming BAD_KEY, nothing written; the same for
    // a range past the window.
    let before = cl.shm(1);
    let e = c0.put(1, 99, 0, 0, 16).unwrap_err().to_string();
    assert!(e.contains("BAD_KEY") && e.contains("rank 1"), "{e}");
    let e = c0
        .put(1, KEY, HOST as u64 - 8, 0, 16)
        .unwrap_err()
        .to_string();
    assert!(e.contains("OUT_OF_WINDOW"), "{e}");
    assert!(cl.shm(1) == before, "a refused put wrote");
    // Arguments the NIC refuses: errors, the NIC serves on.
    let bad = RmaRequest {
        rank: 1,
        key: KEY,
        offset: 0,
        op: RmaOp::FetchAdd {
            width: 3,
            addend: 1,
        },
    };
    assert!(c0.post(&bad).is_err());
    let e = c0
        .request(
            "rma_post",
            serde_json::json!({"request": {"rank": 1, "op": "erase"}}),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("`request`"), "{e}");

    two_clients_get_only_their_own(&cl, &mut rng);
    cli_put_then_get(&cl, &mut rng);
    python_client(&cl);
    c_client(&cl);

    // A client that leaves with operations in flight: their completions
    // are dropped and counted, and the NIC serves on.
    let mut gone = NicClient::connect(cl.control(0)).unwrap();
    for k in 0..4u64 {
        let op = RmaOp::Get {
            local: 60_000 + 8 * k,
            len: 8,
        };
        gone.post(&RmaRequest {
            rank: 1,
            key: KEY,
            offset: 0,
            op,
        })
        .unwrap();
    }
    drop(gone);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let s = c0.status().unwrap();
        if s["control"]["rma_dropped"] == 4 {
            assert_eq!(s["control"]["rma_in_flight"], 0, "{s}");
            break;
        }
        assert!(Instant::now() < end, "the 4 completions not dropped: {s}");
        std::thread::sleep(Duration::from_millis(20));
    }
    c0.get(1, KEY, 3001, 0, 8).unwrap();
    let s = c0.status().unwrap();
    assert_eq!(s["errors"], 0, "{s}");

    // Node 1's NIC killed: a blocking put fails naming PEER_FAILED and the
    // rank, within the transport's bound (docs/rma.md "Reliability"), and
    // the CLI's exits 1 saying the same.
    let pid = std::fs::read_to_string(local::state_dir(&cl.prefix).join("nic-1.pid")).unwrap();
    let k = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(k.success());
    let t = Instant::now();
    let e = c0.put(1, KEY, 0, 0, 4000).unwrap_err().to_string();
    assert!(e.contains("PEER_FAILED") && e.contains("rank 1"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let f = scratch("rma-cli").join("in.bin");
    let o = softspin(&[
        "rma",
        "put",
        "--from",
        "0",
        "--to",
        "1",
        "--offset",
        "0",
        "--prefix",
        &cl.prefix,
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("PEER_FAILED"),
        "{}",
        describe(&o)
    );
    drop((c0, _c1));
    cl.down(2);
}

/// Two clients of one NIC post at once: each waits for "all of mine" and
/// gets exactly its own handles' completions; the other's handle is
/// refused.
fn two_clients_get_only_their_own(cl: &Cluster, rng: &mut Rng) {
    let mut a = NicClient::connect(cl.control(0)).unwrap();
    let mut b = NicClient::connect(cl.control(0)).unwrap();
    let pattern = random(rng, 4096);
    b.window_mem(0).unwrap()[100_000..104_096].copy_from_slice(&pattern);
    b.put(1, KEY, 200_000, 100_000, 4096).unwrap();
    let post = |c: &mut NicClient, k: u64| {
        let op = RmaOp::Get {
            local: 110_000 + 512 * k,
            len: 512,
        };
        c.post(&RmaRequest {
            rank: 1,
            key: KEY,
            offset: 200_000 + 512 * k,
            op,
        })
        .unwrap()
    };
    let ha: Vec<RmaHandle> = (0..4).map(|k| post(&mut a, k)).collect();
    let hb: Vec<RmaHandle> = (4..8).map(|k| post(&mut b, k)).collect();
    let e = a.wait(hb[0], Duration::ZERO).unwrap_err().to_string();
    assert!(e.contains("another client's"), "{e}");
    for (c, mine) in [(&mut a, &ha), (&mut b, &hb)] {
        let mut got = Vec::new();
        let end = Instant::now() + Duration::from_secs(10);
        while got.len() < mine.len() {
            assert!(Instant::now() < end, "completions: {got:?}");
            for x in c.wait_any(&[], Duration::from_secs(1)).unwrap() {
                assert_eq!(x.status, 0, "{x:?}");
                got.push(x.handle);
            }
        }
        got.sort();
        assert_eq!(&got, mine, "exactly this client's handles");
        assert!(c.wait_any(&[], Duration::ZERO).unwrap().is_empty());
    }
    assert_eq!(&a.window_mem(0).unwrap()[110_000..114_096], &pattern[..]);
}

/// `softspin rma put` then `get` of a random file, through node 0.
fn cli_put_then_get(cl: &Cluster, rng: &mut Rng) {
    let dir = scratch("rma-cli");
    let file = dir.join("in.bin");
    let back = dir.join("back.bin");
    let data = random(rng, 100_000);
    std::fs::write(&file, &data).unwrap();
    let p = cl.prefix.as_str();
    let o = softspin(&[
        "rma",
        "put",
        "--from",
        "0",
        "--to",
        "1",
        "--offset",
        "300000",
        "--prefix",
        p,
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "rma put: {}", describe(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["status"], "OK", "{j}");
    assert_eq!(j["bytes"], 100_000, "{j}");
    // docs/rma.md: at most 1432 bytes a packet.
    assert_eq!(j["packets"], 100_000u64.div_ceil(1432), "{j}");
    assert!(j["time_s"].as_f64().unwrap() > 0.0, "{j}");
    assert_eq!(&cl.shm(1)[300_000..400_000], &data[..], "put by the CLI");
    let o = softspin(&[
        "rma",
        "get",
        "--from",
        "0",
        "--to",
        "1",
        "--offset",
        "300000",
        "--len",
        "100000",
        "--local",
        "500000",
        "--prefix",
        p,
        "--out",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "rma get: {}", describe(&o));
    assert_eq!(std::fs::read(&back).unwrap(), data, "get by the CLI");
    // A wrong key: exit 1 naming BAD_KEY, nothing written.
    let before = cl.shm(1);
    let o = softspin(&[
        "rma",
        "put",
        "--from",
        "0",
        "--to",
        "1",
        "--offset",
        "0",
        "--key",
        "77",
        "--prefix",
        p,
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("BAD_KEY"),
        "{}",
        describe(&o)
    );
    assert!(cl.shm(1) == before, "a refused CLI put wrote");
    // Node 0 is not rank 1: refused before anything is posted.
    let o = softspin(&[
        "rma",
        "get",
        "--from",
        "1",
        "--to",
        "0",
        "--offset",
        "0",
        "--len",
        "8",
        "--control",
        cl.control(0).to_str().unwrap(),
        "--out",
        back.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is rank 0"),
        "{}",
        describe(&o)
    );
}

/// The Python interpreter with numpy (the project's venv, or
/// $SOFTSPIN_PYTHON), or None.
fn python() -> Option<PathBuf> {
    let p = std::env::var_os("SOFTSPIN_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    p.exists().then_some(p)
}

/// Four nodes whose links lose 3 %, reorder 25 % and duplicate 1 % of the
/// frames (`cluster up --lossy`): puts and gets from node 0 to every other
/// node, fetch-and-adds from every node on one word summing exactly, and
/// the Python and C clients' runs, all byte-exact against the targets' shm
/// files.
#[test]
fn four_nodes_through_lossy_links_stay_exact() {
    if !needs_root("rma host lossy test", "network namespaces, XDP") {
        return;
    }
    let cl = Cluster::up(
        "l",
        4,
        &[
            "--lossy",
            "--loss 0.03 --reorder 0.25 --dup 0.01 --report-every-ms 100",
        ],
    );
    let mut cs: Vec<NicClient> = (0..4).map(|k| client(&cl, k)).collect();
    let mut rng = Rng::new(274);
    for t in 1..4u32 {
        let data = random(&mut rng, 30_000 + t as usize);
        let local = 100_000 * t as usize;
        cs[0].window_mem(0).unwrap()[local..local + data.len()].copy_from_slice(&data);
        let n = data.len() as u64;
        cs[0]
            .put(t as u16, KEY, 5 + u64::from(t), local as u64, n)
            .unwrap();
        assert_eq!(
            &cl.shm(t)[5 + t as usize..][..data.len()],
            &data[..],
            "put to {t}"
        );
        cs[0]
            .get(t as u16, KEY, 5 + u64::from(t), 500_000, n)
            .unwrap();
        assert_eq!(
            &cs[0].window_mem(0).unwrap()[500_000..][..data.len()],
            &data[..],
            "get from {t}"
        );
    }
    // 3 nodes x 10 fetch-and-adds of k+1 on node 1's word at 1_000_000:
    // each old value distinct, the sum exact.
    const AT: u64 = 1_000_000;
    let start = word(&cl.shm(1), AT as usize, 8);
    let mut olds = Vec::new();
    for _ in 0..10 {
        for (k, c) in cs.iter_mut().enumerate() {
            if k != 1 {
                olds.push(c.fetch_add(1, KEY, AT, 8, k as u64 + 1).unwrap());
            }
        }
    }
    olds.sort();
    olds.dedup();
    assert_eq!(olds.len(), 30, "every fetch-and-add saw its own old value");
    assert_eq!(word(&cl.shm(1), AT as usize, 8), start + 10 * (1 + 3 + 4));
    python_client(&cl);
    c_client(&cl);
    // The links did lose frames (the forwarders' latest reports).
    std::thread::sleep(Duration::from_millis(300));
    let mut dropped = 0;
    for k in 0..4 {
        let f = local::state_dir(&cl.prefix).join(format!("fwd-{k}.jsonl"));
        let text = std::fs::read_to_string(&f).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["a2b"]["rx_kernel_drops"], 0, "{last}");
        dropped +=
            last["a2b"]["dropped"].as_u64().unwrap() + last["b2a"]["dropped"].as_u64().unwrap();
    }
    assert!(dropped > 0, "no frame was lost: not a lossy test");
    drop(cs);
    cl.down(4);
}

/// crates/host-py/tests/rma_client.py on node 0 against node 1.
fn python_client(cl: &Cluster) {
    let Some(py) = python() else {
        skip("rma host test, Python part: no .venv (scripts/setup.sh --tests)");
        return;
    };
    let o = Command::new(py)
        .env("PYTHONPATH", root().join("crates/host-py/python"))
        .arg(root().join("crates/host-py/tests/rma_client.py"))
        .arg(cl.control(0))
        .arg(local::shm_path(&cl.prefix, 1))
        .output()
        .unwrap();
    assert!(o.status.success(), "rma_client.py: {}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("rma_client.py: ok"));
}

/// crates/host-c/tests/rma_client_test.c on node 0 against node 1.
fn c_client(cl: &Cluster) {
    let lib = root().join("target/release");
    if !lib.join("libsoftspin.so").exists() {
        skip("rma host test, C part: no target/release/libsoftspin.so (cargo build --release -p softspin-c)");
        return;
    }
    let exe = scratch("rma-cli").join("rma_client_test");
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(format!(
            "-I{}",
            root().join("crates/host-c/include").display()
        ))
        .arg(root().join("crates/host-c/tests/rma_client_test.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-lsoftspin")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "cc: {}", describe(&o));
    let o = Command::new(&exe)
        .arg(cl.control(0))
        .arg(local::shm_path(&cl.prefix, 1))
        .output()
        .unwrap();
    assert!(o.status.success(), "rma_client_test: {}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("rma_client_test: ok"));
}

/// Without root: bad arguments, no NIC, and a NIC that cannot post (its
/// RMA transport is off) each give exit status 1 and the cause; nothing is
/// written to the NIC's memory.
#[test]
fn rma_commands_refuse_with_the_cause() {
    let dir = scratch("rma-cli-refuse");
    let empty = dir.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let data = dir.join("data.bin");
    std::fs::write(&data, b"0123456789").unwrap();
    let out = dir.join("out.bin");
    let (e, d, o) = (
        empty.to_str().unwrap(),
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let nowhere = dir.join("nobody.sock");
    let nowhere = nowhere.to_str().unwrap();
    let base = ["--from", "0", "--to", "1", "--offset", "0"];
    // `softspin rma CMD BASE ARGS..` exits 1 with `want` in its message.
    let refused = |args: &[&str], want: &str| {
        let mut a = vec!["rma", args[0]];
        a.extend(base);
        a.extend(&args[1..]);
        let r = softspin(&a);
        assert_eq!(r.status.code(), Some(1), "{a:?}: {}", describe(&r));
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(want), "{a:?}: want `{want}`: {err}");
    };
    for (args, want) in [
        (vec!["put", e], "empty"),
        (vec!["get", "--len", "0", "--out", o], "--len 0"),
        (vec!["put", "--timeout", "0", d], "--timeout 0"),
        (vec!["put", "--control", nowhere, d], "node 0's NIC"),
        (
            vec!["put", "--prefix", "sHnone", d],
            "cluster-sHnone/0.sock",
        ),
    ] {
        refused(&args, want);
    }
    // A NIC (socket mode on lo, no node table, no transport): the NIC
    // refuses the post, the command says why.
    let image = dir.join("rma_target.elf");
    let b = Command::new(BIN)
        .args(["build", "--profile", "fpspin"])
        .arg(root().join("examples/rma_target/handler.c"))
        .arg("-o")
        .arg(&image)
        .output()
        .unwrap();
    assert!(b.status.success(), "build: {}", describe(&b));
    let ctl = dir.join("nic.sock");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let shm = format!("sH-refuse-{}", std::process::id());
    let mut nic = NicGuard {
        shm: PathBuf::from("/dev/shm").join(&shm),
        ctl: ctl.clone(),
        child: Command::new(BIN)
            .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
            .arg(&image)
            .args(["--ph", "rma_target_ph", "--match", &format!("udp:{port}")])
            .args([
                "--scratchpad",
                "12288",
                "--host-size",
                "65536",
                "--host-shm",
                &shm,
            ])
            .args(["--window", "65536", "--control"])
            .arg(&ctl)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    };
    let end = Instant::now() + Duration::from_secs(20);
    while NicClient::connect(&ctl).is_err() {
        assert!(nic.child.try_wait().unwrap().is_none(), "the NIC exited");
        assert!(Instant::now() < end, "no control socket after 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = ctl.to_str().unwrap();
    refused(
        &["put", "--control", c, "--local", "65530", d],
        "beyond node 0's 65536-byte host window",
    );
    refused(&["put", "--control", c, d], "RMA transport");
}

/// A `softspin nic` killed, and its files removed, when the test ends
/// (panics included).
struct NicGuard {
    child: std::process::Child,
    shm: PathBuf,
    ctl: PathBuf,
}

impl Drop for NicGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.shm);
        let _ = std::fs::remove_file(&self.ctl);
    }
}
