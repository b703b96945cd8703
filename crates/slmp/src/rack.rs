//! Time-based loss detection of the SLMP sender, in the spirit of RACK
//! (RFC 8985, "The RACK-TLP Loss Detection Algorithm for TCP"): a segment is
//! deemed lost only when a segment sent after it has been acknowledged *and*
//! more than the reordering window has passed since it was sent,
//!
//! ```text
//! lost  <=>  sent before the most recently sent acknowledged segment
//!            and  now >= sent_at + rack_rtt + reo_wnd
//! ```
//!
//! where `rack_rtt` is the RTT of that most recently sent acknowledged
//! segment. A count of later ACKs (TCP's 3 duplicate ACKs, the rule this
//! replaces) cannot tell reordering from loss: the lossy link's 25 %
//! reordering tripped it on a quarter of the segments, and each trip halved
//! the window. Time can: a reordered segment arrives a little late, a lost
//! one never.
//!
//! `reo_wnd` starts at a quarter of the minimum RTT (RFC 8985 §6.2 step 4)
//! and grows by that much each time a retransmission turns out to have
//! been spurious (at most once per round trip), never beyond SRTT; after 16
//! loss episodes without a spurious retransmission it shrinks back
//! (RFC 8985's `reo_wnd_persist`). The evidence SLMP has for a spurious
//! retransmission is in the sender (`sender.rs`): the receiver echoes only
//! (message id, offset), so an ACK cannot name the copy it answers, but an
//! ACK that arrives before the retransmission went out, faster than the
//! minimum RTT after it, or twice (one per copy) proves an earlier copy got
//! through.

use std::time::{Duration, Instant};

/// Loss episodes without a spurious retransmission after which the
/// reordering window returns to its base (RFC 8985 §6.2, `reo_wnd_persist`).
pub const REO_WND_PERSIST: u32 = 16;
/// Largest multiplier of the base reordering window (the SRTT cap binds
/// long before on any real path; this only bounds the arithmetic).
pub const REO_WND_MULT_MAX: u32 = 256;

/// RACK state: the most recently sent acknowledged transmission and the
/// reordering window.
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Transmission number and send time of the most recently *sent*
    /// segment known to be delivered.
    latest: Option<(u64, Instant)>,
    /// RTT of that delivery.
    rtt: Duration,
    min_rtt: Option<Duration>,
    /// Multiplier of the base window (min_rtt / 4), from 1.
    mult: u32,
    /// When the window last grew (it grows at most once per round trip).
    widened_at: Option<Instant>,
    /// Loss episodes since the window last grew.
    episodes_since_widen: u32,
}

impl Rack {
    pub fn new() -> Self {
        Rack {
            mult: 1,
            ..Rack::default()
        }
    }

    /// An ACK of transmission `tx`, sent at `sent_at`, arrived `rtt` after
    /// it; the caller has ruled out that the ACK answers an earlier copy.
    pub fn on_delivery(&mut self, tx: u64, sent_at: Instant, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if !matches!(self.latest, Some((t, _)) if tx <= t) {
            self.latest = Some((tx, sent_at));
            self.rtt = rtt;
        }
    }

    /// Transmission number of the most recently sent delivered segment:
    /// only segments sent before it can be deemed lost.
    pub fn latest_tx(&self) -> Option<u64> {
        self.latest.map(|(t, _)| t)
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The reordering window: `mult` quarters of the minimum RTT, at most
    /// `srtt` (RFC 8985 §6.2 step 4).
    pub fn reo_wnd(&self, srtt: Option<Duration>) -> Duration {
        let base = self.min_rtt.unwrap_or(self.rtt) / 4;
        let w = base * self.mult;
        match srtt {
            Some(s) => w.min(s),
            None => w,
        }
    }

    /// When a segment sent at `sent_at`, before the latest delivered one,
    /// counts as lost.
    pub fn deadline(&self, sent_at: Instant, srtt: Option<Duration>) -> Instant {
        sent_at + self.rtt + self.reo_wnd(srtt)
    }

    /// A retransmission proved spurious at `now`: the reordering exceeded
    /// the window, so widen it (once per round trip). Returns whether it
    /// grew.
    pub fn on_spurious(&mut self, now: Instant) -> bool {
        let rtt = self.min_rtt.unwrap_or(self.rtt).max(self.rtt);
        if self.widened_at.is_some_and(|t| now < t + rtt) {
            return false;
        }
        self.widened_at = Some(now);
        self.episodes_since_widen = 0;
        if self.mult < REO_WND_MULT_MAX {
            self.mult += 1;
            return true;
        }
        false
    }

    /// A new loss episode began (the window was decreased): after
    /// [`REO_WND_PERSIST`] of them without a spurious retransmission the
    /// reordering window returns to its base.
    pub fn on_episode(&mut self) {
        self.episodes_since_widen += 1;
        if self.episodes_since_widen >= REO_WND_PERSIST {
            self.mult = 1;
            self.episodes_since_widen = 0;
        }
    }

    pub fn mult(&self) -> u32 {
        self.mult
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn deadline_is_send_time_plus_rtt_plus_quarter_min_rtt() {
        let t0 = Instant::now();
        let mut r = Rack::new();
        assert_eq!(r.latest_tx(), None);
        // tx 5 sent at t0+10, acked after 100 us: min_rtt 100, reo_wnd 25.
        r.on_delivery(5, t0 + us(10), us(100));
        assert_eq!(r.latest_tx(), Some(5));
        assert_eq!(r.reo_wnd(Some(us(400))), us(25));
        assert_eq!(r.deadline(t0, Some(us(400))), t0 + us(125));
        // An earlier-sent delivery does not move the reference, but does
        // lower min_rtt (reo_wnd 20).
        r.on_delivery(3, t0, us(80));
        assert_eq!(r.latest_tx(), Some(5));
        assert_eq!(r.deadline(t0, Some(us(400))), t0 + us(120));
        // A later-sent one does, with its RTT.
        r.on_delivery(9, t0 + us(50), us(200));
        assert_eq!(r.deadline(t0, Some(us(400))), t0 + us(220));
    }

    #[test]
    fn window_widens_once_per_round_trip_caps_at_srtt_and_decays() {
        let t0 = Instant::now();
        let mut r = Rack::new();
        r.on_delivery(1, t0, us(100));
        assert!(r.on_spurious(t0 + us(100)));
        assert_eq!(r.reo_wnd(None), us(50));
        // Same round trip: no second step.
        assert!(!r.on_spurious(t0 + us(150)));
        assert!(r.on_spurious(t0 + us(200)));
        assert_eq!(r.reo_wnd(None), us(75));
        assert_eq!(r.reo_wnd(Some(us(60))), us(60));
        for _ in 0..REO_WND_PERSIST - 1 {
            r.on_episode();
        }
        assert_eq!(r.mult(), 3);
        r.on_episode();
        assert_eq!(r.mult(), 1);
    }
}
