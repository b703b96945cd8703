//! `softspin cluster` (issue 27, docs/cluster.md): clusters of 4 and 8
//! nodes in network namespaces, checked against `ip`'s view of each
//! namespace; every node's NIC runs examples/cluster_hello, which answers
//! from the node table in NIC memory, and every other node asks it; the
//! lossy links; `cluster exec`'s exit status; `cluster down` after the NICs
//! and `cluster up` itself were killed. Node-table errors of `softspin nic`
//! and the handler side in `softspin sim` need no root.
//!
//! Each test's cluster has its own prefix (`sC` + a letter, after
//! $SS_TEST_NS_PREFIX) and is removed by a guard, panics included.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use softspin_cluster::NodeTable;
use softspin_testkit::{describe, handler_image, needs_root, root, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn softspin(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run softspin")
}

fn hello_image() -> String {
    handler_image("cluster_hello", &["examples/cluster_hello/handler.c"])
        .display()
        .to_string()
}

/// A cluster made by `softspin cluster up`, removed on drop.
struct Cluster {
    prefix: String,
}

impl Cluster {
    fn prefix(tag: &str) -> String {
        format!(
            "{}sC{tag}",
            std::env::var("SS_TEST_NS_PREFIX").unwrap_or_default()
        )
    }

    /// `cluster up --nodes N --prefix P EXTRA...`, which must succeed.
    fn up(tag: &str, nodes: u32, extra: &[&str]) -> (Cluster, NodeTable) {
        let c = Cluster {
            prefix: Cluster::prefix(tag),
        };
        let n = nodes.to_string();
        let mut args = vec!["cluster", "up", "--nodes", &n, "--prefix", &c.prefix];
        args.extend(extra);
        let o = softspin(&args);
        assert!(o.status.success(), "cluster up: {}", describe(&o));
        // What up prints is the node table it wrote.
        let printed = NodeTable::parse(&String::from_utf8_lossy(&o.stdout), "stdout").unwrap();
        let table = NodeTable::load(&c.state().join("nodes.toml")).unwrap();
        assert_eq!(printed, table);
        assert_eq!(table.len(), nodes as usize);
        (c, table)
    }

    fn state(&self) -> PathBuf {
        Path::new("/run/softspin").join(format!("cluster-{}", self.prefix))
    }

    fn exec(&self, rank: u32, cmd: &[&str]) -> Output {
        let r = rank.to_string();
        let mut args = vec!["cluster", "exec", &r, "--prefix", &self.prefix, "--"];
        args.extend(cmd);
        softspin(&args)
    }

    fn down(&self) -> Output {
        softspin(&["cluster", "down", "--prefix", &self.prefix])
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.down();
    }
}

/// This prefix's namespaces that exist now.
fn namespaces(prefix: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| {
            ns.strip_prefix(prefix).is_some_and(|r| {
                r == "br" || (!r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()))
            })
        })
        .map(String::from)
        .collect()
}

/// Processes whose command line names the prefix (NICs: `--iface Pke`,
/// forwarders: `--a Pkb`).
fn processes(prefix: &str) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = c
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let ours = args.iter().any(|a| {
            a.strip_prefix(prefix).is_some_and(|r| {
                let d = r.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
            })
        });
        if ours && args.iter().any(|a| a.contains("softspin")) {
            v.push(format!("{pid}: {}", args.join(" ")));
        }
    }
    v
}

/// Nothing of `prefix` is left: namespaces, processes, state directory.
fn assert_gone(prefix: &str) {
    assert_eq!(namespaces(prefix), Vec::<String>::new(), "namespaces left");
    assert_eq!(processes(prefix), Vec::<String>::new(), "processes left");
    let dir = Path::new("/run/softspin").join(format!("cluster-{prefix}"));
    assert!(!dir.exists(), "{} left", dir.display());
}

/// The interface's IPv4/24 and MAC as `ip` shows them in node k's namespace
/// match the table.
fn check_against_ip(c: &Cluster, t: &NodeTable) {
    for n in t.nodes() {
        let ns = n.netns.as_deref().expect("cluster up names the namespace");
        assert_eq!(ns, format!("{}{}", c.prefix, n.rank));
        let o = Command::new("ip")
            .args(["-n", ns, "-o", "link", "show", "dev", &n.iface])
            .output()
            .unwrap();
        let link = String::from_utf8_lossy(&o.stdout);
        assert!(
            link.contains(&format!("link/ether {} ", n.mac)) && link.contains("state UP"),
            "{ns}: {link}"
        );
        let o = Command::new("ip")
            .args(["-n", ns, "-o", "-4", "addr", "show", "dev", &n.iface])
            .output()
            .unwrap();
        let addr = String::from_utf8_lossy(&o.stdout);
        assert!(
            addr.contains(&format!("inet {}/24 ", n.ipv4)),
            "{ns}: {addr}"
        );
        // The bridge has the node's MAC as a static entry on its port (no
        // flooding of its unicast frames to the other nodes).
        let br = format!("{}br", c.prefix);
        let o = Command::new("bridge")
            .args(["-n", &br, "fdb", "show", "br", &br])
            .output()
            .unwrap();
        let fdb = String::from_utf8_lossy(&o.stdout);
        assert!(
            fdb.lines()
                .any(|l| l.starts_with(&format!("{} dev ", n.mac)) && l.contains("static")),
            "{br}: no static entry for {}: {fdb}",
            n.mac
        );
        // Only lo and the node's interface: the root namespace's are elsewhere.
        let o = Command::new("ip")
            .args(["-n", ns, "-o", "link"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count(),
            2,
            "{ns}"
        );
    }
}

const CLIENT: &str = "examples/cluster_hello/client.py";

/// From node `from`, ask each of `to` and check every reply against the
/// table: the target's rank and entry, the cluster's size, and `from` as
/// the sender, with the reply from the target's IPv4 and UDP port.
fn ask(c: &Cluster, t: &NodeTable, from: u32, to: &[u32], tries: u32) -> u32 {
    let client = root().join(CLIENT).display().to_string();
    let targets: Vec<String> = to
        .iter()
        .map(|&k| {
            let n = t.node(k).unwrap();
            format!("{}:{}", n.ipv4, n.udp_port)
        })
        .collect();
    let tries_s = tries.to_string();
    let mut cmd = vec!["python3", &client, "--tries", &tries_s];
    cmd.extend(targets.iter().map(String::as_str));
    let o = c.exec(from, &cmd);
    assert!(o.status.success(), "node {from}: {}", describe(&o));
    let entry = |k: u32| {
        let n = t.node(k).unwrap();
        serde_json::json!({"ipv4": n.ipv4.to_string(), "mac": n.mac.to_string(), "udp_port": n.udp_port, "rank": k})
    };
    let mut retries = 0;
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), to.len(), "{}", describe(&o));
    for (&k, r) in to.iter().zip(&lines) {
        let want = serde_json::json!({
            "target": targets[to.iter().position(|&x| x == k).unwrap()],
            "answered": true,
            "tries": r["tries"],
            "from": targets[to.iter().position(|&x| x == k).unwrap()],
            "len": 48,
            "magic": "HELO",
            "my_rank": k,
            "num_nodes": t.len(),
            "sender_rank": from,
            "sender": entry(from),
            "me": entry(k),
        });
        assert_eq!(*r, want, "node {from} asking node {k}");
        retries += r["tries"].as_u64().unwrap() as u32 - 1;
    }
    retries
}

fn hello_nic_args(port: u16) -> String {
    format!(
        "--profile pspin --image {} --ph hello_ph --match udp:{port}",
        hello_image()
    )
}

/// 4 nodes: the table is what `ip` shows; every node's NIC answers every
/// other node from its node table; `exec` passes exit statuses through;
/// `status` sees the NICs; `down` leaves nothing and may run again.
#[test]
fn four_nodes_answer_each_other_from_the_table() {
    if !needs_root("cluster of 4 nodes", "network namespaces, XDP") {
        return;
    }
    let table_copy = scratch("cluster").join("four.toml");
    let nic = hello_nic_args(9330);
    let (c, t) = Cluster::up(
        "a",
        4,
        &["--table", table_copy.to_str().unwrap(), "--nic-args", &nic],
    );
    assert_eq!(NodeTable::load(&table_copy).unwrap(), t);
    check_against_ip(&c, &t);
    for from in 0..4 {
        let to: Vec<u32> = (0..4).filter(|&k| k != from).collect();
        assert_eq!(ask(&c, &t, from, &to, 1), 0, "no retries without loss");
    }
    // The NIC, not a kernel, answered: no NIC, no answer.
    let o = softspin(&["cluster", "status", "--prefix", &c.prefix]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(s.matches("running (pid").count(), 4, "{s}");

    // exec: the command's exit status, 128 + signal, a clear error for a
    // node that does not exist.
    assert_eq!(c.exec(2, &["sh", "-c", "exit 7"]).status.code(), Some(7));
    assert_eq!(c.exec(0, &["true"]).status.code(), Some(0));
    assert_eq!(
        c.exec(1, &["sh", "-c", "kill -9 $$"]).status.code(),
        Some(137)
    );
    let o = c.exec(4, &["true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("no node 4 in cluster `{}`", c.prefix)),
        "{}",
        describe(&o)
    );

    let o = c.down();
    assert!(o.status.success(), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("removed 5 namespace(s), stopped 4 process(es)"),
        "{}",
        describe(&o)
    );
    assert_gone(&c.prefix);
    let o = c.down();
    assert!(o.status.success(), "idempotent: {}", describe(&o));
}

/// 8 nodes on another port and a given net: each asks the next two around
/// the ring (every node is asked twice, every pair within distance 2).
#[test]
fn eight_nodes_in_a_ring() {
    if !needs_root("cluster of 8 nodes", "network namespaces, XDP") {
        return;
    }
    let nic = hello_nic_args(7777);
    let (c, t) = Cluster::up(
        "b",
        8,
        &["--net", "10.123.45", "--port", "7777", "--nic-args", &nic],
    );
    assert_eq!(t.node(7).unwrap().ipv4.to_string(), "10.123.45.8");
    assert_eq!(t.node(7).unwrap().mac.to_string(), "02:53:0a:7b:2d:08");
    check_against_ip(&c, &t);
    for from in 0..8 {
        ask(&c, &t, from, &[(from + 1) % 8, (from + 2) % 8], 1);
    }
    drop(c);
    assert_gone(&Cluster::prefix("b"));
}

/// Every node's link through softspin-lossy (loss, duplication, reordering):
/// the replies stay exact, the client retries what was lost, and the
/// forwarders carried the traffic (their reports).
#[test]
fn lossy_links_between_four_nodes() {
    if !needs_root("lossy cluster", "network namespaces, AF_PACKET") {
        return;
    }
    let lossy = Path::new(BIN).with_file_name("softspin-lossy");
    if !lossy.exists() {
        softspin_testkit::skip(format_args!(
            "{} missing: cargo build --release -p softspin-lossy",
            lossy.display()
        ));
        return;
    }
    let nic = hello_nic_args(9330);
    let (c, t) = Cluster::up(
        "c",
        4,
        &[
            "--lossy",
            "--loss 0.1 --dup 0.05 --reorder 0.25 --report-every-ms 50",
            "--nic-args",
            &nic,
        ],
    );
    check_against_ip(&c, &t);
    let mut retries = 0;
    for from in 0..4 {
        let to: Vec<u32> = (0..4).filter(|&k| k != from).collect();
        retries += ask(&c, &t, from, &to, 20);
    }
    let o = softspin(&["cluster", "status", "--prefix", &c.prefix]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert_eq!(s.matches("lossy forwarder pid").count(), 4, "{s}");
    std::thread::sleep(Duration::from_millis(150));
    let mut dropped = 0;
    for k in 0..4 {
        let f = c.state().join(format!("fwd-{k}.jsonl"));
        let text = std::fs::read_to_string(&f).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        // Node k sent 3 requests and answered 3 at least, through its forwarder.
        for dir in ["a2b", "b2a"] {
            assert!(
                last[dir]["ipv4_in"].as_u64().unwrap() >= 3,
                "node {k} {dir}: {last}"
            );
            dropped += last[dir]["dropped"].as_u64().unwrap();
        }
    }
    // The seeds are fixed (node k: k+1), so the fates of the frames are.
    println!("lossy cluster: {dropped} frames dropped, {retries} requests retried");
    assert!(dropped > 0, "the links were lossy");
}

/// `cluster up` killed while it starts the NICs, and NIC processes killed:
/// `cluster down` finds everything by the prefix and leaves nothing.
#[test]
fn down_cleans_up_after_sigkill() {
    if !needs_root("cluster crash", "network namespaces, XDP") {
        return;
    }
    let prefix = Cluster::prefix("d");
    let guard = Cluster {
        prefix: prefix.clone(),
    };
    // 1. Kill `up` midway: once the third node's namespace exists.
    let nic = hello_nic_args(9330);
    let mut up = Command::new(BIN)
        .args([
            "cluster",
            "up",
            "--nodes",
            "8",
            "--prefix",
            &prefix,
            "--nic-args",
            &nic,
        ])
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !namespaces(&prefix).contains(&format!("{prefix}2")) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "up never made node 2"
        );
        assert!(
            up.try_wait().unwrap().is_none(),
            "up ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    up.kill().unwrap();
    up.wait().unwrap();
    assert!(!namespaces(&prefix).is_empty());
    let o = guard.down();
    assert!(o.status.success(), "{}", describe(&o));
    assert_gone(&prefix);

    // 2. A whole cluster whose NICs are SIGKILLed, then `up` killed while
    //    the NICs of a second `up` start (they run in sessions of their own).
    let (c, _) = Cluster::up("d", 4, &["--nic-args", &nic]);
    for k in 0..4 {
        let pid: i32 = std::fs::read_to_string(c.state().join(format!("nic-{k}.pid")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: kill(2) on a pid this test's cluster started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    }
    // Dead now; its reappearance below is the second `up` starting NICs.
    std::fs::remove_file(c.state().join("nic-0.pid")).unwrap();
    let mut up = Command::new(BIN)
        .args([
            "cluster",
            "up",
            "--nodes",
            "4",
            "--prefix",
            &prefix,
            "--nic-args",
            &nic,
        ])
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // Until a NIC of the new `up` was started (or up finished first: down
    // must clean up all the same).
    while !c.state().join("nic-0.pid").exists() && up.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "up never started a NIC"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = up.kill();
    up.wait().unwrap();
    let o = c.down();
    assert!(o.status.success(), "{}", describe(&o));
    assert_gone(&prefix);
    drop(guard);
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = scratch("cluster").join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const TWO: &str = "[[node]]\nrank = 0\niface = \"sCnosuch0\"\nipv4 = \"10.9.8.1\"\nmac = \"02:00:00:00:00:01\"\nudp_port = 9330\n\n\
[[node]]\nrank = 1\niface = \"lo\"\nipv4 = \"10.9.8.2\"\nmac = \"02:00:00:00:00:02\"\nudp_port = 9330\n";

/// Bad tables and ranks are refused before anything is attached, with the
/// line and field, or the interface, named (exit status 1). No root needed.
#[test]
fn nic_refuses_bad_tables_and_unknown_interfaces() {
    let img = hello_image();
    let nic = |table: &Path, iface: &str, rank: &str| {
        softspin(&[
            "nic",
            "--iface",
            iface,
            "--nodes",
            table.to_str().unwrap(),
            "--rank",
            rank,
            "--image",
            &img,
            "--ph",
            "hello_ph",
            "--match",
            "udp:9330",
            "--mode",
            "socket",
        ])
    };
    let expect = |o: Output, want: &str| {
        assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "want `{want}`: {}", describe(&o));
    };
    let good = write("two.toml", TWO);
    expect(
        nic(&good, "sCnosuch0", "0"),
        "node table: rank 0 names interface `sCnosuch0`, which does not exist here",
    );
    expect(
        nic(&good, "eth9", "0"),
        "--iface eth9 but the node table gives rank 0 interface sCnosuch0",
    );
    expect(
        nic(&good, "lo", "2"),
        "--rank 2: rank 2 is not in the node table (2 nodes: ranks 0..=1)",
    );
    let dup = write("dup.toml", &TWO.replace("rank = 1", "rank = 0"));
    expect(
        nic(&dup, "lo", "0"),
        &format!(
            "node table {}:9: `rank`: rank 0 appears twice (first at line 2)",
            dup.display()
        ),
    );
    let o = softspin(&["nic", "--iface", "lo", "--rank", "0"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--rank needs --nodes: {}",
        describe(&o)
    );
    // up: the prefix is checked before anything is made.
    let o = softspin(&["cluster", "up", "--nodes", "4", "--prefix", "sC1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ending with a letter"),
        "{}",
        describe(&o)
    );
}

/// The handler side without a network: `softspin sim --nodes --rank` puts
/// the table in NIC memory and cluster_hello answers a request from rank 0
/// to rank 1 with both entries; without a table it stays silent.
#[test]
fn sim_gives_handlers_the_table() {
    use softspin_testkit::frame::Frame;
    use softspin_testkit::pcap;
    let t = NodeTable::parse(TWO, "two").unwrap();
    let table = write("sim.toml", TWO);
    let (a, b) = (t.node(0).unwrap(), t.node(1).unwrap());
    let req = Frame {
        src_mac: a.mac.0,
        dst_mac: b.mac.0,
        src_ip: a.ipv4.octets(),
        dst_ip: b.ipv4.octets(),
        sport: 40001,
        dport: b.udp_port,
        ..Default::default()
    }
    .udp(b"hello");
    let dir = scratch("cluster");
    let input = dir.join("req.pcap");
    pcap::write(&input, &[req], Duration::from_micros(1));
    let img = hello_image();
    let run = |extra: &[&str], out: &Path| {
        let mut args = vec![
            "sim",
            "--image",
            &img,
            "--ph",
            "hello_ph",
            "--frame",
            "eth",
            "--pcap",
            input.to_str().unwrap(),
            "--pcap-out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = softspin(&args);
        assert!(o.status.success(), "{}", describe(&o));
        pcap::read(out)
    };
    let replies = run(
        &["--nodes", table.to_str().unwrap(), "--rank", "1"],
        &dir.join("out.pcap"),
    );
    assert_eq!(replies.len(), 1);
    let want = Frame {
        src_mac: b.mac.0,
        dst_mac: a.mac.0,
        src_ip: b.ipv4.octets(),
        dst_ip: a.ipv4.octets(),
        sport: b.udp_port,
        dport: 40001,
        ..Default::default()
    };
    let mut payload = Vec::new();
    payload.extend(b"HELO");
    payload.extend(1i32.to_le_bytes()); // my rank
    payload.extend(2u32.to_le_bytes()); // nodes
    payload.extend(0i32.to_le_bytes()); // the sender's rank
    for (k, n) in [(0u32, a), (1, b)] {
        payload.extend(n.ipv4.octets());
        payload.extend(n.mac.0);
        payload.extend(n.udp_port.to_be_bytes());
        payload.extend(k.to_le_bytes());
    }
    assert_eq!(replies[0], want.udp(&payload));
    // No table: spin_my_rank() is -1, no reply.
    assert!(run(&[], &dir.join("none.pcap")).is_empty());
}

/// The node table is read-only for handlers: a store faults, and the error
/// says what was hit (exit status 3, a handler error).
#[test]
fn handlers_cannot_write_the_node_table() {
    let dir = scratch("cluster");
    let src = write(
        "ro.c",
        "#include <spin.h>\n__handler__ void ro_ph(handler_args_t *args)\n{\n    (void)args;\n    \
         ((spin_node_table_t *)SPIN_NODE_TABLE)->my_rank = 7;\n}\n",
    );
    let img = dir.join("ro.elf");
    let o = softspin(&["build", "-o", img.to_str().unwrap(), src.to_str().unwrap()]);
    assert!(o.status.success(), "{}", describe(&o));
    let table = write("ro.toml", TWO);
    let o = softspin(&[
        "sim",
        "--image",
        img.to_str().unwrap(),
        "--ph",
        "ro_ph",
        "--packets",
        "1",
        "--nodes",
        table.to_str().unwrap(),
        "--rank",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("store to read-only memory (a store to the node table (spin_node.h), which handlers may only read) at pc=")
            && out.contains("addr=0x1e000000"),
        "{}",
        describe(&o)
    );
}

/// `up --image` (a use case's image in RMA mode): only with --rma, the
/// handler flags only with --image, and a missing file is named before
/// anything is made (so also without root).
#[test]
fn up_image_needs_rma_and_a_file() {
    for (args, want) in [
        (&["--image", "uc.elf"][..], "--rma"),
        (&["--rma", "--ph", "x_ph"][..], "--image"),
        (
            &["--rma", "--image", "/nonexistent/uc.elf"][..],
            "--image /nonexistent/uc.elf: no such file",
        ),
        (&["--profile", "pspin"][..], "--rma"),
        (
            &["--rma", "--profile", "nosuch"][..],
            "--profile nosuch: no such NIC model",
        ),
    ] {
        let mut v = vec!["cluster", "up", "--nodes", "2", "--prefix", "sMimg"];
        v.extend_from_slice(args);
        let o = softspin(&v);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{args:?}: {err}");
    }
    assert!(namespaces("sMimg").is_empty());
}
