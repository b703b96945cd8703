//! The live status of `softspin nic --progress` (issue 26, item 1): the
//! JSON lines follow the traffic and end where the `--json` summary does;
//! handler errors are shown while the NIC runs, the first few of each
//! cause in full, then counted. Socket mode in a namespace pair of its own
//! (`softspin_testkit::net::Topo`); the traffic comes from kernel sockets
//! (tests/live/peer.py), so the counts are checked against what was sent.
//!
//! Needs root (namespaces); without it each test prints why it skips.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use softspin_testkit::net::Topo;
use softspin_testkit::{needs_root, root, scratch};

/// Handler errors of one cause shown in full (`status::IN_FULL`).
const IN_FULL: usize = 5;

fn softspin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
}

fn build(src: &Path, name: &str) -> String {
    let out = scratch("live-status-test").join(format!("{name}.elf"));
    let o = softspin()
        .args(["build", "--profile", "fpspin"])
        .arg(src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_str().unwrap().to_string()
}

fn up(test: &str, n: u32) -> Option<Topo> {
    if !needs_root(&format!("live status test {test}"), "network namespaces") {
        return None;
    }
    Some(Topo::pair(&format!("s{n}"), &format!("10.94.{n}")))
}

/// `softspin nic --mode socket ARGS` in the NIC's namespace; stderr goes
/// line by line to the returned channel as it comes.
fn spawn_nic(net: &Topo, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new("ip")
        .args(["netns", "exec", &net.nic_ns()])
        .arg(env!("CARGO_BIN_EXE_softspin"))
        .args(["nic", "--iface", &net.nic_if(), "--mode", "socket"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for the exit (at most 15 s): status code, stdout, all stderr lines.
fn finish(mut child: Child, rx: &mpsc::Receiver<String>) -> (Option<i32>, String, Vec<String>) {
    let end = Instant::now() + Duration::from_secs(15);
    let st = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("softspin nic still running after 15 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    // The reader thread ends at EOF, dropping the sender.
    let lines = rx.iter().collect();
    (st.code(), out, lines)
}

/// peer.py ARGS in the peer namespace: its JSON line.
fn peer_py(net: &Topo, args: &[&str]) -> Value {
    let py = root().join("crates/cli/tests/live/peer.py");
    let mut cmd = vec!["python3", py.to_str().unwrap()];
    cmd.extend_from_slice(args);
    let o = net.exec(&net.peer_ns(), &cmd);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "peer.py {args:?}: {out}");
    serde_json::from_str(out.trim()).unwrap()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("`{k}` is not a count in {v}"))
}

/// Two batches of echoes 1.5 s apart: the status lines (one a second) parse,
/// their counts never go down, one falls between the batches, and the
/// final line's counts are the summary's and the traffic's.
#[test]
fn progress_json_lines_follow_the_traffic() {
    let Some(net) = up("progress_json_lines_follow_the_traffic", 1) else {
        return;
    };
    let img = build(&root().join("examples/ping_pong/handler.c"), "ping_pong");
    let (child, rx) = spawn_nic(
        &net,
        &[
            "--image",
            &img,
            "--ph",
            "pingpong_ph",
            "--match",
            "udp:9101",
            "--duration",
            "5",
            "--progress",
            "json",
            "--json",
        ],
    );
    let a = peer_py(&net, &["echo", &net.nic_ip(), "9101", "100", "1"]);
    std::thread::sleep(Duration::from_millis(1500));
    let b = peer_py(&net, &["echo", &net.nic_ip(), "9101", "100", "2"]);
    for r in [&a, &b] {
        assert_eq!((u(r, "ok"), u(r, "lost"), u(r, "bad")), (100, 0, 0), "{r}");
    }
    // Every datagram sent (the probes too) was echoed.
    let sent = 200 + u(&a, "probes") + u(&b, "probes");
    let (code, out, lines) = finish(child, &rx);
    assert_eq!(code, Some(0), "{lines:?}");
    let summary: Value = serde_json::from_str(out.trim()).unwrap();
    let mut status: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    // stderr is all JSON: first the start, naming the port.
    let start = status.remove(0);
    assert_eq!(start["event"], "start", "{start}");
    assert!(
        start["port"].as_str().unwrap().contains("UDP ports [9101]"),
        "{start}"
    );
    assert!(
        status.iter().all(|s| s["event"] == "status"),
        "no errors or drops: {lines:?}"
    );
    assert!(status.len() >= 4, "a line a second for 5 s: {lines:?}");
    let last = status.last().unwrap();
    assert_eq!(last["final"], true, "{last}");
    assert!(status[..status.len() - 1]
        .iter()
        .all(|s| s["final"] == false));
    let counts = |s: &Value| -> Vec<u64> {
        [
            "rx_frames",
            "matched",
            "tx_frames",
            "packets",
            "invocations",
        ]
        .iter()
        .map(|k| u(s, k))
        .collect()
    };
    for w in status.windows(2) {
        let (p, n) = (counts(&w[0]), counts(&w[1]));
        assert!(
            p.iter().zip(&n).all(|(p, n)| p <= n),
            "{} then {}",
            w[0],
            w[1]
        );
        assert!(w[0]["wall_s"].as_f64().unwrap() < w[1]["wall_s"].as_f64().unwrap());
    }
    // Between the batches: some matched, not all.
    assert!(
        status.iter().any(|s| (1..sent).contains(&u(s, "matched"))),
        "a line between the batches: {lines:?}"
    );
    assert!(
        status
            .iter()
            .any(|s| s["per_s"]["matched"].as_f64().unwrap() > 0.0),
        "{lines:?}"
    );
    for k in [
        "rx_frames",
        "matched",
        "passed_to_kernel",
        "tx_frames",
        "unprocessed",
        "drops",
        "errors",
        "fragments",
        "packets",
    ] {
        assert_eq!(
            last[k], summary[k],
            "`{k}` in the last line and the summary"
        );
    }
    let calls: u64 = summary["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| u(h, "invocations"))
        .sum();
    assert_eq!(u(last, "invocations"), calls);
    assert_eq!(
        (
            u(last, "matched"),
            u(last, "tx_frames"),
            u(last, "invocations")
        ),
        (sent, sent, sent),
        "{last}"
    );
    assert_eq!(u(last, "hpus"), 16, "the fpspin profile's HPUs: {last}");
    let occ = last["hpu_occupancy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&occ), "{last}");
}

/// The example's echo, preceded by a store to address 0 for 'X' and an
/// endless loop for 'L' (as tests/live.rs's containment test).
fn contain_image() -> String {
    let d = scratch("live-status-test");
    let src = d.join("contain.c");
    let pp = root().join("examples/ping_pong/handler.c");
    std::fs::write(
        &src,
        format!(
            "#include \"{}\"\n\
             __handler__ void contain_ph(handler_args_t *args)\n{{\n\
             \tuint8_t *p = (uint8_t *)args->task->pkt_mem;\n\
             \tif (args->task->pkt_mem_size > 42 && p[42] == 'X')\n\t\t*(volatile uint32_t *)0 = 1;\n\
             \tif (args->task->pkt_mem_size > 42 && p[42] == 'L')\n\t\tfor (;;)\n\t\t\t__asm__ volatile(\"\");\n\
             \tpingpong_ph(args);\n}}\n",
            pp.display()
        ),
    )
    .unwrap();
    build(&src, "contain")
}

fn contain_args<'a>(img: &'a str, progress: &'a str) -> Vec<&'a str> {
    vec![
        "--image",
        img,
        "--ph",
        "contain_ph",
        "--match",
        "udp:9102",
        "--watchdog",
        "100000",
        "--progress",
        progress,
    ]
}

/// Lines from `rx` until `done` says so (at most 10 s), while the NIC runs.
fn read_until(
    child: &mut Child,
    rx: &mpsc::Receiver<String>,
    mut done: impl FnMut(&[String]) -> bool,
) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while !done(&got) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the NIC ended early: {got:?}"
        );
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => got.push(l),
            Err(_) => panic!("not shown within 10 s: {got:?}"),
        }
    }
    got
}

fn interrupt(child: &Child) {
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// 20 faults and 20 watchdog expiries: while the NIC runs, the first five
/// of each cause are shown in full (ECTX, message, handler), the fifth
/// saying that the rest are counted; at exit, how many there were in all.
/// In text (`plain`) and as JSON lines.
#[test]
fn errors_are_shown_as_they_happen() {
    let Some(net) = up("errors_are_shown_as_they_happen", 2) else {
        return;
    };
    let img = contain_image();
    let is_err = |l: &String| l.starts_with("softspin: nic: error: ");
    let watchdog = |l: &String| l.to_lowercase().contains("watchdog");

    // Text.
    let (mut child, rx) = spawn_nic(&net, &contain_args(&img, "plain"));
    let r = peer_py(&net, &["contain", &net.nic_ip(), "9102", "200", "55"]);
    assert_eq!((u(&r, "ok"), u(&r, "special")), (200, 40), "{r}");
    let mut lines = read_until(&mut child, &rx, |g| {
        g.iter().filter(|l| is_err(l)).count() == 2 * IN_FULL
    });
    interrupt(&child);
    let (code, _, rest) = finish(child, &rx);
    assert_eq!(code, Some(3), "handler errors: {lines:?} {rest:?}");
    lines.extend(rest);
    let errs: Vec<&String> = lines.iter().filter(|l| is_err(l)).collect();
    assert_eq!(errs.len(), 2 * IN_FULL, "{lines:?}");
    assert_eq!(errs.iter().filter(|l| watchdog(l)).count(), IN_FULL);
    for l in &errs {
        assert!(
            l.contains("`contain` message ") && l.contains(" contain_ph: "),
            "ECTX, message and handler: {l}"
        );
    }
    let quiet: Vec<_> = errs
        .iter()
        .filter(|l| l.contains("further ones are only counted"))
        .collect();
    assert_eq!(quiet.len(), 2, "the fifth of each cause says so: {errs:?}");
    let totals: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("errors in all (5 shown above)"))
        .collect();
    assert_eq!(totals.len(), 2, "{lines:?}");
    assert!(totals.iter().all(|l| l.contains(": 20 `")), "{totals:?}");
    let last_status = lines
        .iter()
        .rfind(|l| l.contains(" handlers "))
        .expect("status lines");
    assert!(last_status.contains("errors 40 ("), "{last_status}");

    // JSON: the same errors as objects; the final line counts all 40.
    let (mut child, rx) = spawn_nic(&net, &contain_args(&img, "json"));
    let r = peer_py(&net, &["contain", &net.nic_ip(), "9102", "200", "56"]);
    assert_eq!(u(&r, "special"), 40, "{r}");
    let is_err = |l: &String| l.contains(r#""event":"error""#);
    let mut lines = read_until(&mut child, &rx, |g| {
        g.iter().filter(|l| is_err(l)).count() == 2 * IN_FULL
    });
    interrupt(&child);
    let (code, _, rest) = finish(child, &rx);
    assert_eq!(code, Some(3));
    lines.extend(rest);
    // The exit status's reason stays text, as softspin's own errors do.
    let (json, text): (Vec<&String>, Vec<&String>) = lines.iter().partition(|l| l.starts_with('{'));
    assert_eq!(text, ["softspin: nic: 40 handler errors (exit status 3)"]);
    let objs: Vec<Value> = json
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let errs: Vec<&Value> = objs.iter().filter(|o| o["event"] == "error").collect();
    assert_eq!(errs.len(), 2 * IN_FULL, "{lines:?}");
    for e in &errs {
        let x = &e["error"];
        assert_eq!(
            (&x["ectx"], &x["handler"]),
            (&"contain".into(), &"contain_ph".into()),
            "{e}"
        );
        assert!(x["msg_id"].is_u64() && x["cause"].is_string(), "{e}");
    }
    assert_eq!(
        errs.iter()
            .filter(|e| e["counted_only_from_now"] == true)
            .count(),
        2
    );
    let last = objs.last().unwrap();
    assert_eq!(
        (&last["event"], &last["final"]),
        (&"status".into(), &true.into())
    );
    assert_eq!(u(last, "errors_total"), 40, "{last}");
}

/// `nic`'s text summary lists what the handlers pushed with
/// `spin_push_counter`: here each frame's size, so the sum is the frames
/// sent (42 header bytes + payload each).
#[test]
fn text_summary_lists_the_counters() {
    let Some(net) = up("text_summary_lists_the_counters", 3) else {
        return;
    };
    let src = scratch("live-status-test").join("count.c");
    std::fs::write(
        &src,
        format!(
            "#include \"{}\"\n\
             __handler__ void count_ph(handler_args_t *args)\n{{\n\
             \tspin_push_counter(2, args->task->pkt_mem_size);\n\
             \tpingpong_ph(args);\n}}\n",
            root().join("examples/ping_pong/handler.c").display()
        ),
    )
    .unwrap();
    let img = build(&src, "count");
    let (child, rx) = spawn_nic(
        &net,
        &["--image", &img, "--ph", "count_ph", "--match", "udp:9103"],
    );
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(first.contains("stop with Ctrl-C"), "{first}");
    // Payloads of 18.. bytes: frames of at least 60, no padding question.
    let sizes: Vec<usize> = (0..40).map(|i| 18 + (i * 37) % 1400).collect();
    let prog = format!(
        "import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         for n in {sizes:?}:\n    s.sendto(bytes(n), ('{}', 9103))\n    time.sleep(0.001)\n",
        net.nic_ip()
    );
    let o = net.exec(&net.peer_ns(), &["python3", "-c", &prog]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    let (code, out, err) = finish(child, &rx);
    assert_eq!(code, Some(0), "{err:?}");
    let sum: usize = sizes.iter().map(|n| 42 + n).sum();
    let want = format!("counter            `count` [2]: sum {sum} over 40 pushes");
    assert!(out.contains(&want), "{want} in {out}");
}
