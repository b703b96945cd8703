//! Statistics the engine gathers, and the report `softspin sim` prints.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::ectx::HandlerKind;
pub use crate::outputs::HandlerError;

/// Per-handler accumulators.
#[derive(Clone, Debug, Default)]
pub struct HandlerAcc {
    pub invocations: u64,
    pub cycles_sum: u64,
    pub cycles_min: u64,
    pub cycles_max: u64,
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub l1_accesses: u64,
    pub l1_remote_accesses: u64,
    pub l2_accesses: u64,
    pub faults: u64,
}

impl HandlerAcc {
    pub fn add(&mut self, cycles: u64, instructions: u64, loads: u64, stores: u64, mem: [u64; 3]) {
        if self.invocations == 0 || cycles < self.cycles_min {
            self.cycles_min = cycles;
        }
        self.cycles_max = self.cycles_max.max(cycles);
        self.invocations += 1;
        self.cycles_sum += cycles;
        self.instructions += instructions;
        self.loads += loads;
        self.stores += stores;
        self.l1_accesses += mem[0];
        self.l1_remote_accesses += mem[1];
        self.l2_accesses += mem[2];
    }
}

/// Why a handler (or a message) ended in error, as a value to match on;
/// `HandlerError::cause` says it in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCause {
    /// The HPU stopped the handler: a fault, or its watchdog.
    Fault(softspin_hpu::FaultKind),
    /// No packet of the message came within the ECTX's message timeout.
    MessageTimeout,
    /// The handler waited (on a command or a host notification) longer
    /// than `wait_limit_ns` of NIC time and was ended.
    WaitTimeout,
    /// `assert`, `abort()` or `exit(status != 0)` in the handler.
    Aborted { status: i32 },
    /// The command unit refused a command; the handler got an error code
    /// and went on.
    Rejected(Rejected),
}

/// Why the command unit refused a command (`ErrorCause::Rejected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejected {
    /// DMA to or from host memory outside the ECTX's host window.
    HostDmaWindow,
    /// A host-direct write (`spin_write_to_host`) outside the host window.
    HostWriteWindow,
    /// A command's NIC-side buffer lies outside what the task may access.
    NicAccess,
    /// A send or RDMA put longer than the packet slot (`pkt_slot_size`).
    SendTooLarge,
    /// A zero-length cluster DMA.
    EmptyDma,
    /// `write` to a descriptor other than 1 (stdout) or 2 (stderr).
    BadFd,
    /// `spin_push_counter` index at or beyond `counters_per_ectx`.
    CounterIndex,
    /// A notification wait/test on an id this task does not own (unknown,
    /// already collected, or another ECTX's or task's).
    NotifyId,
    /// A notification longer than its inline limit (64 bytes).
    NotifyTooLong,
}

impl Rejected {
    pub fn text(self) -> &'static str {
        match self {
            Rejected::HostDmaWindow => "command rejected: host DMA outside the host window",
            Rejected::HostWriteWindow => {
                "command rejected: host-direct write outside the host window"
            }
            Rejected::NicAccess => "command rejected: NIC buffer outside the task's memory",
            Rejected::SendTooLarge => "command rejected: send larger than the packet slot",
            Rejected::EmptyDma => "command rejected: zero-length cluster DMA",
            Rejected::BadFd => "command rejected: write to a descriptor other than 1 or 2",
            Rejected::CounterIndex => "command rejected: counter index beyond counters_per_ectx",
            Rejected::NotifyId => "command rejected: notification id not owned by this task",
            Rejected::NotifyTooLong => "command rejected: notification longer than 64 bytes",
        }
    }
}

impl ErrorCause {
    /// The cause in words (`HandlerError::cause`, the report's rows).
    pub fn text(self) -> &'static str {
        match self {
            ErrorCause::Fault(k) => k.name(),
            ErrorCause::MessageTimeout => "message timeout",
            ErrorCause::WaitTimeout => "wait timeout",
            ErrorCause::Aborted { .. } => "handler aborted",
            ErrorCause::Rejected(r) => r.text(),
        }
    }
}

/// Latency samples in a log-bucket histogram (3 significant digits), so
/// memory stays flat however long the run; min, max and mean are exact.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    hist: hdrhistogram::Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for LatencyHist {
    fn default() -> Self {
        // Auto-resizing: buckets grow with the largest sample only
        // (logarithmically), not with the number of samples.
        LatencyHist {
            hist: hdrhistogram::Histogram::new(3).expect("3 significant digits"),
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

impl LatencyHist {
    pub fn record(&mut self, ps: u64) {
        // Auto-resize accepts any u64 below 2^63; a saturated time clamps.
        let _ = self.hist.record(ps.min(u64::MAX >> 1));
        self.min = self.min.min(ps);
        self.max = self.max.max(ps);
        self.sum += ps as u128;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Nearest-rank percentile `p` (0..=100): the largest value equivalent
    /// to the sample of that rank (within 0.1 %), kept within [min, max].
    pub fn percentile_ps(&self, p: f64) -> u64 {
        let n = self.hist.len();
        if n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for v in self.hist.iter_recorded() {
            seen += v.count_since_last_iteration();
            if seen >= rank {
                return self
                    .hist
                    .highest_equivalent(v.value_iterated_to())
                    .clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn summary_ns(&self) -> LatencyNs {
        let n = self.count();
        if n == 0 {
            return LatencyNs::default();
        }
        let ns = |ps: u64| ps as f64 / 1000.0;
        LatencyNs {
            min: ns(self.min),
            mean: self.sum as f64 / n as f64 / 1000.0,
            p50: ns(self.percentile_ps(50.0)),
            p99: ns(self.percentile_ps(99.0)),
            max: ns(self.max),
        }
    }
}

/// Values kept per ECTX id, in a vector indexed by the id (ids are small:
/// install reuses free slots). The per-packet and per-task counters were
/// a tree map each, walked on every packet and task; this iterates in id
/// order as those maps did.
#[derive(Clone, Debug)]
pub struct PerEctx<T>(Vec<Option<T>>);

impl<T> Default for PerEctx<T> {
    fn default() -> Self {
        PerEctx(Vec::new())
    }
}

impl<T> PerEctx<T> {
    pub fn get(&self, id: usize) -> Option<&T> {
        self.0.get(id)?.as_ref()
    }

    pub fn remove(&mut self, id: usize) {
        if let Some(v) = self.0.get_mut(id) {
            *v = None;
        }
    }

    /// (id, value) in id order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    }
}

impl<T: Default> PerEctx<T> {
    /// The value of `id`, created as `T::default()` if it has none.
    pub fn entry(&mut self, id: usize) -> &mut T {
        if id >= self.0.len() {
            self.0.resize_with(id + 1, || None);
        }
        self.0[id].get_or_insert_with(T::default)
    }
}

/// Raw counters kept while running.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub unmatched: u64,
    pub drops: u64,
    /// Injected frames longer than a packet slot (`pkt_slot_size`),
    /// dropped on arrival (a traffic source's are an error instead).
    pub too_large: u64,
    pub backpressure_ps: u64,
    pub mpq_stall_ps: u64,
    pub packets_done: u64,
    pub bytes_done: u64,
    pub first_arrival_ps: Option<u64>,
    pub last_arrival_ps: u64,
    pub last_arrival_len: u64,
    /// Packets (bytes) processed with every handler successful.
    pub good_packets: u64,
    pub good_bytes: u64,
    pub last_done_ps: u64,
    pub latency: LatencyHist,
    /// Per ECTX, per handler kind (`HandlerKind as usize`); a kind that
    /// never ran has no invocations.
    pub handlers: PerEctx<[HandlerAcc; 3]>,
    pub errors: Vec<HandlerError>,
    pub errors_by_ectx: BTreeMap<usize, BTreeMap<String, u64>>,
    pub message_timeouts: u64,
    pub outbound_packets: u64,
    pub outbound_bytes: u64,
    pub host_writes: u64,
    pub dma_to_host_bytes: u64,
    pub dma_from_host_bytes: u64,
    pub commands: u64,
    pub tasks: u64,
    /// Per ECTX: (packets admitted, messages completed).
    pub ectx_packets: PerEctx<(u64, u64)>,
    /// Per ECTX: handler output bytes dropped because its output ring
    /// (`output_buffer`) was full.
    pub output_dropped: BTreeMap<usize, u64>,
}

/// Errors kept in detail (counts are always complete).
pub const MAX_ERRORS_KEPT: usize = 1000;

/// Errors waiting for an embedder that does not take them: the details of
/// the first this many since its last take are kept...
pub const PENDING_ERRORS_FIRST: usize = MAX_ERRORS_KEPT;
/// ...and of the latest this many; those between are counted as dropped.
pub const PENDING_ERRORS_LATEST: usize = 100;

/// One entry of a [`PendingErrors`] take: an error, or how many errors
/// were dropped at this point of the sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending<T> {
    Error(T),
    Dropped(u64),
}

/// Handler errors on their way to an embedder, bounded however long it
/// leaves them: the first [`PENDING_ERRORS_FIRST`] since the last take,
/// the latest [`PENDING_ERRORS_LATEST`], and the count of those between.
#[derive(Clone, Debug)]
pub struct PendingErrors<T> {
    first: Vec<T>,
    latest: VecDeque<T>,
    dropped: u64,
}

impl<T> Default for PendingErrors<T> {
    fn default() -> Self {
        PendingErrors {
            first: Vec::new(),
            latest: VecDeque::new(),
            dropped: 0,
        }
    }
}

impl<T> PendingErrors<T> {
    pub fn push(&mut self, e: T) {
        if self.dropped == 0 && self.latest.is_empty() && self.first.len() < PENDING_ERRORS_FIRST {
            self.first.push(e);
            return;
        }
        self.latest.push_back(e);
        if self.latest.len() > PENDING_ERRORS_LATEST {
            self.latest.pop_front();
            self.dropped += 1;
        }
    }

    /// Count `n` errors dropped upstream, after the ones pushed so far
    /// (later pushes go among the latest).
    pub fn add_dropped(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        // The errors among the latest now come before this gap: to keep one
        // gap, in order, they are counted in it (their details go, their
        // count stays).
        self.dropped += n + self.latest.len() as u64;
        self.latest.clear();
    }

    /// Everything pending, in order: the first errors, how many were
    /// dropped (if any), the latest errors.
    pub fn take(&mut self) -> Vec<Pending<T>> {
        let mut v: Vec<Pending<T>> = self.first.drain(..).map(Pending::Error).collect();
        if self.dropped > 0 {
            v.push(Pending::Dropped(std::mem::take(&mut self.dropped)));
        }
        v.extend(self.latest.drain(..).map(Pending::Error));
        v
    }
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LatencyNs {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HandlerReport {
    pub name: String,
    pub ectx: String,
    pub kind: HandlerKind,
    pub invocations: u64,
    pub cycles_min: u64,
    pub cycles_mean: f64,
    pub cycles_max: u64,
    pub instructions_mean: f64,
    pub loads_mean: f64,
    pub stores_mean: f64,
    pub l1_accesses_mean: f64,
    pub l1_remote_accesses_mean: f64,
    pub l2_accesses_mean: f64,
    pub faults: u64,
}

/// Handler output an ECTX lost because its ring was full.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OutputDrop {
    pub ectx: String,
    pub bytes: u64,
    pub cause: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EctxErrors {
    pub ectx: String,
    pub total: u64,
    pub by_cause: BTreeMap<String, u64>,
}

/// What `softspin sim --json` prints.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub profile: String,
    /// Packets fully processed (their last task completed).
    pub packets: u64,
    pub bytes: u64,
    pub packets_in: u64,
    pub unmatched: u64,
    pub throughput_gbps: f64,
    pub mpps: f64,
    /// Packets whose handlers all succeeded (no fault, abort, wait timeout
    /// or rejected command), and their rate over the same window as
    /// `throughput_gbps`: a handler failing on every packet has goodput 0.
    pub good_packets: u64,
    pub goodput_gbps: f64,
    /// Arrival rate: bytes arrived over the time between the first and the
    /// last arrival (the last packet's bytes excluded; 0 below 2 packets).
    pub offered_gbps: f64,
    pub latency_ns: LatencyNs,
    pub drops: u64,
    /// Injected frames dropped for being longer than a packet slot
    /// (`Stats::too_large`); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub too_large: u64,
    pub backpressure_ns: f64,
    pub mpq_stall_ns: f64,
    pub hpu_utilization: f64,
    pub hpus_busy_max: u32,
    pub handlers: Vec<HandlerReport>,
    pub errors: Vec<EctxErrors>,
    pub error_details: Vec<HandlerError>,
    pub message_timeouts: u64,
    /// Handler output (printf) dropped per ECTX, oldest first, when its
    /// ring was full.
    pub output_dropped: Vec<OutputDrop>,
    pub outbound_packets: u64,
    pub outbound_bytes: u64,
    pub host_writes: u64,
    pub dma_to_host_bytes: u64,
    pub dma_from_host_bytes: u64,
    pub commands: u64,
    pub tasks: u64,
    pub sim_time_ns: f64,
    /// The RMA transport block's counters; absent (not even `null`) when
    /// the block is off, so other reports are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rma: Option<crate::engine::RmaReport>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    /// A human-readable summary in the spirit of PsPIN's simulation output.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "profile            {}", self.profile);
        let _ = writeln!(s, "simulated time     {:.1} ns", self.sim_time_ns);
        let _ = writeln!(
            s,
            "packets            {} processed of {} arrived ({} bytes), {} unmatched, {} dropped",
            self.packets, self.packets_in, self.bytes, self.unmatched, self.drops
        );
        if self.too_large > 0 {
            let _ = writeln!(
                s,
                "too large          {} injected frames longer than the packet slot (pkt_slot_size), dropped",
                self.too_large
            );
        }
        if self.backpressure_ns > 0.0 || self.mpq_stall_ns > 0.0 {
            let _ = writeln!(
                s,
                "back-pressure      {:.1} ns (buffer full), {:.1} ns (no free MPQ)",
                self.backpressure_ns, self.mpq_stall_ns
            );
        }
        let _ = writeln!(s, "offered load       {:.2} Gbit/s", self.offered_gbps);
        let _ = writeln!(
            s,
            "throughput         {:.2} Gbit/s, {:.2} Mpkt/s",
            self.throughput_gbps, self.mpps
        );
        let _ = writeln!(
            s,
            "goodput            {:.2} Gbit/s ({} of {} packets with every handler successful)",
            self.goodput_gbps, self.good_packets, self.packets
        );
        let l = &self.latency_ns;
        let _ = writeln!(
            s,
            "packet latency ns  min {:.1}  mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}",
            l.min, l.mean, l.p50, l.p99, l.max
        );
        let _ = writeln!(
            s,
            "HPU utilisation    {:.1} % (at most {} busy at once)",
            self.hpu_utilization * 100.0,
            self.hpus_busy_max
        );
        let _ = writeln!(
            s,
            "commands           {} ({} outbound packets, {} host writes, {} B to host, {} B from host)",
            self.commands, self.outbound_packets, self.host_writes, self.dma_to_host_bytes, self.dma_from_host_bytes
        );
        let _ = writeln!(
            s,
            "\n{:<28} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "handler",
            "calls",
            "cyc min",
            "cyc mean",
            "cyc max",
            "instr",
            "loads",
            "stores",
            "L1",
            "L2"
        );
        for h in &self.handlers {
            let _ = writeln!(
                s,
                "{:<28} {:>10} {:>9} {:>9.1} {:>9} {:>9.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                h.name,
                h.invocations,
                h.cycles_min,
                h.cycles_mean,
                h.cycles_max,
                h.instructions_mean,
                h.loads_mean,
                h.stores_mean,
                h.l1_accesses_mean + h.l1_remote_accesses_mean,
                h.l2_accesses_mean
            );
        }
        if self.errors.is_empty() {
            let _ = writeln!(s, "\nerrors             none");
        } else {
            for e in &self.errors {
                let causes: Vec<String> = e
                    .by_cause
                    .iter()
                    .map(|(c, n)| format!("{c}: {n}"))
                    .collect();
                let _ = writeln!(
                    s,
                    "\nerrors in `{}`     {} ({})",
                    e.ectx,
                    e.total,
                    causes.join(", ")
                );
            }
            for d in self.error_details.iter().take(5) {
                let _ = writeln!(s, "  {}", d.text());
            }
        }
        for d in &self.output_dropped {
            let _ = writeln!(
                s,
                "output dropped     {} bytes of `{}` ({})",
                d.bytes, d.ectx, d.cause
            );
        }
        if let Some(r) = &self.rma {
            let t = &r.transport;
            let _ = writeln!(
                s,
                "rma transport      rank {}: {} DATA sent, {} resent, {} delivered, {} duplicates, {} out of order, {} NACKs sent, {} timeouts, {} failed destinations",
                r.rank, t.data_sent, t.retransmissions, t.delivered, t.duplicates, t.out_of_order, t.nacks_sent, t.timeouts, t.failed_destinations
            );
            for (cause, n) in &r.drops {
                let _ = writeln!(s, "rma dropped        {n} ({cause})");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first and latest kept, one gap counting the rest, in order; an
    /// upstream gap folds the latest before it into its count.
    #[test]
    fn pending_errors_keep_first_and_latest_and_count_the_rest() {
        let (f, l) = (PENDING_ERRORS_FIRST as u64, PENDING_ERRORS_LATEST as u64);
        let mut q = PendingErrors::default();
        (0..f + 7 + l).for_each(|k| q.push(k));
        let t = q.take();
        let want: Vec<_> = (0..f)
            .map(Pending::Error)
            .chain([Pending::Dropped(7)])
            .chain((f + 7..f + 7 + l).map(Pending::Error))
            .collect();
        assert_eq!(t, want);
        assert!(q.take().is_empty(), "taken once");
        // Below the bound nothing is dropped.
        (0..f).for_each(|k| q.push(k));
        assert_eq!(q.take(), (0..f).map(Pending::Error).collect::<Vec<_>>());
        // The first, then 8 among the latest; then a gap of 2 upstream: the
        // 8 join the gap, and what follows is among the latest.
        (0..f + 8).for_each(|k| q.push(k));
        q.add_dropped(2);
        q.push(9999);
        let t = q.take();
        assert_eq!(t.len(), f as usize + 2);
        assert_eq!(t[f as usize], Pending::Dropped(8 + 2));
        assert_eq!(t[f as usize + 1..], [Pending::Error(9999)]);
    }

    /// Exact nearest-rank percentile of sorted samples (the reference).
    fn exact(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1]
    }

    #[test]
    fn histogram_percentiles_are_within_three_significant_digits() {
        // SplitMix64 samples over six decades of picoseconds.
        let mut x = 7u64;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for n in [1usize, 2, 3, 160, 1001, 50_000] {
            let mut h = LatencyHist::default();
            let mut v: Vec<u64> = (0..n)
                .map(|_| 1000 + next() % 10u64.pow(1 + (next() % 6) as u32) * 1000)
                .collect();
            for &s in &v {
                h.record(s);
            }
            v.sort_unstable();
            for p in [0.0, 1.0, 50.0, 99.0, 100.0] {
                let (got, want) = (h.percentile_ps(p), exact(&v, p));
                assert!(
                    got >= want && (got - want) as f64 <= want as f64 / 1000.0,
                    "n={n} p{p}: {got} vs {want}"
                );
            }
            let s = h.summary_ns();
            assert_eq!(
                (s.min, s.max),
                (v[0] as f64 / 1000.0, v[n - 1] as f64 / 1000.0)
            );
            let mean = v.iter().map(|&s| s as f64).sum::<f64>() / n as f64 / 1000.0;
            assert!((s.mean - mean).abs() < 1e-6 * mean);
        }
    }

    #[test]
    fn equal_samples_give_their_exact_value() {
        let mut h = LatencyHist::default();
        for _ in 0..1000 {
            h.record(41_000);
        }
        let s = h.summary_ns();
        assert_eq!((s.min, s.p50, s.p99, s.max), (41.0, 41.0, 41.0, 41.0));
    }

    #[test]
    fn histogram_memory_does_not_grow_with_samples() {
        let mut h = LatencyHist::default();
        h.record(1);
        h.record(10_000_000);
        let buckets = h.hist.distinct_values();
        for k in 0..1_000_000u64 {
            h.record(1 + k % 10_000_000);
        }
        assert_eq!(h.hist.distinct_values(), buckets);
        assert_eq!(h.count(), 1_000_002);
    }
}
