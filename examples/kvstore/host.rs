//! kvstore: a YCSB-like workload (50/50 GET/PUT, Zipf θ = 1.1) against the
//! 4-way, 500-entry key-value cache the handlers keep in L2.
//! Verified twice: requests one at a time (sequential semantics) must give
//! exactly the replies and final cache of the reference cache here; all
//! requests at line rate (the measured run) must give one reply per GET,
//! each a miss or a value some PUT wrote for that key.

use std::collections::HashMap;

use crate::{bytes_to_words, payload_per_packet, words_to_bytes, Baseline, Ctx, Outcome, Rng, HDR};
use softspin_host::{build_frame, FrameKind, Pacing, Packet};
use softspin_host::{EctxOptions, Event, Nic};

const WAYS: usize = 4;
const KEYS: usize = 10_000;
const THETA: f64 = 1.1;
const GET: u32 = 0;
const PUT: u32 = 1;

/// Sets: 125 (500 entries); the quick run scales the cache down with the
/// workload (25 sets), so that it still evicts.
fn sets(quick: bool) -> usize {
    if quick {
        25
    } else {
        125
    }
}

/// Value bytes for a packet size: what fills a PUT packet (at most 4 KiB).
fn value_bytes(packet_size: usize) -> usize {
    (payload_per_packet(packet_size).max(12) - 8).min(4096)
}

/// Zipf(θ) over ranks 0..n by inverse CDF.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize, theta: f64) -> Zipf {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|i| {
                acc += 1.0 / (i as f64).powf(theta);
                acc
            })
            .collect();
        cdf.iter_mut().for_each(|c| *c /= acc);
        Zipf(cdf)
    }
    fn sample(&self, r: &mut Rng) -> usize {
        let u = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|&c| c < u).min(self.0.len() - 1)
    }
}

#[derive(Clone, Copy)]
struct Req {
    op: u32,
    key: u32,
    /// The request's index: PUTs write value(key, version).
    version: u32,
}

fn workload(quick: bool) -> Vec<Req> {
    let n = if quick { 200 } else { 1000 };
    let zipf = Zipf::new(KEYS, THETA);
    let mut r = Rng::new(11);
    (0..n)
        .map(|i| {
            let rank = zipf.sample(&mut r) as u32;
            // Scramble ranks into 32-bit keys (a bijection), as YCSB does.
            let key = rank.wrapping_mul(0x9E37_79B1);
            Req {
                op: if r.below(2) == 0 { GET } else { PUT },
                key,
                version: i,
            }
        })
        .collect()
}

fn value(key: u32, version: u32, bytes: usize) -> Vec<u8> {
    let words: Vec<u32> = (0..bytes as u32 / 4)
        .map(|i| match i {
            0 => key,
            1 => version,
            _ => {
                key.wrapping_mul(0x85EB_CA6B)
                    ^ version.wrapping_mul(0xC2B2_AE35)
                    ^ i.wrapping_mul(0x27D4_EB2F)
            }
        })
        .collect();
    words_to_bytes(&words)
}

fn payload(q: &Req, vb: usize) -> Vec<u8> {
    let mut p = words_to_bytes(&[q.op, q.key]);
    if q.op == PUT {
        p.extend(value(q.key, q.version, vb));
    }
    p
}

/// The reference cache: the handler's algorithm, way for way.
#[derive(Clone, Default)]
struct Set {
    tick: u32,
    key: Vec<u32>,
    stamp: Vec<u32>,
    value: Vec<Vec<u8>>,
}

impl Set {
    /// Apply a request payload; a GET returns its reply payload.
    fn access(&mut self, req: &[u8]) -> Option<Vec<u8>> {
        let word = |i: usize| u32::from_le_bytes(req[4 * i..4 * i + 4].try_into().unwrap());
        let (op, key) = (word(0), word(1));
        self.tick += 1;
        let hit = self.key.iter().position(|&k| k == key);
        if op == PUT {
            let w = match hit {
                Some(w) => w,
                None if self.key.len() < WAYS => {
                    self.key.push(key);
                    self.stamp.push(0);
                    self.value.push(Vec::new());
                    self.key.len() - 1
                }
                None => {
                    let w = (0..WAYS).min_by_key(|&i| (self.stamp[i], i)).unwrap();
                    self.key[w] = key;
                    w
                }
            };
            self.stamp[w] = self.tick;
            self.value[w].clear();
            self.value[w].extend_from_slice(&req[8..]);
            return None;
        }
        let mut rep = words_to_bytes(&[hit.is_some() as u32, key]);
        if let Some(w) = hit {
            self.stamp[w] = self.tick;
            rep.extend(&self.value[w]);
        }
        Some(rep)
    }
}

fn frame(p: &[u8]) -> anyhow::Result<Vec<u8>> {
    Ok(build_frame(
        FrameKind::Ip,
        HDR + p.len(),
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        9330,
        9330,
        |i| p[i],
    )?)
}

fn open(ctx: &Ctx, vb: usize) -> anyhow::Result<(Nic, softspin_host::Ectx, u32)> {
    let mut nic = ctx.nic()?;
    let img = ctx.image(
        &nic,
        "kvstore",
        &[&format!("VALUE={vb}"), &format!("SETS={}", sets(ctx.quick))],
    )?;
    let (clusters, cores) = (
        nic.config().clusters as usize,
        nic.config().hpus_per_cluster as usize,
    );
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("kv_ph".into()),
            scratchpad: vec![(cores * (HDR + 8 + vb)) as u32; clusters],
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    Ok((nic, e, img.symbol("kv_sets")?))
}

fn replies(nic: &mut Nic) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    for ev in nic.events() {
        match ev {
            Event::Outbound(o) => {
                let f = o.frame;
                if f.len() < HDR
                    || u16::from_le_bytes([f[2], f[3]]) as usize != f.len()
                    || f[12..16] != [2, 0, 0, 10]
                {
                    return Err(format!(
                        "malformed reply header {:?}",
                        &f[..HDR.min(f.len())]
                    ));
                }
                out.push(f[HDR..].to_vec());
            }
            Event::HandlerError(e) => return Err(format!("handler error: {e:?}")),
            Event::ErrorsDropped { count } => return Err(format!("{count} more handler errors")),
            _ => {}
        }
    }
    Ok(out)
}

/// Requests one at a time: replies and the final cache must match exactly.
fn sequential(ctx: &Ctx, reqs: &[Req], vb: usize) -> anyhow::Result<Result<(), String>> {
    let (mut nic, e, sets_at) = open(ctx, vb)?;
    let n = sets(ctx.quick);
    let mut sets = vec![Set::default(); n];
    let mut want = Vec::new();
    let mut got = Vec::new();
    for q in reqs {
        let p = payload(q, vb);
        want.extend(sets[q.key as usize % n].access(&p));
        nic.send_payloads(e, q.version, &[p])?;
        nic.run_until_idle()?;
        match replies(&mut nic) {
            Ok(r) => got.extend(r),
            Err(m) => return Ok(Err(m)),
        }
    }
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        let head = |r: Option<&Vec<u8>>| r.map(|r| (bytes_to_words(&r[..8]), r.len()));
        return Ok(Err(format!(
            "reply {i}: ([status, key], bytes) = {:?}, expected {:?}",
            head(got.get(i)),
            head(want.get(i))
        )));
    }
    // The cache in handler memory, set for set.
    let size = 44 + WAYS * vb;
    let mem = nic.nic_read(sets_at, n * size)?;
    for (i, s) in sets.iter().enumerate() {
        let m = &mem[i * size..(i + 1) * size];
        let w = bytes_to_words(&m[..44]);
        let used = s.key.len();
        let state = (w[1] as usize, w[2], &w[3..3 + used], &w[7..7 + used]);
        if state != (used, s.tick, &s.key[..], &s.stamp[..]) {
            return Ok(Err(format!(
                "set {i}: (used, tick, keys, stamps) = {state:?}, expected {:?}",
                (used, s.tick, &s.key, &s.stamp)
            )));
        }
        for (k, v) in s.value.iter().enumerate() {
            if m[44 + k * vb..44 + (k + 1) * vb] != v[..] {
                return Ok(Err(format!("set {i} way {k}: wrong value")));
            }
        }
    }
    Ok(Ok(()))
}

/// All requests at line rate: one reply per GET, each consistent.
fn check_parallel(reqs: &[Req], got: &[Vec<u8>], vb: usize) -> Result<(), String> {
    let mut versions: HashMap<u32, Vec<u32>> = HashMap::new();
    for q in reqs.iter().filter(|q| q.op == PUT) {
        versions.entry(q.key).or_default().push(q.version);
    }
    let mut gets: HashMap<u32, usize> = HashMap::new();
    for q in reqs.iter().filter(|q| q.op == GET) {
        *gets.entry(q.key).or_default() += 1;
    }
    let total: usize = gets.values().sum();
    if got.len() != total {
        return Err(format!("{} replies, expected {total}", got.len()));
    }
    for r in got {
        let w = bytes_to_words(&r[..8.min(r.len())]);
        let ok = match w[..] {
            [0, key] => r.len() == 8 && gets.get(&key).is_some_and(|n| *n > 0),
            [1, key] => {
                r.len() == 8 + vb
                    && gets.get(&key).is_some_and(|n| *n > 0)
                    && versions
                        .get(&key)
                        .is_some_and(|vs| vs.iter().any(|&v| r[8..] == value(key, v, vb)[..]))
            }
            _ => false,
        };
        if !ok {
            return Err(format!("inconsistent reply {:?}...", &w));
        }
        *gets.get_mut(&w[1]).unwrap() -= 1;
    }
    Ok(())
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let vb = value_bytes(packet_size);
    let reqs = workload(ctx.quick);
    let seq = sequential(ctx, &reqs, vb)?;

    let (mut nic, _, _) = open(ctx, vb)?;
    // Requests back to back at the line rate, one single-packet message each.
    let pkts = reqs.iter().map(|q| {
        Ok(Packet {
            frame: frame(&payload(q, vb))?,
            msg_id: q.version,
            eom: true,
        })
    });
    nic.send_packets(pkts.collect::<anyhow::Result<Vec<_>>>()?, Pacing::LineRate)?;
    nic.run_until_idle()?;
    let par = replies(&mut nic).and_then(|got| check_parallel(&reqs, &got, vb));
    let report = nic.report();
    let errs: Vec<String> = [
        seq.err().map(|m| format!("sequential: {m}")),
        par.err().map(|m| format!("line rate: {m}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let verified = if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    };
    Ok(Outcome { verified, report })
}

/// The same cache on host threads (a mutex per set) over the requests in memory.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let vb = value_bytes(packet_size);
    let reqs = workload(ctx.quick);
    let pkts: Vec<Vec<u8>> = reqs
        .iter()
        .map(|q| payload(q, vb))
        .cycle()
        .take(20 * reqs.len())
        .collect();
    let n = sets(ctx.quick);
    let sets: Vec<std::sync::Mutex<Set>> = (0..n).map(|_| Default::default()).collect();
    let bytes = pkts.iter().map(|p| (p.len() + HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, bytes, threads, |p| {
        let key = u32::from_le_bytes(p[4..8].try_into().unwrap());
        std::hint::black_box(sets[key as usize % n].lock().unwrap().access(p));
    });
    Ok(Baseline { gbps, threads })
}
