//! The retransmission timeout of the SLMP sender: RFC 6298's estimator
//! (SRTT, RTTVAR, RTO = SRTT + 4·RTTVAR), Karn's rule (no sample from a
//! retransmitted segment, since its ACK cannot be matched to one
//! transmission) and exponential backoff on timeout. Seed 000 §5.1.2 leaves
//! retransmission to future work; this is the "easy to add" part it names.

use std::time::Duration;

/// Bounds and starting value of the RTO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtoConfig {
    /// RTO before the first RTT sample. RFC 6298 says 1 s for the Internet;
    /// SLMP runs between neighbours on one link, so the default is lower.
    pub initial: Duration,
    /// Floor of the RTO: keeps a jitter-free link from retransmitting on
    /// the first late ACK (RFC 6298 uses 1 s; a LAN needs far less).
    pub min: Duration,
    /// Ceiling of the RTO, backoff included.
    pub max: Duration,
}

impl Default for RtoConfig {
    fn default() -> Self {
        RtoConfig {
            initial: Duration::from_millis(200),
            min: Duration::from_millis(2),
            max: Duration::from_secs(2),
        }
    }
}

/// Clock granularity G of RFC 6298 §2: `Instant` resolves well below this.
const GRANULARITY: Duration = Duration::from_micros(1);

/// RFC 6298 estimator.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    cfg: RtoConfig,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    /// Timeouts since the last valid sample (each doubled the RTO).
    backoffs: u32,
}

impl RtoEstimator {
    pub fn new(cfg: RtoConfig) -> Self {
        RtoEstimator {
            cfg,
            srtt: None,
            rttvar: Duration::ZERO,
            rto: cfg.initial.clamp(cfg.min, cfg.max),
            backoffs: 0,
        }
    }

    /// The current RTO (backoff included).
    pub fn rto(&self) -> Duration {
        self.rto
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }

    /// An ACK arrived `rtt` after the segment's last transmission.
    /// `retransmitted`: the segment was sent more than once, so by Karn's
    /// rule the sample is ambiguous and ignored. The backoff is cleared
    /// all the same (RTO back to SRTT + 4·RTTVAR): the ACK proves the path
    /// delivers, and keeping a doubled RTO until a first-try segment gets
    /// through (Karn and Partridge's original rule) makes the RTO grow
    /// without bound on a randomly lossy link, where consecutive losses are
    /// common and say nothing about a longer RTT. Returns whether the
    /// sample was used.
    pub fn on_ack(&mut self, rtt: Duration, retransmitted: bool) -> bool {
        if retransmitted {
            if self.srtt.is_some() && self.backoffs > 0 {
                self.backoffs = 0;
                self.rto = self.computed();
            }
            return false;
        }
        match self.srtt {
            None => {
                // RFC 6298 §2.2.
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                // RFC 6298 §2.3, alpha = 1/8, beta = 1/4; RTTVAR first, with
                // the old SRTT.
                // Duration::abs_diff needs Rust 1.81; the workspace allows 1.80.
                #[allow(clippy::manual_abs_diff)]
                let diff = if srtt > rtt { srtt - rtt } else { rtt - srtt };
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(srtt * 7 / 8 + rtt / 8);
            }
        }
        self.backoffs = 0;
        self.rto = self.computed();
        true
    }

    /// RFC 6298 §2.3: SRTT + max(G, 4·RTTVAR), within the bounds.
    fn computed(&self) -> Duration {
        let srtt = self.srtt.unwrap_or_default();
        (srtt + (self.rttvar * 4).max(GRANULARITY)).clamp(self.cfg.min, self.cfg.max)
    }

    /// A retransmission timer expired: RFC 6298 §5.5, RTO doubles (up to
    /// the maximum) until a valid sample arrives.
    pub fn on_timeout(&mut self) {
        self.backoffs += 1;
        self.rto = (self.rto * 2).min(self.cfg.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RtoConfig {
        RtoConfig {
            initial: Duration::from_millis(100),
            min: Duration::from_micros(10),
            max: Duration::from_secs(1),
        }
    }

    #[test]
    fn first_and_second_samples_follow_rfc6298() {
        let mut e = RtoEstimator::new(cfg());
        assert_eq!(e.rto(), Duration::from_millis(100));
        // R = 800 us: SRTT 800, RTTVAR 400, RTO 800 + 1600 = 2400 us.
        assert!(e.on_ack(Duration::from_micros(800), false));
        assert_eq!(e.srtt(), Some(Duration::from_micros(800)));
        assert_eq!(e.rttvar(), Duration::from_micros(400));
        assert_eq!(e.rto(), Duration::from_micros(2400));
        // R = 400 us: RTTVAR = 3/4*400 + 1/4*|800-400| = 400;
        // SRTT = 7/8*800 + 1/8*400 = 750; RTO = 750 + 1600 = 2350 us.
        e.on_ack(Duration::from_micros(400), false);
        assert_eq!(e.rttvar(), Duration::from_micros(400));
        assert_eq!(e.srtt(), Some(Duration::from_micros(750)));
        assert_eq!(e.rto(), Duration::from_micros(2350));
    }

    #[test]
    fn karn_ignores_retransmitted_samples() {
        let mut e = RtoEstimator::new(cfg());
        e.on_ack(Duration::from_micros(800), false);
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.rto(), Duration::from_micros(9600));
        assert_eq!(e.backoffs(), 2);
        // The ACK of the retransmission: ambiguous, so SRTT/RTTVAR are
        // untouched (a 10 us sample would have moved them), and the RTO
        // returns to 800 + 4*400 = 2400 us.
        assert!(!e.on_ack(Duration::from_micros(10), true));
        assert_eq!(e.srtt(), Some(Duration::from_micros(800)));
        assert_eq!(e.rttvar(), Duration::from_micros(400));
        assert_eq!(e.rto(), Duration::from_micros(2400));
        assert_eq!(e.backoffs(), 0);
        // A fresh segment's sample: RTTVAR = 300 + 0 = 300, SRTT = 800,
        // RTO = 800 + 1200 = 2000 us.
        assert!(e.on_ack(Duration::from_micros(800), false));
        assert_eq!(e.rto(), Duration::from_micros(2000));
    }

    #[test]
    fn no_sample_yet_keeps_the_backed_off_initial_rto() {
        // Nothing measured: an ambiguous ACK gives nothing to fall back on.
        let mut e = RtoEstimator::new(cfg());
        e.on_timeout();
        assert!(!e.on_ack(Duration::from_micros(10), true));
        assert_eq!((e.rto(), e.srtt()), (Duration::from_millis(200), None));
    }

    #[test]
    fn backoff_doubles_up_to_max_and_min_is_a_floor() {
        let mut e = RtoEstimator::new(cfg());
        for want in [200, 400, 800, 1000, 1000] {
            e.on_timeout();
            assert_eq!(e.rto(), Duration::from_millis(want));
        }
        let mut e = RtoEstimator::new(RtoConfig {
            min: Duration::from_millis(5),
            ..cfg()
        });
        e.on_ack(Duration::from_micros(50), false);
        assert_eq!(e.rto(), Duration::from_millis(5));
    }
}
