//! The flow-control window of the SLMP sender (seed 000 §5.1.3), counted in
//! unacknowledged SYN segments, either fixed by the user (FPsPIN's only
//! mode) or adaptive (seed 000 §7.3 proposes AIMD).
//!
//! The adaptive window is TCP Reno's control law (RFC 5681) applied to
//! packets: slow start (+1 per ACK, i.e. doubling per RTT) up to `ssthresh`,
//! then additive increase of one packet per RTT (+1/cwnd per ACK), and on a
//! loss multiplicative decrease to half, at most once per window of data
//! (losses of segments sent before the decrease belong to the same episode).
//! Both loss signals — a retransmission timeout and "3 segments sent later
//! were acknowledged first" — halve the window; unlike Reno a timeout does
//! not reset the window to 1, because on a LAN most timeouts come from a
//! single dropped frame, not from a collapsed path, and a reset would
//! throttle a lossy-but-fast link to stop-and-wait. Duplicate ACKs (an ACK
//! for an already acknowledged segment) mean a spurious retransmission or a
//! duplicating network, not loss, and leave the window alone.

use serde::Serialize;

/// How the window is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowMode {
    /// At most this many unacknowledged SYN segments (1 serialises the
    /// receiver's handlers, seed 000 §5.1.3).
    Fixed(u32),
    /// AIMD between 1 and `max` packets, starting at `initial`.
    Auto { initial: u32, max: u32 },
}

/// Default window when adaptive: starts at 4 packets (RFC 3390's initial
/// window for 1460-byte segments) and may grow to 4096.
pub const AUTO_INITIAL: u32 = 4;
pub const AUTO_MAX: u32 = 4096;

impl Default for WindowMode {
    fn default() -> Self {
        WindowMode::Auto {
            initial: AUTO_INITIAL,
            max: AUTO_MAX,
        }
    }
}

/// AIMD state (see the module comment).
#[derive(Clone, Debug)]
pub struct Aimd {
    cwnd: f64,
    ssthresh: f64,
    max: f64,
    /// Losses of transmissions numbered below this belong to the episode
    /// that last halved the window.
    recovery_until: u64,
    pub decreases: u64,
}

impl Aimd {
    pub fn new(initial: u32, max: u32) -> Self {
        let max = f64::from(max.max(1));
        Aimd {
            cwnd: f64::from(initial.max(1)).min(max),
            ssthresh: max,
            max,
            recovery_until: 0,
            decreases: 0,
        }
    }

    /// Whole packets allowed in flight.
    pub fn window(&self) -> u32 {
        self.cwnd.floor().max(1.0) as u32
    }
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// A new (not duplicate) ACK arrived.
    pub fn on_ack(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1.0;
        } else {
            self.cwnd += 1.0 / self.cwnd;
        }
        self.cwnd = self.cwnd.min(self.max);
    }

    /// The transmission numbered `lost_tx` was found lost while the next
    /// transmission will be numbered `next_tx`. Returns whether the window
    /// was decreased (once per episode).
    pub fn on_loss(&mut self, lost_tx: u64, next_tx: u64) -> bool {
        if lost_tx < self.recovery_until {
            return false;
        }
        self.ssthresh = (self.cwnd / 2.0).max(1.0);
        self.cwnd = self.ssthresh;
        self.recovery_until = next_tx;
        self.decreases += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_additive_increase() {
        let mut a = Aimd::new(4, 100);
        for _ in 0..4 {
            a.on_ack();
        }
        assert_eq!(a.window(), 8);
        // Loss: ssthresh = cwnd = 4.
        assert!(a.on_loss(10, 20));
        assert_eq!((a.cwnd(), a.ssthresh()), (4.0, 4.0));
        // Congestion avoidance: 4 + 1/4 = 4.25, + 1/4.25 = 4.485294...
        a.on_ack();
        assert_eq!(a.cwnd(), 4.25);
        a.on_ack();
        assert!((a.cwnd() - (4.25 + 1.0 / 4.25)).abs() < 1e-12);
        // One window's worth of ACKs (~4) adds about one packet.
        a.on_ack();
        a.on_ack();
        assert_eq!(a.window(), 4);
        a.on_ack();
        assert_eq!(a.window(), 5);
    }

    #[test]
    fn one_decrease_per_episode_and_floor_of_one() {
        let mut a = Aimd::new(16, 100);
        assert!(a.on_loss(0, 16));
        assert_eq!(a.cwnd(), 8.0);
        // Another segment of the same flight: same episode.
        assert!(!a.on_loss(15, 17));
        assert_eq!(a.cwnd(), 8.0);
        // A segment sent after the decrease: new episode.
        assert!(a.on_loss(16, 30));
        assert_eq!(a.cwnd(), 4.0);
        for i in 0..10 {
            a.on_loss(30 + i * 10, 40 + i * 10);
        }
        assert_eq!(a.window(), 1);
        assert_eq!(a.cwnd(), 1.0);
    }

    #[test]
    fn capped_at_max() {
        let mut a = Aimd::new(4, 6);
        for _ in 0..100 {
            a.on_ack();
        }
        assert_eq!(a.window(), 6);
    }
}
