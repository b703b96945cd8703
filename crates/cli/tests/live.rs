//! `softspin nic` live on a veth pair between two network namespaces
//! (scripts/netns.sh), with real traffic from kernel sockets and the system
//! `ping` in the peer namespace (issue 11, "Tests"). Every test makes its
//! own namespaces (`softspin_testkit::net::Topo`, named apart since tests
//! run in parallel) and removes them on every exit path, panics included. The
//! peer's side is tests/live/peer.py: plain kernel sockets, so every check
//! compares softspin's answers with bytes produced independently of it.
//!
//! Needs root (namespaces, XDP); without it each test prints why it skips.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use softspin_testkit::net::Topo;
use softspin_testkit::{needs_root, pcap, root, scratch, Rng};

/// Timelines and captures of live runs (issue 26).
#[path = "live/capture.rs"]
mod capture;

fn softspin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
}

/// `softspin build --profile fpspin SRC -o DIR/NAME.elf`.
fn build(src: &Path, name: &str) -> String {
    build_for("fpspin", src, name)
}

/// `softspin build --profile PROFILE SRC -o DIR/NAME.elf`.
fn build_for(profile: &str, src: &Path, name: &str) -> String {
    let out = scratch("live-test").join(format!("{name}.elf"));
    let o = softspin()
        .args(["build", "--profile", profile])
        .arg(src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "building {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out.to_str().unwrap().to_string()
}

fn ping_pong_image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| build(&root().join("examples/ping_pong/handler.c"), "ping_pong"))
        .clone()
}

fn copy_to_host_image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        build(
            &root().join("examples/copy_to_host/handler.c"),
            "copy_to_host",
        )
    })
    .clone()
}

/// The two namespaces of one test (`Topo::pair`), with what the live
/// tests do in them.
struct Net(Topo);

impl std::ops::Deref for Net {
    type Target = Topo;
    fn deref(&self) -> &Topo {
        &self.0
    }
}

impl Net {
    /// `None` (after saying SKIPPED and why) when the test cannot run here.
    /// Network `n` keeps the addresses of one test apart in its logs.
    fn up(test: &str, n: u32) -> Option<Net> {
        if !needs_root(&format!("live test {test}"), "network namespaces, XDP") {
            return None;
        }
        Some(Net(Topo::pair(&format!("l{n}"), &format!("10.91.{n}"))))
    }

    /// `softspin nic --iface NIC_IF ARGS` in the NIC namespace.
    fn nic_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &self.nic_ns(),
            env!("CARGO_BIN_EXE_softspin"),
            "nic",
            "--iface",
            &self.nic_if(),
        ])
        .args(args);
        c
    }

    /// Starts `softspin nic` (until SIGINT unless ARGS has --duration).
    /// `ip netns exec` execs the command, so the child's pid is softspin's.
    fn spawn_nic(&self, args: &[&str]) -> NicProc {
        let child = self
            .nic_cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        NicProc { child: Some(child) }
    }

    /// peer.py ARGS in the peer namespace; its one JSON line.
    fn peer_py(&self, args: &[&str]) -> Value {
        let py = root().join("crates/cli/tests/live/peer.py");
        let mut cmd = vec!["python3", py.to_str().unwrap()];
        cmd.extend_from_slice(args);
        let o = self.exec(&self.peer_ns(), &cmd);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "peer.py {args:?}: {out} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("peer.py {args:?} printed {out:?}: {e}"))
    }

    /// Whether the NIC's interface has an XDP program attached.
    fn xdp_attached(&self) -> bool {
        let o = Command::new("ip")
            .args(["-n", &self.nic_ns(), "link", "show", "dev", &self.nic_if()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ip link show: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).contains("xdp")
    }

    /// Waits until the XDP attachment is `want` (at most `secs`).
    fn wait_xdp(&self, want: bool, secs: u64) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if self.xdp_attached() == want {
                return true;
            }
            if Instant::now() > end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A running `softspin nic`; killed if the test ends while it runs.
struct NicProc {
    child: Option<Child>,
}

impl NicProc {
    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill {sig}");
    }

    /// Waits for the exit (at most `secs`, else kills it and fails).
    fn wait(&mut self, secs: u64) -> (ExitStatus, String, String) {
        let mut child = self.child.take().unwrap();
        let end = Instant::now() + Duration::from_secs(secs);
        // The JSON comes at the end and stderr is short: the pipes do not
        // fill while we poll.
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("softspin nic still running after {secs} s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (mut out, mut err) = (String::new(), String::new());
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status, out, err)
    }

    /// SIGINT, then the JSON report, whatever the exit status (a flood
    /// drops frames on the port).
    fn stop_json_any(&mut self) -> Value {
        self.signal("-INT");
        let (_, out, err) = self.wait(10);
        serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("one JSON object on stdout ({e}): {out:?}; stderr: {err}"))
    }

    /// SIGINT (a clean stop), then the JSON report; exit status `code`.
    fn stop_json(&mut self, code: i32) -> Value {
        self.signal("-INT");
        let (st, out, err) = self.wait(10);
        assert_eq!(
            st.code(),
            Some(code),
            "exit status; stderr: {err}; stdout: {out}"
        );
        serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("one JSON object on stdout ({e}): {out:?}; stderr: {err}"))
    }
}

impl Drop for NicProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("`{k}` is not a count in {v}"))
}

/// Invocations of handler `name` in the report (named `ECTX:symbol` there).
fn calls(v: &Value, name: &str) -> u64 {
    v["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["name"].as_str().and_then(|n| n.rsplit(':').next()) == Some(name))
        .map(|h| h["invocations"].as_u64().unwrap())
        .sum()
}

fn total_errors(v: &Value) -> u64 {
    v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["total"].as_u64().unwrap())
        .sum()
}

fn echo_ok(r: &Value, n: u64) {
    assert_eq!(
        (u(r, "ok"), u(r, "bad"), u(r, "lost"), u(r, "stray")),
        (n, 0, 0, 0),
        "peer's view of the echoes: {r}"
    );
}

/// 1,000 UDP datagrams echoed byte-exact by `pingpong_ph`, on network
/// `n` with `extra` flags for `softspin nic`; the NIC's `--json` object
/// (`None` when the test cannot run here).
fn udp_echo(test: &str, n: u32, extra: &[&str]) -> Option<Value> {
    udp_echo_of(&ping_pong_image(), test, n, extra)
}

/// As `udp_echo`, with the ping-pong image IMG.
fn udp_echo_of(img: &str, test: &str, n: u32, extra: &[&str]) -> Option<Value> {
    let net = Net::up(test, n)?;
    let mut args = vec![
        "--image",
        img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
    ];
    args.extend_from_slice(extra);
    let mut nic = net.spawn_nic(&args);
    let r = net.peer_py(&["echo", &net.nic_ip(), "7", "1000", "11"]);
    echo_ok(&r, 1000);
    let v = nic.stop_json(0);
    let n = 1000 + u(&r, "probes");
    assert!(
        u(&v, "matched") >= 1000 && u(&v, "matched") <= n,
        "matched: {v}"
    );
    assert!(
        u(&v, "tx_frames") >= 1000 && u(&v, "tx_frames") <= n,
        "tx_frames: {v}"
    );
    assert!(calls(&v, "pingpong_ph") >= 1000, "handler calls: {v}");
    assert_eq!(total_errors(&v), 0, "{v}");
    Some(v)
}

#[test]
fn udp_echo_is_byte_exact() {
    if let Some(v) = udp_echo("udp_echo_is_byte_exact", 1, &[]) {
        assert_eq!(v["report"]["profile"], "fpspin", "nic's default model");
    }
}

/// `--profile` picks the NIC model as for `sim` (here PsPIN's 1 GHz one,
/// which live_bench.py's RTT rows compare with the default), for an image
/// built for it.
#[test]
fn udp_echo_on_the_pspin_profile() {
    let test = "udp_echo_on_the_pspin_profile";
    let src = root().join("examples/ping_pong/handler.c");
    let img = build_for("pspin", &src, "ping_pong_pspin");
    if let Some(v) = udp_echo_of(&img, test, 17, &["--profile", "pspin"]) {
        assert_eq!(v["report"]["profile"], "pspin", "{v}");
    }
}

/// A profile that does not exist, or is not the one the image was built
/// for, is refused before the NIC attaches: the error names it, though the
/// interface does not exist either.
#[test]
fn bad_profile_is_refused_before_attaching() {
    let img = ping_pong_image();
    for (profile, want) in [
        ("gpspin", "unknown profile `gpspin`"),
        ("pspin", "was built for profile `fpspin`"),
    ] {
        let o = softspin()
            .args(["nic", "--iface", "nosuchif17", "--profile", profile])
            .args(["--image", &img, "--ph", "pingpong_ph", "--match", "udp:7"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(want) && !err.contains("nosuchif17"),
            "names the profile, before the interface: {err}"
        );
    }
}

/// The same through the JIT (`--jit`, every region compiled at its first
/// entry): `scripts/test.sh` runs it with the CLI's feature `jit`.
#[cfg(feature = "jit")]
#[test]
fn udp_echo_through_the_jit() {
    let _ = udp_echo(
        "udp_echo_through_the_jit",
        8,
        &["--jit", "--jit-after", "1"],
    );
}

#[test]
fn icmp_echo_is_answered_by_the_handler() {
    let Some(net) = Net::up("icmp_echo_is_answered_by_the_handler", 2) else {
        return;
    };
    let img = ping_pong_image();
    let ip = net.nic_ip();
    // The kernel in the NIC's namespace answers no ping: any reply is the handler's.
    let o = net.exec(
        &net.nic_ns(),
        &["sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1"],
    );
    assert!(
        o.status.success(),
        "sysctl: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = net.exec(&net.peer_ns(), &["ping", "-c", "1", "-W", "1", &ip]);
    assert!(
        !o.status.success(),
        "the kernel still answers pings: the test would prove nothing"
    );

    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "icmp_echo_ph",
        "--match",
        "icmp",
        "--json",
    ]);
    let mut warm = 0;
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        warm += 1;
        if net
            .exec(&net.peer_ns(), &["ping", "-c", "1", "-W", "1", &ip])
            .status
            .success()
        {
            break;
        }
        assert!(
            Instant::now() < end,
            "no ping answered within 10 s of starting the NIC"
        );
    }
    let o = net.exec(
        &net.peer_ns(),
        &["ping", "-c", "20", "-i", "0.01", "-W", "2", &ip],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("20 received, 0% packet loss"),
        "ping: {out}"
    );
    let v = nic.stop_json(0);
    let c = calls(&v, "icmp_echo_ph");
    assert!(
        (21..=20 + warm).contains(&c),
        "icmp_echo_ph calls {c}, expected 20 + the answered warm-up: {v}"
    );
    assert_eq!(u(&v, "tx_frames"), c, "one reply per request: {v}");
    // Each reply's lag (its NIC time to the port) lies inside the round
    // trip ping measured for it, so the median lag is below ping's largest
    // round trip of the 20 (warm-up replies may be the slower ones).
    let lag = |k: &str| v["tx_lag_ns"][k].as_f64().unwrap_or(-1.0);
    let rtt_max_ns = out
        .split("rtt min/avg/max/mdev = ")
        .nth(1)
        .and_then(|r| r.split('/').nth(2))
        .and_then(|m| m.parse::<f64>().ok())
        .map(|ms| ms * 1e6)
        .expect("ping's rtt summary line");
    assert!(
        0.0 <= lag("min")
            && lag("min") <= lag("p50")
            && lag("p50") <= lag("max")
            && lag("p50") < rtt_max_ns,
        "tx_lag_ns against ping's max round trip {rtt_max_ns} ns: {v}"
    );
}

#[test]
fn other_traffic_bypasses_to_the_kernel() {
    let Some(net) = Net::up("other_traffic_bypasses_to_the_kernel", 3) else {
        return;
    };
    let img = ping_pong_image();
    let ip = net.nic_ip();
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
    ]);
    // The rule is in: the handler echoes.
    echo_ok(&net.peer_py(&["echo", &ip, "7", "10", "3"]), 10);

    // ARP from a fresh neighbour table, and the kernel's ping replies.
    let o = net.exec(
        &net.peer_ns(),
        &["ip", "neigh", "flush", "dev", &net.peer_if()],
    );
    assert!(
        o.status.success(),
        "neigh flush: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = net.exec(
        &net.peer_ns(),
        &["ping", "-c", "3", "-i", "0.05", "-W", "2", &ip],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("3 received"),
        "kernel ping: {out}"
    );
    let o = net.exec(&net.peer_ns(), &["ip", "neigh", "show", &ip]);
    let neigh = String::from_utf8_lossy(&o.stdout);
    assert!(
        neigh.contains("lladdr"),
        "ARP did not resolve {ip}: {neigh:?}"
    );

    // 1 MiB over TCP to a kernel server in the NIC's namespace.
    let d = scratch("live-test").join("bypass");
    std::fs::create_dir_all(&d).unwrap();
    let (src, dst) = (d.join("sent.bin"), d.join("received.bin"));
    let data = Rng::new(33).bytes(1 << 20);
    std::fs::write(&src, &data).unwrap();
    let py = root().join("crates/cli/tests/live/peer.py");
    let server = Command::new("ip")
        .args(["netns", "exec", &net.nic_ns(), "python3"])
        .arg(&py)
        .args(["tcp_server", "5001"])
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = NicProc {
        child: Some(server),
    };
    net.peer_py(&["tcp_client", &ip, "5001", src.to_str().unwrap()]);
    let (st, out, err) = server.wait(15);
    assert!(st.success(), "tcp server: {out} {err}");
    let got = std::fs::read(&dst).unwrap();
    assert_eq!(got.len(), data.len(), "bytes received over TCP");
    assert!(got == data, "TCP data differs from what was sent");

    let v = nic.stop_json(0);
    assert!(u(&v, "passed_to_kernel") > 0, "{v}");
    assert!(u(&v, "matched") >= 10, "the UDP rule stayed active: {v}");
    // TCP, ARP and ICMP never reached the handler.
    assert_eq!(calls(&v, "pingpong_ph"), u(&v, "matched"), "{v}");
}

#[test]
fn host_dma_fills_the_lent_buffer() {
    let Some(net) = Net::up("host_dma_fills_the_lent_buffer", 4) else {
        return;
    };
    let img = copy_to_host_image();
    let d = scratch("live-test").join("dma");
    std::fs::create_dir_all(&d).unwrap();
    let dump = d.join("host.bin");
    const SLOT: usize = 1024;
    const N: usize = 64;
    let window = SLOT * N;
    // N datagrams, one per slot (no overlap, so arrival order does not
    // matter), random length and place inside it, sent in random order.
    let mut rng = Rng::new(44);
    let mut expect = vec![0u8; window];
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for slot in 0..N {
        let len = 1 + rng.below(SLOT as u64 - 1) as usize;
        let off = slot * SLOT + rng.below((SLOT - len) as u64 + 1) as usize;
        let data = rng.bytes(len);
        expect[off..off + len].copy_from_slice(&data);
        let mut f = (off as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&data);
        frames.push(f);
    }
    for i in (1..frames.len()).rev() {
        frames.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut file = Vec::new();
    for f in &frames {
        file.extend_from_slice(&(f.len() as u16).to_le_bytes());
        file.extend_from_slice(f);
    }
    let sends = d.join("datagrams.bin");
    std::fs::write(&sends, file).unwrap();

    let window_s = window.to_string();
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "copy_to_host_eth_ph",
        "--match",
        "udp:9000",
        "--host-size",
        &window_s,
        "--dump-host",
        dump.to_str().unwrap(),
    ]);
    // Without --json the NIC says on stderr when its ECTX is installed.
    let mut err = BufReader::new(nic.child.as_mut().unwrap().stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("stop with Ctrl-C"), "softspin nic: {line}");
    let r = net.peer_py(&["send", &net.nic_ip(), "9000", sends.to_str().unwrap()]);
    assert_eq!(u(&r, "sent"), N as u64);
    std::thread::sleep(Duration::from_millis(300));
    nic.signal("-INT");
    let mut child = nic.child.take().unwrap();
    let st = child.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(
        st.code(),
        Some(0),
        "exit status; stderr: {rest}; stdout: {out}"
    );
    let got = std::fs::read(&dump).unwrap();
    assert_eq!(got.len(), window, "host window size");
    let diff = got.iter().zip(&expect).position(|(a, b)| a != b);
    assert!(
        diff.is_none(),
        "host window differs from the datagrams' payloads at byte {diff:?}; report:\n{out}"
    );
}

#[test]
fn faulting_and_looping_handlers_are_contained() {
    let Some(net) = Net::up("faulting_and_looping_handlers_are_contained", 5) else {
        return;
    };
    let d = scratch("live-test").join("contain");
    std::fs::create_dir_all(&d).unwrap();
    let src = d.join("contain.c");
    // The example's echo, preceded by two ways to misbehave: a store to
    // address 0 (outside every window) for 'X', an endless loop for 'L'.
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
    let img = build(&src, "contain");
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "contain_ph",
        "--match",
        "udp:7",
        "--watchdog",
        "100000",
        "--json",
    ]);
    let r = net.peer_py(&["contain", &net.nic_ip(), "7", "200", "55"]);
    echo_ok(&r, 200);
    let special = u(&r, "special");
    assert_eq!(special, 40);
    let v = nic.stop_json(3);
    assert_eq!(
        total_errors(&v),
        special,
        "one error per faulting or looping datagram: {v}"
    );
    let by_cause = &v["errors"][0]["by_cause"];
    let details = v["error_details"].as_array().unwrap();
    assert!(!details.is_empty(), "{v}");
    let text = format!("{by_cause} {}", v["error_details"]).to_lowercase();
    assert!(
        text.contains("watchdog"),
        "a watchdog error is listed: {text}"
    );
    assert!(text.contains("fault"), "a fault is listed: {text}");
    assert!(u(&v, "tx_frames") >= 200, "the others were echoed: {v}");
}

#[test]
fn detaches_on_every_exit_and_refuses_bad_input() {
    let Some(net) = Net::up("detaches_on_every_exit_and_refuses_bad_input", 6) else {
        return;
    };
    let img = ping_pong_image();
    let args = [
        "--image",
        img.as_str(),
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
    ];

    // Normal exit after --duration.
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--duration", "0.5"]);
    let (st, out, err) = net.spawn_nic(&a).wait(15);
    assert_eq!(st.code(), Some(0), "{out} {err}");
    assert!(
        !net.xdp_attached(),
        "XDP program left attached after --duration"
    );

    // SIGINT.
    let mut nic = net.spawn_nic(&args);
    assert!(net.wait_xdp(true, 10), "never attached");
    nic.stop_json(0);
    assert!(
        !net.xdp_attached(),
        "XDP program left attached after SIGINT"
    );

    // A second NIC on the same interface while the first runs.
    let mut first = net.spawn_nic(&args);
    assert!(net.wait_xdp(true, 10), "never attached");
    a = args.to_vec();
    a.extend(["--duration", "0.5"]);
    let (st, out, err) = net.spawn_nic(&a).wait(15);
    assert_eq!(st.code(), Some(1), "second attach: {out} {err}");
    assert!(
        err.contains("already has an XDP program attached"),
        "second attach: {err}"
    );

    // SIGKILL: the kernel detaches when the process dies.
    first.signal("-KILL");
    let (st, _, _) = first.wait(5);
    assert!(st.code().is_none(), "killed by a signal");
    assert!(
        net.wait_xdp(false, 3),
        "XDP program left attached after SIGKILL"
    );
    // And the interface is free again right away.
    let (st, out, err) = net.spawn_nic(&a).wait(15);
    assert_eq!(st.code(), Some(0), "attach after SIGKILL: {out} {err}");
    assert!(!net.xdp_attached());

    // A missing interface: exit 1, named.
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.nic_ns(),
            env!("CARGO_BIN_EXE_softspin"),
            "nic",
            "--iface",
            "nosuchif9",
        ])
        .args(&a)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("nosuchif9"), "names the interface: {err}");

    // A rules file with a key that does not exist: exit 1, named.
    let rules = scratch("live-test").join("bad_rules.toml");
    std::fs::write(
        &rules,
        "[[ruleset]]\nname = \"r\"\nmatch = [\"ip\", \"udp\"]\nbogus_key = 1\n",
    )
    .unwrap();
    let o = net
        .nic_cmd(&[
            "--image",
            &img,
            "--ph",
            "pingpong_ph",
            "--rules",
            rules.to_str().unwrap(),
            "--duration",
            "0.5",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("bogus_key"), "names the bad key: {err}");
    assert!(!net.xdp_attached());
}

#[test]
fn socket_mode_echoes() {
    let Some(net) = Net::up("socket_mode_echoes", 7) else {
        return;
    };
    let img = ping_pong_image();
    let mut nic = net.spawn_nic(&[
        "--mode",
        "socket",
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:9007",
        "--json",
    ]);
    let r = net.peer_py(&["echo", &net.nic_ip(), "9007", "200", "77"]);
    echo_ok(&r, 200);
    let v = nic.stop_json(0);
    assert!(!net.xdp_attached(), "socket mode attaches no XDP program");
    // The report names the ports served, though the sockets are closed by then.
    assert!(
        v["port"].as_str().unwrap().contains("UDP ports [9007]"),
        "{}",
        v["port"]
    );
    assert!(calls(&v, "pingpong_ph") >= 200, "{v}");
    assert!(u(&v, "tx_frames") >= 200, "{v}");
}

/// A handler far slower than the wire: some 10^8 instructions per frame
/// (0.1 s of NIC time, seconds of wall time with 8 HPUs simulated).
fn slow_image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let src = scratch("live-test").join("slow.c");
        std::fs::write(
            &src,
            "#include <spin.h>\n\
             __handler__ void slow_ph(handler_args_t *args)\n{\n\
             \t(void)args;\n\
             \tfor (volatile uint32_t i = 0; i < 20000000; i++)\n\t\t;\n}\n",
        )
        .unwrap();
        build(&src, "slow")
    })
    .clone()
}

/// `n` UDP datagrams to the NIC's `port`, without waiting for answers.
fn blast(net: &Net, port: &str, n: u32, len: usize) {
    let prog = format!(
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         for i in range({n}):\n    s.sendto(bytes({len}), ('{}', {port}))\n",
        net.nic_ip()
    );
    let o = net.exec(&net.peer_ns(), &["python3", "-c", &prog]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn slow_args(img: &str) -> Vec<&str> {
    vec![
        "--image",
        img,
        "--ph",
        "slow_ph",
        "--match",
        "udp:7",
        "--watchdog",
        "1000000000",
        "--json",
    ]
}

/// Handlers slower than the wire do not hold the NIC past --duration: it
/// ends on time and counts the frames it had not processed (exit status 6).
#[test]
fn slow_handlers_end_at_the_deadline_with_unprocessed_counted() {
    let Some(net) = Net::up(
        "slow_handlers_end_at_the_deadline_with_unprocessed_counted",
        11,
    ) else {
        return;
    };
    let img = slow_image();
    let mut args = slow_args(&img);
    args.extend(["--duration", "2"]);
    let t0 = Instant::now();
    let mut nic = net.spawn_nic(&args);
    assert!(net.wait_xdp(true, 10), "never attached");
    blast(&net, "7", 40, 100);
    let (st, out, err) = nic.wait(30);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "took {took:?} for --duration 2; {err}"
    );
    assert_eq!(
        st.code(),
        Some(6),
        "exit status; stderr: {err}; stdout: {out}"
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let left = u(&v, "unprocessed");
    assert!(left > 0 && left <= 40, "unprocessed: {v}");
    // Every frame taken is either processed or counted as left over.
    assert_eq!(u(&v, "matched"), 40, "{v}");
    assert_eq!(u(&v["report"], "packets") + left, 40, "{v}");
}

/// SIGINT ends a NIC whose handlers are behind promptly, too.
#[test]
fn slow_handlers_stop_promptly_on_sigint() {
    let Some(net) = Net::up("slow_handlers_stop_promptly_on_sigint", 12) else {
        return;
    };
    let img = slow_image();
    let mut nic = net.spawn_nic(&slow_args(&img));
    assert!(net.wait_xdp(true, 10), "never attached");
    blast(&net, "7", 40, 100);
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    nic.signal("-INT");
    let (st, out, err) = nic.wait(30);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "took {took:?} after SIGINT; {err}"
    );
    assert_eq!(
        st.code(),
        Some(6),
        "exit status; stderr: {err}; stdout: {out}"
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(u(&v, "unprocessed") > 0, "{v}");
}

/// An MTU larger than an AF_XDP frame holds is refused before the attach,
/// naming the MTU, the limit and how to lower it.
#[test]
fn mtu_larger_than_the_xdp_frame_is_named() {
    let Some(net) = Net::up("mtu_larger_than_the_xdp_frame_is_named", 13) else {
        return;
    };
    let o = net.exec(
        &net.nic_ns(),
        &["ip", "link", "set", "dev", &net.nic_if(), "mtu", "9000"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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
            "0.5",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let limit = softspin_netio::xsk::max_mtu(softspin_netio::xsk::XskConfig::default().frame_size);
    for want in [
        "MTU 9000".to_string(),
        format!("{limit} bytes"),
        format!("ip link set dev {} mtu {limit}", net.nic_if()),
    ] {
        assert!(err.contains(&want), "says `{want}`: {err}");
    }
    assert!(!net.xdp_attached());
}

/// A UDP datagram larger than the MTU arrives in IPv4 fragments: only the
/// first carries the UDP header and matches `udp:7`; the others go to the
/// kernel. Both are counted as fragments (docs/rules.md, "IP fragments").
#[test]
fn ip_fragments_are_counted_matched_and_passed() {
    let Some(net) = Net::up("ip_fragments_are_counted_matched_and_passed", 14) else {
        return;
    };
    let img = ping_pong_image();
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
    ]);
    assert!(net.wait_xdp(true, 10), "never attached");
    // 4000 bytes of UDP payload at MTU 1500: IP payloads of 1480, 1480 and
    // 1048 bytes (4008 with the UDP header), i.e. three fragments.
    blast(&net, "7", 1, 4000);
    std::thread::sleep(Duration::from_millis(300));
    // The echo of a first fragment is not a whole datagram; what counts
    // here is the matcher's view, so any exit status with a report will do.
    nic.signal("-INT");
    let (_, out, err) = nic.wait(10);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    assert_eq!(u(&v["fragments"], "matched"), 1, "{v}");
    assert_eq!(u(&v["fragments"], "passed_to_kernel"), 2, "{v}");
    assert_eq!(u(&v, "matched"), 1, "{v}");
}

/// Under a flood (bounded: 20,000 datagrams), what the NIC holds stays
/// bounded: the frames for --pcap-out go to the file as they are sent (it
/// grows during the run), and the host-side queues peak far below the
/// frame count (`footprint_peak`).
#[test]
fn flood_keeps_memory_bounded() {
    let Some(net) = Net::up("flood_keeps_memory_bounded", 15) else {
        return;
    };
    let img = ping_pong_image();
    let pcap = scratch("live-test").join("flood.pcapng");
    let records = scratch("live-test").join("flood.jsonl");
    let mut nic = net.spawn_nic(&[
        "--image",
        &img,
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
        "--pcap-out",
        pcap.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
    ]);
    assert!(net.wait_xdp(true, 10), "never attached");
    let n = 20_000u64;
    blast(&net, "7", n as u32, 64);
    std::thread::sleep(Duration::from_millis(500));
    // Mid-run: most echoes are in the file already (each at least 32 + 106
    // bytes with its comment, the request as much), not held in memory
    // until the end.
    let mid = std::fs::metadata(&pcap).map(|m| m.len()).unwrap_or(0);
    let v = nic.stop_json_any();
    let sent = u(&v, "tx_frames");
    assert!(sent > n / 2, "most datagrams echoed: {v}");
    assert!(
        mid > sent / 2 * 122,
        "pcap holds {mid} bytes mid-run for {sent} frames sent"
    );
    let cap = pcap::read_ng(&pcap);
    let out = cap.iter().filter(|p| p.interface == 1).count() as u64;
    assert_eq!(out, sent, "every frame sent is in the pcapng");
    // Every echo's request, and no more than matched (the port may drop
    // some of those under a flood).
    let taken = cap.len() as u64 - out;
    assert!(
        taken >= sent && taken <= u(&v, "matched"),
        "{taken} frames taken in the pcapng: {v}"
    );
    let peak = &v["footprint_peak"];
    assert!(u(peak, "events") <= 4096, "{peak}");
    assert!(u(peak, "packets_held") <= 4096, "{peak}");
    assert_eq!(u(peak, "notifications"), 0, "{peak}");
}

/// Receive coalescing (`--rx-coalesce-us`, docs/live.md "Receive rate"):
/// a conversation never triggers it (one request at a time: every echo
/// byte-exact); a flood on a handler that sends nothing does (the loop
/// then sleeps after each burst), and every matched frame is still
/// accounted for: processed, dropped by a named cause, or unprocessed.
/// Out of range, it is refused before the NIC attaches.
#[test]
fn coalescing_loses_no_frame_uncounted() {
    let Some(net) = Net::up("coalescing_loses_no_frame_uncounted", 16) else {
        return;
    };
    let pp = ping_pong_image();
    let echo = [
        "--image",
        pp.as_str(),
        "--ph",
        "pingpong_ph",
        "--match",
        "udp:7",
        "--json",
        "--rx-coalesce-us",
        "200",
    ];
    let mut nic = net.spawn_nic(&echo);
    assert!(net.wait_xdp(true, 10), "never attached");
    let r = net.peer_py(&["echo", &net.nic_ip(), "7", "300", "11"]);
    echo_ok(&r, 300);
    nic.stop_json(0);

    let empty = build(&root().join("examples/empty/handler.c"), "empty");
    let mut nic = net.spawn_nic(&[
        "--image",
        &empty,
        "--ph",
        "empty_ph",
        "--match",
        "udp:9000",
        "--json",
        "--rx-coalesce-us",
        "200",
    ]);
    assert!(net.wait_xdp(true, 10), "never attached");
    // A burst for certain: the NIC stopped while 3,000 frames queue in its
    // ring (8,192 frames), then a flood on top.
    nic.signal("-STOP");
    blast(&net, "9000", 3000, 64);
    nic.signal("-CONT");
    let n = 20_000u64;
    blast(&net, "9000", n as u32 - 3000, 64);
    std::thread::sleep(Duration::from_millis(300));
    let v = nic.stop_json_any();
    let matched = u(&v, "matched");
    assert!(matched >= n / 2, "most of the flood matched: {v}");
    let dropped: u64 = v["drops"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(
        u(&v, "packets") + dropped + u(&v, "unprocessed"),
        matched,
        "every matched frame processed, dropped by cause or unprocessed: {v}"
    );

    let mut a = echo.to_vec();
    a.truncate(a.len() - 1);
    a.push("5000");
    let (st, out, err) = net.spawn_nic(&a).wait(15);
    assert_eq!(st.code(), Some(1), "{out} {err}");
    assert!(
        err.contains("--rx-coalesce-us 5000"),
        "names the flag: {err}"
    );
    assert!(!net.xdp_attached(), "refused before attaching");
}
