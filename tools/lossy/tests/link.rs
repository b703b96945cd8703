//! The lossy link end to end (scripts/lossy_link.sh + softspin-lossy): three
//! namespaces made and always torn down by each test, traffic from A to B
//! through the forwarder in M, and the forwarder's own report compared with
//! what B really received (sequence numbers in the payloads). Needs root;
//! skips with a message otherwise.

use serde_json::Value;
use softspin_testkit::net::{spawn_in_netns, Topo};
use softspin_testkit::{needs_root, root, scratch, skip, Rng};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The lossy link's three namespaces (`Topo::lossy_link`), with what the
/// tests do on it.
struct Link(Topo);

impl std::ops::Deref for Link {
    type Target = Topo;
    fn deref(&self) -> &Topo {
        &self.0
    }
}

impl Link {
    /// `None` (after saying SKIPPED and why) when the test cannot run here.
    fn up(test: &str, n: u32) -> Option<Link> {
        if !needs_root(
            &format!("lossy-link test {test}"),
            "network namespaces, AF_PACKET",
        ) {
            return None;
        }
        let t = Topo::lossy_link(&format!("k{n}"), &format!("10.92.{n}"));
        Some(Link(t.with_lossy_bin(env!("CARGO_BIN_EXE_softspin-lossy"))))
    }

    fn b_ip(&self) -> String {
        self.ip(1)
    }
    fn a_ip(&self) -> String {
        self.ip(2)
    }

    fn mac(&self, side: &str) -> String {
        let o = self.run(&[
            "exec",
            side,
            "cat",
            &format!("/sys/class/net/{}/address", self.iface(&format!("{side}0"))),
        ]);
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }

    /// Static neighbours, so that no ARP exchange races the first datagrams
    /// and every IPv4 frame on the link is one the test sent.
    fn static_arp(&self) {
        for (side, peer_ip, peer) in [("a", self.b_ip(), "b"), ("b", self.a_ip(), "a")] {
            let mac = self.mac(peer);
            let dev = self.iface(&format!("{side}0"));
            let o = self.run(&[
                "exec",
                side,
                "ip",
                "neigh",
                "replace",
                &peer_ip,
                "lladdr",
                &mac,
                "dev",
                &dev,
                "nud",
                "permanent",
            ]);
            assert!(
                o.status.success(),
                "ip neigh: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }

    fn fwd(&self, report: &Path, flags: &[&str]) -> Fwd {
        let mut args = vec!["fwd", "--report", report.to_str().unwrap()];
        args.extend_from_slice(flags);
        let child = self.cmd(&args).stderr(Stdio::piped()).spawn().unwrap();
        let f = Fwd {
            child,
            report: report.to_path_buf(),
        };
        // The forwarder prints its start line once both sockets are bound.
        std::thread::sleep(Duration::from_millis(300));
        f
    }
}

/// The running forwarder; killed if the test ends while it runs.
struct Fwd {
    child: Child,
    report: PathBuf,
}

impl Fwd {
    /// SIGTERM, then the final report line.
    fn stop(&mut self) -> Value {
        // SAFETY: kill(2) on our own child's pid (`ip netns exec` execs the forwarder).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let mut err = String::new();
                self.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                assert!(st.success(), "forwarder exited with {st}: {err}");
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "forwarder ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = std::fs::read_to_string(&self.report).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().expect("empty report")).unwrap();
        assert_eq!(last["final"], true, "{text}");
        last
    }
}

impl Drop for Fwd {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn num(v: &Value, dir: &str, k: &str) -> u64 {
    v[dir][k]
        .as_u64()
        .unwrap_or_else(|| panic!("report lacks {dir}.{k}: {v}"))
}

#[test]
fn clean_link_carries_ping_and_tcp_exactly() {
    let Some(link) = Link::up("clean", 1) else {
        return;
    };
    let mut fwd = link.fwd(&scratch("lossy-test").join("clean.json"), &["--seed", "3"]);
    let o = link.run(&[
        "exec",
        "a",
        "ping",
        "-c",
        "3",
        "-i",
        "0.05",
        "-W",
        "2",
        &link.b_ip(),
    ]);
    assert!(
        o.status.success(),
        "ping A->B through M failed: {}",
        String::from_utf8_lossy(&o.stdout)
    );

    const LEN: usize = 1 << 20;
    let addr: SocketAddr = format!("{}:5001", link.b_ip()).parse().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let rx = spawn_in_netns(&link.ns("b"), move || {
        let l = TcpListener::bind(addr).unwrap();
        ready_tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let tx = spawn_in_netns(&link.ns("a"), move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        s.write_all(&Rng::new(0x1234_5678).bytes(LEN)).unwrap();
    });
    tx.join().unwrap();
    let got = rx.join().unwrap();
    assert_eq!(got.len(), LEN);
    assert!(
        got == Rng::new(0x1234_5678).bytes(LEN),
        "TCP bytes differ after the link"
    );

    let r = fwd.stop();
    for d in ["a2b", "b2a"] {
        assert_eq!(num(&r, d, "dropped"), 0, "{r}");
        assert_eq!(num(&r, d, "tx_errors"), 0, "{r}");
        assert_eq!(num(&r, d, "rx_kernel_drops"), 0, "{r}");
        assert_eq!(num(&r, d, "forwarded"), num(&r, d, "frames_in"), "{r}");
    }
    // 1 MiB in at most 1500-byte frames went through M.
    assert!(num(&r, "a2b", "bytes_forwarded") > LEN as u64, "{r}");
}

/// Sends `n` UDP datagrams A->B (sequence number first) at a pace B keeps
/// up with; returns the sequence numbers B received, in arrival order.
fn udp_run(link: &Link, n: u32) -> Vec<u32> {
    let addr: SocketAddr = format!("{}:5002", link.b_ip()).parse().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let d2 = done.clone();
    let rx = spawn_in_netns(&link.ns("b"), move || {
        let s = UdpSocket::bind(addr).unwrap();
        let big: libc::c_int = 16 << 20;
        // SAFETY: setsockopt on our own socket with a c_int value.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &big as *const _ as *const libc::c_void,
                4,
            );
        }
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut seqs = Vec::new();
        let mut buf = [0u8; 2048];
        let mut idle_since = Instant::now();
        loop {
            match s.recv(&mut buf) {
                Ok(k) => {
                    assert!(k >= 4);
                    seqs.push(u32::from_be_bytes(buf[..4].try_into().unwrap()));
                    idle_since = Instant::now();
                }
                // Held frames leave M after at most --reorder-max-us.
                Err(_)
                    if d2.load(Ordering::SeqCst)
                        && idle_since.elapsed() > Duration::from_millis(600) =>
                {
                    break
                }
                Err(_) => {}
            }
        }
        seqs
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let tx = spawn_in_netns(&link.ns("a"), move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut p = [0u8; 100];
        for i in 0..n {
            p[..4].copy_from_slice(&i.to_be_bytes());
            s.send_to(&p, addr).unwrap();
            if i % 16 == 15 {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    });
    tx.join().unwrap();
    done.store(true, Ordering::SeqCst);
    rx.join().unwrap()
}

/// |k - n p| within 6 standard deviations of Binomial(n, p).
fn binomial_ok(k: u64, n: u32, p: f64) -> bool {
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    (k as f64 - mean).abs() <= 6.0 * sd
}

#[test]
fn udp_loss_is_counted_and_real() {
    let Some(link) = Link::up("loss", 2) else {
        return;
    };
    link.static_arp();
    let mut fwd = link.fwd(
        &scratch("lossy-test").join("loss.json"),
        &["--loss", "0.2", "--seed", "7", "--report-every-ms", "100"],
    );
    const N: u32 = 4000;
    let got = udp_run(&link, N);
    let r = fwd.stop();
    let dropped = num(&r, "a2b", "dropped");
    assert_eq!(num(&r, "a2b", "ipv4_in"), N as u64, "{r}");
    assert!(
        binomial_ok(dropped, N, 0.2),
        "dropped {dropped} of {N} at loss 0.2: {r}"
    );
    assert_eq!(num(&r, "a2b", "tx_errors"), 0, "{r}");
    assert_eq!(num(&r, "a2b", "rx_kernel_drops"), 0, "{r}");
    assert_eq!(num(&r, "a2b", "duplicated"), 0, "{r}");
    // Exactly what M says it forwarded arrived, each once.
    assert_eq!(got.len() as u64, N as u64 - dropped, "{r}");
    assert_eq!(got.len() as u64, num(&r, "a2b", "ipv4_forwarded"), "{r}");
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), got.len());
}

#[test]
fn dup_and_reorder_are_counted_and_seen() {
    let Some(link) = Link::up("reorder", 3) else {
        return;
    };
    link.static_arp();
    let flags = [
        "--dup",
        "0.05",
        "--reorder",
        "0.25",
        "--reorder-gap",
        "3",
        "--delay-us",
        "200",
        "--seed",
        "11",
    ];
    let mut fwd = link.fwd(&scratch("lossy-test").join("reorder.json"), &flags);
    const N: u32 = 4000;
    let got = udp_run(&link, N);
    let r = fwd.stop();
    let (dup, held, timeouts) = (
        num(&r, "a2b", "duplicated"),
        num(&r, "a2b", "reordered"),
        num(&r, "a2b", "reorder_timeouts"),
    );
    assert!(binomial_ok(dup, N, 0.05), "{r}");
    assert!(binomial_ok(held, N, 0.25), "{r}");
    assert_eq!(num(&r, "a2b", "delayed"), N as u64, "{r}");
    assert_eq!(num(&r, "a2b", "dropped"), 0, "{r}");
    assert_eq!(got.len() as u64, N as u64 + dup, "{r}");
    // At B: repeats are the duplicates, and a sequence number below the
    // highest seen so far is a held frame (one whose gap was reached).
    let (mut seen, mut repeats, mut late, mut max) = (HashSet::new(), 0u64, 0u64, None);
    for &q in &got {
        if !seen.insert(q) {
            repeats += 1;
            continue;
        }
        if max.is_some_and(|m| q < m) {
            late += 1;
        }
        max = max.max(Some(q));
    }
    assert_eq!(seen.len() as u64, N as u64);
    assert_eq!(repeats, dup, "{r}");
    assert!(
        late <= held && late + timeouts >= held,
        "late at B {late}, held {held}: {r}"
    );
    assert!(
        late > N as u64 / 8,
        "reordering not observable at B: {late}"
    );
}

/// SLMP segments captured at B after the link: finished UDP checksums (M
/// forwards real frames, not offload-partial ones), and the dissector reads
/// back every (message, offset) A sent, duplicates included.
#[test]
fn captured_slmp_after_the_link_dissects() {
    use softspin_wire::slmp::{self, Flags};
    if Command::new("tshark").arg("--version").output().is_err()
        || Command::new("tcpdump").arg("--version").output().is_err()
    {
        skip("capture test: tshark or tcpdump not installed (scripts/setup.sh --tests)");
        return;
    }
    let Some(link) = Link::up("capture", 4) else {
        return;
    };
    link.static_arp();
    let mut fwd = link.fwd(
        &scratch("lossy-test").join("capture.json"),
        &["--dup", "0.1", "--seed", "5"],
    );
    let cap = scratch("lossy-test").join("capture.pcap");
    let b_if = link.iface("b0");
    let mut dump = link
        .cmd(&[
            "exec",
            "b",
            "tcpdump",
            "-i",
            &b_if,
            "-U",
            "--immediate-mode",
            "-w",
            cap.to_str().unwrap(),
            "udp",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // tcpdump says "listening on" once its capture is open.
    let mut err = dump.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("listening on") {
        assert!(
            err.read(&mut byte).unwrap() == 1,
            "tcpdump: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.push(byte[0]);
    }
    const N: u32 = 50;
    let addr: SocketAddr = format!("{}:{}", link.b_ip(), slmp::UDP_PORT)
        .parse()
        .unwrap();
    spawn_in_netns(&link.ns("a"), move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        for i in 0..N {
            let mut buf = vec![0u8; slmp::HEADER_LEN + 100];
            let mut p = slmp::Packet::new_checked(&mut buf[..]).unwrap();
            p.set_flags(if i + 1 == N {
                Flags(Flags::EOM.bits() | Flags::SYN.bits())
            } else {
                Flags::NONE
            });
            p.set_msg_id(9);
            p.set_offset(i * 100);
            s.send_to(&buf, addr).unwrap();
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let r = fwd.stop();
    // SAFETY: kill(2) on our own child (ip netns exec execs tcpdump).
    unsafe { libc::kill(dump.id() as i32, libc::SIGTERM) };
    dump.wait().unwrap();

    let lua = root().join("tools/wireshark/slmp.lua");
    let o = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .args(["-o", "udp.check_checksum:TRUE", "-r"])
        .arg(&cap)
        .args([
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "udp.checksum.status",
            "-e",
            "slmp.msg_id",
            "-e",
            "slmp.offset",
            "-e",
            "slmp.flags.eom",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('|').collect()).collect();
    let dup = num(&r, "a2b", "duplicated");
    assert_eq!(rows.len() as u64, N as u64 + dup, "{out}\n{r}");
    let mut offsets = HashSet::new();
    for row in &rows {
        // 1 is "Good" in Wireshark's checksum status.
        assert_eq!(row[0], "1", "UDP checksum not finished after M: {out}");
        assert_eq!(row[1], "9", "{out}");
        let off: u32 = row[2].parse().unwrap();
        assert_eq!(
            row[3],
            if off == (N - 1) * 100 { "1" } else { "0" },
            "{out}"
        );
        offsets.insert(off);
    }
    assert_eq!(offsets, (0..N).map(|i| i * 100).collect::<HashSet<_>>());
}
