//! Two transports over a seeded lossy channel (loss, reordering,
//! duplication): every DATA packet is delivered exactly once and in order;
//! a silent peer is declared failed within the bound; the window holds.
//! Frames are built and checked byte by byte here, apart from the crate.

use std::collections::BTreeMap;

use softspin_rma::{Config, Dropped, Received, SendError, Transport};
use softspin_testkit::csum;
use softspin_testkit::frame::Frame;
use softspin_testkit::rng::Rng;

const US: u64 = 1_000_000;
const PORT: u16 = 0x5350;

fn frame_for(src: u16) -> Frame {
    let (a, b) = if src == 0 { (1, 2) } else { (2, 1) };
    Frame {
        src_mac: [2, 0, 0, 0, 0, a],
        dst_mac: [2, 0, 0, 0, 0, b],
        src_ip: [10, 0, 0, a],
        dst_ip: [10, 0, 0, b],
        sport: PORT,
        dport: PORT,
        // Non-zero: the transport must refresh it after stamping.
        udp_checksum: 1,
        ..Frame::default()
    }
}

/// A write request from `src` to `dst` with transaction id `txn` and a few
/// payload bytes derived from it; seq and ack 0 for the transport to fill.
fn data(src: u16, dst: u16, txn: u32) -> Vec<u8> {
    let payload = txn.to_le_bytes();
    let mut h = vec![0u8; 40];
    h[0] = 1; // version
    h[1] = 0; // DATA
    h[2] = 1; // write
    h[4..6].copy_from_slice(&src.to_be_bytes());
    h[6..8].copy_from_slice(&dst.to_be_bytes());
    h[16..20].copy_from_slice(&txn.to_be_bytes());
    h[20..24].copy_from_slice(&1u32.to_be_bytes());
    h[32..36].copy_from_slice(&(payload.len() as u32).to_be_bytes());
    h.extend(payload);
    let mut f = frame_for(src).udp(&h);
    // A checksum the transport must replace (the field must not be 0).
    f[40..42].copy_from_slice(&0x1234u16.to_be_bytes());
    f
}

fn txn(f: &[u8]) -> u32 {
    u32::from_be_bytes(f[42 + 16..42 + 20].try_into().unwrap())
}

fn be32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(f[42 + at..42 + at + 4].try_into().unwrap())
}

/// Every frame the transport emits has valid IPv4 and UDP checksums and
/// consistent lengths.
fn check_frame(f: &[u8]) {
    assert_eq!(csum(&f[14..34]), 0, "IPv4 header checksum");
    let ip_len = u16::from_be_bytes([f[16], f[17]]) as usize;
    assert_eq!(ip_len + 14, f.len(), "IPv4 total length");
    let udp = &f[34..];
    assert_eq!(u16::from_be_bytes([udp[4], udp[5]]) as usize, udp.len());
    let mut ph = Vec::new();
    ph.extend(&f[26..34]);
    ph.extend([0, 17]);
    ph.extend((udp.len() as u16).to_be_bytes());
    ph.extend(udp);
    assert_ne!(
        u16::from_be_bytes([udp[6], udp[7]]),
        0,
        "a checksum is sent"
    );
    assert_eq!(csum(&ph), 0, "UDP checksum");
}

struct Channel {
    rng: Rng,
    loss: f64,
    reorder: f64,
    dup: f64,
    /// (arrival time, order) -> (destination rank, frame)
    queue: BTreeMap<(u64, u64), (u16, Vec<u8>)>,
    n: u64,
}

impl Channel {
    fn push(&mut self, now: u64, dst: u16, f: Vec<u8>) {
        check_frame(&f);
        let copies = if self.rng.chance(self.dup) { 2 } else { 1 };
        for _ in 0..copies {
            if self.rng.chance(self.loss) {
                continue;
            }
            let mut delay = 5 * US;
            if self.rng.chance(self.reorder) {
                delay += self.rng.below(30 * US);
            }
            self.n += 1;
            self.queue.insert((now + delay, self.n), (dst, f.clone()));
        }
    }
}

fn cfg(rank: u16, window: usize) -> Config {
    Config {
        window,
        rto_initial_ps: 200 * US,
        rto_max_ps: 2_000 * US,
        max_retries: 6,
        ack_delay_ps: 10 * US,
        ack_every: 8,
        nack_interval_ps: 40 * US,
        ..Config::new(rank)
    }
}

/// Run `n` DATA packets each way between ranks 0 and 1 over the channel.
fn exchange(seed: u64, n: u32, window: usize, loss: f64, reorder: f64, dup: f64) -> [Transport; 2] {
    let mut t = [
        Transport::new(cfg(0, window)).unwrap(),
        Transport::new(cfg(1, window)).unwrap(),
    ];
    let mut ch = Channel {
        rng: Rng::new(seed),
        loss,
        reorder,
        dup,
        queue: BTreeMap::new(),
        n: 0,
    };
    let mut next = [0u32; 2];
    let mut got: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    let mut now = 0u64;
    for _ in 0..2_000_000 {
        for r in 0..2u16 {
            let i = usize::from(r);
            while next[i] < n {
                match t[i].send(now, data(r, 1 - r, next[i])) {
                    Ok(f) => {
                        assert_eq!(be32(&f, 8), next[i], "seq of the k-th packet is k");
                        ch.push(now, 1 - r, f);
                        next[i] += 1;
                    }
                    Err(SendError::WindowFull { rank, outstanding }) => {
                        assert_eq!((rank, outstanding), (1 - r, window));
                        break;
                    }
                    Err(e) => panic!("seed {seed}: send: {e}"),
                }
                assert!(t[i].outstanding(1 - r) <= window, "window bound");
            }
            let mut out = Vec::new();
            let failed = t[i].poll(now, &mut out);
            assert!(failed.is_empty(), "seed {seed}: {failed:?} at {now}");
            for f in out {
                ch.push(now, 1 - r, f);
            }
        }
        while let Some(e) = ch.queue.first_entry() {
            if e.key().0 > now {
                break;
            }
            let (dst, f) = e.remove();
            let i = usize::from(dst);
            match t[i].receive(now, &f) {
                Ok(Received::Deliver) => got[i].push(txn(&f)),
                Ok(Received::Consumed) => {}
                Err(Dropped::OutOfOrder { .. } | Dropped::Duplicate { .. }) => {}
                Err(e) => panic!("seed {seed}: receive: {e}"),
            }
        }
        let done = next == [n, n] && t[0].outstanding(1) == 0 && t[1].outstanding(0) == 0;
        if done && ch.queue.is_empty() {
            let want: Vec<u32> = (0..n).collect();
            assert_eq!(
                got[0], want,
                "seed {seed}: rank 0 got each exactly once, in order"
            );
            assert_eq!(
                got[1], want,
                "seed {seed}: rank 1 got each exactly once, in order"
            );
            return t;
        }
        let at = [
            ch.queue.keys().next().map(|k| k.0),
            t[0].poll_at(),
            t[1].poll_at(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + US);
        now = at.max(now);
        // Nothing due and nothing to send: only time passing helps.
        if at <= now && ch.queue.keys().next().is_none_or(|k| k.0 > now) {
            now += 1;
        }
    }
    panic!(
        "seed {seed}: no end: got {} / {} of {n}",
        got[0].len(),
        got[1].len()
    );
}

#[test]
fn lossless_channel_needs_no_retransmission() {
    let t = exchange(1, 500, 64, 0.0, 0.0, 0.0);
    for s in t.iter().map(|t| t.stats()) {
        assert_eq!(s.data_sent, 500);
        assert_eq!(s.delivered, 500);
        assert_eq!(
            (s.retransmissions, s.timeouts, s.nacks_sent, s.duplicates),
            (0, 0, 0, 0)
        );
    }
}

#[test]
fn every_packet_exactly_once_in_order_over_a_lossy_channel() {
    let mut totals = [0u64; 5];
    for seed in 0..60 {
        let window = [1, 4, 16, 64][seed as usize % 4];
        let t = exchange(seed, 300, window, 0.03, 0.25, 0.01);
        for s in t.iter().map(|t| t.stats()) {
            assert_eq!(s.delivered, 300);
            assert_eq!(s.failed_destinations, 0);
            totals[0] += s.retransmissions;
            totals[1] += s.nacks_sent;
            totals[2] += s.out_of_order;
            totals[3] += s.duplicates;
            totals[4] += s.timeouts;
        }
    }
    // The channel did impair: each recovery path ran.
    assert!(totals.iter().all(|&x| x > 0), "{totals:?}");
}

#[test]
fn heavy_loss_still_exact() {
    for seed in 100..110 {
        // 10 %: at 20 % the 7 probes in a row that cfg allows all fail
        // (probe, NACK or first resend lost) about once per 150 recoveries,
        // a failure the retry limit is there to declare.
        exchange(seed, 200, 16, 0.1, 0.5, 0.1);
    }
}

#[test]
fn ack_rides_on_data_to_the_same_node() {
    let mut a = Transport::new(cfg(0, 8)).unwrap();
    let mut b = Transport::new(cfg(1, 8)).unwrap();
    let f = a.send(0, data(0, 1, 0)).unwrap();
    assert_eq!(b.receive(0, &f), Ok(Received::Deliver));
    assert_eq!(b.poll_at(), Some(10 * US), "ACK delayed by ack_delay");
    let r = b.send(US, data(1, 0, 0)).unwrap();
    assert_eq!((be32(&r, 8), be32(&r, 12)), (0, 1), "seq 0, ack 1");
    assert_eq!(
        b.poll_at(),
        Some(US + 200 * US),
        "no ACK left, only B's RTO"
    );
    assert_eq!(b.stats().acks_piggybacked, 1);
    assert_eq!(a.receive(US, &r), Ok(Received::Deliver));
    assert_eq!(a.outstanding(1), 0);
}

#[test]
fn window_full_refuses_and_keeps_nothing() {
    let mut a = Transport::new(cfg(0, 4)).unwrap();
    for k in 0..4 {
        a.send(0, data(0, 1, k)).unwrap();
    }
    let e = a.send(0, data(0, 1, 4)).unwrap_err();
    assert_eq!(
        e,
        SendError::WindowFull {
            rank: 1,
            outstanding: 4
        }
    );
    assert_eq!(a.outstanding(1), 4);
    assert_eq!(a.stats().window_full, 1);
    // Another destination has its own window.
    a.send(0, data(0, 2, 0)).unwrap();
}

#[test]
fn silent_peer_is_declared_failed_within_the_bound() {
    let c = cfg(0, 8);
    let mut a = Transport::new(c).unwrap();
    for k in 0..3 {
        a.send(0, data(0, 1, k)).unwrap();
    }
    let mut unacks = 0;
    let (now, failed) = loop {
        let now = a.poll_at().expect("a timer is armed");
        assert!(now <= c.failure_bound_ps(), "{now}");
        let mut out = Vec::new();
        let f = a.poll(now, &mut out);
        for o in &out {
            check_frame(o);
            assert_eq!(o[42 + 1], 3, "an UNACK probe");
            assert_eq!(be32(o, 8), 3, "carrying the next seq");
            unacks += 1;
        }
        if !f.is_empty() {
            break (now, f);
        }
    };
    assert_eq!(now, c.failure_bound_ps());
    assert_eq!(failed.len(), 1);
    assert_eq!((failed[0].rank, failed[0].abandoned), (1, 3));
    assert_eq!(unacks, c.max_retries);
    assert!(a.is_failed(1));
    assert_eq!(a.poll_at(), None, "nothing left to do");
    let e = a.send(now, data(0, 1, 3)).unwrap_err();
    assert!(matches!(e, SendError::Failed { rank: 1, .. }), "{e}");
    assert!(e.to_string().contains("rank 1 failed"), "{e}");
    let s = a.stats();
    assert_eq!((s.failed_destinations, s.abandoned), (1, 3));
}

#[test]
fn unack_is_answered_with_ack_or_nack() {
    let mut b = Transport::new(cfg(1, 8)).unwrap();
    let mut a = Transport::new(cfg(0, 8)).unwrap();
    let f0 = a.send(0, data(0, 1, 0)).unwrap();
    let _lost = a.send(0, data(0, 1, 1)).unwrap();
    assert_eq!(b.receive(0, &f0), Ok(Received::Deliver));
    // f1 lost; A times out and probes.
    let mut out = Vec::new();
    let t = a.poll_at().unwrap();
    a.poll(t, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(b.receive(t, &out[0]), Ok(Received::Consumed));
    let mut ans = Vec::new();
    b.poll(t, &mut ans);
    assert_eq!(ans.len(), 1);
    assert_eq!((ans[0][42 + 1], be32(&ans[0], 12)), (2, 1), "NACK(1)");
    // The NACK acknowledges seq 0 and resends seq 1.
    assert_eq!(a.receive(t, &ans[0]), Ok(Received::Consumed));
    let mut re = Vec::new();
    a.poll(t, &mut re);
    assert_eq!(re.len(), 1);
    assert_eq!(txn(&re[0]), 1);
    assert_eq!(a.outstanding(1), 1);
    assert_eq!(b.receive(t, &re[0]), Ok(Received::Deliver));
    assert_eq!(
        b.receive(t, &re[0]),
        Err(Dropped::Duplicate {
            src: 0,
            seq: 1,
            expected: 2
        })
    );
    // Another probe, now everything arrived: ACK(2).
    let mut p = Vec::new();
    let t2 = a.poll_at().unwrap();
    a.poll(t2, &mut p);
    b.receive(t2, &p[0]).unwrap();
    let mut ans = Vec::new();
    b.poll(t2, &mut ans);
    assert_eq!((ans[0][42 + 1], be32(&ans[0], 12)), (1, 2), "ACK(2)");
    a.receive(t2, &ans[0]).unwrap();
    assert_eq!(a.outstanding(1), 0);
    assert_eq!(a.poll_at(), None);
}

#[test]
fn hostile_frames_are_dropped_with_a_cause() {
    let mut b = Transport::new(cfg(1, 8)).unwrap();
    let good = data(0, 1, 0);
    for n in 0..good.len() {
        // Truncated at every length: an error, never a panic.
        let r = b.receive(0, &good[..n]);
        assert!(matches!(r, Err(Dropped::Malformed(_))), "{n}: {r:?}");
    }
    let mut kind = good.clone();
    kind[42 + 1] = 9;
    assert!(matches!(b.receive(0, &kind), Err(Dropped::Malformed(_))));
    let other = data(0, 5, 0);
    assert_eq!(b.receive(0, &other), Err(Dropped::NotForMe { dst: 5 }));
    let mut far = good.clone();
    far[42 + 8..42 + 12].copy_from_slice(&1000u32.to_be_bytes());
    assert!(matches!(
        b.receive(0, &far),
        Err(Dropped::OutOfOrder { .. })
    ));
    // A forged ack far ahead is ignored, the packet still delivered.
    let mut a = Transport::new(cfg(0, 8)).unwrap();
    let mut ack = good.clone();
    ack[42 + 12..42 + 16].copy_from_slice(&77u32.to_be_bytes());
    a.send(0, data(0, 1, 0)).unwrap();
    let mut from_b = data(1, 0, 0);
    from_b[42 + 12..42 + 16].copy_from_slice(&77u32.to_be_bytes());
    assert_eq!(a.receive(0, &from_b), Ok(Received::Deliver));
    assert_eq!((a.stats().bad_acks, a.outstanding(1)), (1, 1));
    assert!(matches!(
        a.send(0, data(3, 1, 0)),
        Err(SendError::WrongSource { rank: 0, found: 3 })
    ));
    assert!(Transport::new(Config {
        window: 0,
        ..Config::new(0)
    })
    .is_err());
}
