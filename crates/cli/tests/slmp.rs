//! `softspin slmp send` against the reference SLMP receiver
//! (`softspin_testkit::slmp_receiver`) on 127.0.0.1: the file arrives byte-exact
//! through seeded loss, the JSON statistics agree with what the receiver
//! saw, and every failure (nobody listening, delivery not confirmed, bad
//! flags) exits non-zero with a message naming the cause.

use std::path::PathBuf;
use std::process::{Command, Output};

use softspin_testkit::slmp_receiver::{Impairment, ReferenceReceiver};
use softspin_testkit::{describe, scratch, skip, Rng};

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(args)
        .output()
        .unwrap()
}

fn file(name: &str, len: usize) -> (PathBuf, Vec<u8>) {
    let data = Rng::new(len as u64).bytes(len);
    let p = scratch("slmp-cli").join(name);
    std::fs::write(&p, &data).unwrap();
    (p, data)
}

#[test]
fn send_arrives_byte_exact_through_loss_and_reports_json() {
    let (path, data) = file("lossy.bin", 300 << 10);
    for window in ["auto", "1", "64"] {
        let rx = ReferenceReceiver::spawn(Impairment::lossy(5, 0.05, 0.05, 0.05)).unwrap();
        let to = rx.addr().to_string();
        let o = softspin(&[
            "slmp",
            "send",
            path.to_str().unwrap(),
            "--to",
            &to,
            "--window",
            window,
            "--json",
        ]);
        let out = rx.stop();
        assert!(o.status.success(), "window {window}: {}", describe(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            v["error"].is_null() && v["delivery_confirmed"] == true,
            "{v}"
        );
        assert_eq!(v["bytes"], data.len() as u64);
        let segs = (data.len() as u64).div_ceil(softspin_slmp::DEFAULT_SEGMENT as u64);
        assert_eq!(v["segments"], segs);
        assert_eq!(v["acks_received"], segs);
        assert!(out.data_dropped > 0 && out.acks_dropped > 0, "{out:?}");
        assert!(
            v["retransmitted"].as_u64().unwrap() > 0,
            "loss but no retransmission: {v}"
        );
        assert_eq!(
            v["packets_sent"].as_u64().unwrap(),
            out.data_packets,
            "sender and receiver count the same packets"
        );
        // First message id of a fresh sender is 1.
        assert!(out.messages[&1] == data, "window {window}: file differs");
        assert!(!v["window"]["samples"].as_array().unwrap().is_empty());
        assert!(v["rtt"]["p50_us"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn send_without_receiver_gives_up_with_an_error() {
    let (path, _) = file("gone.bin", 20_000);
    let to = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let t = std::time::Instant::now();
    let o = softspin(&[
        "slmp",
        "send",
        path.to_str().unwrap(),
        "--to",
        &to,
        "--give-up-s",
        "0.5",
        "--json",
    ]);
    assert!(t.elapsed().as_secs_f64() < 5.0);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("gave up on message id 1") && err.contains("no ACK"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("gave up"), "{v}");
    assert_eq!(v["delivery_confirmed"], false);
}

#[test]
fn sync_none_is_not_confirmed_delivery() {
    let (path, data) = file("none.bin", 10_000);
    let rx = ReferenceReceiver::spawn(Impairment::default()).unwrap();
    let to = rx.addr().to_string();
    let o = softspin(&[
        "slmp",
        "send",
        path.to_str().unwrap(),
        "--to",
        &to,
        "--sync",
        "none",
        "--ipg-us",
        "20",
    ]);
    let out = rx.stop();
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not confirmed"),
        "{}",
        describe(&o)
    );
    assert_eq!(out.acks_sent, 0);
    // A clean loopback still delivers it (not a guarantee, so only here).
    assert!(out.messages[&1] == data);
}

#[test]
fn bad_flags_are_refused_with_the_field_named() {
    let (path, _) = file("bad.bin", 10);
    let p = path.to_str().unwrap();
    let o = softspin(&["slmp", "send", p, "--to", "127.0.0.1", "--window", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("auto"),
        "{}",
        describe(&o)
    );
    let o = softspin(&["slmp", "send", p, "--to", "127.0.0.1", "--segment", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--segment"),
        "{}",
        describe(&o)
    );
    let o = softspin(&["slmp", "send", p, "--to", "no such host!"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--to"),
        "{}",
        describe(&o)
    );
    let o = softspin(&["slmp", "send", "/nonexistent/file", "--to", "127.0.0.1"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    // 4 GiB + 1 (sparse): over the 32-bit offset, refused before reading.
    let big = path.with_file_name("big.bin");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((1 << 32) + 1)
        .unwrap();
    let o = softspin(&["slmp", "send", big.to_str().unwrap(), "--to", "127.0.0.1"]);
    let _ = std::fs::remove_file(&big);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("4 GiB"),
        "{}",
        describe(&o)
    );
}

/// Without a port, `--to` uses SLMP's 9330 (skipped if the port is taken).
#[test]
fn default_port_is_9330() {
    let Ok(rx) =
        ReferenceReceiver::spawn_on("127.0.0.1:9330".parse().unwrap(), Impairment::default())
    else {
        skip("default_port_is_9330: 127.0.0.1:9330 is taken");
        return;
    };
    let (path, data) = file("port.bin", 5_000);
    let o = softspin(&["slmp", "send", path.to_str().unwrap(), "--to", "127.0.0.1"]);
    let out = rx.stop();
    assert!(o.status.success(), "{}", describe(&o));
    assert!(out.messages[&1] == data);
    assert!(String::from_utf8_lossy(&o.stdout).contains("127.0.0.1:9330"));
}

#[test]
fn recv_refuses_bad_flags_and_interfaces() {
    let out = std::env::temp_dir().join(format!("softspin-slmp-recv-bad-{}", std::process::id()));
    let out = out.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--segment", "4096", "--max-size", "1024"],
            "segment <= max-size",
        ),
        (
            vec!["--mode", "socket", "--iface", "nosuchif9"],
            "nosuchif9",
        ),
    ] {
        let mut a = vec!["slmp", "recv", "--out", out];
        if !args.contains(&"--iface") {
            a.extend(["--iface", "lo"]);
        }
        a.extend(args.iter().copied());
        let o = softspin(&a);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {}", describe(&o));
        assert!(
            describe(&o).contains(says),
            "{a:?} should say `{says}`: {}",
            describe(&o)
        );
    }
}

/// Values that used to panic (a seconds option of NaN, infinity, 1e300 or
/// below zero: exit 101) or be accepted and then match nothing (`--segment
/// 70000`, `--port 0`) are usage errors (exit 2) naming the valid range.
#[test]
fn recv_and_send_refuse_out_of_range_values_as_usage_errors() {
    let out = std::env::temp_dir().join(format!("softspin-slmp-range-{}", std::process::id()));
    let out = out.to_str().unwrap();
    let (f, _) = file("range.bin", 10);
    let f = f.to_str().unwrap();
    let recv = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "slmp", "recv", "--iface", "lo", "--mode", "socket", "--out", out,
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        let o = softspin(&a.iter().map(String::as_str).collect::<Vec<_>>());
        (a, o)
    };
    let mut cases = Vec::new();
    for v in ["nan", "inf", "-inf", "1e300", "-1", "0"] {
        cases.push((recv(&[&format!("--timeout={v}")]), "(0, 86400] seconds"));
        cases.push((recv(&[&format!("--evict-after={v}")]), "(0, 86400] seconds"));
    }
    // --timeout: without the range these waited for traffic that never matched.
    cases.push((recv(&["--segment", "70000", "--timeout", "5"]), "1..=65497"));
    cases.push((recv(&["--segment", "0", "--timeout", "5"]), "1..=65497"));
    cases.push((recv(&["--port", "0", "--timeout", "5"]), "1..=65535"));
    cases.push((recv(&["--count", "0"]), "--count"));
    let send = [
        "slmp",
        "send",
        f,
        "--to",
        "127.0.0.1:9",
        "--segment",
        "70000",
    ];
    cases.push((
        (send.map(String::from).to_vec(), softspin(&send)),
        "1..=65497",
    ));
    for ((a, o), says) in cases {
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{a:?} should say `{says}`: {}",
            describe(&o)
        );
    }
}

#[test]
fn recv_help_names_each_default_once() {
    let o = softspin(&["slmp", "recv", "--help"]);
    assert!(o.status.success(), "{}", describe(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    // The option's entry: its line and, when clap puts the help below the
    // option (long help), the lines up to the next option.
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--count"));
    let first = lines.next().expect("a --count line");
    let count: String = std::iter::once(first)
        .chain(lines.take_while(|l| !l.trim_start().starts_with('-')))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(count.matches("[default: 1]").count(), 1, "{count}");
}

/// `--out` is checked before anything is received: a path under a regular
/// file, or a file where `--count 2` needs a directory, ends `recv` before
/// it says it is waiting (it used to ACK the message and then fail to
/// write it).
#[test]
fn recv_checks_out_before_receiving() {
    let (f, _) = file("not-a-dir.bin", 10);
    let under = f.join("msg");
    for (out, count, says) in [
        (under.to_str().unwrap(), "1", "cannot write"),
        (f.to_str().unwrap(), "2", "not a directory"),
    ] {
        let a = [
            "slmp",
            "recv",
            "--iface",
            "lo",
            "--mode",
            "socket",
            "--port",
            "39417",
            "--out",
            out,
            "--count",
            count,
            "--timeout",
            "3",
        ];
        let o = softspin(&a);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {}", describe(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--out") && err.contains(says) && !err.contains("waiting for"),
            "{a:?}: {}",
            describe(&o)
        );
    }
}

/// Nothing acknowledged: no goodput is reported (0 in the JSON), and the
/// exit status says the transfer failed.
#[test]
fn send_reports_no_goodput_when_nothing_was_acknowledged() {
    let (f, _) = file("nobody.bin", 3000);
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = port.local_addr().unwrap().to_string();
    drop(port);
    let f = f.to_str().unwrap();
    let o = softspin(&["slmp", "send", f, "--to", &to, "--give-up-s", "0.5"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        !text.contains("goodput 0") && !text.contains("Gbit/s") && text.contains("no goodput"),
        "{}",
        describe(&o)
    );
    let o = softspin(&[
        "slmp",
        "send",
        f,
        "--to",
        &to,
        "--give-up-s",
        "0.5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["acks_received"], 0, "{v}");
    assert_eq!(v["goodput_bps"], 0.0, "{v}");
    assert!(v["error"].is_string(), "{v}");
}

/// `recv` killed with SIGKILL while it serves leaves no build directory
/// behind (it used to keep `softspin-slmp-recv-PID` for its whole run).
#[test]
fn recv_killed_leaves_no_temporary_directory() {
    let out = std::env::temp_dir().join(format!("softspin-slmp-kill-{}", std::process::id()));
    let mut c = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args([
            "slmp",
            "recv",
            "--iface",
            "lo",
            "--mode",
            "socket",
            "--port",
            "39418",
            "--out",
            out.to_str().unwrap(),
            "--timeout",
            "60",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("waiting for"), "recv did not start: {line}");
    let dir = std::env::temp_dir().join(format!("softspin-slmp-recv-{}", c.id()));
    c.kill().unwrap();
    c.wait().unwrap();
    let left = dir.exists();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&out);
    assert!(!left, "{} left behind", dir.display());
}
