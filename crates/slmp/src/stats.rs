//! What one `Sender::send`/`send_batch` did: counts of every packet and
//! every failure by cause, RTT distribution, window over time, goodput.

use serde::Serialize;

/// RTT samples (Karn-valid only), in microseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RttStats {
    pub samples: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Estimator state at the end (RFC 6298).
    pub srtt_us: f64,
    pub rttvar_us: f64,
    pub rto_us: f64,
}

impl RttStats {
    /// Summary of `samples` (µs); sorts them.
    pub(crate) fn from_samples(samples: &mut [f64]) -> RttStats {
        if samples.is_empty() {
            return RttStats::default();
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        // Nearest-rank percentile.
        let pct = |p: f64| samples[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
        RttStats {
            samples: n as u64,
            min_us: samples[0],
            mean_us: samples.iter().sum::<f64>() / n as f64,
            p50_us: pct(50.0),
            p99_us: pct(99.0),
            max_us: samples[n - 1],
            ..RttStats::default()
        }
    }
}

/// The flow-control window during the transfer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WindowStats {
    /// "auto" or "fixed".
    pub mode: &'static str,
    pub initial: u32,
    #[serde(rename = "final")]
    pub final_: u32,
    pub max: u32,
    pub min: u32,
    /// Multiplicative decreases (auto only).
    pub decreases: u64,
    /// Decreases undone because every loss of their episode proved
    /// spurious (auto only).
    pub undos: u64,
    /// `[elapsed_us, window]` at each change, thinned to at most
    /// `WINDOW_SAMPLES_MAX` entries (every other one dropped when full).
    pub samples: Vec<(u64, u32)>,
}

pub(crate) const WINDOW_SAMPLES_MAX: usize = 4096;

impl WindowStats {
    pub(crate) fn record(&mut self, t_us: u64, w: u32) {
        self.final_ = w;
        self.max = self.max.max(w);
        self.min = self.min.min(w);
        if self.samples.last().map(|s| s.1) == Some(w) {
            return;
        }
        if self.samples.len() >= WINDOW_SAMPLES_MAX {
            let kept: Vec<_> = self.samples.iter().copied().step_by(2).collect();
            self.samples = kept;
        }
        self.samples.push((t_us, w));
    }
}

/// Statistics of one transfer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// "none", "msg" or "all".
    pub sync: &'static str,
    pub messages: u64,
    /// Message bytes (payload, headers excluded).
    pub bytes: u64,
    /// Payload bytes per segment.
    pub segment_bytes: u64,
    /// Distinct segments of all messages.
    pub segments: u64,
    /// Data packets put on the wire, retransmissions included.
    pub packets_sent: u64,
    /// Retransmissions (by timeout or by reorder evidence).
    pub retransmitted: u64,
    /// Retransmission timer expiries (each segment counted).
    pub timeouts: u64,
    /// Segments declared lost by RACK's rule (a segment sent after them
    /// was acknowledged and the reordering window passed), before their
    /// retransmission timer.
    pub fast_retransmits: u64,
    /// Loss declarations proven spurious: an ACK arrived before the
    /// retransmission left, faster than the minimum RTT after it, or once
    /// for each copy.
    pub spurious_losses: u64,
    /// Tail loss probes: segments sent beyond a full window because no ACK
    /// came for 2·SRTT (a queued retransmission or a fresh segment).
    pub probes: u64,
    /// RACK's reordering window at the end, in microseconds.
    pub reorder_window_us: f64,
    /// ACKs that acknowledged a segment for the first time.
    pub acks_received: u64,
    /// ACKs for a segment already acknowledged (spurious retransmission
    /// or a duplicating network).
    pub duplicate_acks: u64,
    /// ACKs naming no segment of this transfer.
    pub unmatched_acks: u64,
    /// Datagrams from the peer that are not an SLMP ACK (short, no ACK
    /// flag, or carrying payload).
    pub malformed: u64,
    /// ICMP port/host unreachable reported by the socket.
    pub icmp_unreachable: u64,
    /// Sends refused for lack of socket buffer (retried later).
    pub send_would_block: u64,
    /// Sends that carried several fresh segments at once (UDP GSO).
    pub gso_sends: u64,
    /// Segments whose delivery no ACK confirms (sync none/msg, or the
    /// transfer gave up).
    pub unconfirmed_segments: u64,
    /// Every segment was acknowledged (only possible with sync all).
    pub delivery_confirmed: bool,
    pub rtt: RttStats,
    pub window: WindowStats,
    pub elapsed_s: f64,
    /// Message bits per second of elapsed time; 0 when the sender gave
    /// up (nothing it can call delivered). With sync none it is the rate
    /// the messages were sent at (no receiver confirms anything).
    pub goodput_bps: f64,
}
