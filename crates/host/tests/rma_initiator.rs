//! The RMA initiator from the host (`Nic::rma_post`, docs/rma.md
//! "Initiator"): N embedded NICs, each running examples/rma_target behind
//! the transport block with a node table, wired to each other through the
//! embedding API (each outbound frame injected into the NIC its
//! destination MAC names, a fixed link latency later), clean or over a
//! seeded lossy channel (3 % loss, 25 % reordering, 1 % duplication).
//! Every host window is checked byte for byte against a model the test
//! keeps itself; atomics against the arithmetic they must add up to.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::OnceLock;

use softspin_cluster::{Mac, Node, NodeTable};
use softspin_engine::RmaTransportConfig;
use softspin_host::rma::{RmaCompletion, RmaHandle, RmaOp, RmaRequest, STATUS_PEER_FAILED};
use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{Ectx, EctxOptions, ErrorKind, Event, HostWindow, Nic};
use softspin_rma::Config;
use softspin_testkit::rng::Rng;
use softspin_testkit::scratch;
use softspin_wire::rma::{self, txn, window, Status};

const US: u64 = 1_000_000;
const WIN: usize = 4 << 20;
const KEY: u32 = 1;
/// One way through the simulated wire.
const LINK_PS: u64 = 2 * US;

fn build_image(name: &str, sources: &[&str]) -> PathBuf {
    let cfg = Nic::open("fpspin").unwrap().config().clone();
    let src: Vec<PathBuf> = sources
        .iter()
        .map(|s| softspin_testkit::root().join(s))
        .collect();
    let src: Vec<&std::path::Path> = src.iter().map(|p| p.as_path()).collect();
    let out = scratch("rma_initiator").join(name);
    let mut o = BuildOptions::handler(&src, &out);
    o.define = cfg.sdk_defines();
    o.link_symbols = cfg.memory_map().link_symbols();
    build(&o).unwrap();
    out
}

/// examples/rma_target: serves requests, issues host-posted ops.
fn image() -> PathBuf {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| build_image("rma_target.elf", &["examples/rma_target/handler.c"]))
        .clone()
}

/// examples/rma_chase over rma_target: also runs handler-initiated ops.
fn chase_image() -> PathBuf {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        build_image(
            "rma_chase.elf",
            &[
                "examples/rma_target/handler.c",
                "examples/rma_chase/chase.c",
            ],
        )
    })
    .clone()
}

fn mac(rank: usize) -> [u8; 6] {
    [2, 0, 0, 0, 0, rank as u8 + 1]
}

fn table(n: usize) -> NodeTable {
    NodeTable::new(
        (0..n)
            .map(|k| Node {
                rank: k as u32,
                iface: format!("sGi{k}"),
                ipv4: Ipv4Addr::new(10, 27, 0, k as u8 + 1),
                mac: Mac(mac(k)),
                // An application's port: RMA frames use RMA's own whatever the table says.
                udp_port: 9330,
                netns: None,
            })
            .collect(),
    )
    .unwrap()
}

/// Timers for a simulated link with a few µs of round trip.
fn tcfg(rank: u16) -> Config {
    Config {
        window: 32,
        rto_initial_ps: 300 * US,
        rto_max_ps: 2_000 * US,
        max_retries: 6,
        ack_delay_ps: 5 * US,
        ack_every: 8,
        nack_interval_ps: 30 * US,
        ..Config::new(rank)
    }
}

struct NodeNic {
    nic: Nic,
    e: Ectx,
    w: HostWindow,
}

fn node(t: &NodeTable, rank: usize, chase: bool) -> NodeNic {
    node_sized(t, rank, chase, WIN)
}

fn node_sized(t: &NodeTable, rank: usize, chase: bool, win: usize) -> NodeNic {
    let mut nic = Nic::open("fpspin").unwrap();
    nic.set_node_table(t, rank as u32).unwrap();
    let (img, ph) = if chase {
        (chase_image(), "rma_chase_ph")
    } else {
        (image(), "rma_target_ph")
    };
    let img = nic.load_image(img).unwrap();
    let w = nic.host_window(win).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                ph: Some(ph.into()),
                host_window: Some(w),
                rma: Some(RmaTransportConfig {
                    transport: tcfg(rank as u16),
                    ..RmaTransportConfig::new(rank as u16)
                }),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    nic.export_window(e, KEY, 0, win as u64, window::PERM_ALL)
        .unwrap();
    NodeNic { nic, e, w }
}

struct Cluster {
    n: Vec<NodeNic>,
    /// (arrival time, order) -> (destination rank, frame)
    q: BTreeMap<(u64, u64), (usize, Vec<u8>)>,
    order: u64,
    lossy: Option<Rng>,
    dead: Vec<bool>,
    msg: u32,
    /// Every completion, by node.
    done: Vec<BTreeMap<RmaHandle, RmaCompletion>>,
    /// The host takes completions as the NICs run (`rma_completions`);
    /// false: it only calls `rma_fail_handler_ops_now`, as the live loop
    /// of a NIC with no host program does.
    polls: bool,
}

impl Cluster {
    fn new(nodes: usize, lossy_seed: Option<u64>) -> Cluster {
        Cluster::with_chaser(nodes, lossy_seed, false)
    }

    /// `chaser`: node 0 runs examples/rma_chase.
    fn with_chaser(nodes: usize, lossy_seed: Option<u64>, chaser: bool) -> Cluster {
        let t = table(nodes);
        Cluster {
            n: (0..nodes).map(|k| node(&t, k, chaser && k == 0)).collect(),
            q: BTreeMap::new(),
            order: 0,
            lossy: lossy_seed.map(Rng::new),
            dead: vec![false; nodes],
            msg: 0,
            done: vec![BTreeMap::new(); nodes],
            polls: true,
        }
    }

    fn push(&mut self, t: u64, f: Vec<u8>) {
        let Some(dst) = (0..self.n.len()).find(|&k| f[..6] == mac(k)) else {
            panic!("a frame to no node: {:02x?}", &f[..6]);
        };
        let mut copies = 1;
        let mut delay = LINK_PS;
        if let Some(r) = &mut self.lossy {
            if r.chance(0.01) {
                copies = 2;
            }
            if r.chance(0.03) {
                copies -= 1;
            }
            if r.chance(0.25) {
                delay += r.below(10 * US);
            }
        }
        for _ in 0..copies {
            self.order += 1;
            self.q.insert((t + delay, self.order), (dst, f.clone()));
        }
    }

    fn post(&mut self, rank: usize, r: RmaRequest) -> RmaHandle {
        let x = &mut self.n[rank];
        x.nic.rma_post(x.e, &r).unwrap()
    }

    fn outstanding(&self) -> usize {
        self.n.iter().map(|x| x.nic.rma_outstanding(x.e)).sum()
    }

    /// Run every NIC in lock step, moving frames between them, until no
    /// operation is outstanding (panics after `limit_ps` of NIC time).
    fn run(&mut self, limit_ps: u64) {
        self.run_while(limit_ps, |c| c.outstanding() > 0);
    }

    /// Run while `busy` holds (panics after `limit_ps` of NIC time).
    fn run_while(&mut self, limit_ps: u64, busy: impl Fn(&mut Cluster) -> bool) {
        let start = self.n[0].nic.now_ps();
        while busy(self) {
            let now = self.n[0].nic.now_ps();
            if now - start >= limit_ps {
                self.dump();
            }
            assert!(
                now - start < limit_ps,
                "still busy after {} µs ({} host operations outstanding)",
                (now - start) / US,
                self.outstanding()
            );
            while let Some(e) = self.q.first_entry() {
                if e.key().0 > now {
                    break;
                }
                let (dst, f) = e.remove();
                if !self.dead[dst] {
                    self.msg += 1;
                    self.n[dst].nic.send_packet(f, self.msg, true).unwrap();
                }
            }
            for k in 0..self.n.len() {
                let evs = self.n[k].nic.events();
                for ev in evs {
                    match ev {
                        Event::Outbound(o) if !self.dead[k] => self.push(o.time_ps, o.frame),
                        Event::HandlerError(e) => panic!("node {k}: handler error: {e:?}"),
                        _ => {}
                    }
                }
                if !self.polls {
                    self.n[k].nic.rma_fail_handler_ops_now();
                    continue;
                }
                let e = self.n[k].e;
                for c in self.n[k].nic.rma_completions(e) {
                    assert!(
                        self.done[k].insert(c.handle, c).is_none(),
                        "{c:?} completed twice"
                    );
                }
            }
            let next = self.q.keys().next().map_or(u64::MAX, |k| k.0);
            let step = next.saturating_sub(now).clamp(US, 10 * US);
            for x in &mut self.n {
                x.nic.run_for(step / 1000).unwrap();
            }
        }
    }

    /// What a stuck run left behind, for its failure message.
    fn dump(&self) {
        for (k, x) in self.n.iter().enumerate() {
            eprintln!("node {k}: counters {:?}", self.counters(k));
            let r = x.nic.report();
            eprintln!(
                "node {k}: packets {} in {} unmatched {} drops {} timeouts {} errors {:?} rma {:?}",
                r.packets, r.packets_in, r.unmatched, r.drops, r.message_timeouts, r.errors, r.rma
            );
        }
    }

    fn completion(&self, rank: usize, h: RmaHandle) -> RmaCompletion {
        self.done[rank][&h]
    }

    fn host(&mut self, rank: usize) -> Vec<u8> {
        let x = &mut self.n[rank];
        x.nic.host_read(x.w.base, WIN).unwrap()
    }

    fn write_host(&mut self, rank: usize, off: usize, data: &[u8]) {
        let x = &mut self.n[rank];
        x.nic.host_write(x.w.base + off as u64, data).unwrap();
    }

    fn counters(&self, rank: usize) -> BTreeMap<u32, u64> {
        let x = &self.n[rank];
        x.nic
            .counters(x.e)
            .unwrap()
            .into_iter()
            .map(|(i, _, n)| (i, n))
            .collect()
    }
}

fn put(rank: u16, offset: u64, local: u64, len: u64) -> RmaRequest {
    RmaRequest {
        rank,
        key: KEY,
        offset,
        op: RmaOp::Put { local, len },
    }
}

fn get(rank: u16, offset: u64, local: u64, len: u64) -> RmaRequest {
    RmaRequest {
        rank,
        key: KEY,
        offset,
        op: RmaOp::Get { local, len },
    }
}

/// Puts from node 0 to node 1 of `sizes` at odd offsets, then gets of the
/// same ranges back into node 0: both windows equal the model.
fn puts_and_gets(c: &mut Cluster, sizes: &[usize], seed: u64) {
    let mut rng = Rng::new(seed);
    let mut model: Vec<Vec<u8>> = (0..c.n.len()).map(|k| c.host(k)).collect();
    // Sources in node 0's first 2 MiB, destinations in node 1's, gets back
    // into node 0's upper 2 MiB; ranges apart.
    let mut at = 1usize;
    let mut ops = Vec::new();
    for &len in sizes {
        let data = rng.bytes(len);
        let src = at;
        let dst = at + 3;
        at += len + 13;
        c.write_host(0, src, &data);
        model[0][src..src + len].copy_from_slice(&data);
        let h = c.post(0, put(1, dst as u64, src as u64, len as u64));
        ops.push((h, dst, len));
        model[1][dst..dst + len].copy_from_slice(&data);
    }
    assert!(at + 3 < WIN / 2);
    c.run(2_000_000 * US);
    for &(h, ..) in &ops {
        assert_eq!(c.completion(0, h).status, 0, "put {h:?}");
    }
    assert_eq!(c.host(1), model[1], "node 1 after the puts");
    let mut gets = Vec::new();
    for &(_, dst, len) in &ops {
        let back = WIN / 2 + dst;
        let h = c.post(0, get(1, dst as u64, back as u64, len as u64));
        gets.push(h);
        let d = model[1][dst..dst + len].to_vec();
        model[0][back..back + len].copy_from_slice(&d);
    }
    c.run(2_000_000 * US);
    for h in gets {
        assert_eq!(c.completion(0, h).status, 0, "get {h:?}");
    }
    assert_eq!(c.host(0), model[0], "node 0 after the gets");
    assert_eq!(c.host(1), model[1], "node 1 after the gets");
}

const SIZES: [usize; 10] = [
    1, 7, 1431, 1432, 1433, 5000, 45_823, 45_824, 45_825, 100_003,
];

#[test]
fn puts_and_gets_between_two_nodes_are_byte_exact() {
    let mut c = Cluster::new(2, None);
    let mut sizes = SIZES.to_vec();
    sizes.push(1 << 20);
    puts_and_gets(&mut c, &sizes, 1);
    // Nothing dropped on a clean link.
    assert!(!c.counters(0).contains_key(&10), "{:?}", c.counters(0));
}

#[test]
fn puts_and_gets_stay_exact_over_a_lossy_link() {
    let mut c = Cluster::new(2, Some(0x27));
    puts_and_gets(&mut c, &SIZES, 2);
    let a = c.n[0].nic.report();
    let t = a.rma.as_ref().expect("the block's report").transport;
    assert!(
        t.retransmissions + t.duplicates + t.out_of_order > 0,
        "{t:?}"
    );
}

/// Fetch-and-adds from nodes 1..3 on one word of node 0 add up exactly;
/// every old value is seen once. Then a chain of compare-and-swaps from
/// alternating nodes, and one that must fail.
fn atomics(c: &mut Cluster) {
    let (w64, w32) = (4096u64, 8192u64);
    let mut hs = Vec::new();
    for k in 0..60u64 {
        let from = 1 + (k % 3) as usize;
        let h = c.post(
            from,
            RmaRequest {
                rank: 0,
                key: KEY,
                offset: w64,
                op: RmaOp::FetchAdd {
                    width: 8,
                    addend: 5,
                },
            },
        );
        let h32 = c.post(
            from,
            RmaRequest {
                rank: 0,
                key: KEY,
                offset: w32,
                op: RmaOp::FetchAdd {
                    width: 4,
                    addend: 0xffff_ffff,
                },
            },
        );
        hs.push((from, h, h32));
    }
    c.run(2_000_000 * US);
    let mut olds: Vec<u64> = hs
        .iter()
        .map(|&(f, h, _)| c.completion(f, h).value)
        .collect();
    olds.sort_unstable();
    assert_eq!(olds, (0..60).map(|k| 5 * k).collect::<Vec<_>>());
    let mut olds32: Vec<u64> = hs
        .iter()
        .map(|&(f, _, h)| c.completion(f, h).value)
        .collect();
    olds32.sort_unstable();
    // Adding 2^32 - 1 to a 32-bit word subtracts 1.
    let want: Vec<u64> = (0..60u64)
        .map(|k| (0u64.wrapping_sub(k)) & 0xffff_ffff)
        .collect();
    let mut want = want;
    want.sort_unstable();
    assert_eq!(olds32, want);
    let mem = c.host(0);
    assert_eq!(mem[w64 as usize..][..8], 300u64.to_le_bytes());
    assert_eq!(
        mem[w32 as usize..][..4],
        (0u32.wrapping_sub(60)).to_le_bytes()
    );
    let cas = 12_288u64;
    for k in 0..8u64 {
        let from = 1 + (k % 2) as usize;
        let h = c.post(
            from,
            RmaRequest {
                rank: 0,
                key: KEY,
                offset: cas,
                op: RmaOp::Cas {
                    width: 8,
                    compare: k,
                    swap: k + 1,
                },
            },
        );
        c.run(1_000_000 * US);
        assert_eq!(
            c.completion(from, h),
            RmaCompletion {
                handle: h,
                status: 0,
                value: k
            }
        );
    }
    let h = c.post(
        3,
        RmaRequest {
            rank: 0,
            key: KEY,
            offset: cas,
            op: RmaOp::Cas {
                width: 8,
                compare: 3,
                swap: 99,
            },
        },
    );
    c.run(1_000_000 * US);
    assert_eq!(c.completion(3, h).value, 8, "a failed CAS returns the word");
    assert_eq!(c.host(0)[cas as usize..][..8], 8u64.to_le_bytes());
}

#[test]
fn atomics_from_several_nodes_sum_exactly() {
    atomics(&mut Cluster::new(4, None));
}

#[test]
fn atomics_and_transfers_among_four_nodes_over_a_lossy_link() {
    let mut c = Cluster::new(4, Some(4));
    atomics(&mut c);
    // Every node puts to every other at once, then reads it back.
    let mut model: Vec<Vec<u8>> = (0..4).map(|k| c.host(k)).collect();
    let mut rng = Rng::new(44);
    let mut hs = Vec::new();
    for from in 0..4usize {
        for to in 0..4usize {
            if from == to {
                continue;
            }
            let len = 1 + rng.below(20_000) as usize;
            let data = rng.bytes(len);
            let src = 100_001 + to * 30_011;
            let dst = 1_000_003 + from * 30_011;
            c.write_host(from, src, &data);
            model[from][src..src + len].copy_from_slice(&data);
            model[to][dst..dst + len].copy_from_slice(&data);
            hs.push((
                from,
                c.post(from, put(to as u16, dst as u64, src as u64, len as u64)),
            ));
        }
    }
    c.run(2_000_000 * US);
    for (f, h) in hs {
        assert_eq!(c.completion(f, h).status, 0);
    }
    for (k, m) in model.iter().enumerate() {
        assert_eq!(&c.host(k), m, "node {k}");
    }
}

#[test]
fn refused_requests_complete_with_their_status_and_write_nothing() {
    let mut c = Cluster::new(2, None);
    c.write_host(0, 0, &[0xab; 3000]);
    c.write_host(1, 0, &[0x11; 64]);
    let n1 = c.n[1].e;
    // Key 2 exported over a small read-only window.
    c.n[1]
        .nic
        .export_window(n1, 2, 0, 64, window::PERM_READ)
        .unwrap();
    let before = (c.host(0), c.host(1));
    let reqs = [
        (
            RmaRequest {
                key: 9,
                ..put(1, 0, 0, 100)
            },
            Status::BadKey,
        ),
        (put(1, WIN as u64 - 10, 0, 3000), Status::OutOfWindow),
        (
            RmaRequest {
                key: 2,
                ..put(1, 0, 0, 8)
            },
            Status::Permission,
        ),
        (
            RmaRequest {
                key: 2,
                ..get(1, 60, 100, 8)
            },
            Status::OutOfWindow,
        ),
        (
            RmaRequest {
                key: 9,
                ..get(1, 0, 100, 3000)
            },
            Status::BadKey,
        ),
        (
            RmaRequest {
                key: 2,
                offset: 0,
                rank: 1,
                op: RmaOp::FetchAdd {
                    width: 8,
                    addend: 1,
                },
            },
            Status::Permission,
        ),
    ];
    let hs: Vec<_> = reqs.iter().map(|(r, _)| c.post(0, *r)).collect();
    c.run(1_000_000 * US);
    for (h, (r, s)) in hs.iter().zip(&reqs) {
        assert_eq!(c.completion(0, *h).status, *s as u8, "{r:?}");
    }
    assert_eq!((c.host(0), c.host(1)), before, "nothing written");
}

#[test]
fn a_node_that_stops_answering_completes_pending_ops_with_peer_failed() {
    let mut c = Cluster::new(3, None);
    let h = c.post(0, put(1, 0, 0, 100));
    c.run(1_000_000 * US);
    assert_eq!(c.completion(0, h).status, 0);
    c.dead[1] = true;
    let start = c.n[0].nic.now_ps();
    let lost: Vec<_> = (0..40)
        .map(|k| c.post(0, get(1, k * 4096, 0, 4096)))
        .collect();
    // Node 2 stays reachable meanwhile.
    let fine = c.post(0, put(2, 0, 0, 5000));
    c.run(tcfg(0).failure_bound_ps() + 50_000 * US);
    let took = c.n[0].nic.now_ps() - start;
    assert!(took <= tcfg(0).failure_bound_ps() + 50_000 * US, "{took}");
    for h in &lost {
        assert_eq!(c.completion(0, *h).status, STATUS_PEER_FAILED);
    }
    assert_eq!(c.completion(0, fine).status, 0);
    // Later posts to the failed rank complete at once with the same status.
    let late = c.post(0, get(1, 0, 0, 8));
    c.run(1_000 * US);
    assert_eq!(c.completion(0, late).status, STATUS_PEER_FAILED);
}

#[test]
fn forged_responses_and_doorbells_are_dropped_and_counted() {
    let mut c = Cluster::new(2, None);
    c.write_host(1, 0, &[0x5a; 2000]);
    let h = c.post(0, get(1, 0, 0, 2000));
    c.run(1_000_000 * US);
    assert_eq!(c.completion(0, h).status, 0);
    let before = c.host(0);
    // Responses to node 0 that no entry in flight expects: the entry just
    // used (now free), its index in another generation, an index past the
    // table, a handler entry never used. Through the transport block they
    // would need rank 1's next seq; on another port they reach the handler
    // directly, which is what this checks (the table's checks).
    let x = &mut c.n[0];
    for (sent, txn) in [
        txn::wire_txn(0, 1),
        txn::wire_txn(0, 7),
        txn::wire_txn(200, 1),
        txn::wire_txn(40, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = rma::Repr::data(rma::Op::Read, true, txn, KEY, 0, 8);
        r.src_rank = 1;
        r.dst_rank = 0;
        let mut body = vec![0u8; r.buffer_len() + 8];
        let mut p = rma::Packet::new_unchecked(&mut body[..]);
        r.emit(&mut p).unwrap();
        let f = softspin_testkit::frame::Frame {
            src_mac: mac(1),
            dst_mac: mac(0),
            // Not RMA's port: past the transport block, to the handler.
            sport: 9,
            dport: 9,
            ..Default::default()
        }
        .udp(&body);
        x.nic.send_packet(f, 100_000 + sent as u32, true).unwrap();
    }
    // A doorbell from the wire for an entry the host did not post.
    x.nic
        .send_packet(txn::doorbell(txn::wire_txn(3, 1)).to_vec(), 200_000, true)
        .unwrap();
    x.nic.run_for(5_000_000).unwrap();
    let ctr = c.counters(0);
    assert_eq!(ctr.get(&10), Some(&4), "{ctr:?}");
    assert_eq!(ctr.get(&11), Some(&1), "{ctr:?}");
    assert_eq!(c.host(0), before, "nothing written");
}

#[test]
fn bad_posts_are_refused_with_clear_errors() {
    let mut c = Cluster::new(2, None);
    let x = &mut c.n[0];
    let e = x.e;
    let mut bad = |r: RmaRequest, kind: ErrorKind, what: &str| {
        let err = x.nic.rma_post(e, &r).unwrap_err();
        assert_eq!(err.kind(), kind, "{r:?}: {err}");
        assert!(err.to_string().contains(what), "{r:?}: {err}");
    };
    bad(put(5, 0, 0, 8), ErrorKind::InvalidArgument, "no rank 5");
    bad(put(0, 0, 0, 8), ErrorKind::InvalidArgument, "own");
    bad(put(1, 0, 0, 0), ErrorKind::InvalidArgument, "0 bytes");
    bad(
        get(1, 0, WIN as u64 - 4, 8),
        ErrorKind::Limit,
        "host window",
    );
    bad(put(1, 0, u64::MAX, 8), ErrorKind::Limit, "host window");
    bad(put(1, u64::MAX - 2, 0, 8), ErrorKind::Limit, "overflows");
    let atomic = |width, offset| RmaRequest {
        rank: 1,
        key: KEY,
        offset,
        op: RmaOp::FetchAdd { width, addend: 1 },
    };
    bad(atomic(3, 0), ErrorKind::InvalidArgument, "width 3");
    bad(atomic(8, 4), ErrorKind::InvalidArgument, "aligned");
    assert!(x.nic.rma_post(Ectx(77), &put(1, 0, 0, 8)).is_err());
    assert_eq!(x.nic.rma_outstanding(e), 0);
    // The image without the transport in front of it, or inactive.
    let mut nic = Nic::open("fpspin").unwrap();
    nic.set_node_table(&table(2), 0).unwrap();
    let img = nic.load_image(image()).unwrap();
    let w = nic.host_window(4096).unwrap();
    let bare = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("rma_target_ph".into()),
                host_window: Some(w),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(bare).unwrap();
    let err = nic.rma_post(bare, &put(1, 0, 0, 8)).unwrap_err();
    assert!(err.to_string().contains("transport"), "{err}");
    nic.deactivate(bare).unwrap();
    nic.uninstall(bare).unwrap();
    let off = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("rma_target_ph".into()),
                host_window: Some(w),
                rma: Some(RmaTransportConfig::new(0)),
                ..Default::default()
            },
        )
        .unwrap();
    let err = nic.rma_post(off, &put(1, 0, 0, 8)).unwrap_err();
    assert!(err.to_string().contains("not active"), "{err}");
}

#[test]
fn requests_and_completions_are_json() {
    let r = RmaRequest {
        rank: 2,
        key: 1,
        offset: 64,
        op: RmaOp::Cas {
            width: 8,
            compare: 1,
            swap: 2,
        },
    };
    let j = serde_json::to_string(&r).unwrap();
    assert_eq!(
        j,
        r#"{"rank":2,"key":1,"offset":64,"op":"cas","width":8,"compare":1,"swap":2}"#
    );
    assert_eq!(serde_json::from_str::<RmaRequest>(&j).unwrap(), r);
    let p: RmaRequest =
        serde_json::from_str(r#"{"rank":1,"key":1,"offset":0,"op":"put","local":8,"len":3}"#)
            .unwrap();
    assert_eq!(p.op, RmaOp::Put { local: 8, len: 3 });
}

#[test]
fn tables_agree() {
    assert_eq!(txn::MAX_LEN, 32 * rma::MAX_PAYLOAD);
}

// -- handler-initiated operations (examples/rma_chase) ----------------------

const CHASE_PORT: u16 = 21329;

/// A command frame for rma_chase_ph (`chase_cmd_t`).
#[allow(clippy::too_many_arguments)]
fn command(op: u32, rank: u32, key: u32, offset: u64, local: u64, len: u32, arg: u32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(b"CHSE");
    for v in [op, rank, key] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p.extend_from_slice(&offset.to_le_bytes());
    p.extend_from_slice(&local.to_le_bytes());
    p.extend_from_slice(&len.to_le_bytes());
    p.extend_from_slice(&arg.to_le_bytes());
    softspin_testkit::frame::Frame {
        src_mac: [2, 0, 0, 0, 0, 0x77],
        dst_mac: mac(0),
        sport: 4000,
        dport: CHASE_PORT,
        ..Default::default()
    }
    .udp(&p)
}

impl Cluster {
    /// Send node 0 a command and run until it wrote `words` u64 results at
    /// `local` (`done` tells from them); returns them.
    fn command(&mut self, frame: Vec<u8>, local: usize, words: usize, limit_ps: u64) -> Vec<u64> {
        let marker = vec![0xee; words * 8];
        self.write_host(0, local, &marker);
        self.msg += 1;
        self.n[0].nic.send_packet(frame, self.msg, true).unwrap();
        self.run_while(limit_ps, |c| {
            c.host(0)[local..local + words * 8] == marker[..]
        });
        // The results are one DMA: let it finish whole.
        for x in &mut self.n {
            x.nic.run_for(10_000).unwrap();
        }
        self.host(0)[local..local + words * 8]
            .chunks(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }
}

/// Node 1 holds a random cyclic list of 8-byte words (each the offset of
/// the next); node 0's handler follows it `hops` times with dependent
/// gets. The answer is computed by walking the list here.
fn chase_over(c: &mut Cluster, hops: u32, seed: u64) {
    let mut rng = Rng::new(seed);
    let slots = 512usize;
    let base = 64 * 1024usize;
    let mut order: Vec<usize> = (0..slots).collect();
    for i in (1..slots).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut next = vec![0u64; slots];
    for k in 0..slots {
        next[order[k]] = (base + 8 * order[(k + 1) % slots]) as u64;
    }
    for (i, v) in next.iter().enumerate() {
        c.write_host(1, base + 8 * i, &v.to_le_bytes());
    }
    let start = (base + 8 * order[3]) as u64;
    let mut want = start;
    for _ in 0..hops {
        want = next[(want as usize - base) / 8];
    }
    let local = 8192;
    let r = c.command(
        command(1, 1, KEY, start, local as u64, hops, 0),
        local + 8,
        3,
        5_000_000 * US,
    );
    assert_eq!(r, [want, u64::from(hops), 0], "value, hops, status");
}

#[test]
fn a_handler_chases_pointers_with_dependent_gets() {
    let mut c = Cluster::with_chaser(2, None, true);
    chase_over(&mut c, 24, 7);
}

#[test]
fn a_handler_chases_pointers_over_a_lossy_link() {
    let mut c = Cluster::with_chaser(3, Some(9), true);
    chase_over(&mut c, 24, 8);
}

#[test]
fn handlers_put_from_device_and_from_host_and_run_atomics() {
    let mut c = Cluster::with_chaser(2, None, true);
    let before = c.host(1);
    // Put from device: a pattern built in NIC memory, three packets.
    let len = 3000u32;
    let r = c.command(command(2, 1, KEY, 5001, 0, len, 0x41), 0, 4, 2_000_000 * US);
    assert_eq!(r[0], 0, "status");
    let mut model = before.clone();
    for i in 0..len as usize {
        model[5001 + i] = (0x41 + 7 * i) as u8;
    }
    assert_eq!(c.host(1), model);
    // Put from host: node 0's bytes at 64 + 32.
    let data = Rng::new(3).bytes(2000);
    c.write_host(0, 96, &data);
    let r = c.command(
        command(3, 1, KEY, 20_003, 64, 2000, 0),
        64,
        4,
        2_000_000 * US,
    );
    assert_eq!(r[0], 0, "status");
    model[20_003..22_003].copy_from_slice(&data);
    assert_eq!(c.host(1), model);
    // Atomics: FAA 5 on a word holding 37, then CAS 42 -> 1000.
    c.write_host(1, 30_000, &37u64.to_le_bytes());
    let r = c.command(
        command(4, 1, KEY, 30_000, 128, 1000, 5),
        128,
        4,
        2_000_000 * US,
    );
    assert_eq!(r, [0, 37, 0, 42]);
    assert_eq!(c.host(1)[30_000..30_008], 1000u64.to_le_bytes());
    // A handler's op refused by the target completes with its status and
    // writes nothing.
    let snapshot = c.host(1);
    let r = c.command(command(2, 1, 9, 0, 256, 100, 0), 256, 4, 2_000_000 * US);
    assert_eq!(r[0], Status::BadKey as u64);
    assert_eq!(c.host(1), snapshot);
}

#[test]
fn a_handlers_op_to_a_failed_node_ends_with_peer_failed_with_no_host_program() {
    // Nobody takes completions (no host program posts on node 0): the
    // waiting handler still learns of the failure, not from its watchdog.
    let mut c = Cluster::with_chaser(2, None, true);
    c.polls = false;
    c.dead[1] = true;
    let limit = tcfg(0).failure_bound_ps() + 50_000 * US;
    let r = c.command(command(2, 1, KEY, 0, 0, 100, 0x41), 0, 4, limit);
    assert_eq!(r[0], u64::from(STATUS_PEER_FAILED), "status");
}

/// A response for node 0 as rank `src` would send it, on a port past the
/// transport block (it reaches the handler directly).
fn forged(
    src: u16,
    op: rma::Op,
    txn: u32,
    key: u32,
    offset: u64,
    length: u32,
    payload: usize,
) -> Vec<u8> {
    // Field by field (Repr::emit would refuse the inconsistent ones).
    let mut body = vec![0u8; rma::HEADER_LEN + payload];
    let mut p = rma::Packet::new_unchecked(&mut body[..]);
    p.set_version(rma::VERSION);
    p.set_kind(rma::Kind::Data as u8);
    p.set_op(op as u8 | rma::RESPONSE);
    p.set_src_rank(src);
    p.set_dst_rank(0);
    p.set_txn(txn);
    p.set_key(key);
    p.set_offset(offset);
    p.set_length(length);
    body[rma::HEADER_LEN..].fill(0xff);
    softspin_testkit::frame::Frame {
        src_mac: mac(src as usize),
        dst_mac: mac(0),
        sport: 9,
        dport: 9,
        ..Default::default()
    }
    .udp(&body)
}

#[test]
fn forged_responses_during_a_get_are_dropped_and_the_get_stays_exact() {
    let mut c = Cluster::new(3, None);
    let data = Rng::new(5).bytes(20_000);
    c.write_host(1, 1000, &data);
    let mut model = c.host(0);
    let h = c.post(0, get(1, 1000, 50_000, 20_000));
    let table = c.n[0]
        .nic
        .load_image(image())
        .unwrap()
        .symbol(txn::SYMBOL)
        .unwrap();
    let entry = |c: &Cluster| {
        let b = c.n[0].nic.nic_read(table, txn::ENTRY_LEN).unwrap();
        txn::Entry::from_bytes(b.as_slice().try_into().unwrap())
    };
    while entry(&c).state != txn::IN_FLIGHT {
        c.n[0].nic.run_for(1_000).unwrap();
    }
    let e = entry(&c);
    assert_eq!((e.packets, e.length), (14, 20_000));
    let (w, read, mp) = (e.txn, rma::Op::Read, rma::MAX_PAYLOAD as u32);
    let frames = [
        forged(1, read, w + (1 << 16), KEY, 1000, mp, 1432), // another generation
        forged(2, read, w, KEY, 1000, mp, 1432),             // another rank
        forged(1, rma::Op::Write, w, KEY, 1000, mp, 0),      // another op
        forged(1, read, w, 9, 1000, mp, 1432),               // another key
        forged(1, read, w, KEY, 1001, mp, 1432),             // not a packet's offset
        forged(1, read, w, KEY, 1000 + 14 * 1432, 8, 8),     // past the entry
        forged(1, read, w, KEY, 999, 8, 8),                  // before it
        forged(1, read, w, KEY, 1000, 1000, 1000),           // not the packet's length
        forged(1, read, w, KEY, 1000 + 13 * 1432, mp, 1432), // the last packet is shorter
    ];
    let n = frames.len() as u64;
    for f in frames {
        c.msg += 1;
        c.n[0].nic.send_packet(f, 300_000 + c.msg, true).unwrap();
    }
    c.run(2_000_000 * US);
    assert_eq!(c.completion(0, h).status, 0);
    model[50_000..70_000].copy_from_slice(&data);
    assert_eq!(c.host(0), model, "the get's bytes and nothing else");
    // Counter 10 (RMA_CTR_RESPONSE_DROPPED): count, and the sum of the
    // reasons (RMA_DROP_TXN 1, _MISMATCH 3, _RANGE 4): each dropped by
    // its own check while the get was in flight.
    let x = &c.n[0];
    let ctr = x.nic.counters(x.e).unwrap();
    let drops = ctr.iter().find(|(i, ..)| *i == 10).copied();
    assert_eq!(drops, Some((10, 1 + 3 * 3 + 4 * 5, n)), "{ctr:?}");
}

/// Seeded random variants of a get's own responses (header fields set to
/// random or neighbouring values, payloads cut or grown), sent while the
/// get is in flight: whatever the handler accepts, it writes only inside
/// the get's destination, never faults, and the get completes.
#[test]
fn mutated_responses_write_only_inside_the_gets_destination() {
    let mut c = Cluster::new(2, None);
    let table = c.n[0]
        .nic
        .load_image(image())
        .unwrap()
        .symbol(txn::SYMBOL)
        .unwrap();
    let mut rng = Rng::new(0x5eed);
    for round in 0..6u64 {
        let (dst, len) = (100_000 * (round as usize + 1), 10_000u32);
        let before = c.host(0);
        let h = c.post(0, get(1, 3000, dst as u64, u64::from(len)));
        let entry = |c: &Cluster| {
            let b = c.n[0].nic.nic_read(table, txn::ENTRY_LEN).unwrap();
            txn::Entry::from_bytes(b.as_slice().try_into().unwrap())
        };
        while entry(&c).state != txn::IN_FLIGHT {
            c.n[0].nic.run_for(1_000).unwrap();
        }
        let w = entry(&c).txn;
        for _ in 0..40 {
            let k = rng.below(8);
            let mut txn_ = w;
            let mut src = 1u16;
            let mut op = rma::Op::Read;
            let mut key = KEY;
            let mut offset = 3000 + k * rma::MAX_PAYLOAD as u64;
            // k = 7 is past the get's last packet: a full-sized forged one.
            let mut length = u64::from(len).wrapping_sub(k * 1432).min(1432) as u32;
            let mut payload = length as usize;
            for _ in 0..1 + rng.below(3) {
                match rng.below(7) {
                    0 => {
                        txn_ = [
                            rng.below(1 << 32) as u32,
                            w ^ (1 << 16),
                            w.wrapping_add(1),
                            w.wrapping_sub(1),
                        ][rng.below(4) as usize]
                    }
                    1 => src = rng.below(3) as u16,
                    2 => op = rma::Op::ALL[rng.below(rma::Op::ALL.len() as u64) as usize],
                    3 => key = rng.below(3) as u32,
                    4 => {
                        offset = [
                            rng.below(1 << 20),
                            offset + 1,
                            offset.wrapping_sub(1),
                            offset + 1432,
                        ][rng.below(4) as usize]
                    }
                    5 => {
                        length = [
                            rng.below(3000) as u32,
                            length + 1,
                            length.wrapping_sub(1),
                            0,
                        ][rng.below(4) as usize]
                    }
                    _ => payload = rng.below(1433) as usize,
                }
            }
            let f = forged(src, op, txn_, key, offset, length, payload);
            c.msg += 1;
            c.n[0].nic.send_packet(f, 400_000 + c.msg, true).unwrap();
        }
        c.run(2_000_000 * US);
        let _ = c.completion(0, h);
        let after = c.host(0);
        let (lo, hi) = (dst, dst + len as usize);
        assert_eq!(
            after[..lo],
            before[..lo],
            "round {round}: below the destination"
        );
        assert_eq!(
            after[hi..],
            before[hi..],
            "round {round}: above the destination"
        );
    }
}

#[test]
fn eight_nodes_over_a_lossy_link_a_ring_of_puts_and_one_counter() {
    let mut c = Cluster::new(8, Some(88));
    let mut model: Vec<Vec<u8>> = (0..8).map(|k| c.host(k)).collect();
    let mut rng = Rng::new(8);
    let mut hs = Vec::new();
    for k in 0..8usize {
        let to = (k + 1) % 8;
        let data = rng.bytes(3000 + 517 * k);
        c.write_host(k, 77, &data);
        model[k][77..77 + data.len()].copy_from_slice(&data);
        model[to][200_001..200_001 + data.len()].copy_from_slice(&data);
        hs.push((k, c.post(k, put(to as u16, 200_001, 77, data.len() as u64))));
        if k != 0 {
            for _ in 0..5 {
                hs.push((
                    k,
                    c.post(
                        k,
                        RmaRequest {
                            rank: 0,
                            key: KEY,
                            offset: 4096,
                            op: RmaOp::FetchAdd {
                                width: 8,
                                addend: k as u64,
                            },
                        },
                    ),
                ));
            }
        }
    }
    c.run(2_000_000 * US);
    for (k, h) in hs {
        assert_eq!(c.completion(k, h).status, 0);
    }
    // 5 x (1 + ... + 7)
    model[0][4096..4104].copy_from_slice(&140u64.to_le_bytes());
    for (k, m) in model.iter().enumerate() {
        assert_eq!(&c.host(k), m, "node {k}");
    }
}

#[test]
fn operations_of_an_ectx_deactivated_meanwhile_fail() {
    let mut c = Cluster::new(2, None);
    // More than the host entries hold: some stay queued.
    let hs: Vec<_> = (0..3)
        .map(|k| c.post(0, get(1, 0, k * 1_300_000, 1_300_000)))
        .collect();
    let e = c.n[0].e;
    c.n[0].nic.deactivate(e).unwrap();
    c.run(1_000_000 * US);
    for h in hs {
        assert_eq!(c.completion(0, h).status, Status::Failed as u8);
    }
}

#[test]
fn a_handler_waiting_on_a_node_that_stopped_answering_gets_peer_failed() {
    let mut c = Cluster::with_chaser(2, None, true);
    c.dead[1] = true;
    let start = c.n[0].nic.now_ps();
    let r = c.command(
        command(1, 1, KEY, 40, 8192, 5, 0),
        8192 + 8,
        3,
        tcfg(0).failure_bound_ps() + 50_000 * US,
    );
    // Where it stood, hops done, the status.
    assert_eq!(r, [40, 0, u64::from(STATUS_PEER_FAILED)]);
    assert!(c.n[0].nic.now_ps() - start <= tcfg(0).failure_bound_ps() + 50_000 * US);
    let x = &c.n[0];
    let errors = x.nic.report().errors;
    assert!(errors.is_empty(), "no watchdog: {errors:?}");
}

/// The largest op the contract names: 16 MiB each way in one put and one
/// get (367 entries each, most of them queued host-side at first).
#[test]
fn a_16_mib_put_and_get() {
    const BIG: usize = 16 << 20;
    let t = table(2);
    let mut c = Cluster::new(2, None);
    c.n = (0..2)
        .map(|k| node_sized(&t, k, false, 2 * BIG + 64))
        .collect();
    let data = Rng::new(16).bytes(BIG);
    let x = &mut c.n[0];
    x.nic.host_write(x.w.base + 1, &data).unwrap();
    let h = c.post(0, put(1, 3, 1, BIG as u64));
    c.run(20_000_000 * US);
    assert_eq!(c.completion(0, h).status, 0);
    let x = &mut c.n[1];
    assert!(
        x.nic.host_read(x.w.base + 3, BIG).unwrap() == data,
        "node 1 after the put"
    );
    let h = c.post(0, get(1, 3, BIG as u64 + 7, BIG as u64));
    c.run(20_000_000 * US);
    assert_eq!(c.completion(0, h).status, 0);
    let x = &mut c.n[0];
    assert!(
        x.nic.host_read(x.w.base + BIG as u64 + 7, BIG).unwrap() == data,
        "node 0 after the get"
    );
}

#[test]
fn a_handlers_op_to_its_own_rank_or_no_rank_is_refused() {
    let mut c = Cluster::with_chaser(2, None, true);
    // The put fails to start: status FAILED (6) from chase.c's op_wait.
    for rank in [0, 2] {
        let r = c.command(command(2, rank, KEY, 0, 512, 8, 0), 512, 4, 1_000_000 * US);
        assert_eq!(r[0], Status::Failed as u64, "rank {rank}");
    }
}
