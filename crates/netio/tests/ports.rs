//! The live NIC's ports with real traffic: socket mode on loopback (no root),
//! XDP mode inside network namespaces this test creates and always removes
//! (root; skipped with a message otherwise). Frames are checked against this
//! file's own builder and parser, not the port's.

use std::net::{Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use softspin_netio::socket::SocketPort;
use softspin_netio::{NetError, Port, Ruleset, RxFrame};
use softspin_testkit::frame::Frame;
use softspin_testkit::net::Topo;
use softspin_testkit::{csum, is_root, needs_root};

// ---- an independent reference: frames built and read by hand ----

fn udp_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    Frame {
        src_mac,
        dst_mac,
        src_ip: src.octets(),
        dst_ip: dst.octets(),
        sport,
        dport,
        flags_frag: 0,
        ..Frame::default()
    }
    .udp(payload)
}

/// (src, dst, sport, dport, payload) of an Ethernet/IPv4/UDP frame, read by
/// hand; panics (fails the test) on anything else.
fn read_udp(f: &[u8]) -> (Ipv4Addr, Ipv4Addr, u16, u16, &[u8]) {
    assert!(f.len() >= 42, "frame of {} B", f.len());
    assert_eq!(&f[12..14], &[0x08, 0x00], "EtherType");
    assert_eq!(f[14], 0x45, "IPv4, no options");
    assert_eq!(csum(&f[14..34]), 0, "IPv4 header checksum");
    assert_eq!(f[23], 17, "protocol UDP");
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    assert_eq!(14 + total, f.len(), "IPv4 total length");
    let ulen = usize::from(u16::from_be_bytes([f[38], f[39]]));
    assert_eq!(ulen, total - 20, "UDP length");
    let ip = |o: usize| Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]);
    (
        ip(26),
        ip(30),
        u16::from_be_bytes([f[34], f[35]]),
        u16::from_be_bytes([f[36], f[37]]),
        &f[42..],
    )
}

/// Payload `i` of a run: sizes and bytes both depend on `i`.
fn payload(i: usize, max: usize) -> Vec<u8> {
    let len = 1 + (i * 337) % max;
    (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn recv_n(port: &mut dyn Port, n: usize, limit: Duration) -> Vec<RxFrame> {
    let mut got = Vec::new();
    let end = Instant::now() + limit;
    while got.len() < n && Instant::now() < end {
        let want = n - got.len();
        port.recv(&mut got, want, Duration::from_millis(50))
            .unwrap();
    }
    got
}

// ---- socket mode ----

#[test]
fn socket_mode_loopback_udp_both_ways() {
    let mut port = SocketPort::open("lo").unwrap();
    let p = free_udp_port();
    port.set_rulesets(&[Ruleset::from_spec(&format!("udp:{p}")).unwrap()])
        .unwrap();
    assert!(
        port.describe().contains(&p.to_string()),
        "{}",
        port.describe()
    );

    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let cport = client.local_addr().unwrap().port();
    const N: usize = 100;
    for i in 0..N {
        client.send_to(&payload(i, 1472), ("127.0.0.1", p)).unwrap();
    }
    let got = recv_n(&mut port, N, Duration::from_secs(5));
    assert_eq!(got.len(), N, "datagrams received; {:?}", port.stats());
    for (i, rx) in got.iter().enumerate() {
        let (src, dst, sport, dport, data) = read_udp(&rx.frame);
        assert_eq!(
            (src, dst, sport, dport),
            (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, cport, p),
            "datagram {i}"
        );
        assert_eq!(data, &payload(i, 1472)[..], "payload of datagram {i}");
        assert_eq!(rx.ruleset, 0);
        // The wire crate parses it too.
        let eth = softspin_wire::ethernet::Packet::new_checked(&rx.frame[..]).unwrap();
        let ip = softspin_wire::ipv4::Packet::new_checked(eth.payload()).unwrap();
        softspin_wire::ipv4::Repr::parse(&ip, softspin_wire::Checksum::Full).unwrap();
    }
    let s = port.stats();
    assert_eq!(
        (s.rx_frames, s.matched.clone(), s.passed_to_kernel),
        (N as u64, vec![N as u64], 0)
    );

    // A reply frame (as a handler would build it) reaches the client byte-exact.
    let reply: Vec<u8> = (0..999u32).map(|j| (j * 13) as u8).collect();
    let f = udp_frame(
        [2, 0, 0, 0, 0, 2],
        [0; 6],
        Ipv4Addr::LOCALHOST,
        Ipv4Addr::LOCALHOST,
        p,
        cport,
        &reply,
    );
    port.send(&f).unwrap();
    port.flush().unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], &reply[..]);
    assert_eq!(from.port(), p, "sent from the rule's port");

    // Not UDP: counted, not sent, not an error.
    let mut arp = f.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    port.send(&arp).unwrap();
    port.send(&f[..20]).unwrap();
    let s = port.stats();
    assert_eq!(s.tx_frames, 1);
    assert_eq!(s.drops.get("tx_not_udp"), Some(&2), "{:?}", s.drops);

    // A frame to the port's own UDP port (a handler that echoes without
    // swapping) would come back in forever: dropped and counted instead.
    let own = udp_frame(
        [0; 6],
        [0; 6],
        Ipv4Addr::LOCALHOST,
        Ipv4Addr::LOCALHOST,
        cport,
        p,
        b"loop",
    );
    port.send(&own).unwrap();
    let s = port.stats();
    assert_eq!(s.tx_frames, 1);
    assert_eq!(s.drops.get("tx_to_own_port"), Some(&1), "{:?}", s.drops);
}

#[test]
fn socket_mode_takes_only_udp_port_rules() {
    let mut port = SocketPort::open("lo").unwrap();
    let e = port
        .set_rulesets(&[Ruleset::from_spec("icmp").unwrap()])
        .unwrap_err();
    assert!(matches!(e, NetError::Rules(_)), "{e:?}");
    assert!(e.to_string().contains("udp:PORT"), "{e}");
    // A udp rule with one unit changed is no longer udp:PORT.
    let mut r = Ruleset::from_spec("udp:7000").unwrap();
    r.units.last_mut().unwrap().end ^= 0x10000;
    assert!(matches!(port.set_rulesets(&[r]), Err(NetError::Rules(_))));
    assert!(matches!(
        SocketPort::open("nosuchif9"),
        Err(NetError::NoSuchInterface(_))
    ));
    // A port someone else holds: the error names it.
    let holder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let p = holder.local_addr().unwrap().port();
    let e = port
        .set_rulesets(&[Ruleset::from_spec(&format!("udp:{p}")).unwrap()])
        .unwrap_err();
    assert!(e.to_string().contains(&format!("udp:{p}")), "{e}");
    assert!(port.ports().is_empty());
}

#[test]
fn bad_interface_names_are_errors() {
    for name in ["nosuchif9", "", "a\0b", "much-too-long-interface-name"] {
        let e = softspin_netio::xsk::XdpPort::open(name)
            .err()
            .expect("no such interface");
        assert!(matches!(e, NetError::NoSuchInterface(_)), "{name:?}: {e:?}");
        let e = SocketPort::open(name).err().expect("no such interface");
        assert!(matches!(e, NetError::NoSuchInterface(_)), "{name:?}: {e:?}");
    }
    let e = softspin_netio::xsk::XdpPort::open_with(
        "lo",
        softspin_netio::XskConfig {
            frames: 3,
            frame_size: 2048,
        },
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("frames = 3"), "{e}");
    if !is_root() {
        // Without privileges XDP mode says so and points at socket mode.
        let e = softspin_netio::xsk::XdpPort::open("lo").err().unwrap();
        assert!(matches!(e, NetError::NotPermitted { .. }), "{e:?}");
        assert!(e.to_string().contains("--mode socket"), "{e}");
    }
}

// ---- XDP mode, in namespaces ----

const NIC_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The /24 of NIC_IP and PEER_IP.
const NET: &str = "10.77.0";

/// Runs the XDP body (below) in the NIC's namespace as a child process:
/// `ip netns exec` also gives it that namespace's /sys.
fn run_xdp_body(tag: &str, queues: u32) {
    if !needs_root("the XDP test", "XDP attach, AF_XDP, namespaces") {
        return;
    }
    let ns = Topo::pair_with_queues(tag, NET, queues);
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.nic_ns()])
        .arg(exe)
        .args([
            "--exact",
            "xdp_body",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "SS_XDP_BODY",
            format!("{} {} {} {queues}", ns.nic_if(), ns.peer_ns(), ns.peer_if()),
        )
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "XDP body failed");
    assert!(
        text.contains("xdp_body ... ok") || text.contains("1 passed"),
        "the body ran"
    );
}

#[test]
fn xdp_mode_in_netns() {
    run_xdp_body("sx", 1);
}

/// One AF_XDP socket per RX queue; sends stay in order on queue 0.
#[test]
fn xdp_mode_two_queues() {
    run_xdp_body("sq", 2);
}

#[test]
#[ignore = "run by xdp_mode_* inside the NIC's namespace"]
fn xdp_body() {
    let Ok(env) = std::env::var("SS_XDP_BODY") else {
        eprintln!("xdp_body: only runs inside xdp_mode_*");
        return;
    };
    let v: Vec<&str> = env.split(' ').collect();
    let (nic_if, peer_ns, peer_if) = (v[0], v[1], v[2]);
    let mut port = softspin_netio::xsk::XdpPort::open(nic_if).unwrap();
    eprintln!("{}", port.describe());
    assert_eq!(
        port.queue_count().to_string(),
        v[3],
        "one AF_XDP socket per RX queue"
    );
    let p = 7007u16;
    port.set_rulesets(&[Ruleset::from_spec(&format!("udp:{p}")).unwrap()])
        .unwrap();

    // 1. UDP from the peer's kernel arrives through AF_XDP byte-exact.
    const N: usize = 200;
    let sender = format!(
        "import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('{PEER_IP}',40000))\n\
         for i in range({N}):\n    n=1+(i*337)%1472\n    s.sendto(bytes(((i*31+j*7)&255) for j in range(n)),('{NIC_IP}',{p}))\n"
    );
    let st = Command::new("ip")
        .args(["netns", "exec", peer_ns, "python3", "-c", &sender])
        .status()
        .unwrap();
    assert!(st.success(), "peer sender");
    let got = recv_n(&mut port, N, Duration::from_secs(10));
    assert_eq!(
        got.len(),
        N,
        "datagrams through AF_XDP; stats {:?}",
        port.stats()
    );
    for (i, rx) in got.iter().enumerate() {
        let (src, dst, sport, dport, data) = read_udp(&rx.frame);
        assert_eq!(
            (src, dst, sport, dport),
            (PEER_IP, NIC_IP, 40000, p),
            "datagram {i}"
        );
        assert_eq!(data, &payload(i, 1472)[..], "payload of datagram {i}");
        assert_eq!(rx.ruleset, 0);
    }

    // 2. Bypass: the kernel still answers ping (and ARP) while the rule is on.
    let st = Command::new("ip")
        .args([
            "netns",
            "exec",
            peer_ns,
            "ping",
            "-c",
            "3",
            "-i",
            "0.2",
            "-W",
            "2",
            &NIC_IP.to_string(),
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ping through the bypass");

    // 3. Frames sent with send()+flush arrive at the peer's UDP socket byte-exact.
    const K: usize = 50;
    let receiver = format!(
        "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('{PEER_IP}',40001))\n\
         s.settimeout(5)\nprint('ready',flush=True)\n\
         for i in range({K}):\n    d,a=s.recvfrom(4096)\n    print(a[1],d.hex(),flush=True)\n"
    );
    let mut rx_child = Command::new("ip")
        .args(["netns", "exec", peer_ns, "python3", "-c", &receiver])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(rx_child.stdout.take().unwrap()));
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let mac = |ns: Option<&str>, ifc: &str| -> [u8; 6] {
        let out = match ns {
            Some(ns) => Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "cat",
                    &format!("/sys/class/net/{ifc}/address"),
                ])
                .output(),
            None => Command::new("cat")
                .arg(format!("/sys/class/net/{ifc}/address"))
                .output(),
        }
        .unwrap();
        let t = String::from_utf8(out.stdout).unwrap();
        let b: Vec<u8> = t
            .trim()
            .split(':')
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect();
        b.try_into().unwrap()
    };
    let (nic_mac, peer_mac) = (mac(None, nic_if), mac(Some(peer_ns), peer_if));
    for i in 0..K {
        port.send(&udp_frame(
            nic_mac,
            peer_mac,
            NIC_IP,
            PEER_IP,
            p,
            40001,
            &payload(i + 1000, 1400),
        ))
        .unwrap();
    }
    port.flush().unwrap();
    for i in 0..K {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("peer got only {i} of {K} frames"))
            .unwrap();
        let (from, hex) = line.split_once(' ').unwrap();
        assert_eq!(from, p.to_string());
        let want: String = payload(i + 1000, 1400)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, want, "frame {i} at the peer");
    }
    assert!(rx_child.wait().unwrap().success());

    // 4. The counters say the same.
    port.flush().unwrap();
    let s = port.stats();
    eprintln!("stats: {s:?}");
    assert_eq!(s.matched, vec![N as u64]);
    assert!(
        s.passed_to_kernel >= 3,
        "pings and ARP went to the kernel: {s:?}"
    );
    assert_eq!(s.rx_frames, N as u64 + s.passed_to_kernel);
    assert_eq!(
        (s.tx_frames, s.tx_bytes),
        (
            K as u64,
            (0..K)
                .map(|i| 42 + payload(i + 1000, 1400).len() as u64)
                .sum()
        )
    );
    assert!(s.drops.values().all(|&d| d == 0), "no drops: {:?}", s.drops);

    // 5. Oversized frames are counted, not sent.
    port.send(&vec![0u8; 4000]).unwrap();
    assert_eq!(port.stats().drops.get("tx_too_large"), Some(&1));
}

// ---- AF_XDP receive rate (a measurement, run by hand) ----
//
//   sudo cargo test --release -p softspin-netio --test ports xdp_rx_rate -- --ignored --nocapture
//
// The sender is an XdpPort on the peer's veth end (AF_XDP TX, copy mode);
// the receiver an XdpPort with one udp:PORT ruleset, copying every frame out.

const RATE_SECS: f64 = 3.0;

fn child_in(ns: &str, test: &str, env: String) -> std::process::Child {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SS_RATE", env)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
#[ignore = "a measurement: run by hand as root"]
fn xdp_rx_rate() {
    if !needs_root("xdp_rx_rate", "XDP attach, AF_XDP, namespaces") {
        return;
    }
    let ns = Topo::pair("sr", NET);
    let nic_mac = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.nic_ns(),
            "cat",
            &format!("/sys/class/net/{}/address", ns.nic_if()),
        ])
        .output()
        .unwrap();
    let nic_mac = String::from_utf8(nic_mac.stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut rx = child_in(&ns.nic_ns(), "xdp_rate_rx", ns.nic_if());
    let mut rx_out = std::io::BufRead::lines(std::io::BufReader::new(rx.stdout.take().unwrap()));
    let ready = rx_out.find(|l| l.as_ref().is_ok_and(|l| l.ends_with("ready")));
    assert!(ready.is_some(), "receiver did not start");
    let tx = child_in(
        &ns.peer_ns(),
        "xdp_rate_tx",
        format!("{} {nic_mac}", ns.peer_if()),
    );
    let tx_out = tx.wait_with_output().unwrap();
    let rx_lines: Vec<String> = rx_out.map_while(Result::ok).collect();
    rx.wait().unwrap();
    let tx_text = String::from_utf8_lossy(&tx_out.stdout);
    for l in tx_text.lines().chain(rx_lines.iter().map(String::as_str)) {
        // The harness prints "test NAME ... " before the body's output.
        if let Some(i) = l.find("RATE ") {
            println!("{}", &l[i..]);
        }
    }
    assert!(
        rx_lines.iter().any(|l| l.contains("RATE rx")),
        "receiver reported: {rx_lines:?}"
    );
}

#[test]
#[ignore = "run by xdp_rx_rate"]
fn xdp_rate_rx() {
    let Ok(nic_if) = std::env::var("SS_RATE") else {
        return;
    };
    let mut port = softspin_netio::xsk::XdpPort::open(&nic_if).unwrap();
    port.set_rulesets(&[Ruleset::from_spec("udp:7007").unwrap()])
        .unwrap();
    println!("ready");
    let mut buf = Vec::with_capacity(256);
    let mut n = 0u64;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let idle_end = Instant::now() + Duration::from_secs(10);
    loop {
        buf.clear();
        port.recv(&mut buf, 256, Duration::from_millis(200))
            .unwrap();
        if buf.is_empty() {
            if first.is_some() || Instant::now() > idle_end {
                break;
            }
            continue;
        }
        first.get_or_insert_with(Instant::now);
        n += buf.len() as u64;
        last = Instant::now();
    }
    let secs = first.map_or(0.0, |f| (last - f).as_secs_f64());
    let s = port.stats();
    println!(
        "RATE rx: {n} frames in {secs:.2} s = {:.3} Mpps (60 B frames, copy mode); drops {:?}",
        n as f64 / secs / 1e6,
        s.drops
    );
}

#[test]
#[ignore = "run by xdp_rx_rate"]
fn xdp_rate_tx() {
    let Ok(env) = std::env::var("SS_RATE") else {
        return;
    };
    let (peer_if, nic_mac) = env.split_once(' ').unwrap();
    let dst: Vec<u8> = nic_mac
        .split(':')
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
    let mut port = softspin_netio::xsk::XdpPort::open(peer_if).unwrap();
    let f = udp_frame(
        [2, 0, 0, 0, 0, 9],
        dst.try_into().unwrap(),
        PEER_IP,
        NIC_IP,
        40000,
        7007,
        &[0u8; 18],
    );
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < RATE_SECS {
        for _ in 0..64 {
            port.send(&f).unwrap();
        }
        port.flush().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let s = port.stats();
    println!(
        "RATE tx: {} frames in {secs:.2} s = {:.3} Mpps offered; tx_ring_full drops {}",
        s.tx_frames,
        s.tx_frames as f64 / secs / 1e6,
        s.drops.get("tx_ring_full").unwrap_or(&0)
    );
}
