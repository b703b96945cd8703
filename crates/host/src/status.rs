//! A live NIC's status at a glance: one snapshot of the wire counters, the
//! engine's progress, errors and drops by cause and HPU occupancy, cheap
//! enough to take every second (`softspin nic --progress`, docs/live.md,
//! "Live status"). Host programs show the same with [`Nic::live_status`].

use std::collections::BTreeMap;

pub use softspin_engine::stats::EctxErrors;

use crate::{LiveStats, Nic, Report};

/// What a live NIC has done since it attached (every count a total).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStatus {
    /// The wire: frames in and out, matched, passed to the kernel, the
    /// port's drops, unprocessed frames, wall time.
    pub wire: LiveStats,
    /// Frames whose handlers all finished.
    pub packets: u64,
    /// Handler invocations (header, payload and completion handlers of
    /// every ECTX).
    pub invocations: u64,
    /// Handler errors per ECTX and cause (message timeouts included), as
    /// in the report.
    pub errors: Vec<EctxErrors>,
    /// Frames dropped, by cause: the port's and the host side's (as in
    /// [`LiveStats::drops`]), the packet buffer's (`packet_buffer_full`)
    /// and frames no active ECTX took (`no_ectx`).
    pub drops: BTreeMap<String, u64>,
    /// HPUs of the NIC, those running a task now, and the busy time of all
    /// HPUs so far (ps of NIC time).
    pub hpus: u32,
    pub hpus_busy: u32,
    pub hpu_busy_ps: u64,
    /// NIC time (ps since attach; it follows the wall clock, behind it
    /// when the handlers are slower than the wire).
    pub nic_time_ps: u64,
}

impl LiveStatus {
    /// Handler errors of every ECTX.
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().map(|e| e.total).sum()
    }

    /// Handler errors by cause over every ECTX.
    pub fn errors_by_cause(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for e in &self.errors {
            for (c, n) in &e.by_cause {
                *m.entry(c.clone()).or_default() += n;
            }
        }
        m
    }

    /// The share of HPU time spent running tasks between `earlier` and
    /// this snapshot (0..=1; 0 when no NIC time passed).
    pub fn hpu_occupancy_since(&self, earlier: &LiveStatus) -> f64 {
        let span = self.nic_time_ps.saturating_sub(earlier.nic_time_ps) as f64;
        let busy = self.hpu_busy_ps.saturating_sub(earlier.hpu_busy_ps) as f64;
        if span > 0.0 && self.hpus > 0 {
            (busy / (span * f64::from(self.hpus))).min(1.0)
        } else {
            0.0
        }
    }
}

/// Drops by cause over the port, the host side and the engine: the
/// `drops` of `softspin nic --json` and of [`LiveStatus`].
pub fn drops_by_cause(wire: &LiveStats, r: &Report) -> BTreeMap<String, u64> {
    let mut d = wire.drops.clone();
    d.insert("packet_buffer_full".into(), r.drops);
    d.insert("no_ectx".into(), r.unmatched);
    d
}

impl Nic {
    /// A snapshot of the live NIC's progress; `None` for a simulated NIC.
    /// Takes the engine's report: call it every second or so, not per step.
    pub fn live_status(&self) -> Option<LiveStatus> {
        let wire = self.live_stats()?;
        let r = self.report();
        let (hpus_busy, hpu_busy_ps) = self.engine.hpu_busy();
        Some(LiveStatus {
            drops: drops_by_cause(&wire, &r),
            wire,
            packets: r.packets,
            invocations: r.handlers.iter().map(|h| h.invocations).sum(),
            errors: r.errors,
            hpus: self.engine.hpu_count() as u32,
            hpus_busy,
            hpu_busy_ps,
            nic_time_ps: self.engine.now_ps(),
        })
    }
}
