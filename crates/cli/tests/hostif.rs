//! The host interface of a NIC process (docs/host-interface.md): `softspin
//! nic --mode socket --iface lo` (no root) with `--host-shm` and
//! `--control`, and host programs beside it through
//! `softspin_host::NicClient`. Requests are encoded here from docs/rma.md's
//! field table, and every byte the NIC serves or writes is checked against
//! the test's own copy of host memory.

use std::io::{Read, Write};
use std::net::UdpSocket;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use softspin_host::hostif;
use softspin_host::NicClient;
use softspin_testkit::net::Topo;
use softspin_testkit::{needs_root, root, scratch, Rng};

fn softspin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
}

fn build(src: &Path, name: &str) -> PathBuf {
    let out = scratch("hostif-test").join(format!("{name}.elf"));
    let o = softspin()
        .args(["build", "--profile", "fpspin"])
        .arg(src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn rma_image() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| build(&root().join("examples/rma_target/handler.c"), "rma"))
}

/// The fpspin profile with handlers waiting up to 10 s for the host (the
/// default 1 ms of NIC time is shorter than a round trip through the
/// control socket: docs/host-interface.md).
fn patient_config() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let p = scratch("hostif-test").join("patient.toml");
        std::fs::write(&p, "profile = \"fpspin\"\nwait_limit_ns = 10000000000\n").unwrap();
        p
    })
}

fn ask_image() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostif/ask.c");
        build(&src, "ask")
    })
}

/// A UDP port nobody uses right now (the NIC binds it on lo).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `softspin nic`; dropped without `stop` (a failing test), it
/// is killed, so no NIC outlives its test.
struct NicProc {
    child: Option<Child>,
    control: PathBuf,
    shm: PathBuf,
    port: u16,
}

impl NicProc {
    /// `softspin nic` on lo with a host window of `host` bytes in shared
    /// memory, serving its control socket; returns once the socket answers.
    fn start(tag: &str, image: &Path, ph: &str, host: u32, extra: &[&str]) -> NicProc {
        let shm_name = format!("sF-{tag}-{}", std::process::id());
        NicProc::start_named(tag, &shm_name, image, ph, host, extra)
    }

    /// `start` with the shm file /dev/shm/`shm_name`.
    fn start_named(
        tag: &str,
        shm_name: &str,
        image: &Path,
        ph: &str,
        host: u32,
        extra: &[&str],
    ) -> NicProc {
        let port = free_port();
        let dir = scratch("hostif-test");
        let control = dir.join(format!("{tag}.sock"));
        let child = softspin()
            .args([
                "nic", "--iface", "lo", "--mode", "socket", "--json", "--image",
            ])
            .arg(image)
            .args(["--ph", ph, "--match", &format!("udp:{port}")])
            .args(["--host-size", &host.to_string(), "--host-shm", shm_name])
            .arg("--control")
            .arg(&control)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut nic = NicProc {
            child: Some(child),
            control,
            shm: PathBuf::from("/dev/shm").join(shm_name),
            port,
        };
        let end = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&nic.control).is_err() {
            let ch = nic.child.as_mut().unwrap();
            if let Some(s) = ch.try_wait().unwrap() {
                let mut e = String::new();
                ch.stderr.take().unwrap().read_to_string(&mut e).unwrap();
                panic!("softspin nic exited ({s}): {e}");
            }
            assert!(Instant::now() < end, "no control socket after 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        nic
    }

    /// SIGINT, then the `--json` object; the socket and the shm file must
    /// be gone.
    fn stop(mut self) -> Value {
        let child = self.child.take().unwrap();
        let pid = child.id().to_string();
        let k = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(k.success(), "kill -INT {pid}");
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!self.control.exists(), "control socket left behind");
        assert!(!self.shm.exists(), "shm file left behind");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
    }
}

impl Drop for NicProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            let _ = std::fs::remove_file(&self.shm);
            let _ = std::fs::remove_file(&self.control);
        }
    }
}

// docs/rma.md "Header": 40 bytes, big-endian.
const WRITE: u8 = 1;
const READ: u8 = 2;
const OK: u8 = 0;
const OUT_OF_WINDOW: u8 = 2;
const RESPONSE: u8 = 0x80;
const HDR: usize = 40;

fn request(op: u8, txn: u32, key: u32, offset: u64, len: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![1, 0, op, 0];
    b.extend_from_slice(&3u16.to_be_bytes()); // source rank
    b.extend_from_slice(&0u16.to_be_bytes()); // destination rank
    b.extend_from_slice(&[0; 8]); // seq, ack
    b.extend_from_slice(&txn.to_be_bytes());
    b.extend_from_slice(&key.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(&[0; 4]);
    assert_eq!(b.len(), HDR);
    b.extend_from_slice(payload);
    b
}

/// Send one RMA request to the NIC and return (status, data) of its response.
fn rma(sock: &UdpSocket, port: u16, req: &[u8]) -> (u8, Vec<u8>) {
    sock.send_to(req, ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 2048];
    let n = sock.recv(&mut buf).expect("an RMA response");
    let r = &buf[..n];
    assert_eq!(r[2], req[2] | RESPONSE, "op of the response");
    assert_eq!(&r[16..20], &req[16..20], "transaction id");
    (r[3], r[HDR..].to_vec())
}

fn udp() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Polls `f` for up to 5 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "{what}: not within 5 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A host program beside the NIC exports a window, and the NIC's RMA
/// handlers serve it from the mapping the program sees: what the program
/// stores is what a remote read gets, what a remote write brings is in the
/// program's mapping, byte for byte, with no request in between; a request
/// out of the window writes nothing. Counters and status agree with the
/// traffic sent and with the NIC's own report at exit.
#[test]
fn a_host_program_shares_memory_with_its_nic() {
    const HOST: u32 = 65536;
    let nic = NicProc::start(
        "rma",
        rma_image(),
        "rma_target_ph",
        HOST,
        &["--scratchpad", "12288"],
    );
    let mut c = NicClient::connect(&nic.control).unwrap();
    let e = c.ectxs()[0].clone();
    assert_eq!(e.host_size, Some(u64::from(HOST)));
    assert_eq!(e.shm_offset, Some(0));
    assert_eq!(c.hello()["shm"]["path"], nic.shm.display().to_string());
    // The window: 8 KiB at 4 KiB, read and write.
    let (base, size) = (4096usize, 8192usize);
    c.export_window(e.ectx, 7, base as u64, size as u64, 3)
        .unwrap();
    let w = c.request("windows", json!({})).unwrap();
    assert_eq!(
        w["windows"],
        json!([{"key": 7, "perms": 3, "offset": 4096, "size": 8192}])
    );

    let mut rng = Rng::new(27);
    let mut model: Vec<u8> = (0..HOST).map(|_| rng.next_u32() as u8).collect();
    c.host_mem().unwrap().copy_from_slice(&model);
    let sock = udp();
    // Reads see the program's stores.
    for (txn, (off, len)) in [(0usize, 8usize), (100, 1000), (size - 16, 16), (8000, 192)]
        .into_iter()
        .enumerate()
    {
        let (st, data) = rma(
            &sock,
            nic.port,
            &request(READ, txn as u32, 7, off as u64, len as u32, &[]),
        );
        assert_eq!(st, OK);
        assert_eq!(
            data,
            model[base + off..base + off + len],
            "read {off}+{len}"
        );
    }
    // Stores after the first reads are seen too (no caching, no copy).
    c.host_mem().unwrap()[base + 40..base + 48].copy_from_slice(b"NEWBYTES");
    model[base + 40..base + 48].copy_from_slice(b"NEWBYTES");
    let (_, data) = rma(&sock, nic.port, &request(READ, 10, 7, 40, 8, &[]));
    assert_eq!(data, b"NEWBYTES");
    // Writes land in the program's mapping.
    let payload: Vec<u8> = (0..700).map(|_| rng.next_u32() as u8).collect();
    let (st, _) = rma(&sock, nic.port, &request(WRITE, 11, 7, 3000, 700, &payload));
    assert_eq!(st, OK);
    model[base + 3000..base + 3700].copy_from_slice(&payload);
    // Out of the window: refused, nothing written.
    let (st, _) = rma(
        &sock,
        nic.port,
        &request(WRITE, 12, 7, size as u64 - 4, 8, &[0xee; 8]),
    );
    assert_eq!(st, OUT_OF_WINDOW);
    assert_eq!(
        c.host_mem().unwrap(),
        &model[..],
        "host memory after the writes"
    );

    // Counters (index = status, sum = lengths) and status.
    let counters = c.counters(e.ectx).unwrap();
    assert_eq!(counters, [(0, 8 + 1000 + 16 + 192 + 8 + 700, 6), (2, 8, 1)]);
    let s = c.status().unwrap();
    assert_eq!(s["packets"], 7, "{s}");
    assert_eq!(s["wire"]["matched"], 7, "{s}");
    assert_eq!(s["wire"]["tx_frames"], 7, "{s}");
    assert_eq!(s["dma_to_host_bytes"], 700, "{s}");
    assert_eq!(s["ectxs"][e.name.as_str()]["packets"], 7, "{s}");
    // The handlers' time in the model: some, and no more than every HPU
    // busy since the NIC started.
    let busy = s["hpu_busy_ns"].as_f64().unwrap();
    assert!(
        busy > 0.0 && busy <= 64.0 * s["now_ns"].as_f64().unwrap(),
        "{s}"
    );

    // Withdrawn: the key is refused from then on.
    c.unexport_window(e.ectx, 7).unwrap();
    let (st, _) = rma(&sock, nic.port, &request(READ, 13, 7, 0, 8, &[]));
    assert_eq!(st, 1, "BAD_KEY");
    let err = c.unexport_window(e.ectx, 7).unwrap_err().to_string();
    assert!(
        err.contains("no RMA window is exported under key 7"),
        "{err}"
    );
    let err = c
        .export_window(e.ectx, 8, 60000, 8192, 3)
        .unwrap_err()
        .to_string();
    assert!(err.contains("passes the end"), "{err}");
    drop(c);

    let v = nic.stop();
    assert_eq!(v["counters"]["rma"][0]["count"], 6, "{v}");
    assert_eq!(v["packets"], 8, "{v}");
    // The readiness probe of `start`, then the client.
    assert_eq!(v["control"]["connections"], 2, "{v}");
    assert_eq!(v["control"]["errors"], 2, "{v}");
}

/// Raw frames on the control socket, as a hostile or broken client sends
/// them.
fn raw(s: &mut UnixStream, bytes: &[u8]) -> Value {
    s.write_all(bytes).unwrap();
    hostif::recv(s).unwrap()
}

/// Garbled and unknown requests get errors naming the problem, a client
/// that leaves mid-request is harmless, and other clients are served
/// throughout; two clients wait for notifications at once and each gets
/// one, answered through its own connection.
#[test]
fn clients_hostile_or_many_do_not_stop_the_nic() {
    let config = patient_config().to_str().unwrap();
    let nic = NicProc::start("many", ask_image(), "ask_ph", 4096, &["--config", config]);
    let mut good = NicClient::connect(&nic.control).unwrap();
    let hello = good.hello().clone();

    let req = |v: Value| hostif::encode(&v);
    let mut s = UnixStream::connect(&nic.control).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for (bytes, want) in [
        (req(json!({"op": "hello"})), "needs `v`"),
        (req(json!({"v": 2, "op": "hello"})), "protocol version 2"),
        (req(json!({"v": 1})), "needs `op`"),
        (
            req(json!({"v": 1, "op": "format_disk"})),
            "unknown op `format_disk`",
        ),
        (
            req(json!({"v": 1, "op": "counters", "ectx": 99})),
            "no ECTX 99",
        ),
        (
            req(json!({"v": 1, "op": "counters", "ectx": "x"})),
            "an ECTX handle",
        ),
        (
            req(json!({"v": 1, "op": "export_window", "key": 1})),
            "missing `offset`",
        ),
        (
            req(
                json!({"v": 1, "op": "export_window", "key": 1, "offset": 0, "size": 8, "perms": 1}),
            ),
            "its image has no `rma_windows`",
        ),
        (
            req(
                json!({"v": 1, "op": "export_window", "key": -1, "offset": 0, "size": 1, "perms": 1}),
            ),
            "`key` -1",
        ),
        (
            req(json!({"v": 1, "op": "respond", "id": 12345, "value": 1})),
            "",
        ),
        (
            req(json!({"v": 1, "op": "wait_notification", "timeout_ms": "soon"})),
            "milliseconds",
        ),
    ] {
        let r = raw(&mut s, &bytes);
        assert_eq!(r["ok"], false, "{r}");
        assert!(
            r["error"].as_str().unwrap().contains(want),
            "want `{want}`: {r}"
        );
        // The well-behaved client is served in between.
        assert_eq!(good.request("hello", json!({})).unwrap(), hello);
    }
    // Garbage closes the connection (after saying why).
    let r = raw(&mut s, &[5, 0, 0, 0, b'{', b'x', b'y', b'z', b'}']);
    assert!(r["error"].as_str().unwrap().contains("not JSON"), "{r}");
    assert_eq!(s.read(&mut [0; 8]).unwrap(), 0, "closed after garbage");
    let mut s = UnixStream::connect(&nic.control).unwrap();
    let r = raw(&mut s, &[0xff, 0xff, 0xff, 0x7f]);
    assert!(r["error"].as_str().unwrap().contains("above"), "{r}");
    // Half a request, then gone.
    let mut s = UnixStream::connect(&nic.control).unwrap();
    s.write_all(&req(json!({"v": 1, "op": "status"}))[..9])
        .unwrap();
    drop(s);
    assert_eq!(good.request("hello", json!({})).unwrap(), hello);

    // Two clients wait at once; each of two packets brings one
    // notification; the answers come back through the host window.
    let nothing = good.wait_notification(Duration::from_millis(50)).unwrap();
    assert_eq!(nothing, None);
    let path = nic.control.clone();
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut c = NicClient::connect(&path).unwrap();
                let n = c
                    .wait_notification(Duration::from_secs(10))
                    .unwrap()
                    .expect("a notification");
                let key = u64::from_le_bytes(n.data[..8].try_into().unwrap());
                c.respond(n.id, key * 3 + 1).unwrap();
                (n, key)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let sock = udp();
    let keys = [0x1111_2222_3333_4405u64, 0x0102_0304_0506_0709];
    for k in keys {
        sock.send_to(&k.to_le_bytes(), ("127.0.0.1", nic.port))
            .unwrap();
    }
    let mut got: Vec<u64> = waiters
        .into_iter()
        .map(|t| {
            let (n, key) = t.join().unwrap();
            assert_eq!(n.host_ref, key & 0xff, "host_ref is payload[0]");
            key
        })
        .collect();
    got.sort();
    let mut want = keys.to_vec();
    want.sort();
    assert_eq!(got, want, "each client got one notification");
    for k in keys {
        let slot = (k & 0xff) as usize % 64 * 8;
        eventually("the answer in host memory", || {
            let m = good.host_mem().unwrap();
            u64::from_le_bytes(m[slot..slot + 8].try_into().unwrap()) == k * 3 + 1
        });
    }
    let s = good.status().unwrap();
    assert_eq!(s["control"]["notifications_delivered"], 2, "{s}");
    assert_eq!(s["errors"], 0, "{s}");

    drop(good);
    let v = nic.stop();
    assert_eq!(v["packets"], 2, "{v}");
    // 11 refusals + 2 garbled.
    assert_eq!(v["control"]["errors"], 13, "{v}");
}

/// Bad command lines and a control socket another NIC serves: clear
/// errors before anything runs.
#[test]
fn refused_setups_say_why() {
    let nic = NicProc::start("busy", ask_image(), "ask_ph", 4096, &[]);
    let o = softspin()
        .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
        .arg(ask_image())
        .args(["--ph", "ask_ph", "--match", &format!("udp:{}", free_port())])
        .arg("--control")
        .arg(&nic.control)
        .args(["--duration", "1"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("another NIC is serving it"), "{e}");
    let name = nic.shm.file_name().unwrap().to_str().unwrap().to_string();
    let o = softspin()
        .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
        .arg(ask_image())
        .args(["--ph", "ask_ph", "--match", &format!("udp:{}", free_port())])
        .args(["--host-shm", &name, "--duration", "1"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("in use by another NIC"), "{e}");
    let o = softspin()
        .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
        .arg(ask_image())
        .args(["--ph", "ask_ph", "--match", "udp:9", "--host-size", "0"])
        .args(["--host-shm", "sF-none", "--duration", "1"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("no ECTX has a host window"), "{e}");
    let o = softspin()
        .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
        .arg(ask_image())
        .args(["--ph", "ask_ph", "--match", "udp:9"])
        .args(["--host-shm", "../tmp/x", "--duration", "1"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("without `/`"), "{e}");
    // The first NIC still serves.
    let mut c = NicClient::connect(&nic.control).unwrap();
    assert_eq!(c.status().unwrap()["ok"], true);
    drop(c);
    nic.stop();
}

/// The same in XDP mode between two namespaces (prefix `sF`): a peer's
/// kernel socket sends the RMA requests over a veth pair; the host program
/// (this test, outside the namespaces) shares the NIC's host memory.
#[test]
fn xdp_nic_in_a_namespace_serves_its_host_program() {
    if !needs_root("hostif xdp test", "network namespaces, XDP") {
        return;
    }
    let net = Topo::pair("sF", "10.94.27");
    let dir = scratch("hostif-test");
    let control = dir.join("xdp.sock");
    let shm = format!("sF-xdp-{}", std::process::id());
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.nic_ns(),
            env!("CARGO_BIN_EXE_softspin"),
        ])
        .args(["nic", "--iface", &net.nic_if(), "--json", "--image"])
        .arg(rma_image())
        .args([
            "--ph",
            "rma_target_ph",
            "--match",
            "udp:21328",
            "--scratchpad",
            "12288",
        ])
        .args(["--host-size", "65536", "--host-shm", &shm, "--control"])
        .arg(&control)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let nic = NicProc {
        child: Some(child),
        control: control.clone(),
        shm: PathBuf::from("/dev/shm").join(&shm),
        port: 21328,
    };
    let end = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(&control).is_err() {
        assert!(Instant::now() < end, "no control socket after 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = NicClient::connect(&control).unwrap();
    c.export_window(c.ectxs()[0].ectx, 9, 1024, 2048, 3)
        .unwrap();
    let pattern: Vec<u8> = (0..2048u32).map(|i| (i * 13 + 5) as u8).collect();
    c.host_mem().unwrap()[1024..3072].copy_from_slice(&pattern);
    // The peer reads 64 bytes at 100 and writes 8 at 500; prints the read.
    let read = request(READ, 1, 9, 100, 64, &[]);
    let write = request(WRITE, 2, 9, 500, 8, b"XDPWRITE");
    let prog = format!(
        "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.settimeout(5)\n\
         for r in (bytes.fromhex('{}'), bytes.fromhex('{}')):\n    s.sendto(r,('{}',21328))\n    d=s.recv(2048)\n    print(d.hex())\n",
        hex(&read),
        hex(&write),
        net.nic_ip()
    );
    let o = net
        .cmd(&["exec", "peer", "python3", "-c", &prog])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Vec<u8>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(unhex)
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0][2], lines[0][3]), (READ | RESPONSE, OK));
    assert_eq!(
        &lines[0][HDR..],
        &pattern[100..164],
        "served from the program's stores"
    );
    assert_eq!((lines[1][2], lines[1][3]), (WRITE | RESPONSE, OK));
    assert_eq!(&c.host_mem().unwrap()[1024 + 500..1024 + 508], b"XDPWRITE");
    let s = c.status().unwrap();
    assert_eq!(s["packets"], 2, "{s}");
    assert!(
        s["wire"]["port"].as_str().unwrap().starts_with("xdp"),
        "{s}"
    );
    drop(c);
    let v = nic.stop();
    assert_eq!(v["counters"]["rma"][0]["count"], 2, "{v}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// A shm file left behind (a NIC killed) is replaced, zeroed, and a
/// program still mapping the old one keeps its bytes.
#[test]
fn a_stale_shm_file_is_replaced_not_truncated() {
    let name = format!("sF-stale-{}", std::process::id());
    let path = PathBuf::from("/dev/shm").join(&name);
    std::fs::write(&path, vec![0xabu8; 4096]).unwrap();
    let mut old = hostif::shm::ShmMap::open(&path, 4096).unwrap();
    let nic = NicProc::start_named("stale", &name, ask_image(), "ask_ph", 8192, &[]);
    let mut c = NicClient::connect(&nic.control).unwrap();
    assert_eq!(
        c.host_mem().unwrap(),
        &[0u8; 8192][..],
        "a new, zeroed file"
    );
    assert_eq!(
        old.bytes(),
        &[0xabu8; 4096][..],
        "the old mapping keeps its pages"
    );
    drop(c);
    nic.stop();
}
