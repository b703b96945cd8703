//! What a live run records (issue 26): `softspin nic --timeline` (the
//! handler spans of the traffic sent, a ring of the last window, a
//! wall-clock anchor) and `--pcap-out` (a pcapng of both directions, read
//! by tshark and by the SLMP dissector). Traffic comes from kernel sockets
//! in the peer namespace, so the counts and bytes expected are known
//! independently of softspin.

use std::io::Read;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use softspin_testkit::{pcap, root, scratch, skip};

use super::{build, calls, ping_pong_image, u, Net, NicProc};

/// Seconds since the UNIX epoch, now.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn read_json(path: &std::path::Path) -> Value {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&b).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The handler spans of `handler` in a timeline (named `SYMBOL msg N`).
fn spans<'a>(t: &'a Value, handler: &str) -> Vec<&'a Value> {
    t["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| {
            e["cat"] == "handler"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&format!("{handler} msg ")))
        })
        .collect()
}

/// A number of a timeline's `otherData` (whose values are strings).
fn meta(t: &Value, key: &str) -> f64 {
    t["otherData"][key]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number `{key}` in {}", t["otherData"]))
}

/// NIC time 0's wall clock from a timeline's metadata, in seconds.
fn time0(t: &Value) -> f64 {
    meta(t, "nic_time0_unix_ns") / 1e9
}

/// A live run of `pingpong_ph` under known echo traffic: one handler span
/// per invocation (the report's count, the frames matched, at least the
/// datagrams the peer had echoed), every span on an HPU track of its
/// cluster, command spans for the replies, and NIC time 0 within the run.
#[test]
fn timeline_of_a_live_run() {
    let Some(net) = Net::up("timeline_of_a_live_run", 40) else {
        return;
    };
    let img = ping_pong_image();
    let file = scratch("live-test").join("live-timeline.json");
    let before = unix_now();
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
        "--timeline",
        file.to_str().unwrap(),
    ]);
    let r = net.peer_py(&["echo", &net.nic_ip(), "7", "200", "3"]);
    assert_eq!(u(&r, "ok"), 200, "{r}");
    let v = nic.stop_json(0);
    let after = unix_now();
    let t = read_json(&file);
    let handlers = spans(&t, "pingpong_ph");
    let n = handlers.len() as u64;
    assert_eq!(n, calls(&v, "pingpong_ph"), "one span per invocation: {v}");
    assert_eq!(n, u(&v, "matched"), "one invocation per frame matched");
    assert!(
        (200..=200 + u(&r, "probes")).contains(&n),
        "{n} spans for 200 echoes and {} probes",
        u(&r, "probes")
    );
    let cfg = softspin_engine::NicConfig::fpspin();
    let t0 = time0(&t);
    let mut last_end = 0.0f64;
    for s in &handlers {
        let (pid, tid) = (s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap());
        assert!(
            tid < (cfg.clusters * cfg.hpus_per_cluster) as u64
                && tid / cfg.hpus_per_cluster as u64 == pid,
            "span on HPU {tid} of cluster {pid}: {s}"
        );
        assert_eq!(s["ph"], "X");
        let dur = s["dur"].as_f64().unwrap();
        assert!(dur > 0.0, "{s}");
        last_end = last_end.max(s["ts"].as_f64().unwrap() + dur);
    }
    // Each reply is one send command (on the command unit's track).
    let commands = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "command")
        .count() as u64;
    assert!(commands >= n, "{commands} command spans for {n} replies");
    assert!(
        before <= t0 && t0 + last_end / 1e6 <= after,
        "NIC time 0 at {t0}, last span ending {last_end} us later, run from {before} to {after}"
    );
    assert_eq!(meta(&t, "dropped_events"), 0.0, "{}", t["otherData"]);
    assert_eq!(meta(&t, "window_s"), 10.0);
}

/// With a 1 s window, echoes sent 2.5 s before the end are dropped from the
/// file and counted; those of the last moments are all there.
#[test]
fn a_long_run_keeps_only_the_last_window() {
    let Some(net) = Net::up("a_long_run_keeps_only_the_last_window", 41) else {
        return;
    };
    let img = ping_pong_image();
    let file = scratch("live-test").join("live-timeline-window.json");
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
        "--timeline",
        file.to_str().unwrap(),
        "--timeline-window",
        "1",
    ]);
    let early = net.peer_py(&["echo", &net.nic_ip(), "7", "30", "4"]);
    assert_eq!(u(&early, "ok"), 30, "{early}");
    std::thread::sleep(Duration::from_millis(2500));
    let late = net.peer_py(&["echo", &net.nic_ip(), "7", "20", "5"]);
    assert_eq!(u(&late, "ok"), 20, "{late}");
    let v = nic.stop_json(0);
    let t = read_json(&file);
    let kept = spans(&t, "pingpong_ph");
    // The late run's probes all reach the NIC (it is attached by then).
    assert_eq!(
        kept.len() as u64,
        20 + u(&late, "probes"),
        "kept only the late echoes: {}",
        t["otherData"]
    );
    let all = calls(&v, "pingpong_ph");
    let dropped = meta(&t, "dropped_events") as u64;
    assert!(
        dropped >= all - kept.len() as u64 && all - kept.len() as u64 >= 30,
        "{all} invocations, {} kept, {dropped} events dropped",
        kept.len()
    );
    let from = meta(&t, "kept_from_us");
    let end = meta(&t, "run_end_us");
    assert!((end - from - 1e6).abs() < 1.0, "{}", t["otherData"]);
    for s in t["traceEvents"].as_array().unwrap() {
        let e = s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap_or(0.0);
        assert!(e >= from, "{s} ended before the window ({from} us)");
    }
}

/// The datagram the peer sends as its `i`-th (also in PEER_PY).
fn payload(i: usize) -> Vec<u8> {
    (0..1 + i * 29 % 1400)
        .map(|k| ((i * 7 + k) % 256) as u8)
        .collect()
}

/// Echo client in the peer namespace: probes until the NIC answers, then
/// N datagrams `payload(i)`, each reply compared with what was sent.
const PEER_PY: &str = r#"
import json, socket, sys, time
ip, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.3)
probes, end = 0, time.time() + 10
while True:
    s.sendto(b"probe", (ip, port)); probes += 1
    try:
        if s.recvfrom(4096)[0] == b"probe": break
    except (socket.timeout, ConnectionRefusedError):
        if time.time() > end: sys.exit("no echo")
s.settimeout(2)
ok = 0
for i in range(n):
    d = bytes((i * 7 + k) % 256 for k in range(1 + i * 29 % 1400))
    s.sendto(d, (ip, port))
    ok += s.recvfrom(4096)[0] == d
print(json.dumps({"probes": probes, "ok": ok, "sport": s.getsockname()[1]}))
"#;

fn tshark_missing() -> bool {
    if Command::new("tshark").arg("--version").output().is_err() {
        skip("pcapng test: tshark not installed (scripts/setup.sh --tests installs it)");
        return true;
    }
    false
}

/// `tshark -r FILE [ARGS]` with fields `fields`, `|`-separated rows.
fn tshark(file: &std::path::Path, args: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.arg("-r").arg(file).args(args);
    c.args(["-T", "fields", "-E", "separator=|"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A reply as pingpong_ph builds it: MACs, IPv4 addresses and UDP ports
/// swapped, nothing else changed (the checksums stay valid).
fn swapped(f: &[u8]) -> Vec<u8> {
    let mut r = f.to_vec();
    r[0..6].copy_from_slice(&f[6..12]);
    r[6..12].copy_from_slice(&f[0..6]);
    r[26..30].copy_from_slice(&f[30..34]);
    r[30..34].copy_from_slice(&f[26..30]);
    let udp = 14 + (f[14] & 0xf) as usize * 4;
    r[udp..udp + 2].copy_from_slice(&f[udp + 2..udp + 4]);
    r[udp + 2..udp + 4].copy_from_slice(&f[udp..udp + 2]);
    r
}

/// `--pcap-out` under known echo traffic, read by tshark: an rx and a tx
/// interface; on rx exactly the datagrams the peer sent (payload and
/// addresses byte-exact, in order, commented with the ECTX and message),
/// on tx exactly the replies (the rx frame swapped, byte-exact), all
/// stamped within the run's wall-clock interval, each reply after its
/// request.
#[test]
fn pcap_out_holds_both_directions() {
    if tshark_missing() {
        return;
    }
    let Some(net) = Net::up("pcap_out_holds_both_directions", 42) else {
        return;
    };
    let img = ping_pong_image();
    let file = scratch("live-test").join("both.pcapng");
    let before = unix_now();
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
        "--pcap-out",
        file.to_str().unwrap(),
    ]);
    // The peer's own capture, to merge with the NIC's.
    let peer_cap = scratch("live-test").join("peer.pcap");
    let mut dump = (have("tcpdump") && have("mergecap")).then(|| {
        let mut c = net
            .cmd(&[
                "exec",
                "peer",
                "tcpdump",
                "-i",
                &net.peer_if(),
                "-U",
                "-n",
                "--immediate-mode",
            ])
            .args(["--time-stamp-precision", "nano", "-w"])
            .arg(&peer_cap)
            .args(["udp", "port", "7"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_line(&mut c, "listening on");
        c
    });
    let n = 40;
    let o = net.exec(
        &net.peer_ns(),
        &["python3", "-c", PEER_PY, &net.nic_ip(), "7", &n.to_string()],
    );
    assert!(
        o.status.success(),
        "peer: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(u(&r, "ok"), n as u64, "{r}");
    let v = nic.stop_json(0);
    let after = unix_now();
    if let Some(d) = &mut dump {
        std::thread::sleep(Duration::from_millis(200));
        let st = Command::new("kill")
            .args(["-INT", &d.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        assert!(d.wait().unwrap().success(), "tcpdump");
    }
    let sport = u(&r, "sport").to_string();
    // The ECTX's name, as the report gives it (`ECTX:symbol`).
    let ectx = v["handlers"][0]["name"]
        .as_str()
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .to_string();
    let named = format!("ECTX {ectx}, msg ");

    let rows = tshark(
        &file,
        &[],
        &[
            "frame.interface_id",
            "frame.interface_name",
            "frame.time_epoch",
            "frame.comment",
            "ip.src",
            "ip.dst",
            "udp.srcport",
            "udp.dstport",
            "udp.payload",
        ],
    );
    let probe = hex(b"probe");
    let (peer, me) = (net.peer_ip(), net.nic_ip());
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    for row in &rows {
        let [id, name, time, comment, src, dst, sp, dp, data] = &row[..] else {
            panic!("row {row:?}");
        };
        let t: f64 = time.parse().unwrap();
        assert!(
            before <= t && t <= after,
            "{t} outside {before}..{after}: {row:?}"
        );
        assert!(
            comment.contains(&format!("ECTX {ectx}")),
            "comment: {row:?}"
        );
        match (id.as_str(), name.as_str()) {
            ("0", n) if n == format!("{} rx", net.nic_if()) => {
                assert_eq!(
                    (src, dst, sp.as_str(), dp.as_str()),
                    (&peer, &me, sport.as_str(), "7")
                );
                assert!(comment.starts_with(&named), "comment: {row:?}");
                rx.push((t, data.clone()));
            }
            ("1", n) if n == format!("{} tx", net.nic_if()) => {
                assert_eq!(
                    (src, dst, sp.as_str(), dp.as_str()),
                    (&me, &peer, "7", sport.as_str())
                );
                tx.push((t, data.clone()));
            }
            _ => panic!("unknown interface: {row:?}"),
        }
    }
    let real = |v: &[(f64, String)]| -> Vec<(f64, String)> {
        v.iter().filter(|(_, d)| *d != probe).cloned().collect()
    };
    let want: Vec<String> = (0..n).map(|i| hex(&payload(i))).collect();
    let (rx_real, tx_real) = (real(&rx), real(&tx));
    assert_eq!(
        rx_real.iter().map(|x| &x.1).collect::<Vec<_>>(),
        want.iter().collect::<Vec<_>>()
    );
    assert_eq!(
        tx_real.iter().map(|x| &x.1).collect::<Vec<_>>(),
        want.iter().collect::<Vec<_>>()
    );
    for (q, a) in rx_real.iter().zip(&tx_real) {
        assert!(q.0 <= a.0, "reply at {} before its request at {}", a.0, q.0);
    }
    assert_eq!(rx.len() as u64, u(&v, "matched"), "every frame taken: {v}");
    assert_eq!(tx.len() as u64, u(&v, "tx_frames"), "every frame sent: {v}");

    // Whole frames: each reply is its request swapped, byte for byte.
    let pk = pcap::read_ng(&file);
    let (rxf, txf): (Vec<_>, Vec<_>) = pk.iter().partition(|p| p.interface == 0);
    assert_eq!((rxf.len(), txf.len()), (rx.len(), tx.len()));
    for (q, a) in rxf.iter().zip(&txf) {
        assert_eq!(a.frame, swapped(&q.frame));
    }

    // Merged by wall clock with the peer's capture, each datagram is seen
    // in causal order: leaving the peer, taken by the NIC, its reply sent,
    // the reply reaching the peer.
    if dump.is_none() {
        skip("pcapng merge check: tcpdump or mergecap missing (scripts/setup.sh --tests)");
        return;
    }
    let merged = scratch("live-test").join("merged.pcapng");
    let o = Command::new("mergecap")
        .arg("-w")
        .arg(&merged)
        .arg(&file)
        .arg(&peer_cap)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mergecap: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Interfaces by id: the NIC's rx and tx, then the peer's (unnamed).
    let rows = tshark(
        &merged,
        &[],
        &["frame.interface_id", "udp.payload", "frame.time_epoch"],
    );
    let causal = ["2", "0", "1", "2"];
    for (i, want) in want.iter().enumerate() {
        let seen: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == *want).collect();
        let ids: Vec<&String> = seen.iter().map(|r| &r[0]).collect();
        let at: Vec<&String> = seen.iter().map(|r| &r[2]).collect();
        // tcpdump on the peer may miss a frame under load; the NIC's own
        // two are always there, and whatever was seen is in causal order.
        let mut rest = causal.iter();
        let ordered = ids.iter().all(|id| rest.any(|c| *c == id.as_str()));
        let nic: Vec<&str> = ids
            .iter()
            .map(|id| id.as_str())
            .filter(|id| *id != "2")
            .collect();
        assert!(
            ordered && nic == ["0", "1"],
            "datagram {i} in the merged capture: {ids:?}, at {at:?}"
        );
    }
}

/// Reads a child's stderr byte by byte (nothing buffered is lost) until a
/// line contains `marker`.
fn wait_line(child: &mut std::process::Child, marker: &str) {
    let err = child.stderr.as_mut().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8];
    while err.read(&mut b).unwrap() == 1 {
        if b[0] == b'\n' {
            if String::from_utf8_lossy(&line).contains(marker) {
                return;
            }
            line.clear();
        } else {
            line.push(b[0]);
        }
    }
    panic!("the child ended before it said {marker:?}");
}

/// Waits until `softspin nic` says it runs: the ECTX's rules are in.
fn wait_running(nic: &mut NicProc) {
    wait_line(nic.child.as_mut().unwrap(), "stop with Ctrl-C");
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// The SLMP receiver's handler live with `--pcap-out`: tools/wireshark/
/// slmp.lua decodes the data segments on rx and the handler's ACKs on tx.
#[test]
fn slmp_capture_is_decoded_by_the_dissector() {
    if tshark_missing() {
        return;
    }
    let Some(net) = Net::up("slmp_capture_is_decoded_by_the_dissector", 43) else {
        return;
    };
    let img = build(&root().join("examples/slmp_recv/handler.c"), "slmp_recv");
    let file = scratch("live-test").join("slmp.pcapng");
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "slmp_ph",
        "--match",
        "slmp",
        "--host-size",
        "16777216",
        "--pcap-out",
        file.to_str().unwrap(),
    ]);
    wait_running(&mut nic);
    // Three one-segment messages (SYN|EOM: each is ACKed), 100 B each.
    let py = "import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
              for m in (5, 6, 7): s.sendto(bytes.fromhex('c000%08x00000000' % m) + bytes(100), (sys.argv[1], 9330))";
    let o = net.exec(&net.peer_ns(), &["python3", "-c", py, &net.nic_ip()]);
    assert!(
        o.status.success(),
        "peer: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::thread::sleep(Duration::from_millis(500));
    nic.signal("-INT");
    let (st, out, err) = nic.wait(10);
    assert!(st.success(), "{out} {err}");
    let lua = root().join("tools/wireshark/slmp.lua");
    let rows = tshark(
        &file,
        &["-X", &format!("lua_script:{}", lua.display())],
        &[
            "frame.interface_id",
            "slmp.msg_id",
            "slmp.flags.syn",
            "slmp.flags.eom",
            "slmp.flags.ack",
            "slmp.payload_len",
        ],
    );
    let got: Vec<String> = rows.iter().map(|r| r.join(" ")).collect();
    let want = [
        "0 5 1 1 0 100",
        "1 5 0 0 1 0",
        "0 6 1 1 0 100",
        "1 6 0 0 1 0",
        "0 7 1 1 0 100",
        "1 7 0 0 1 0",
    ];
    let mut sorted = got.clone();
    sorted.sort_by_key(|r| (r.split(' ').nth(1).map(str::to_string), r.starts_with('1')));
    assert_eq!(sorted, want, "as tshark decodes it: {got:?}");
}

/// Bad `--timeline-window` values and unwritable files are refused with
/// exit status 1 and a message naming them, before any traffic is taken:
/// the timeline's file is created before the NIC attaches (no root
/// needed), the capture's just after.
#[test]
fn bad_capture_flags_are_refused() {
    let refused = |args: &[&str], want: &str| {
        let o = super::softspin()
            .args([
                "nic",
                "--iface",
                "lo",
                "--image",
                "/nonexistent.elf",
                "--match",
                "udp:7",
            ])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    };
    for w in ["0", "-1", "nan", "inf", "2e9"] {
        refused(
            &["--timeline", "/dev/null", &format!("--timeline-window={w}")],
            &format!("--timeline-window {}", w.parse::<f64>().unwrap()),
        );
    }
    refused(
        &["--timeline", "/nonexistent-dir/t.json"],
        "/nonexistent-dir/t.json: cannot create",
    );
    let Some(net) = Net::up("bad_capture_flags_are_refused", 44) else {
        return;
    };
    let img = ping_pong_image();
    let o = net
        .nic_cmd(&[
            "--image",
            &img,
            "--ph",
            "pingpong_ph",
            "--match",
            "udp:7",
            "--duration",
            "5",
            "--pcap-out",
            "/nonexistent-dir/c.pcapng",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/nonexistent-dir/c.pcapng: cannot create"),
        "{err}"
    );
    assert!(!net.xdp_attached(), "detached after the error");
}
