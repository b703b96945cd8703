//! Statistics the engine gathers, and the report `softspin sim` prints.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ectx::HandlerKind;

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

/// One handler error, as the host reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandlerError {
    pub ectx: String,
    pub handler: String,
    pub cause: String,
    pub pc: u32,
    pub addr: u32,
    pub time_ns: u64,
    pub hpu: u32,
}

/// Raw counters kept while running.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub unmatched: u64,
    pub drops: u64,
    pub backpressure_ps: u64,
    pub mpq_stall_ps: u64,
    pub packets_done: u64,
    pub bytes_done: u64,
    pub first_arrival_ps: Option<u64>,
    pub last_done_ps: u64,
    pub latencies_ps: Vec<u64>,
    pub handlers: BTreeMap<(usize, HandlerKind), HandlerAcc>,
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
    pub ectx_packets: BTreeMap<usize, (u64, u64)>,
}

/// Errors kept in detail (counts are always complete).
pub const MAX_ERRORS_KEPT: usize = 1000;

#[derive(Clone, Debug, Serialize, PartialEq)]
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
    pub latency_ns: LatencyNs,
    pub drops: u64,
    pub backpressure_ns: f64,
    pub mpq_stall_ns: f64,
    pub hpu_utilization: f64,
    pub hpus_busy_max: u32,
    pub handlers: Vec<HandlerReport>,
    pub errors: Vec<EctxErrors>,
    pub error_details: Vec<HandlerError>,
    pub message_timeouts: u64,
    pub outbound_packets: u64,
    pub outbound_bytes: u64,
    pub host_writes: u64,
    pub dma_to_host_bytes: u64,
    pub dma_from_host_bytes: u64,
    pub commands: u64,
    pub tasks: u64,
    pub sim_time_ns: f64,
}

pub(crate) fn latency(samples: &mut [u64]) -> LatencyNs {
    if samples.is_empty() {
        return LatencyNs { min: 0.0, mean: 0.0, p50: 0.0, p99: 0.0, max: 0.0 };
    }
    samples.sort_unstable();
    let ns = |ps: u64| ps as f64 / 1000.0;
    // Nearest-rank percentiles.
    let pct = |p: f64| {
        let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
        ns(samples[rank - 1])
    };
    let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len() as f64 / 1000.0;
    LatencyNs { min: ns(samples[0]), mean, p50: pct(50.0), p99: pct(99.0), max: ns(*samples.last().unwrap()) }
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
        if self.backpressure_ns > 0.0 || self.mpq_stall_ns > 0.0 {
            let _ = writeln!(s, "back-pressure      {:.1} ns (buffer full), {:.1} ns (no free MPQ)", self.backpressure_ns, self.mpq_stall_ns);
        }
        let _ = writeln!(s, "throughput         {:.2} Gbit/s, {:.2} Mpkt/s", self.throughput_gbps, self.mpps);
        let l = &self.latency_ns;
        let _ = writeln!(
            s,
            "packet latency ns  min {:.1}  mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}",
            l.min, l.mean, l.p50, l.p99, l.max
        );
        let _ = writeln!(s, "HPU utilisation    {:.1} % (at most {} busy at once)", self.hpu_utilization * 100.0, self.hpus_busy_max);
        let _ = writeln!(
            s,
            "commands           {} ({} outbound packets, {} host writes, {} B to host, {} B from host)",
            self.commands, self.outbound_packets, self.host_writes, self.dma_to_host_bytes, self.dma_from_host_bytes
        );
        let _ = writeln!(
            s,
            "\n{:<28} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "handler", "calls", "cyc min", "cyc mean", "cyc max", "instr", "loads", "stores", "L1", "L2"
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
                let causes: Vec<String> = e.by_cause.iter().map(|(c, n)| format!("{c}: {n}")).collect();
                let _ = writeln!(s, "\nerrors in `{}`     {} ({})", e.ectx, e.total, causes.join(", "));
            }
            for d in self.error_details.iter().take(5) {
                let _ = writeln!(s, "  {} {} at pc=0x{:08x} addr=0x{:08x} (t={} ns, hpu {})", d.handler, d.cause, d.pc, d.addr, d.time_ns, d.hpu);
            }
        }
        s
    }
}
