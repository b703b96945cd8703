//! The lossy link's impairment: what happens to the frames of one direction
//! of the link (issue 12, "A lossy link to test on"). The kernel here has no
//! netem, so SLMP's "under loss" tests run through a forwarder in a middle
//! namespace (`src/main.rs`) that feeds every frame to a [`Shaper`].
//!
//! Only IPv4 frames are impaired; ARP and everything else passes at once and
//! untouched, so the two ends still find each other. The decisions come from
//! a seeded RNG, so one seed gives one sequence of drops, duplicates and holds
//! for one sequence of frames.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use softspin_wire::ethernet::{self, EtherType};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// Upper bound of the fixed delay and of the jitter: enough for any test,
/// small enough that a typo (seconds for µs) is an error, not a dead link.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// Upper bound of the reorder gap (frames a held frame waits for).
pub const MAX_REORDER_GAP: u32 = 10_000;

/// What one direction does to its IPv4 frames.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spec {
    /// Probability that a frame is dropped.
    pub loss: f64,
    /// Probability that a (not dropped) frame is sent twice.
    pub dup: f64,
    /// Probability that a frame is held back until `reorder_gap` later
    /// frames have gone out (or `reorder_max` has passed).
    pub reorder: f64,
    pub reorder_gap: u32,
    #[serde(serialize_with = "ser_us")]
    pub reorder_max: Duration,
    /// Every frame waits `delay` plus a uniform `[0, jitter]`.
    #[serde(serialize_with = "ser_us")]
    pub delay: Duration,
    #[serde(serialize_with = "ser_us")]
    pub jitter: Duration,
}

fn ser_us<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_micros())
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            reorder_gap: 3,
            reorder_max: Duration::from_millis(100),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
        }
    }
}

impl Spec {
    /// Checks every field against its limit; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in [
            ("loss", self.loss),
            ("dup", self.dup),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} = {p}: a probability must be within [0, 1]"));
            }
        }
        if self.reorder_gap == 0 || self.reorder_gap > MAX_REORDER_GAP {
            return Err(format!(
                "reorder-gap = {}: must be within 1..={MAX_REORDER_GAP} frames",
                self.reorder_gap
            ));
        }
        for (name, d) in [
            ("delay-us", self.delay),
            ("jitter-us", self.jitter),
            ("reorder-max-us", self.reorder_max),
        ] {
            if d > MAX_DELAY {
                return Err(format!(
                    "{name} = {} us: at most {} us",
                    d.as_micros(),
                    MAX_DELAY.as_micros()
                ));
            }
        }
        Ok(())
    }
}

/// What one direction did, reported as JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Frames received from the input interface (all kinds).
    pub frames_in: u64,
    /// Of those, IPv4 frames (the ones subject to impairment).
    pub ipv4_in: u64,
    /// Frames sent to the output interface (duplicates included).
    pub forwarded: u64,
    /// Of those, IPv4 frames.
    pub ipv4_forwarded: u64,
    pub bytes_forwarded: u64,
    pub dropped: u64,
    /// Extra copies made (each counts once).
    pub duplicated: u64,
    /// Frames held back for reordering.
    pub reordered: u64,
    /// Held frames released by `reorder_max` before `reorder_gap` later
    /// frames had gone out (possibly not reordered after all).
    pub reorder_timeouts: u64,
    /// Frames given a non-zero delay.
    pub delayed: u64,
    /// Sends the kernel refused (the frame is lost; counted, not retried).
    pub tx_errors: u64,
    /// Frames still queued when the forwarder stopped (not sent).
    pub pending_at_exit: u64,
    /// Frames the kernel dropped before the forwarder could read them (its
    /// socket buffer was full): lost by overload, not by `loss`.
    pub rx_kernel_drops: u64,
}

struct Held {
    frame: Vec<u8>,
    /// Later frames still to go out before this one may.
    wait_frames: u32,
    deadline: Instant,
}

/// One direction of the link.
pub struct Shaper {
    spec: Spec,
    rng: Xoshiro256PlusPlus,
    /// Frames scheduled to leave, by (time, arrival order) so equal times keep FIFO.
    queue: BinaryHeap<Reverse<(Instant, u64, Vec<u8>)>>,
    held: Vec<Held>,
    seq: u64,
    pub counters: Counters,
}

/// IPv4 is the only kind of frame that is impaired.
fn is_ipv4(frame: &[u8]) -> bool {
    ethernet::Packet::new_checked(frame).is_ok_and(|p| p.ethertype() == EtherType::Ipv4)
}

impl Shaper {
    pub fn new(spec: Spec, seed: u64) -> Shaper {
        Shaper {
            spec,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            queue: BinaryHeap::new(),
            held: Vec::new(),
            seq: 0,
            counters: Counters::default(),
        }
    }

    fn schedule(&mut self, at: Instant, frame: Vec<u8>) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, frame)));
    }

    /// One frame arrived at `now` from this direction's input.
    pub fn push(&mut self, frame: Vec<u8>, now: Instant) {
        self.counters.frames_in += 1;
        if !is_ipv4(&frame) {
            self.schedule(now, frame);
            return;
        }
        self.counters.ipv4_in += 1;
        // Draw every decision for every frame, so the n-th frame's fate
        // depends only on the seed and n, not on earlier outcomes' branches.
        let s = &self.spec;
        let (drop, dup, hold) = (s.loss, s.dup, s.reorder);
        let (u_loss, u_dup, u_hold, u_jit): (f64, f64, f64, f64) = (
            self.rng.random(),
            self.rng.random(),
            self.rng.random(),
            self.rng.random(),
        );
        if u_loss < drop {
            self.counters.dropped += 1;
            return;
        }
        let extra = self.spec.jitter.mul_f64(u_jit);
        let wait = self.spec.delay + extra;
        if !wait.is_zero() {
            self.counters.delayed += 1;
        }
        let copies = if u_dup < dup {
            self.counters.duplicated += 1;
            2
        } else {
            1
        };
        if u_hold < hold {
            self.counters.reordered += 1;
            for _ in 0..copies {
                self.held.push(Held {
                    frame: frame.clone(),
                    wait_frames: self.spec.reorder_gap,
                    deadline: now + wait + self.spec.reorder_max,
                });
            }
            return;
        }
        for _ in 0..copies {
            self.schedule(now + wait, frame.clone());
        }
        // This frame goes out: held frames are one frame closer to theirs.
        let mut i = 0;
        while i < self.held.len() {
            self.held[i].wait_frames -= 1;
            if self.held[i].wait_frames == 0 {
                let h = self.held.swap_remove(i);
                // After the frame that released it, never before.
                self.schedule(now + wait, h.frame);
            } else {
                i += 1;
            }
        }
    }

    /// The earliest time something is due (a queued frame or a hold's end).
    pub fn next_deadline(&self) -> Option<Instant> {
        let q = self.queue.peek().map(|Reverse((t, _, _))| *t);
        let h = self.held.iter().map(|h| h.deadline).min();
        match (q, h) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next frame due at `now`, if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].deadline <= now {
                let h = self.held.swap_remove(i);
                self.counters.reorder_timeouts += 1;
                self.schedule(now, h.frame);
            } else {
                i += 1;
            }
        }
        match self.queue.peek() {
            Some(Reverse((t, _, _))) if *t <= now => self.queue.pop().map(|Reverse((_, _, f))| f),
            _ => None,
        }
    }

    /// Records that `frame` went out (or, with `ok == false`, that the send failed).
    pub fn sent(&mut self, frame: &[u8], ok: bool) {
        if !ok {
            self.counters.tx_errors += 1;
            return;
        }
        self.counters.forwarded += 1;
        self.counters.bytes_forwarded += frame.len() as u64;
        if is_ipv4(frame) {
            self.counters.ipv4_forwarded += 1;
        }
    }

    /// Frames queued or held, not yet sent.
    pub fn pending(&self) -> u64 {
        (self.queue.len() + self.held.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(seq: u32) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        ethernet::Packet::new_unchecked(&mut f[..]).set_ethertype(EtherType::Ipv4);
        f[56..60].copy_from_slice(&seq.to_be_bytes());
        f
    }
    fn seq_of(f: &[u8]) -> u32 {
        u32::from_be_bytes(f[56..60].try_into().unwrap())
    }
    fn run(spec: Spec, n: u32) -> (Vec<u32>, Counters) {
        let mut s = Shaper::new(spec, 7);
        let t0 = Instant::now();
        let mut out = Vec::new();
        for i in 0..n {
            let now = t0 + Duration::from_micros(i as u64 * 10);
            s.push(ipv4(i), now);
            while let Some(f) = s.pop_due(now) {
                s.sent(&f, true);
                out.push(seq_of(&f));
            }
        }
        let end = t0 + Duration::from_secs(100);
        while let Some(f) = s.pop_due(end) {
            s.sent(&f, true);
            out.push(seq_of(&f));
        }
        (out, s.counters)
    }

    #[test]
    fn no_impairment_keeps_order() {
        let (out, c) = run(Spec::default(), 1000);
        assert_eq!(out, (0..1000).collect::<Vec<_>>());
        assert_eq!(c.forwarded, 1000);
    }

    #[test]
    fn arp_passes_untouched_under_full_loss() {
        let mut s = Shaper::new(
            Spec {
                loss: 1.0,
                ..Spec::default()
            },
            1,
        );
        let now = Instant::now();
        let mut arp = vec![0u8; 42];
        ethernet::Packet::new_unchecked(&mut arp[..]).set_ethertype(EtherType::Arp);
        s.push(arp.clone(), now);
        s.push(ipv4(1), now);
        assert_eq!(s.pop_due(now), Some(arp));
        assert_eq!(s.pop_due(now), None);
        assert_eq!(s.counters.dropped, 1);
    }

    #[test]
    fn counts_match_what_came_out() {
        let spec = Spec {
            loss: 0.1,
            dup: 0.05,
            reorder: 0.2,
            ..Spec::default()
        };
        let (out, c) = run(spec, 5000);
        assert_eq!(out.len() as u64, 5000 - c.dropped + c.duplicated);
        let mut seen = std::collections::HashSet::new();
        let (mut dups, mut ooo, mut max) = (0u64, 0u64, None);
        for &q in &out {
            if !seen.insert(q) {
                dups += 1;
                continue;
            }
            if max.is_some_and(|m| q < m) {
                ooo += 1;
            }
            max = max.max(Some(q));
        }
        assert_eq!(dups, c.duplicated);
        assert_eq!(seen.len() as u64, 5000 - c.dropped);
        assert!(
            ooo <= c.reordered && ooo + c.reorder_timeouts >= c.reordered,
            "{ooo} {c:?}"
        );
        assert!(c.reordered > 700, "{c:?}");
    }

    #[test]
    fn same_seed_same_fate() {
        let spec = Spec {
            loss: 0.3,
            dup: 0.1,
            reorder: 0.1,
            ..Spec::default()
        };
        assert_eq!(run(spec.clone(), 2000), run(spec, 2000));
    }

    #[test]
    fn bad_spec_names_field() {
        let e = Spec {
            loss: 1.5,
            ..Spec::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("loss"), "{e}");
        let e = Spec {
            reorder_gap: 0,
            ..Spec::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("reorder-gap"), "{e}");
        let e = Spec {
            delay: Duration::from_secs(11),
            ..Spec::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("delay"), "{e}");
    }
}
