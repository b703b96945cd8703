//! The RMA transport block end to end: node B (rank 1) runs
//! examples/rma_target behind the engine's transport block; the test plays
//! node A (rank 0) with its own softspin-rma transport, over a seeded lossy
//! channel (3 % loss, 25 % reordering, 1 % duplication) both ways. Every
//! response is checked against a reference model of the window, atomics
//! must apply exactly once, host memory must be byte-exact at the end; and
//! when B stops answering, A declares rank 1 failed within the bound.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use softspin_engine::RmaTransportConfig;
use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{EctxOptions, Event, HostWindow, Nic};
use softspin_rma::{Config, Received, SendError, Transport};
use softspin_testkit::frame::Frame;
use softspin_testkit::rng::Rng;
use softspin_testkit::scratch;
use softspin_wire::rma::{self, window, Op, Packet, Repr, Status};

const US: u64 = 1_000_000;
const WIN: usize = 64 * 1024;
const KEY: u32 = 1;

fn image() -> PathBuf {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        let cfg = Nic::open("fpspin").unwrap().config().clone();
        let src = softspin_testkit::root().join("examples/rma_target/handler.c");
        let out = scratch("rma_transport").join("rma_target.elf");
        let mut o = BuildOptions::handler(&[&src], &out);
        o.define = cfg.sdk_defines();
        o.link_symbols = cfg.memory_map().link_symbols();
        build(&o).unwrap();
        out
    })
    .clone()
}

/// Timers for a simulated link with a few µs of round trip.
fn tcfg(rank: u16) -> Config {
    Config {
        window: 16,
        rto_initial_ps: 150 * US,
        rto_max_ps: 1_000 * US,
        max_retries: 6,
        ack_delay_ps: 5 * US,
        ack_every: 8,
        nack_interval_ps: 30 * US,
        ..Config::new(rank)
    }
}

fn node_b() -> (Nic, HostWindow) {
    let mut nic = Nic::open("fpspin").unwrap();
    let img = nic.load_image(image()).unwrap();
    let w = nic.host_window(WIN).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("rma_target_ph".into()),
                host_window: Some(w),
                rma: Some(RmaTransportConfig {
                    transport: tcfg(1),
                    ..RmaTransportConfig::new(1)
                }),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    nic.export_window(e, KEY, 0, WIN as u64, window::PERM_ALL)
        .unwrap();
    (nic, w)
}

fn request(txn: u32, op: Op, offset: u64, len: u32, operands: [u64; 2], data: &[u8]) -> Vec<u8> {
    let mut r = Repr::data(op, false, txn, KEY, offset, len);
    r.src_rank = 0;
    r.dst_rank = 1;
    r.operands = operands;
    let mut body = vec![0u8; r.buffer_len()];
    let mut p = Packet::new_unchecked(&mut body[..]);
    r.emit(&mut p).unwrap();
    if op == Op::Write {
        p.payload_mut().copy_from_slice(data);
    }
    Frame {
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        sport: rma::UDP_PORT,
        dport: rma::UDP_PORT,
        ..Frame::default()
    }
    .udp(&body)
}

/// A response: status, payload, atomic old value.
#[derive(Debug)]
struct Resp {
    status: Status,
    data: Vec<u8>,
    old: u64,
}

struct Lossy {
    rng: Rng,
    /// (time, order) -> (to B?, frame)
    q: BTreeMap<(u64, u64), (bool, Vec<u8>)>,
    n: u64,
    /// B is gone: nothing reaches it, nothing leaves it.
    b_dead: bool,
}

impl Lossy {
    fn push(&mut self, t: u64, to_b: bool, f: Vec<u8>) {
        if self.b_dead {
            return;
        }
        let copies = if self.rng.chance(0.01) { 2 } else { 1 };
        for _ in 0..copies {
            if self.rng.chance(0.03) {
                continue;
            }
            let mut d = 2 * US;
            if self.rng.chance(0.25) {
                d += self.rng.below(10 * US);
            }
            self.n += 1;
            self.q.insert((t + d, self.n), (to_b, f.clone()));
        }
    }
}

struct World {
    b: Nic,
    a: Transport,
    ch: Lossy,
    msg: u32,
}

impl World {
    fn new(seed: u64) -> (World, HostWindow) {
        let (b, w) = node_b();
        let world = World {
            b,
            a: Transport::new(tcfg(0)).unwrap(),
            ch: Lossy {
                rng: Rng::new(seed),
                q: BTreeMap::new(),
                n: 0,
                b_dead: false,
            },
            msg: 0,
        };
        (world, w)
    }

    /// Issue `reqs` (txn = index + base) with at most the window
    /// outstanding and run until every response is in; or, with
    /// `fail_after`, until A declares B failed (returns its time then).
    fn run(&mut self, reqs: Vec<Vec<u8>>, base: u32) -> Result<HashMap<u32, Resp>, (u64, u64)> {
        let mut next = 0;
        let mut got = HashMap::new();
        let mut last_progress = self.b.now_ps();
        for _ in 0..5_000_000 {
            let now = self.b.now_ps();
            while next < reqs.len() {
                match self.a.send(now, reqs[next].clone()) {
                    Ok(f) => {
                        self.ch.push(now, true, f);
                        next += 1;
                    }
                    Err(SendError::WindowFull { .. }) => break,
                    Err(SendError::Failed { rank, .. }) => return Err((rank.into(), now)),
                    Err(e) => panic!("{e}"),
                }
            }
            let mut out = Vec::new();
            let failed = self.a.poll(now, &mut out);
            if let Some(f) = failed.first() {
                assert_eq!(f.rank, 1);
                assert!(
                    f.at_ps - last_progress <= self.a.config().failure_bound_ps(),
                    "failure declared {} ps after the last progress",
                    f.at_ps - last_progress
                );
                return Err((1, f.at_ps));
            }
            for f in out {
                self.ch.push(now, true, f);
            }
            while let Some(e) = self.ch.q.first_entry() {
                if e.key().0 > now {
                    break;
                }
                let (to_b, f) = e.remove();
                if to_b {
                    self.msg += 1;
                    self.b.send_packet(f, self.msg, true).unwrap();
                } else if let Ok(Received::Deliver) = self.a.receive(now, &f) {
                    last_progress = now;
                    let p = Packet::new_checked(&f[42..]).unwrap();
                    let r = Repr::parse(&p).unwrap();
                    assert!(r.response && (r.src_rank, r.dst_rank) == (1, 0), "{r:?}");
                    let k = r.txn.wrapping_sub(base);
                    let resp = Resp {
                        status: r.status,
                        data: p.payload().to_vec(),
                        old: r.operands[0],
                    };
                    assert!(
                        got.insert(k, resp).is_none(),
                        "txn {} answered twice",
                        r.txn
                    );
                }
            }
            for e in self.b.events() {
                match e {
                    Event::Outbound(o) => self.ch.push(o.time_ps, false, o.frame),
                    Event::HandlerError(e) => panic!("handler error: {e:?}"),
                    _ => {}
                }
            }
            if got.len() == reqs.len() {
                return Ok(got);
            }
            let step = [self.ch.q.keys().next().map(|k| k.0), self.a.poll_at()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(u64::MAX)
                .clamp(now + 1000, now + 20 * US);
            self.b.run_for((step - now).div_ceil(1000)).unwrap();
        }
        panic!("no end: {} of {} answered", got.len(), reqs.len());
    }
}

#[test]
fn every_operation_exact_over_a_lossy_link() {
    let (mut w, hw) = World::new(27);
    let mut model = vec![0u8; WIN];
    let mut rng = Rng::new(0x27);
    // Writes: 40 regions of 1..=1024 bytes at k * 1024.
    let writes: Vec<(u64, Vec<u8>)> = (0..40u64)
        .map(|k| {
            let len = 1 + rng.below(1024) as usize;
            (k * 1024, rng.bytes(len))
        })
        .collect();
    let reqs = writes
        .iter()
        .enumerate()
        .map(|(k, (off, d))| request(k as u32, Op::Write, *off, d.len() as u32, [0; 2], d))
        .collect();
    let got = w.run(reqs, 0).unwrap();
    for (k, (off, d)) in writes.iter().enumerate() {
        assert_eq!(got[&(k as u32)].status, Status::Ok);
        model[*off as usize..*off as usize + d.len()].copy_from_slice(d);
    }
    // Reads of every region (and past it), one out of the window.
    let mut reads: Vec<(u64, u32)> = writes.iter().map(|(o, _)| (*o, 1024)).collect();
    reads.push((WIN as u64 - 4, 8));
    let reqs = reads
        .iter()
        .enumerate()
        .map(|(k, &(o, l))| request(1000 + k as u32, Op::Read, o, l, [0; 2], &[]))
        .collect();
    let got = w.run(reqs, 1000).unwrap();
    for (k, &(o, l)) in reads.iter().enumerate() {
        let r = &got[&(k as u32)];
        if o as usize + l as usize > WIN {
            assert_eq!((r.status, r.data.len()), (Status::OutOfWindow, 0));
        } else {
            assert_eq!(r.status, Status::Ok);
            assert_eq!(
                r.data,
                model[o as usize..o as usize + l as usize],
                "read {k}"
            );
        }
    }
    // 200 fetch-and-adds of 1 on one 64-bit word, 50 of 3 on a 32-bit one.
    let (w64, w32) = (60_000u64, 61_000u64);
    let mut reqs: Vec<Vec<u8>> = (0..200)
        .map(|k| request(2000 + k, Op::FetchAdd64, w64, 8, [1, 0], &[]))
        .collect();
    reqs.extend((200..250).map(|k| request(2000 + k, Op::FetchAdd32, w32, 4, [3, 0], &[])));
    let got = w.run(reqs, 2000).unwrap();
    let mut olds64: Vec<u64> = (0..200).map(|k| got[&k].old).collect();
    let mut olds32: Vec<u64> = (200..250).map(|k| got[&k].old).collect();
    olds64.sort();
    olds32.sort();
    assert_eq!(
        olds64,
        (0..200).collect::<Vec<u64>>(),
        "each FAA applied once"
    );
    assert_eq!(olds32, (0..50).map(|k| 3 * k).collect::<Vec<u64>>());
    model[w64 as usize..w64 as usize + 8].copy_from_slice(&200u64.to_le_bytes());
    model[w32 as usize..w32 as usize + 4].copy_from_slice(&150u32.to_le_bytes());
    // A chain of compare-and-swaps, one at a time, and one that must fail.
    let cas = 62_000u64;
    for k in 0..10u64 {
        let got = w
            .run(
                vec![request(
                    3000 + k as u32,
                    Op::CompareSwap64,
                    cas,
                    8,
                    [k, k + 1],
                    &[],
                )],
                3000 + k as u32,
            )
            .unwrap();
        assert_eq!((got[&0].status, got[&0].old), (Status::Ok, k));
    }
    let got = w
        .run(
            vec![request(3100, Op::CompareSwap64, cas, 8, [3, 99], &[])],
            3100,
        )
        .unwrap();
    assert_eq!(
        got[&0].old, 10,
        "a failed CAS returns the value, writes nothing"
    );
    model[cas as usize..cas as usize + 8].copy_from_slice(&10u64.to_le_bytes());
    // Drain the last ACKs, then host memory is the model, byte for byte.
    w.b.run_for(1_000).unwrap();
    assert_eq!(w.b.host_read(hw.base, WIN).unwrap(), model);
    // The channel impaired both ways and the block recovered.
    let a = w.a.stats();
    let rep = w.b.report();
    let b = rep.rma.as_ref().expect("the block's report").transport;
    assert!(a.retransmissions + b.retransmissions > 0, "{a:?} {b:?}");
    assert!(b.duplicates + b.out_of_order > 0, "{b:?}");
    assert!(a.duplicates + a.out_of_order > 0, "{a:?}");
    assert_eq!((a.failed_destinations, b.failed_destinations), (0, 0));
    assert_eq!(b.delivered, 40 + 41 + 250 + 11);
}

#[test]
fn a_node_that_stops_answering_is_declared_failed_in_bounded_time() {
    let (mut w, _) = World::new(5);
    let reqs = (0..20)
        .map(|k| request(k, Op::Write, u64::from(k) * 8, 8, [0; 2], &[k as u8; 8]))
        .collect();
    w.run(reqs, 0).unwrap();
    // B is killed: nothing reaches it or comes back.
    w.ch.b_dead = true;
    w.ch.q.clear();
    let start = w.b.now_ps();
    let reqs = (0..30)
        .map(|k| request(100 + k, Op::Read, 0, 8, [0; 2], &[]))
        .collect();
    let (rank, at) = w.run(reqs, 100).unwrap_err();
    assert_eq!(rank, 1);
    assert!(
        at - start <= tcfg(0).failure_bound_ps() + 20 * US,
        "{}",
        at - start
    );
    assert!(w.a.is_failed(1));
    let e =
        w.a.send(at, request(200, Op::Read, 0, 8, [0; 2], &[]))
            .unwrap_err();
    assert!(e.to_string().contains("rank 1 failed"), "{e}");
}

/// The block's per-frame cost delays each frame it sends by exactly that
/// much (a lone response: nothing else queues with it).
#[test]
fn the_block_cost_delays_each_frame_it_sends() {
    let response_time = |cost_ps: u64| {
        let mut nic = Nic::open("fpspin").unwrap();
        let img = nic.load_image(image()).unwrap();
        let w = nic.host_window(WIN).unwrap();
        let e = nic
            .install(
                &img,
                EctxOptions {
                    ph: Some("rma_target_ph".into()),
                    host_window: Some(w),
                    rma: Some(RmaTransportConfig {
                        transport: tcfg(1),
                        cost_ps,
                    }),
                    ..Default::default()
                },
            )
            .unwrap();
        nic.activate(e).unwrap();
        nic.export_window(e, KEY, 0, WIN as u64, window::PERM_ALL)
            .unwrap();
        let mut a = Transport::new(tcfg(0)).unwrap();
        let f = a.send(0, request(1, Op::Read, 0, 8, [0; 2], &[])).unwrap();
        nic.send_packet(f, 1, true).unwrap();
        // fpspin handlers take hundreds of µs (test_rma_target.py).
        nic.run_for(3_000_000).unwrap();
        let out: Vec<_> = nic
            .events()
            .into_iter()
            .filter_map(|x| match x {
                Event::Outbound(o) if o.frame[42 + 1] == 0 => Some(o),
                _ => None,
            })
            .collect();
        assert_eq!(out.len(), 1, "the response");
        out[0].time_ps
    };
    let (t0, t1) = (response_time(0), response_time(1_000_000));
    assert_eq!(t1 - t0, 1_000_000);
    assert_eq!(softspin_engine::RMA_COST_PS, 20_000);
}
