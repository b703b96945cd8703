//! RMA served by live NICs (issue 27, docs/cluster.md "RMA mode"):
//! `softspin cluster up --rma` starts every node's NIC with
//! examples/rma_target behind the RMA transport and a window of `WIN`
//! bytes under key 1; the test plays initiators.
//!
//! Initiator of rank K: a `softspin_rma::Transport` as rank K, driven over
//! a UDP socket in node K's namespace bound to `INIT_PORT`, not RMA's port.
//! The target answers to a request's source address and port (the handler
//! and the transport's control packets swap them), and node K's XDP
//! program steers only UDP to port 21328 to its NIC, so the responses go
//! past node K's NIC to the kernel and the socket. Node K's NIC sends
//! nothing itself, so rank K's sequence numbers are the test's alone. The
//! socket carries UDP payloads; the transport works on Ethernet frames, so
//! each datagram is wrapped in the headers the wire had (from the node
//! table) and each frame it emits is unwrapped.
//!
//! Every response is checked against a model of each target's window, and
//! at the end the window is read back over RMA and from the target's shm
//! file (`/dev/shm/softspin-P-K`, read directly) and both must equal the
//! model byte for byte. Faults: a wrong key, out of the window, forged
//! lengths (status, the target's counters through its control socket, its
//! shm unchanged); a NIC killed during a transfer (declared failed within
//! the transport's bound). `cluster down` must leave nothing behind.
//!
//! Root only (namespaces, XDP); prefixes `sJ` + a letter after
//! $SS_TEST_NS_PREFIX; each cluster is removed by a guard, panics included.

use std::collections::{BTreeSet, HashMap};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use softspin_cluster::local;
use softspin_cluster::NodeTable;
use softspin_host::NicClient;
use softspin_rma::{Config, PeerFailed, Received, SendError, Transport};
use softspin_testkit::frame::Frame;
use softspin_testkit::net::in_netns;
use softspin_testkit::rng::Rng;
use softspin_testkit::{describe, needs_root};
use softspin_wire::rma::{self, Op, Packet, Repr, Status, MAX_PAYLOAD};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");
/// Each node's window (and host memory): `cluster up --window`.
const WIN: usize = 64 * 1024;
/// The key `cluster up --rma` exports under.
const KEY: u32 = 1;
/// The initiators' UDP port: anything but RMA's (see the module comment).
const INIT_PORT: u16 = 40_327;
/// A run that takes longer has hung.
const RUN_LIMIT: Duration = Duration::from_secs(20);

fn softspin(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run softspin")
}

/// A cluster made by `softspin cluster up --rma`, removed on drop.
struct Cluster {
    prefix: String,
    table: NodeTable,
}

impl Cluster {
    fn up(tag: &str, nodes: u32, extra: &[&str]) -> Cluster {
        let prefix = format!(
            "{}sJ{tag}",
            std::env::var("SS_TEST_NS_PREFIX").unwrap_or_default()
        );
        let n = nodes.to_string();
        let win = WIN.to_string();
        let mut args = vec![
            "cluster", "up", "--nodes", &n, "--prefix", &prefix, "--rma", "--window", &win,
        ];
        args.extend(extra);
        let o = softspin(&args);
        let c = Cluster {
            table: NodeTable::load(&local::default_table_path(&prefix)).unwrap_or_else(|e| {
                panic!("cluster up: {e}: {}", describe(&o));
            }),
            prefix,
        };
        assert!(o.status.success(), "cluster up: {}", describe(&o));
        c
    }

    fn nic_pid(&self, k: u32) -> u32 {
        let p = local::state_dir(&self.prefix).join(format!("nic-{k}.pid"));
        std::fs::read_to_string(&p).unwrap().trim().parse().unwrap()
    }

    /// Node k's window as its shm file holds it, read apart from the NIC
    /// and the control socket.
    fn shm(&self, k: u32) -> Vec<u8> {
        let b = std::fs::read(local::shm_path(&self.prefix, k)).unwrap();
        b[..WIN].to_vec()
    }

    /// The target handler's counters (index = status), through node k's
    /// control socket: count per index.
    fn counters(&self, k: u32) -> HashMap<u32, u64> {
        let mut c = NicClient::connect(local::control_path(&self.prefix, k)).unwrap();
        let e = c.ectxs()[0].ectx;
        c.counters(e)
            .unwrap()
            .into_iter()
            .map(|(i, _, n)| (i, n))
            .collect()
    }

    fn initiator(&self, k: u32) -> Initiator {
        let me = self.table.node(k).unwrap().ipv4;
        let sock = in_netns(&local::Names::new(&self.prefix, 1).unwrap().ns(k), || {
            UdpSocket::bind(SocketAddrV4::new(me, INIT_PORT)).unwrap()
        });
        Initiator {
            rank: k,
            sock,
            t: Transport::new(Config::new(k as u16)).unwrap(),
            table: self.table.clone(),
            t0: Instant::now(),
            txn: 0,
        }
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

/// A response: status, read data, an atomic's old value.
#[derive(Debug, Clone)]
struct Resp {
    status: Status,
    data: Vec<u8>,
    old: u64,
}

/// What [`Initiator::run`] saw.
#[derive(Default)]
struct Outcome {
    resps: HashMap<u32, Resp>,
    /// Destinations the transport declared failed, and how long after the
    /// last response from them (ps).
    failed: Vec<(PeerFailed, u64)>,
    /// The sum of how late the loop called `poll` for the timeouts that
    /// fired (its scheduling, not the transport's).
    late_ps: u64,
    /// Requests not sent: their destination had failed.
    refused: Vec<SendError>,
}

struct Initiator {
    rank: u32,
    sock: UdpSocket,
    t: Transport,
    table: NodeTable,
    t0: Instant,
    txn: u32,
}

/// A request to issue: its destination, txn and frame.
struct Req {
    dst: u32,
    txn: u32,
    frame: Vec<u8>,
}

impl Initiator {
    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64 * 1000
    }

    /// The frame this datagram from rank `peer` (payload `body`) was on
    /// the wire, and the frame of one this node sends.
    fn wire(&self, from: u32, to: u32, sport: u16, dport: u16, body: &[u8]) -> Vec<u8> {
        let (a, b) = (self.table.node(from).unwrap(), self.table.node(to).unwrap());
        Frame {
            src_mac: a.mac.0,
            dst_mac: b.mac.0,
            src_ip: a.ipv4.octets(),
            dst_ip: b.ipv4.octets(),
            sport,
            dport,
            ..Frame::default()
        }
        .udp(body)
    }

    /// A request header (and payload) to `dst`, under `key`.
    #[allow(clippy::too_many_arguments)]
    fn req(
        &mut self,
        dst: u32,
        op: Op,
        key: u32,
        off: u64,
        len: u32,
        ops: [u64; 2],
        data: &[u8],
    ) -> Req {
        self.txn += 1;
        let mut r = Repr::data(op, false, self.txn, key, off, len);
        r.src_rank = self.rank as u16;
        r.dst_rank = dst as u16;
        r.operands = ops;
        let mut body = vec![0u8; r.buffer_len()];
        let mut p = Packet::new_unchecked(&mut body[..]);
        r.emit(&mut p).unwrap();
        if op == Op::Write {
            p.payload_mut().copy_from_slice(data);
        }
        self.raw(dst, body)
    }

    /// A request of these bytes (forged ones too).
    fn raw(&mut self, dst: u32, body: Vec<u8>) -> Req {
        let txn = Packet::new_checked(&body[..]).unwrap().txn();
        Req {
            dst,
            txn,
            frame: self.wire(self.rank, dst, INIT_PORT, rma::UDP_PORT, &body),
        }
    }

    fn put(&self, f: &[u8]) {
        // Our frames: Ethernet, IPv4 without options, UDP.
        let ip = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
        let port = u16::from_be_bytes([f[36], f[37]]);
        self.sock
            .send_to(&f[42..], SocketAddrV4::new(ip, port))
            .unwrap();
    }

    /// Issue `reqs` (each destination's in order, at most the transport's
    /// window outstanding per destination) and wait for every response, or
    /// for the destinations of those missing to be declared failed.
    /// `kill`: after this many responses, SIGKILL this process.
    fn run(&mut self, reqs: Vec<Req>, mut kill: Option<(usize, u32)>) -> Outcome {
        let dst_of: HashMap<u32, u16> = reqs.iter().map(|r| (r.txn, r.dst as u16)).collect();
        let mut pending: Vec<Option<Req>> = reqs.into_iter().map(Some).collect();
        let mut out = Outcome::default();
        let mut last_heard: HashMap<u16, u64> = HashMap::new();
        let mut buf = vec![0u8; 2048];
        let start = Instant::now();
        loop {
            let now = self.now();
            let mut blocked = BTreeSet::new();
            for slot in pending.iter_mut() {
                let Some(r) = slot else { continue };
                if blocked.contains(&r.dst) {
                    continue;
                }
                match self.t.send(now, r.frame.clone()) {
                    Ok(f) => {
                        last_heard.entry(r.dst as u16).or_insert(now);
                        self.put(&f);
                        *slot = None;
                    }
                    Err(SendError::WindowFull { .. }) => {
                        blocked.insert(r.dst);
                    }
                    Err(e @ SendError::Failed { .. }) => {
                        out.refused.push(e);
                        *slot = None;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            let mut frames = Vec::new();
            let (due, timeouts) = (self.t.poll_at(), self.t.stats().timeouts);
            let failed = self.t.poll(now, &mut frames);
            // How late this loop served a timeout: it adds to the bound.
            if let Some(d) = due.filter(|_| self.t.stats().timeouts > timeouts) {
                out.late_ps += now.saturating_sub(d);
            }
            for f in failed {
                let quiet = f.at_ps - last_heard.get(&f.rank).copied().unwrap_or(0);
                out.failed.push((f, quiet));
            }
            for f in &frames {
                self.put(f);
            }
            // Done when every request was sent (or refused) and answered,
            // or its destination failed (its packets were given up).
            let open = pending.iter().flatten().count()
                + dst_of
                    .iter()
                    .filter(|(t, d)| !out.resps.contains_key(t) && !self.t.is_failed(**d))
                    .count();
            if open == 0 {
                return out;
            }
            assert!(
                start.elapsed() < RUN_LIMIT,
                "rank {}: no end after {RUN_LIMIT:?}: {} of {} answered; transport {:?}",
                self.rank,
                out.resps.len(),
                dst_of.len(),
                self.t.stats()
            );
            let wait = self
                .t
                .poll_at()
                .map_or(2_000_000, |t| t.saturating_sub(now))
                .clamp(50_000, 2_000_000);
            self.sock
                .set_read_timeout(Some(Duration::from_nanos(wait / 1000)))
                .unwrap();
            let (n, from) = match self.sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) => panic!("recv: {e}"),
            };
            let std::net::SocketAddr::V4(from) = from else {
                continue;
            };
            let Some(peer) = self.table.nodes().iter().find(|n| n.ipv4 == *from.ip()) else {
                panic!("a datagram from {from}, not a node");
            };
            let frame = self.wire(peer.rank, self.rank, from.port(), INIT_PORT, &buf[..n]);
            let now = self.now();
            if let Ok(Received::Deliver) = self.t.receive(now, &frame) {
                let p = Packet::new_checked(&buf[..n]).unwrap();
                let r = Repr::parse(&p).unwrap();
                assert!(r.response, "{r:?}");
                assert_eq!(
                    (r.src_rank, r.dst_rank),
                    (peer.rank as u16, self.rank as u16)
                );
                last_heard.insert(r.src_rank, now);
                let resp = Resp {
                    status: r.status,
                    data: p.payload().to_vec(),
                    old: r.operands[0],
                };
                assert!(
                    dst_of.contains_key(&r.txn),
                    "an answer to txn {} not asked",
                    r.txn
                );
                assert!(
                    out.resps.insert(r.txn, resp).is_none(),
                    "txn {} answered twice",
                    r.txn
                );
                if let Some((after, pid)) = kill {
                    if out.resps.len() >= after {
                        // SAFETY: kill(2) on the NIC's pid; no memory involved.
                        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
                        kill = None;
                    }
                }
            }
        }
    }
}

/// One initiator's work against one target, in its own region
/// `[base, base + size)` of the target's window: writes of up to a packet
/// (one exactly 1432 bytes), reads of each and of bytes never written,
/// 32- and 64-bit fetch-and-adds in parallel (each applied exactly once),
/// compare-and-swaps (a chain, and one that must fail). Returns the
/// region's expected contents; every response is checked on the way.
fn exercise(i: &mut Initiator, dst: u32, base: u64, size: usize, seed: u64) -> Vec<u8> {
    let mut model = vec![0u8; size];
    let mut rng = Rng::new(seed);
    // Writes into slots of a quarter of the region, which never overlap
    // (writes in flight together may land in any order).
    let slot = size / 8;
    let mut writes = Vec::new();
    for k in 0..4 {
        let len = if k == 0 {
            MAX_PAYLOAD.min(slot)
        } else {
            1 + rng.below(slot.min(MAX_PAYLOAD) as u64) as usize
        };
        let off = k * slot + rng.below((slot - len + 1) as u64) as usize;
        writes.push((off, rng.bytes(len)));
    }
    let reqs = writes
        .iter()
        .map(|(o, d)| {
            i.req(
                dst,
                Op::Write,
                KEY,
                base + *o as u64,
                d.len() as u32,
                [0; 2],
                d,
            )
        })
        .collect::<Vec<_>>();
    let txns: Vec<u32> = reqs.iter().map(|r| r.txn).collect();
    let got = i.run(reqs, None);
    for (t, (o, d)) in txns.iter().zip(&writes) {
        assert_eq!(got.resps[t].status, Status::Ok, "write to {dst}");
        model[*o..*o + d.len()].copy_from_slice(d);
    }
    // Reads: every slot whole (written bytes and zeros around them).
    let reads: Vec<(usize, usize)> = (0..4).map(|k| (k * slot, slot.min(MAX_PAYLOAD))).collect();
    let reqs = reads
        .iter()
        .map(|&(o, l)| i.req(dst, Op::Read, KEY, base + o as u64, l as u32, [0; 2], &[]))
        .collect::<Vec<_>>();
    let txns: Vec<u32> = reqs.iter().map(|r| r.txn).collect();
    let got = i.run(reqs, None);
    for (t, &(o, l)) in txns.iter().zip(&reads) {
        let r = &got.resps[t];
        assert_eq!(
            (r.status, &r.data[..]),
            (Status::Ok, &model[o..o + l]),
            "read {o}+{l} of node {dst}"
        );
    }
    // Fetch-and-adds, all in flight at once: 24 of 1 on a 64-bit word, 16
    // of 3 on a 32-bit one; the old values are each partial sum once.
    let (w64, w32) = (4 * slot, 4 * slot + 8);
    let mut reqs: Vec<Req> = (0..24)
        .map(|_| i.req(dst, Op::FetchAdd64, KEY, base + w64 as u64, 8, [1, 0], &[]))
        .collect();
    reqs.extend(
        (0..16).map(|_| i.req(dst, Op::FetchAdd32, KEY, base + w32 as u64, 4, [3, 0], &[])),
    );
    let txns: Vec<(u32, bool)> = reqs
        .iter()
        .enumerate()
        .map(|(k, r)| (r.txn, k < 24))
        .collect();
    let got = i.run(reqs, None);
    let (mut o64, mut o32) = (Vec::new(), Vec::new());
    for (t, is64) in txns {
        let r = &got.resps[&t];
        assert_eq!(r.status, Status::Ok);
        if is64 {
            o64.push(r.old)
        } else {
            o32.push(r.old)
        }
    }
    o64.sort_unstable();
    o32.sort_unstable();
    assert_eq!(o64, (0..24).collect::<Vec<u64>>(), "each 64-bit FAA once");
    assert_eq!(
        o32,
        (0..16).map(|k| 3 * k).collect::<Vec<u64>>(),
        "each 32-bit FAA once"
    );
    model[w64..w64 + 8].copy_from_slice(&24u64.to_le_bytes());
    model[w32..w32 + 4].copy_from_slice(&48u32.to_le_bytes());
    // Compare-and-swaps, one at a time: a 64-bit chain 0 -> 1 -> 2 -> 3,
    // a 32-bit swap, then one of each that must fail (old value, no write).
    let (c64, c32) = (4 * slot + 16, 4 * slot + 24);
    let one = |i: &mut Initiator, op, off: usize, w: u32, ops| {
        let r = i.req(dst, op, KEY, base + off as u64, w, ops, &[]);
        let t = r.txn;
        let got = i.run(vec![r], None);
        let r = got.resps[&t].clone();
        assert_eq!(r.status, Status::Ok);
        r.old
    };
    for k in 0..3u64 {
        assert_eq!(one(i, Op::CompareSwap64, c64, 8, [k, k + 1]), k);
    }
    assert_eq!(one(i, Op::CompareSwap32, c32, 4, [0, 0xdead_beef]), 0);
    assert_eq!(
        one(i, Op::CompareSwap64, c64, 8, [0, 99]),
        3,
        "a failed CAS returns the value"
    );
    assert_eq!(one(i, Op::CompareSwap32, c32, 4, [1, 2]), 0xdead_beef);
    model[c64..c64 + 8].copy_from_slice(&3u64.to_le_bytes());
    model[c32..c32 + 4].copy_from_slice(&0xdead_beefu32.to_le_bytes());
    model
}

/// Read `[base, base + len)` of node `dst`'s window over RMA.
fn read_back(i: &mut Initiator, dst: u32, base: u64, len: usize) -> Vec<u8> {
    let chunks: Vec<(u64, usize)> = (0..len)
        .step_by(MAX_PAYLOAD)
        .map(|o| (base + o as u64, MAX_PAYLOAD.min(len - o)))
        .collect();
    let reqs: Vec<Req> = chunks
        .iter()
        .map(|&(o, l)| i.req(dst, Op::Read, KEY, o, l as u32, [0; 2], &[]))
        .collect();
    let txns: Vec<u32> = reqs.iter().map(|r| r.txn).collect();
    let got = i.run(reqs, None);
    txns.iter()
        .flat_map(|t| {
            assert_eq!(got.resps[t].status, Status::Ok);
            got.resps[t].data.clone()
        })
        .collect()
}

/// Every initiator in `pairs` (initiator, target) works on its region of
/// the target (region r = the initiator's rank, `WIN / regions` bytes), all
/// at once; then each target's window, read over RMA and from its shm,
/// equals the model. The initiators are returned for more work.
fn every_operation(c: &Cluster, pairs: &[(u32, u32)], regions: usize) -> Vec<Initiator> {
    let n = c.table.len() as u32;
    let region = WIN / regions;
    let mut inits: Vec<Initiator> = (0..n).map(|k| c.initiator(k)).collect();
    let models: Vec<Vec<(u32, Vec<u8>)>> = std::thread::scope(|s| {
        let hs: Vec<_> = inits
            .iter_mut()
            .map(|i| {
                let mine: Vec<u32> = pairs
                    .iter()
                    .filter(|p| p.0 == i.rank)
                    .map(|p| p.1)
                    .collect();
                s.spawn(move || {
                    mine.iter()
                        .map(|&dst| {
                            let base = (i.rank as usize * region) as u64;
                            let seed = u64::from(i.rank) << 8 | u64::from(dst);
                            (dst, exercise(i, dst, base, region, seed))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut expect = vec![vec![0u8; WIN]; n as usize];
    for (k, done) in models.iter().enumerate() {
        for (dst, m) in done {
            expect[*dst as usize][k * region..(k + 1) * region].copy_from_slice(m);
        }
    }
    // The whole window of each target, over RMA (from some other node) and
    // from its shm file.
    for t in 0..n {
        let reader = (t + 1) % n;
        let got = read_back(&mut inits[reader as usize], t, 0, WIN);
        assert!(
            got == expect[t as usize],
            "node {t}'s window over RMA differs from the model"
        );
        assert!(
            c.shm(t) == expect[t as usize],
            "node {t}'s shm differs from the model"
        );
    }
    inits
}

/// The cluster is there with an XDP program on each node's interface but
/// those whose NIC was `killed`;
/// after `down` nothing of it is: namespaces (with them the bridge, veths
/// and XDP programs), processes, the state directory with its sockets, shm.
fn down_leaves_nothing(c: &Cluster, killed: &[u32]) {
    let names = local::Names::new(&c.prefix, 1).unwrap();
    for n in c.table.nodes() {
        let o = Command::new("ip")
            .args(["-n", &names.ns(n.rank), "-d", "link", "show", &n.iface])
            .output()
            .unwrap();
        // A killed NIC's XDP program went with it (a BPF link).
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).contains("xdp"),
            !killed.contains(&n.rank),
            "XDP program on {} (killed NICs: {killed:?}): {}",
            n.iface,
            describe(&o)
        );
        assert!(local::control_path(&c.prefix, n.rank).exists());
    }
    let o = c.down();
    assert!(o.status.success(), "{}", describe(&o));
    let left: Vec<String> = local::namespaces()
        .unwrap()
        .into_iter()
        .filter(|ns| names.owns(ns))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "namespaces left");
    assert!(
        !local::state_dir(&c.prefix).exists(),
        "state directory left"
    );
    for n in c.table.nodes() {
        assert!(
            !local::shm_path(&c.prefix, n.rank).exists(),
            "shm of node {} left",
            n.rank
        );
        assert!(!local::control_path(&c.prefix, n.rank).exists());
    }
    // NICs and forwarders name files in the state directory.
    let mark = format!("cluster-{}/", c.prefix);
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            assert!(!cmd.contains(&mark), "a process left: {cmd}");
        }
    }
}

/// 4 nodes, every node against every other; then the faults, then a NIC
/// killed during a transfer.
#[test]
fn four_nodes_every_operation_and_faults() {
    if !needs_root("RMA cluster of 4 nodes", "network namespaces, XDP") {
        return;
    }
    let c = Cluster::up("a", 4, &[]);
    let pairs: Vec<(u32, u32)> = (0..4)
        .flat_map(|a| (0..4).filter(move |&b| b != a).map(move |b| (a, b)))
        .collect();
    let mut inits = every_operation(&c, &pairs, 4);

    // Faults, from node 0 against node 1: each gets its error status and
    // a count in the target's counters, and writes nothing.
    let before = c.shm(1);
    let count0 = c.counters(1);
    let i = &mut inits[0];
    let poison = vec![0xEE; 64];
    let mut faults = vec![
        (
            i.req(1, Op::Write, 2, 0, 64, [0; 2], &poison),
            Status::BadKey,
        ),
        (i.req(1, Op::Read, 7, 0, 8, [0; 2], &[]), Status::BadKey),
        (
            i.req(1, Op::FetchAdd64, 0xffff_ffff, 0, 8, [1, 0], &[]),
            Status::BadKey,
        ),
        (
            i.req(1, Op::Write, KEY, WIN as u64 - 32, 64, [0; 2], &poison),
            Status::OutOfWindow,
        ),
        (
            i.req(1, Op::Write, KEY, u64::MAX - 31, 64, [0; 2], &poison),
            Status::OutOfWindow,
        ),
        (
            i.req(1, Op::Read, KEY, WIN as u64, 1, [0; 2], &[]),
            Status::OutOfWindow,
        ),
        (
            i.req(1, Op::CompareSwap64, KEY, WIN as u64, 8, [0, 1], &[]),
            Status::OutOfWindow,
        ),
    ];
    // Forged lengths: a write whose length is not its payload's (longer,
    // shorter), a read of more than a packet, an atomic of another width.
    for (len, payload) in [(128u32, 64usize), (16, 64)] {
        let mut r = Repr::data(Op::Write, false, 0, KEY, 0, payload as u32);
        r.src_rank = 0;
        r.dst_rank = 1;
        i.txn += 1;
        r.txn = i.txn;
        let mut body = vec![0u8; r.buffer_len()];
        let mut p = Packet::new_unchecked(&mut body[..]);
        r.emit(&mut p).unwrap();
        p.payload_mut().fill(0xEE);
        p.set_length(len);
        faults.push((i.raw(1, body), Status::Malformed));
    }
    {
        // Repr refuses to make it: the header is forged after emit.
        let mut r = i.req(1, Op::Read, KEY, 0, 8, [0; 2], &[]);
        let at = r.frame.len() - rma::HEADER_LEN;
        Packet::new_unchecked(&mut r.frame[at..]).set_length(MAX_PAYLOAD as u32 + 1);
        faults.push((r, Status::Malformed));
    }
    {
        let mut r = Repr::data(Op::FetchAdd64, false, 0, KEY, 0, 8);
        (r.src_rank, r.dst_rank, r.operands) = (0, 1, [1, 0]);
        i.txn += 1;
        r.txn = i.txn;
        let mut body = vec![0u8; r.buffer_len()];
        r.emit(&mut Packet::new_unchecked(&mut body[..])).unwrap();
        Packet::new_unchecked(&mut body[..]).set_length(4);
        faults.push((i.raw(1, body), Status::Malformed));
    }
    let expect: Vec<(u32, Status)> = faults.iter().map(|(r, s)| (r.txn, *s)).collect();
    let got = i.run(faults.into_iter().map(|(r, _)| r).collect(), None);
    let mut by_status: HashMap<u32, u64> = HashMap::new();
    for (t, s) in &expect {
        let r = &got.resps[t];
        assert_eq!((r.status, r.data.len()), (*s, 0), "txn {t}");
        *by_status.entry(*s as u32).or_default() += 1;
    }
    assert!(
        c.shm(1) == before,
        "a refused request changed node 1's memory"
    );
    // The control socket is served between engine steps: give it a moment.
    let count1 = c.counters(1);
    for (s, n) in by_status {
        let d = count1.get(&s).copied().unwrap_or(0) - count0.get(&s).copied().unwrap_or(0);
        assert_eq!(d, n, "counter {s} (status) of node 1");
    }

    // Node 3's NIC is SIGKILLed during a transfer of 200 writes: the
    // transport declares rank 3 failed within its bound of the last
    // response, nothing hangs, and the other nodes still answer.
    let i = &mut inits[2];
    let reqs: Vec<Req> = (0..200u64)
        .map(|k| {
            i.req(
                3,
                Op::Write,
                KEY,
                2 * 16384 + (k % 16) * 512,
                512,
                [0; 2],
                &[k as u8; 512],
            )
        })
        .collect();
    let bound = i.t.config().failure_bound_ps();
    let t0 = Instant::now();
    let got = i.run(reqs, Some((20, c.nic_pid(3))));
    let took = t0.elapsed();
    assert!(
        got.resps.len() >= 20 && got.resps.len() < 200,
        "{} answered",
        got.resps.len()
    );
    let [(f, quiet)] = got.failed[..] else {
        panic!("failures: {:?}", got.failed)
    };
    assert_eq!(f.rank, 3);
    // Within the bound, plus however late this loop served the timeouts
    // (the test shares 2 cores with 4 NICs) and a millisecond.
    assert!(
        quiet <= bound + got.late_ps + 1_000_000_000,
        "declared {quiet} ps after the last response (bound {bound}, served {} ps late)",
        got.late_ps
    );
    eprintln!("rank 3 declared failed {quiet} ps after its last response (bound {bound}, served {} ps late)", got.late_ps);
    assert!(took < Duration::from_secs(5), "{took:?}");
    let probe = i.req(3, Op::Read, KEY, 0, 8, [0; 2], &[]).frame;
    let now = i.now();
    let e = i.t.send(now, probe).unwrap_err();
    assert!(e.to_string().contains("rank 3 failed"), "{e}");
    let back = read_back(i, 1, 0, 64);
    assert!(back == c.shm(1)[..64], "node 1 still answers");

    down_leaves_nothing(&c, &[3]);
}

/// 8 nodes in a ring: each against the next.
#[test]
fn eight_nodes_in_a_ring() {
    if !needs_root("RMA cluster of 8 nodes", "network namespaces, XDP") {
        return;
    }
    let c = Cluster::up("b", 8, &[]);
    let pairs: Vec<(u32, u32)> = (0..8).map(|k| (k, (k + 1) % 8)).collect();
    every_operation(&c, &pairs, 8);
    // status names each node's socket and shm file.
    let o = softspin(&["cluster", "status", "--prefix", &c.prefix]);
    let text = String::from_utf8_lossy(&o.stdout);
    for k in 0..8 {
        let line = format!(
            "node {k}: control {}  host memory {}",
            local::control_path(&c.prefix, k).display(),
            local::shm_path(&c.prefix, k).display()
        );
        assert!(text.contains(&line), "{line}: {}", describe(&o));
    }
    down_leaves_nothing(&c, &[]);
}

/// 4 nodes through lossy links (3 % loss, 25 % reordering, 1 %
/// duplication): every operation stays exact, and the transports did
/// recover from something.
#[test]
fn four_nodes_through_lossy_links() {
    if !needs_root("RMA cluster of 4 lossy nodes", "network namespaces, XDP") {
        return;
    }
    if !Path::new(BIN).with_file_name("softspin-lossy").is_file()
        && std::env::var_os("SOFTSPIN_LOSSY").is_none()
    {
        panic!("softspin-lossy is missing: cargo build --release -p softspin-lossy");
    }
    let c = Cluster::up(
        "c",
        4,
        &["--lossy", "--loss 0.03 --reorder 0.25 --dup 0.01"],
    );
    let pairs: Vec<(u32, u32)> = (0..4)
        .map(|k| (k, (k + 1) % 4))
        .chain((0..4).map(|k| (k, (k + 2) % 4)))
        .collect();
    let inits = every_operation(&c, &pairs, 4);
    let recovered: u64 = inits
        .iter()
        .map(|i| {
            let s = i.t.stats();
            s.retransmissions + s.duplicates + s.out_of_order + s.unacks_sent
        })
        .sum();
    assert!(recovered > 0, "the links impaired nothing");
    for i in &inits {
        assert_eq!(i.t.stats().failed_destinations, 0);
    }
    down_leaves_nothing(&c, &[]);
}

/// `softspin nic --window` without root (`--mode socket` on lo): the window
/// is exported before the NIC is ready, under the key given; too little
/// host memory, an image without the RMA target handlers and a bad size
/// are refused with a clear error.
#[test]
fn nic_window_exports_and_refuses() {
    let dir = softspin_testkit::scratch("rma_live");
    let build = |src: &str, name: &str| {
        let out = dir.join(name);
        let o = Command::new(BIN)
            .args(["build", "--profile", "fpspin"])
            .arg(softspin_testkit::root().join(src))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", describe(&o));
        out.display().to_string()
    };
    let (rma_elf, empty_elf) = (
        build("examples/rma_target/handler.c", "rma.elf"),
        build("examples/empty/handler.c", "empty.elf"),
    );
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let m = format!("udp:{port}");
    let nic = |image: &str, ph: &str, extra: &[&str]| -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["nic", "--iface", "lo", "--mode", "socket", "--image", image]);
        cmd.args(["--ph", ph, "--match", &m]).args(extra);
        cmd
    };
    let refused = |mut cmd: Command, code: i32, says: &str| {
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{says}: {}",
            describe(&o)
        );
    };
    refused(
        nic(&rma_elf, "rma_target_ph", &["--host-size", "4096", "--window", "8K"]),
        1,
        "--window 8192: the ECTX `rma` has 4096 bytes of host memory; give --host-size 8192 or more",
    );
    refused(
        nic(
            &empty_elf,
            "empty_ph",
            &["--host-size", "4096", "--window", "4K"],
        ),
        1,
        "its image has no `rma_windows` (not the RMA target handlers)",
    );
    refused(
        nic(&rma_elf, "rma_target_ph", &["--window", "0"]),
        2,
        "a positive number of bytes",
    );
    refused(
        nic(&rma_elf, "rma_target_ph", &["--window", "4K,0"]),
        2,
        "nonzero",
    );

    // Exported before ready: the control socket lists it at once.
    let (sock, ready) = (dir.join("w.sock"), dir.join("w.ready"));
    let _ = std::fs::remove_file(&ready);
    let mut child = nic(
        &rma_elf,
        "rma_target_ph",
        &[
            "--host-size",
            "8192",
            "--window",
            "4K,5",
            "--duration",
            "20",
        ],
    )
    .arg("--control")
    .arg(&sock)
    .arg("--ready-file")
    .arg(&ready)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the NIC exited");
        assert!(t0.elapsed() < Duration::from_secs(20), "not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = NicClient::connect(&sock).unwrap();
    let e = c.ectxs()[0].ectx;
    let w = c
        .request("windows", serde_json::json!({ "ectx": e }))
        .unwrap();
    assert_eq!(
        w["windows"],
        serde_json::json!([{"key": 5, "perms": 7, "offset": 0, "size": 4096}]),
        "{w}"
    );
    // SAFETY: kill(2) on our child's pid; no memory involved.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(child.wait().unwrap().success());
}
