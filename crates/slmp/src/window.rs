//! The flow-control window of the SLMP sender (seed 000 §5.1.3), counted in
//! unacknowledged SYN segments, either fixed by the user (FPsPIN's only
//! mode) or adaptive (seed 000 §7.3 proposes AIMD).
//!
//! The adaptive window is TCP Reno's control law (RFC 5681) applied to
//! packets: slow start (+1 per ACK, i.e. doubling per RTT) up to `ssthresh`,
//! then additive increase of one packet per RTT (+1/cwnd per ACK), and on a
//! loss multiplicative decrease to [`BETA`] = 0.7 (CUBIC's factor rather
//! than Reno's 1/2, see there) with a floor of 2, at most once per window
//! of data (losses of segments sent before the decrease, i.e. within a
//! round trip of it, belong to the same episode). Both loss signals — a
//! retransmission timeout and RACK's time threshold (`rack.rs`) — decrease
//! the window alike; unlike Reno a timeout does not reset the
//! window to 1, because on a LAN most timeouts come from a single dropped
//! frame, not from a collapsed path, and a reset would throttle a
//! lossy-but-fast link to stop-and-wait.
//!
//! **Undo** (as Linux TCP's undo of a recovery proven spurious by DSACK,
//! or the Eifel response, RFC 4015): each episode remembers the window
//! before its decrease and how many of its segments were declared lost;
//! when every one of them proves spurious (an earlier copy was delivered,
//! `sender.rs` says how SLMP can tell), the episode was reordering, not
//! congestion, and the window before it is restored.
//!
//! **Queueing delay** (TCP Vegas's estimate, Brakmo and Peterson 1995): the
//! loss signal alone lets the window grow until the queue in front of the
//! receiver overflows, and on a receiver that runs on a shared host CPU
//! (softspin's NIC) that queue is many ms deep before the first loss:
//! slow start reached 500-700 packets, RTTs of 2-5 ms, and each overflow
//! cost hundreds of retransmissions. Once per round trip the least RTT of
//! the round, against the least ever seen, gives the packets queued,
//! `cwnd · (1 - base / round_min)`; above [`QUEUE_TARGET`] slow start ends
//! (at the window that fills the path plus the target) and congestion
//! avoidance takes a packet off per RTT instead of adding one.

use std::time::Duration;

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

/// Multiplicative decrease factor: CUBIC's (RFC 9438 §4.6) rather than
/// Reno's 1/2. SLMP ACKs each segment, so a lost ACK looks like a lost
/// segment and the sender sees about twice the link's loss as loss
/// episodes; halving on each kept the window near 2 at 5 % loss per
/// direction.
pub const BETA: f64 = 0.7;
/// Floor of the window after a decrease: RFC 5681's 2 segments (ssthresh
/// = max(FlightSize / 2, 2·SMSS)), so a later segment can still be ACKed
/// and reveal a loss by RACK instead of the RTO.
pub const MIN_AFTER_LOSS: f64 = 2.0;

/// Packets the adaptive window lets wait in front of the receiver. Enough
/// to keep a receiver that shares its CPU busy across the sender's own
/// scheduling gaps (the best fixed windows on the veth link, 32, held
/// ~16-20 in the queue: RTT p50 160-240 µs against 80 µs at window 1),
/// few enough that the RTT stays far below the RTO's floor.
pub const QUEUE_TARGET: f64 = 24.0;

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
    /// Episodes undone because all their losses proved spurious.
    pub undos: u64,
    undo: Option<Undo>,
    /// Least RTT seen (the path without a queue).
    base_rtt: Option<Duration>,
    /// The round trip ends when a transmission numbered this or later is
    /// acknowledged; its least RTT so far.
    round_end: u64,
    round_min: Option<Duration>,
    /// Packets queued, estimated at the end of the last round trip.
    queued: f64,
}

/// What undoing the current episode restores, and how many of its losses
/// are not yet proven spurious.
#[derive(Clone, Debug)]
struct Undo {
    episode: u64,
    cwnd: f64,
    ssthresh: f64,
    unproven: u32,
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
            undos: 0,
            undo: None,
            base_rtt: None,
            round_end: 0,
            round_min: None,
            queued: 0.0,
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
    /// Packets queued at the end of the last round trip.
    pub fn queued(&self) -> f64 {
        self.queued
    }

    /// An unambiguous RTT sample: transmission `tx` was acknowledged `rtt`
    /// after it left; the next transmission will be numbered `next_tx`.
    /// Call before [`Aimd::on_ack`] for the same ACK.
    pub fn on_rtt(&mut self, tx: u64, rtt: Duration, next_tx: u64) {
        self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        let round_min = self.round_min.map_or(rtt, |m| m.min(rtt));
        if tx < self.round_end {
            self.round_min = Some(round_min);
            return;
        }
        // A round trip is over: its least RTT above the least ever seen is
        // queueing, i.e. that share of the window waits in a queue.
        self.round_min = None;
        self.round_end = next_tx;
        let base = self.base_rtt.expect("set above").as_secs_f64();
        self.queued = self.cwnd * (1.0 - base / round_min.as_secs_f64().max(base));
        if self.queued > QUEUE_TARGET && self.cwnd < self.ssthresh {
            // Leave slow start with what the path holds plus the target.
            self.cwnd =
                (self.cwnd - (self.queued - QUEUE_TARGET)).max(MIN_AFTER_LOSS.min(self.max));
            self.ssthresh = self.cwnd;
        }
    }

    /// A new (not duplicate) ACK arrived: slow start adds a packet; then
    /// a packet per RTT is added, or taken off while more than
    /// [`QUEUE_TARGET`] packets queue.
    pub fn on_ack(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1.0;
        } else if self.queued <= QUEUE_TARGET {
            self.cwnd += 1.0 / self.cwnd;
        } else {
            // ssthresh follows, or the next round would be slow start again.
            self.cwnd = (self.cwnd - 1.0 / self.cwnd).max(MIN_AFTER_LOSS.min(self.max));
            self.ssthresh = self.ssthresh.min(self.cwnd);
        }
        self.cwnd = self.cwnd.min(self.max);
    }

    /// The transmission numbered `lost_tx` was found lost while the next
    /// transmission will be numbered `next_tx`. Returns the loss episode it
    /// belongs to (numbered from 1; pass it to [`Aimd::on_spurious`]) and
    /// whether it decreased the window (once per episode: losses of
    /// segments sent before the decrease, i.e. within one round trip of
    /// it, are the same congestion event).
    pub fn on_loss(&mut self, lost_tx: u64, next_tx: u64) -> (u64, bool) {
        if lost_tx < self.recovery_until {
            if let Some(u) = self.undo.as_mut().filter(|u| u.episode == self.decreases) {
                u.unproven += 1;
            }
            return (self.decreases, false);
        }
        self.undo = Some(Undo {
            episode: self.decreases + 1,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            unproven: 1,
        });
        self.ssthresh = (self.cwnd * BETA).max(MIN_AFTER_LOSS.min(self.max));
        self.cwnd = self.ssthresh;
        self.recovery_until = next_tx;
        self.decreases += 1;
        (self.decreases, true)
    }

    /// A loss of episode `episode` proved spurious. When it was the last
    /// unproven loss of the latest episode, the decrease is undone (the
    /// window and threshold go back to at least their values before it);
    /// returns whether that happened. Spurious losses of older episodes
    /// change nothing: a later decrease has superseded them.
    pub fn on_spurious(&mut self, episode: u64) -> bool {
        let Some(u) = self.undo.as_mut() else {
            return false;
        };
        if u.episode != episode || episode != self.decreases {
            return false;
        }
        u.unproven = u.unproven.saturating_sub(1);
        if u.unproven > 0 {
            return false;
        }
        let u = self.undo.take().expect("checked above");
        self.cwnd = self.cwnd.max(u.cwnd).min(self.max);
        self.ssthresh = self.ssthresh.max(u.ssthresh);
        // A real loss after the undo starts a new episode.
        self.recovery_until = 0;
        self.undos += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn slow_start_then_additive_increase() {
        let mut a = Aimd::new(4, 100);
        for _ in 0..6 {
            a.on_ack();
        }
        assert_eq!(a.window(), 10);
        // Loss: ssthresh = cwnd = 10 * 0.7 = 7.
        assert_eq!(a.on_loss(10, 20), (1, true));
        assert!(close(a.cwnd(), 7.0) && close(a.ssthresh(), 7.0));
        // Congestion avoidance: 7 + 1/7 = 7.142857..., + 1/7.142857...
        a.on_ack();
        assert!(close(a.cwnd(), 7.0 + 1.0 / 7.0));
        a.on_ack();
        assert!(close(a.cwnd(), 7.282857142857143));
        // About one packet per window's worth of ACKs: 7.945 after 7,
        // 8.071 after 8.
        for _ in 0..5 {
            a.on_ack();
        }
        assert_eq!(a.window(), 7);
        a.on_ack();
        assert_eq!(a.window(), 8);
    }

    #[test]
    fn one_decrease_per_episode_and_floor_of_two() {
        let mut a = Aimd::new(16, 100);
        assert_eq!(a.on_loss(0, 16), (1, true));
        assert!(close(a.cwnd(), 11.2));
        // Another segment of the same flight: same episode.
        assert_eq!(a.on_loss(15, 17), (1, false));
        assert!(close(a.cwnd(), 11.2));
        // A segment sent after the decrease: new episode.
        assert_eq!(a.on_loss(16, 30), (2, true));
        assert!(close(a.cwnd(), 7.84));
        for i in 0..10 {
            a.on_loss(30 + i * 10, 40 + i * 10);
        }
        assert_eq!((a.window(), a.cwnd()), (2, 2.0));
        // A window capped below the floor stays at its cap.
        let mut b = Aimd::new(1, 1);
        b.on_loss(0, 1);
        assert_eq!(b.window(), 1);
    }

    #[test]
    fn queueing_delay_ends_slow_start_and_holds_the_window() {
        let us = Duration::from_micros;
        let mut a = Aimd::new(4, 4096);
        // Round 1 (ends at once): base 100 us, nothing queued.
        a.on_rtt(0, us(100), 4);
        a.on_ack();
        assert_eq!((a.cwnd(), a.queued()), (5.0, 0.0));
        // Slow start to 40 without a sample ending a round.
        for _ in 0..35 {
            a.on_ack();
        }
        assert_eq!(a.cwnd(), 40.0);
        // Transmissions below 4 are still round 2's.
        a.on_rtt(3, us(400), 40);
        a.on_rtt(4, us(200), 40);
        // Round 2 ended with least RTT 200 us: 40 * (1 - 100/200) = 20
        // queued, below the target: still slow start.
        assert!(close(a.queued(), 20.0) && a.cwnd() == 40.0);
        for _ in 0..40 {
            a.on_ack();
        }
        // Round 3: least RTT 500 us: 80 * (1 - 1/5) = 64 queued. Slow
        // start ends at 80 - (64 - 24) = 40 (what the path holds, 16, plus
        // the target).
        a.on_rtt(38, us(600), 120);
        a.on_rtt(39, us(500), 120);
        a.on_rtt(40, us(700), 120);
        assert!(close(a.queued(), 64.0) && close(a.cwnd(), 40.0) && close(a.ssthresh(), 40.0));
        // Still above the target: a packet off per RTT (1/cwnd per ACK).
        a.on_ack();
        assert!(close(a.cwnd(), 40.0 - 1.0 / 40.0));
        // Round 4 at 120 us: 39.975 * (1 - 100/120) = 6.66 queued: growth.
        a.on_rtt(120, us(120), 200);
        assert!(close(a.queued(), (40.0 - 1.0 / 40.0) / 6.0));
        let w = a.cwnd();
        a.on_ack();
        assert!(close(a.cwnd(), w + 1.0 / w));
        // A lower RTT lowers the base: no queue.
        a.on_rtt(200, us(50), 300);
        assert_eq!(a.queued(), 0.0);
    }

    #[test]
    fn capped_at_max() {
        let mut a = Aimd::new(4, 6);
        for _ in 0..100 {
            a.on_ack();
        }
        assert_eq!(a.window(), 6);
    }

    #[test]
    fn undo_restores_the_window_when_every_loss_of_the_episode_was_spurious() {
        let mut a = Aimd::new(16, 100);
        let (e, dec) = a.on_loss(3, 20);
        assert!(dec && e == 1 && close(a.cwnd(), 11.2));
        // Two more losses of the same flight: same episode, no decrease.
        assert_eq!(a.on_loss(5, 21), (1, false));
        assert_eq!(a.on_loss(7, 22), (1, false));
        a.on_ack();
        assert!(!a.on_spurious(1));
        assert!(!a.on_spurious(1));
        assert!(close(a.cwnd(), 11.2 + 1.0 / 11.2));
        // The third proof: back to 16 (ssthresh too), one undo.
        assert!(a.on_spurious(1));
        assert_eq!((a.cwnd(), a.ssthresh(), a.undos), (16.0, 100.0, 1));
        // Once undone, more proofs change nothing.
        assert!(!a.on_spurious(1));
        // A loss of the old flight now opens a new episode.
        assert_eq!(a.on_loss(8, 30), (2, true));
        assert!(close(a.cwnd(), 11.2));
    }

    #[test]
    fn no_undo_when_one_loss_was_real_or_the_episode_is_old() {
        let mut a = Aimd::new(16, 100);
        a.on_loss(3, 20);
        a.on_loss(5, 21);
        // Only one of two proven spurious: the other was a real loss.
        assert!(!a.on_spurious(1));
        assert!(close(a.cwnd(), 11.2));
        // Episode 2 supersedes episode 1: its proofs no longer undo.
        assert_eq!(a.on_loss(25, 40), (2, true));
        assert!(!a.on_spurious(1));
        assert!(close(a.cwnd(), 7.84));
        assert!(a.on_spurious(2));
        assert!(close(a.cwnd(), 11.2));
    }
}
