//! The RMA transport: DiAD's reliability layer (seed 003 §III) as a pure
//! state machine, with no I/O and no clock of its own. The caller hands it
//! frames and the time (ps); it hands back frames to send. docs/rma.md
//! ("Reliability") describes the rules; in short:
//!
//! - send side, per destination rank: every DATA packet gets the next `seq`
//!   and is kept until acknowledged; at most [`Config::window`] are
//!   outstanding ([`SendError::WindowFull`] otherwise, the caller's
//!   back-pressure); a NACK resends from its number (go-back-N); a timeout
//!   sends an UNACK probe carrying the next `seq`, with exponential backoff;
//!   after [`Config::max_retries`] timeouts without progress the destination
//!   is declared failed ([`PeerFailed`], [`SendError::Failed`]);
//! - receive side, per source rank: only the expected `seq` is delivered;
//!   later ones are dropped and NACKed (at most once per
//!   [`Config::nack_interval_ps`] for the same number), earlier ones are
//!   dropped and re-ACKed; an UNACK is answered with an ACK when everything
//!   up to its `seq` arrived, else with a NACK; ACKs are cumulative,
//!   delayed by at most [`Config::ack_delay_ps`] or sent at once after
//!   [`Config::ack_every`] deliveries, and ride on DATA to the same node
//!   when there is some.
//!
//! Sequence numbers start at 0 and compare modulo 2^32.

mod frame;

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use softspin_wire::rma::Kind;

/// Picoseconds per microsecond, for the defaults.
const US: u64 = 1_000_000;

/// The transport's limits and timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// This node's rank: the `src rank` of what it sends, the `dst rank` it
    /// accepts.
    pub rank: u16,
    /// Outstanding (unacknowledged) DATA packets per destination.
    pub window: usize,
    /// Retransmission timeout after progress (an ACK that acknowledged
    /// something), and the first one.
    pub rto_initial_ps: u64,
    /// The RTO doubles at each timeout up to this.
    pub rto_max_ps: u64,
    /// Timeouts in a row without progress before the destination is
    /// declared failed.
    pub max_retries: u32,
    /// An in-order DATA packet is acknowledged within this time.
    pub ack_delay_ps: u64,
    /// ... or at once after this many deliveries not yet acknowledged.
    pub ack_every: u32,
    /// At most one NACK for the same expected number per this time.
    pub nack_interval_ps: u64,
}

impl Config {
    /// Defaults sized for the interpreter on a VM: a round trip through two
    /// NIC processes takes tens of µs to a few ms, so a 2 ms first RTO
    /// rarely fires spuriously (and a spurious one only costs an UNACK);
    /// 8 timeouts bound failure detection to [`Config::failure_bound_ps`]
    /// (~0.4 s).
    pub const fn new(rank: u16) -> Config {
        Config {
            rank,
            window: 64,
            rto_initial_ps: 2_000 * US,
            rto_max_ps: 100_000 * US,
            max_retries: 8,
            ack_delay_ps: 20 * US,
            ack_every: 16,
            nack_interval_ps: 1_000 * US,
        }
    }

    /// The RTO after `k` timeouts in a row.
    pub fn rto_after(&self, k: u32) -> u64 {
        self.rto_initial_ps
            .checked_shl(k.min(63))
            .filter(|&r| r >> k.min(63) == self.rto_initial_ps)
            .unwrap_or(u64::MAX)
            .min(self.rto_max_ps)
    }

    /// The longest a destination that stopped answering can go undetected:
    /// from the last progress (or the first unacknowledged send) to
    /// [`PeerFailed`], the sum of the backed-off timeouts.
    pub fn failure_bound_ps(&self) -> u64 {
        (0..=self.max_retries).fold(0u64, |a, k| a.saturating_add(self.rto_after(k)))
    }

    fn check(&self) -> Result<(), String> {
        if self.window == 0 {
            return Err("window must be at least 1".into());
        }
        if self.rto_initial_ps == 0 || self.rto_max_ps < self.rto_initial_ps {
            return Err("need 0 < rto_initial <= rto_max".into());
        }
        if self.ack_every == 0 {
            return Err("ack_every must be at least 1".into());
        }
        Ok(())
    }
}

/// Why [`Transport::send`] refused a frame. Nothing is queued then: the
/// caller keeps the frame (retrying after [`SendError::WindowFull`]) or
/// reports the error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("RMA transport: not an RMA DATA frame: {0}")]
    NotRma(String),
    #[error("RMA transport: the frame's src rank {found} is not this node's ({rank})")]
    WrongSource { rank: u16, found: u16 },
    #[error("RMA transport: rank {rank} has {outstanding} packets outstanding, the limit; retry once some are acknowledged")]
    WindowFull { rank: u16, outstanding: usize },
    #[error("RMA transport: rank {rank} failed (no acknowledgement after {retries} timeouts)")]
    Failed { rank: u16, retries: u32 },
}

/// A destination declared failed by [`Transport::poll`]: its unacknowledged
/// packets (`abandoned`) will not be sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PeerFailed {
    pub rank: u16,
    pub abandoned: usize,
    pub at_ps: u64,
}

/// What [`Transport::receive`] did with a frame it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// In-order DATA: pass the frame on (to the handlers), unchanged.
    Deliver,
    /// An ACK, NACK or UNACK: the transport's own, nothing to pass on.
    Consumed,
}

/// Why [`Transport::receive`] dropped a frame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    #[error("not an RMA frame: {0}")]
    Malformed(String),
    #[error("for rank {dst}, not this node")]
    NotForMe { dst: u16 },
    #[error("out of order from rank {src}: seq {seq}, expected {expected}")]
    OutOfOrder { src: u16, seq: u32, expected: u32 },
    #[error("duplicate from rank {src}: seq {seq}, expected {expected}")]
    Duplicate { src: u16, seq: u32, expected: u32 },
}

impl Dropped {
    /// A short name for statistics by cause.
    pub const fn cause(&self) -> &'static str {
        match self {
            Dropped::Malformed(_) => "rma malformed",
            Dropped::NotForMe { .. } => "rma not for this rank",
            Dropped::OutOfOrder { .. } => "rma out of order",
            Dropped::Duplicate { .. } => "rma duplicate",
        }
    }
}

/// Counters of everything the transport did, summed over peers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// DATA packets sent the first time.
    pub data_sent: u64,
    /// DATA packets sent again (after a NACK).
    pub retransmissions: u64,
    /// [`SendError::WindowFull`] refusals.
    pub window_full: u64,
    /// In-order DATA delivered.
    pub delivered: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub malformed: u64,
    pub not_for_me: u64,
    pub acks_sent: u64,
    /// ACKs that rode on DATA instead of a packet of their own.
    pub acks_piggybacked: u64,
    pub acks_received: u64,
    pub nacks_sent: u64,
    /// NACKs not sent: the same number was NACKed within the interval.
    pub nacks_suppressed: u64,
    pub nacks_received: u64,
    /// NACKs that resent nothing: the same resend was under way.
    pub nacks_ignored: u64,
    pub unacks_sent: u64,
    pub unacks_received: u64,
    /// `ack` fields beyond anything sent (ignored).
    pub bad_acks: u64,
    pub timeouts: u64,
    pub failed_destinations: u64,
    /// Unacknowledged packets given up with a failed destination.
    pub abandoned: u64,
}

/// Whether `frame` is an Ethernet/IPv4/UDP frame to or from RMA's port with
/// an RMA header of the known version (what the transport handles).
pub fn is_rma(frame: &[u8]) -> bool {
    frame::locate(frame).is_ok()
}

/// Wrapping sequence comparison: `a` comes before `b`.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[derive(Default)]
struct Peer {
    // Send side.
    next_seq: u32,
    unacked: VecDeque<(u32, Vec<u8>)>,
    rto: u64,
    deadline: Option<u64>,
    retries: u32,
    failed: bool,
    /// Go-back-N pending from this index of `unacked`.
    resend_from: Option<usize>,
    /// The last go-back-N: from which seq, when.
    last_resend: Option<(u32, u64)>,
    // Receive side.
    expected: u32,
    ack_due: Option<u64>,
    nack_due: bool,
    delivered_unacked: u32,
    last_nack: Option<(u32, u64)>,
    /// Ethernet/IPv4/UDP headers towards this peer, for control packets.
    template: Option<Vec<u8>>,
}

/// The transport of one node (one rank).
pub struct Transport {
    cfg: Config,
    peers: BTreeMap<u16, Peer>,
    stats: Stats,
}

impl Transport {
    pub fn new(cfg: Config) -> Result<Transport, String> {
        cfg.check()
            .map_err(|e| format!("RMA transport config: {e}"))?;
        Ok(Transport {
            cfg,
            peers: BTreeMap::new(),
            stats: Stats::default(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Unacknowledged DATA packets to `rank`.
    pub fn outstanding(&self, rank: u16) -> usize {
        self.peers.get(&rank).map_or(0, |p| p.unacked.len())
    }

    /// Whether `rank` was declared failed.
    pub fn is_failed(&self, rank: u16) -> bool {
        self.peers.get(&rank).is_some_and(|p| p.failed)
    }

    /// Forget everything about `rank` (e.g. after it restarted).
    pub fn reset(&mut self, rank: u16) {
        self.peers.remove(&rank);
    }

    fn peer(&mut self, rank: u16) -> &mut Peer {
        let rto = self.cfg.rto_initial_ps;
        self.peers.entry(rank).or_insert_with(|| Peer {
            rto,
            ..Peer::default()
        })
    }

    /// Take a DATA frame this node sends: stamp `seq` and `ack`, keep a
    /// copy for retransmission, and return it to put on the wire now.
    pub fn send(&mut self, now: u64, mut frame: Vec<u8>) -> Result<Vec<u8>, SendError> {
        let at = frame::locate(&frame).map_err(SendError::NotRma)?;
        let h = frame::header(&frame, at);
        if h.kind() != Kind::Data as u8 {
            return Err(SendError::NotRma(format!("kind {} is not DATA", h.kind())));
        }
        let rank = self.cfg.rank;
        if h.src_rank() != rank {
            return Err(SendError::WrongSource {
                rank,
                found: h.src_rank(),
            });
        }
        let dst = h.dst_rank();
        let window = self.cfg.window;
        let rto = self.cfg.rto_initial_ps;
        let st = &mut self.stats;
        let p = self.peers.entry(dst).or_insert_with(|| Peer {
            rto,
            ..Peer::default()
        });
        if p.failed {
            return Err(SendError::Failed {
                rank: dst,
                retries: p.retries,
            });
        }
        if p.unacked.len() >= window {
            let outstanding = p.unacked.len();
            st.window_full += 1;
            return Err(SendError::WindowFull {
                rank: dst,
                outstanding,
            });
        }
        let seq = p.next_seq;
        p.next_seq = seq.wrapping_add(1);
        frame::stamp(&mut frame, at, seq, p.expected);
        if p.ack_due.take().is_some() {
            p.delivered_unacked = 0;
            st.acks_piggybacked += 1;
        }
        p.template = Some(frame::send_template(&frame, at));
        p.unacked.push_back((seq, frame.clone()));
        if p.deadline.is_none() {
            p.deadline = Some(now.saturating_add(p.rto));
        }
        st.data_sent += 1;
        Ok(frame)
    }

    /// Take a frame from the wire. `Ok(Deliver)`: pass it on unchanged.
    /// Answers (ACK, NACK, resends) come out of the next [`Transport::poll`].
    pub fn receive(&mut self, now: u64, frame: &[u8]) -> Result<Received, Dropped> {
        let at = match frame::locate(frame) {
            Ok(at) => at,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(Dropped::Malformed(e));
            }
        };
        let h = frame::header(frame, at);
        let kind = match Kind::from_byte(h.kind()) {
            Ok(k) => k,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(Dropped::Malformed(e.to_string()));
            }
        };
        if h.dst_rank() != self.cfg.rank {
            self.stats.not_for_me += 1;
            return Err(Dropped::NotForMe { dst: h.dst_rank() });
        }
        let (src, seq, ack) = (h.src_rank(), h.seq(), h.ack());
        let cfg = self.cfg;
        self.peer(src).template = Some(frame::reply_template(frame, at));
        self.on_ack(now, src, ack);
        let st = &mut self.stats;
        let p = self.peers.get_mut(&src).expect("peer made above");
        match kind {
            Kind::Ack => {
                st.acks_received += 1;
                Ok(Received::Consumed)
            }
            Kind::Nack => {
                st.nacks_received += 1;
                // on_ack dropped everything before `ack`: resend the rest.
                if let Some(&(first, _)) = p.unacked.front() {
                    let again = p
                        .last_resend
                        .is_some_and(|(s, t)| s == first && now < t.saturating_add(p.rto));
                    if first != ack || again || p.failed {
                        st.nacks_ignored += 1;
                    } else {
                        p.resend_from = Some(0);
                        p.last_resend = Some((first, now));
                    }
                }
                Ok(Received::Consumed)
            }
            Kind::Unack => {
                st.unacks_received += 1;
                if seq == p.expected {
                    p.ack_due = Some(now);
                } else {
                    p.nack_due = true;
                }
                Ok(Received::Consumed)
            }
            Kind::Data => {
                let expected = p.expected;
                if seq == expected {
                    p.expected = expected.wrapping_add(1);
                    p.delivered_unacked += 1;
                    let by = if p.delivered_unacked >= cfg.ack_every {
                        now
                    } else {
                        now.saturating_add(cfg.ack_delay_ps)
                    };
                    p.ack_due = Some(p.ack_due.map_or(by, |d| d.min(by)));
                    st.delivered += 1;
                    Ok(Received::Deliver)
                } else if before(seq, expected) {
                    // Our ACK was lost or is late: say it again.
                    st.duplicates += 1;
                    p.ack_due = Some(now);
                    Err(Dropped::Duplicate { src, seq, expected })
                } else {
                    st.out_of_order += 1;
                    let recent = p.last_nack.is_some_and(|(n, t)| {
                        n == expected && now < t.saturating_add(cfg.nack_interval_ps)
                    });
                    if recent {
                        st.nacks_suppressed += 1;
                    } else {
                        p.nack_due = true;
                        p.last_nack = Some((expected, now));
                    }
                    Err(Dropped::OutOfOrder { src, seq, expected })
                }
            }
        }
    }

    /// A cumulative acknowledgement from `src`: everything before `ack`
    /// arrived.
    fn on_ack(&mut self, now: u64, src: u16, ack: u32) {
        let rto = self.cfg.rto_initial_ps;
        let st = &mut self.stats;
        let p = self.peers.get_mut(&src).expect("peer exists");
        if before(p.next_seq, ack) {
            st.bad_acks += 1;
            return;
        }
        let mut n = 0;
        while p.unacked.front().is_some_and(|&(s, _)| before(s, ack)) {
            p.unacked.pop_front();
            n += 1;
        }
        if n > 0 {
            p.retries = 0;
            p.rto = rto;
            p.deadline = (!p.unacked.is_empty()).then(|| now.saturating_add(rto));
            p.resend_from = p
                .resend_from
                .map(|i| i.saturating_sub(n))
                .filter(|_| !p.unacked.is_empty());
        }
    }

    /// The earliest time [`Transport::poll`] has something to do.
    pub fn poll_at(&self) -> Option<u64> {
        self.peers
            .values()
            .flat_map(|p| {
                let now_due = (p.resend_from.is_some() || p.nack_due).then_some(0);
                [now_due, p.ack_due, p.deadline.filter(|_| !p.failed)]
            })
            .flatten()
            .min()
    }

    /// Do what is due at `now`: resends, ACKs, NACKs, timeouts (UNACK
    /// probes, failures). Frames to send go to `out`; the destinations
    /// declared failed now are returned.
    pub fn poll(&mut self, now: u64, out: &mut Vec<Vec<u8>>) -> Vec<PeerFailed> {
        let cfg = self.cfg;
        let st = &mut self.stats;
        let mut failed = Vec::new();
        for (&rank, p) in self.peers.iter_mut() {
            if let Some(i) = p.resend_from.take() {
                for (seq, f) in p.unacked.iter_mut().skip(i) {
                    let at = frame::locate(f).expect("stamped by send");
                    frame::stamp(f, at, *seq, p.expected);
                    out.push(f.clone());
                    st.retransmissions += 1;
                }
                if p.ack_due.take().is_some() {
                    p.delivered_unacked = 0;
                    st.acks_piggybacked += 1;
                }
                p.deadline = Some(now.saturating_add(p.rto));
            }
            if p.deadline.is_some_and(|d| d <= now) && !p.failed {
                st.timeouts += 1;
                p.retries += 1;
                // The probe's answer (a NACK) must resend even if an
                // earlier resend from the same number was recent.
                p.last_resend = None;
                if p.retries > cfg.max_retries {
                    p.failed = true;
                    p.deadline = None;
                    let abandoned = p.unacked.len();
                    p.unacked.clear();
                    st.failed_destinations += 1;
                    st.abandoned += abandoned as u64;
                    failed.push(PeerFailed {
                        rank,
                        abandoned,
                        at_ps: now,
                    });
                } else {
                    p.rto = cfg.rto_after(p.retries);
                    p.deadline = Some(now.saturating_add(p.rto));
                    if let Some(t) = &p.template {
                        out.push(frame::control(
                            t,
                            Kind::Unack,
                            cfg.rank,
                            rank,
                            p.next_seq,
                            p.expected,
                        ));
                        st.unacks_sent += 1;
                    }
                }
            }
            let Some(t) = &p.template else { continue };
            if p.nack_due {
                p.nack_due = false;
                p.ack_due = None;
                p.delivered_unacked = 0;
                out.push(frame::control(t, Kind::Nack, cfg.rank, rank, 0, p.expected));
                st.nacks_sent += 1;
            } else if p.ack_due.is_some_and(|d| d <= now) {
                p.ack_due = None;
                p.delivered_unacked = 0;
                out.push(frame::control(t, Kind::Ack, cfg.rank, rank, 0, p.expected));
                st.acks_sent += 1;
            }
        }
        failed
    }
}
