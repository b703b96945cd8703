//! The RMA transport block (docs/rma.md, "Reliability"): DiAD's
//! reliability layer (seed 003 §III) between the wire and the NIC, for
//! frames on RMA's UDP port. From the wire, before the inbound engine: only
//! in-order DATA goes on to matching and the HER; ACK, NACK and UNACK are
//! consumed; the rest is dropped and counted by cause. From the command
//! unit's NIC sends, before the link: DATA is stamped (`seq`, `ack`) and kept
//! for retransmission. The block's own frames (ACK, NACK, UNACK, resends)
//! are NIC sends too; its timers are engine events. The protocol itself is
//! `softspin_rma::Transport`, a state machine this block drives.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use softspin_rma::{PeerFailed, Received, SendError, Transport};

use super::command_unit::Links;
use super::{Core, EctxId, Ev, OutPacket};

/// Time the block spends on each frame it sends (stamping, the checksum
/// update, keeping a copy), one frame after another: a pipeline stage in
/// front of the link, as FPsPIN's egress. 20 ns: a few cycles of header
/// work at 1 GHz plus the copy into the retransmission buffer. A handler's
/// DATA frame was already timed on the link by its NIC send command, so it
/// only pays this; the block's own frames (ACK/NACK/UNACK, resends) then
/// take the outbound link like any NIC send.
pub const RMA_COST_PS: u64 = 20_000;

/// DATA frames held back while their destination's window is full (the
/// handlers' back-pressure); beyond this, refused sends are dropped and
/// counted.
pub const RMA_WAITING_MAX: usize = 4096;

/// How the block is set up (`Engine::enable_rma_transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaTransportConfig {
    pub transport: softspin_rma::Config,
    /// [`RMA_COST_PS`] unless a test says otherwise.
    pub cost_ps: u64,
}

impl RmaTransportConfig {
    pub fn new(rank: u16) -> RmaTransportConfig {
        RmaTransportConfig {
            transport: softspin_rma::Config::new(rank),
            cost_ps: RMA_COST_PS,
        }
    }
}

/// The block's counters in the report (present only when it is enabled,
/// so reports of runs without it are unchanged).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RmaReport {
    pub rank: u16,
    pub transport: softspin_rma::Stats,
    /// Frames the block dropped, by cause (from the wire and from handlers).
    pub drops: BTreeMap<String, u64>,
    /// NIC sends held back by a full window and sent later.
    pub held_back: u64,
    pub failed: Vec<PeerFailed>,
}

pub(super) struct RmaBlock {
    t: Transport,
    ectx: EctxId,
    cost_ps: u64,
    /// The block's next free time (its frames leave one after another).
    busy_until: u64,
    waiting: VecDeque<Vec<u8>>,
    held_back: u64,
    /// Times of the timer events queued and not yet fired.
    timers: Vec<u64>,
    drops: BTreeMap<&'static str, u64>,
    failed: Vec<PeerFailed>,
}

impl RmaBlock {
    pub(super) fn new(ectx: EctxId, cfg: RmaTransportConfig) -> Result<RmaBlock, String> {
        Ok(RmaBlock {
            t: Transport::new(cfg.transport)?,
            ectx,
            cost_ps: cfg.cost_ps,
            busy_until: 0,
            waiting: VecDeque::new(),
            held_back: 0,
            timers: Vec::new(),
            drops: BTreeMap::new(),
            failed: Vec::new(),
        })
    }

    pub(super) fn ectx(&self) -> EctxId {
        self.ectx
    }

    pub(super) fn failed(&self) -> &[PeerFailed] {
        &self.failed
    }

    pub(super) fn stats(&self) -> &softspin_rma::Stats {
        self.t.stats()
    }

    pub(super) fn report(&self) -> RmaReport {
        RmaReport {
            rank: self.t.config().rank,
            transport: *self.t.stats(),
            drops: self
                .drops
                .iter()
                .map(|(k, &v)| (k.to_string(), v))
                .collect(),
            held_back: self.held_back,
            failed: self.failed.clone(),
        }
    }

    fn count_drop(&mut self, cause: &'static str) {
        *self.drops.entry(cause).or_default() += 1;
    }

    /// Put a frame out after the block's cost; `link`: its own frames also
    /// take the outbound link (a handler's were timed on it already).
    fn emit(&mut self, c: &mut Core, link: Option<&mut Links>, at: u64, frame: Vec<u8>) {
        let t = self.busy_until.max(at) + self.cost_ps;
        self.busy_until = t;
        let t = match link {
            Some(l) => l.nic_send(&c.cfg, t, frame.len() as u32),
            None => t,
        };
        c.stats.outbound_packets += 1;
        c.stats.outbound_bytes += frame.len() as u64;
        c.outputs.sent(OutPacket {
            time_ps: t,
            ectx: self.ectx,
            dest: 0,
            frame,
        });
    }

    /// Hand a DATA frame to the transport: sent, held back (full window) or
    /// dropped with a cause.
    /// `at`: when the NIC send completed (an HPU's local time, which may be
    /// ahead of the engine's clock).
    fn send(&mut self, c: &mut Core, at: u64, frame: Vec<u8>) {
        match self.t.send(at, frame.clone()) {
            Ok(f) => self.emit(c, None, at, f),
            Err(SendError::WindowFull { .. }) => {
                if self.waiting.len() < RMA_WAITING_MAX {
                    self.held_back += 1;
                    self.waiting.push_back(frame);
                } else {
                    self.count_drop("rma send: held-back queue full");
                }
            }
            Err(SendError::Failed { .. }) => self.count_drop("rma send: destination failed"),
            Err(SendError::WrongSource { .. }) => {
                self.count_drop("rma send: src rank not this node's")
            }
            Err(SendError::NotRma(_)) => self.count_drop("rma send: not an RMA DATA frame"),
        }
    }

    /// Resends, ACKs, timeouts due now; held-back frames whose window
    /// opened; the next timer.
    fn service(&mut self, c: &mut Core, links: &mut Links) {
        let mut out = Vec::new();
        let failed = self.t.poll(c.now, &mut out);
        for f in out {
            self.emit(c, Some(&mut *links), c.now, f);
        }
        self.failed.extend(failed);
        for _ in 0..self.waiting.len() {
            let f = self.waiting.pop_front().expect("counted");
            match self.t.send(c.now, f.clone()) {
                // Held back after its NIC send was timed: the link again.
                Ok(s) => self.emit(c, Some(&mut *links), c.now, s),
                Err(SendError::WindowFull { .. }) => self.waiting.push_back(f),
                Err(_) => self.count_drop("rma send: destination failed"),
            }
        }
        if let Some(at) = self.t.poll_at() {
            let at = at.max(c.now);
            // One event per distinct time: a timer already queued at or
            // before `at` wakes the block in time to queue the next.
            if !self.timers.iter().any(|&t| t <= at) {
                self.timers.push(at);
                c.at(at, Ev::RmaTimer);
            }
        }
    }
}

/// A frame the block handles: on RMA's port, or an RMA packet.
pub(super) fn is_block_frame(frame: &[u8]) -> bool {
    super::inbound::udp_dst_port(frame) == Some(softspin_wire::rma::UDP_PORT)
        || softspin_rma::is_rma(frame)
}

/// A frame from the wire: true if it goes on to the inbound engine.
pub(super) fn from_wire(c: &mut Core, links: &mut Links, frame: &[u8]) -> bool {
    let Some(mut b) = c.rma.take() else {
        return true;
    };
    let pass = if !is_block_frame(frame) {
        true
    } else {
        let r = b.t.receive(c.now, frame);
        let pass = match r {
            Ok(Received::Deliver) => true,
            Ok(Received::Consumed) => false,
            Err(e) => {
                b.count_drop(e.cause());
                false
            }
        };
        b.service(c, links);
        pass
    };
    c.rma = Some(b);
    pass
}

/// A NIC send from a handler: false if it is not the block's (it goes to
/// the link as before).
pub(super) fn from_handler(
    c: &mut Core,
    links: &mut Links,
    ectx: EctxId,
    at: u64,
    frame: &mut Option<Vec<u8>>,
) -> bool {
    let Some(mut b) = c.rma.take() else {
        return false;
    };
    let mine = b.ectx == ectx && frame.as_deref().is_some_and(is_block_frame);
    if mine {
        b.send(c, at, frame.take().expect("checked"));
        b.service(c, links);
    }
    c.rma = Some(b);
    mine
}

/// A timer event.
// Rare next to the per-packet events: kept out of `Engine::step`.
#[inline(never)]
pub(super) fn on_timer(c: &mut Core, links: &mut Links) {
    if let Some(mut b) = c.rma.take() {
        let now = c.now;
        b.timers.retain(|&t| t > now);
        b.service(c, links);
        c.rma = Some(b);
    }
}
