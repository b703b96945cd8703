//! NIC configuration: the PsPIN and FPsPIN profiles, TOML files, validation.
//!
//! One source of truth: the SDK's compile-time constants (`NB_CLUSTERS`,
//! `NB_CORES`) are derived from the same configuration (`sdk_defines`), and
//! the engine refuses images built for a different cluster count.

use serde::{Deserialize, Serialize};
use softspin_hpu::abi;
use softspin_hpu::TimingModel;

/// What the inbound engine does when the L2 packet buffer is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferFull {
    /// Drop the packet and count it.
    Drop,
    /// Pause the link until a slot frees (later packets shift in time).
    Backpressure,
}

/// The host interface (PCIe) as seen by the NIC's DMA engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostLink {
    /// One-way DMA latency. PsPIN: 250 ns for a discrete NIC on PCIe
    /// (seed 004 §4.3/§4.4.2); FPsPIN measured ~450 ns (seed 000 Table 6.1).
    pub latency_ns: u64,
    /// DMA bandwidth. PsPIN's testbed models PCIe 4.0 x16 as a fixed-rate
    /// sink (seed 001 §4): 16 GT/s x 16 lanes x 128/130 = 252 Gbit/s.
    pub bandwidth_gbps: f64,
}

impl Default for HostLink {
    fn default() -> Self {
        HostLink { latency_ns: 250, bandwidth_gbps: 252.0 }
    }
}

/// The whole NIC model. Defaults are PsPIN's (seed 001 §3–§4 and its RTL).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NicConfig {
    pub profile: String,
    pub clusters: u32,
    pub hpus_per_cluster: u32,
    /// HPU and scheduler clock (PsPIN: 1 GHz, seed 001 §4.1).
    pub clock_mhz: u32,
    /// L1 scratchpad per cluster (1 MiB, seed 001 §3.2.2).
    pub l1_size: u32,
    /// L1 packet buffer per cluster (32 KiB, seed 001 §3.2.2).
    pub l1_pkt_buffer: u32,
    /// Stack per HPU in L1 (PsPIN runtime: 1 KiB, `__rt_stack_size`).
    pub hpu_stack_size: u32,
    pub l2_handler_size: u32,
    pub l2_pkt_size: u32,
    /// Slot size of the L2 packet buffer allocator: the largest packet.
    pub pkt_slot_size: u32,
    pub prog_mem_size: u32,
    /// Message processing queues (256 in PsPIN, 16 in FPsPIN).
    pub mpqs: u32,
    /// Tasks a cluster holds before the dispatcher looks elsewhere (20).
    pub cluster_task_queue: u32,
    /// Outstanding commands per HPU before issuing blocks (4).
    pub max_outstanding_cmds: u32,
    /// Host notifications an ECTX may have unanswered (the queue pair's
    /// ring size).
    pub notify_ring: u32,
    /// Cluster DMA width (512 bit) and its fixed latency; with these an
    /// L2->L1 copy of 64 B takes 11 ns and of 1024 B 26 ns (paper: 12, 26;
    /// seed 001 §4.2.1), and an unloaded packet's latency with an empty
    /// handler is 26 ns for 64 B (paper: 26) and 41 ns for 1024 B (40).
    pub dma_width_bits: u32,
    pub dma_latency_cycles: u32,
    /// The L2<->L1 interconnect all clusters share (512 bit per cycle: the
    /// bandwidth bound of seed 001 Fig. 8).
    pub interconnect_bits: u32,
    /// Control-path overheads (seed 001 §4.2.1): HER to cluster 3 ns, task
    /// to HPU 1 cycle, handler invocation 7 ns, completion back 1 ns; the
    /// runtime's doorbell store after the handler returns: 1 cycle.
    pub to_cluster_ns: u64,
    pub assign_cycles: u32,
    pub invoke_ns: u64,
    pub doorbell_cycles: u32,
    pub completion_ns: u64,
    /// Inbound line rate used by the generator when none is given, and the
    /// NIC outbound rate for handler-sent packets (400 Gbit/s).
    pub line_rate_gbps: f64,
    pub buffer_full: BufferFull,
    pub host: HostLink,
    /// HPUs interleave in quanta of this many cycles, so shared-memory
    /// interactions (locks, flags) between HPUs are seen within a quantum.
    pub quantum_cycles: u32,
    /// The HPU core timing table.
    pub hpu: TimingModel,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig::pspin()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {msg}")]
    Toml { file: String, msg: String },
    #[error("{file}: unknown profile `{name}` (known: pspin, fpspin)")]
    Profile { file: String, name: String },
    #[error("configuration field `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
}

impl NicConfig {
    /// PsPIN as evaluated in seed 001: 4 clusters x 8 HPUs at 1 GHz.
    pub fn pspin() -> NicConfig {
        NicConfig {
            profile: "pspin".into(),
            clusters: 4,
            hpus_per_cluster: 8,
            clock_mhz: 1000,
            l1_size: 1 << 20,
            l1_pkt_buffer: 32 << 10,
            hpu_stack_size: 1 << 10,
            l2_handler_size: 4 << 20,
            l2_pkt_size: 4 << 20,
            pkt_slot_size: 2048,
            prog_mem_size: 32 << 10,
            mpqs: 256,
            cluster_task_queue: 20,
            max_outstanding_cmds: 4,
            notify_ring: 64,
            dma_width_bits: 512,
            dma_latency_cycles: 10,
            interconnect_bits: 512,
            to_cluster_ns: 3,
            assign_cycles: 1,
            invoke_ns: 7,
            doorbell_cycles: 1,
            completion_ns: 1,
            line_rate_gbps: 400.0,
            buffer_full: BufferFull::Drop,
            host: HostLink::default(),
            quantum_cycles: 200,
            hpu: TimingModel::default(),
        }
    }

    /// FPsPIN (seed 000 Table 6.2): 2 clusters x 8 HPUs at 40 MHz, 16 MPQs,
    /// 256 KiB L1, 32 KiB program memory, 512 KiB packet and 1 MiB handler
    /// memory; host DMA ~450 ns (Table 6.1); 100 Gbit/s Corundum link.
    pub fn fpspin() -> NicConfig {
        NicConfig {
            profile: "fpspin".into(),
            clusters: 2,
            clock_mhz: 40,
            l1_size: 256 << 10,
            l2_handler_size: 1 << 20,
            l2_pkt_size: 512 << 10,
            mpqs: 16,
            line_rate_gbps: 100.0,
            host: HostLink { latency_ns: 450, bandwidth_gbps: 100.0 },
            // Control-path overheads scale with the clock: in cycles they
            // are PsPIN's (3, 7, 1 cycles).
            to_cluster_ns: 3 * 25,
            invoke_ns: 7 * 25,
            completion_ns: 25,
            hpu: TimingModel { clock_mhz: 40, ..TimingModel::default() },
            ..NicConfig::pspin()
        }
    }

    pub fn profile(name: &str) -> Option<NicConfig> {
        match name {
            "pspin" => Some(NicConfig::pspin()),
            "fpspin" => Some(NicConfig::fpspin()),
            _ => None,
        }
    }

    /// Parse a TOML file. `profile = "fpspin"` picks the base; every other
    /// key overrides it.
    pub fn from_toml(text: &str, file: &str) -> Result<NicConfig, ConfigError> {
        let terr = |e: toml::de::Error| ConfigError::Toml { file: file.to_string(), msg: e.to_string() };
        let value: toml::Table = text.parse().map_err(terr)?;
        let name = match value.get("profile") {
            None => "pspin".to_string(),
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => return Err(ConfigError::Toml { file: file.into(), msg: "`profile` must be a string".into() }),
        };
        let base = NicConfig::profile(&name).ok_or(ConfigError::Profile { file: file.into(), name: name.clone() })?;
        // Overlay the file on the profile: serialise the base, merge keys.
        let mut merged = toml::Table::try_from(&base).expect("config serialises");
        merge(&mut merged, value);
        let mut cfg: NicConfig = toml::Value::Table(merged).try_into().map_err(terr)?;
        // The core clock is the NIC clock; `hpu.clock_mhz` just follows it.
        cfg.hpu.clock_mhz = cfg.clock_mhz;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn ps_per_cycle(&self) -> u64 {
        1_000_000 / self.clock_mhz as u64
    }

    pub fn hpus(&self) -> usize {
        (self.clusters * self.hpus_per_cluster) as usize
    }

    /// Size of `task_t` for this cluster count (the SDK's packed layout).
    pub fn task_t_size(&self) -> u32 {
        40 + 8 * self.clusters
    }

    /// Bytes of the per-HPU runtime area (task_t + handler_args_t).
    pub fn runtime_area(&self) -> u32 {
        (self.task_t_size() + 16).next_multiple_of(64)
    }

    /// L1 offset where the ECTX scratchpads begin (after the packet buffer,
    /// runtime areas and stacks).
    pub fn l1_scratch_base(&self) -> u32 {
        self.l1_pkt_buffer + self.hpus_per_cluster * (self.runtime_area() + self.hpu_stack_size)
    }

    /// `-D` flags that make the SDK match this configuration.
    pub fn sdk_defines(&self) -> Vec<String> {
        vec![format!("NB_CLUSTERS={}", self.clusters), format!("NB_CORES={}", self.hpus_per_cluster)]
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: String| Err(ConfigError::Invalid { field, reason });
        if !(1..=16).contains(&self.clusters) {
            return bad("clusters", format!("{} is not in 1..=16", self.clusters));
        }
        if !(1..=64).contains(&self.hpus_per_cluster) {
            return bad("hpus_per_cluster", format!("{} is not in 1..=64", self.hpus_per_cluster));
        }
        if self.clock_mhz == 0 || 1_000_000 % self.clock_mhz != 0 {
            return bad("clock_mhz", format!("{} MHz: must divide 1,000,000 (whole picoseconds per cycle)", self.clock_mhz));
        }
        if self.l1_size == 0 || self.l1_size > abi::L1_CLUSTER_STRIDE {
            return bad("l1_size", format!("{} must be in 1..={} (the cluster address stride)", self.l1_size, abi::L1_CLUSTER_STRIDE));
        }
        if self.hpu_stack_size < 256 || self.hpu_stack_size % 16 != 0 {
            return bad("hpu_stack_size", format!("{} must be >= 256 and a multiple of 16", self.hpu_stack_size));
        }
        if self.l1_pkt_buffer < 64 || self.l1_scratch_base() > self.l1_size {
            return bad(
                "l1_pkt_buffer",
                format!(
                    "packet buffer ({}) + runtime areas and stacks ({} HPUs) need {} bytes, more than l1_size {}",
                    self.l1_pkt_buffer,
                    self.hpus_per_cluster,
                    self.l1_scratch_base(),
                    self.l1_size
                ),
            );
        }
        if self.l2_handler_size == 0 || self.l2_handler_size > abi::L2_PKT_BASE - abi::L2_HANDLER_BASE {
            return bad("l2_handler_size", format!("{} must be in 1..=4 MiB", self.l2_handler_size));
        }
        if self.l2_pkt_size == 0 || self.l2_pkt_size > abi::PROG_MEM_BASE - abi::L2_PKT_BASE {
            return bad("l2_pkt_size", format!("{} must be in 1..=12 MiB", self.l2_pkt_size));
        }
        if self.pkt_slot_size < 64 || self.pkt_slot_size > self.l2_pkt_size || self.pkt_slot_size > self.l1_pkt_buffer {
            return bad("pkt_slot_size", format!("{} must be >= 64 and fit both the L2 and the L1 packet buffers", self.pkt_slot_size));
        }
        if self.prog_mem_size == 0 || self.prog_mem_size > 16 << 20 {
            return bad("prog_mem_size", format!("{} must be in 1..=16 MiB", self.prog_mem_size));
        }
        for (field, v) in [
            ("mpqs", self.mpqs),
            ("cluster_task_queue", self.cluster_task_queue),
            ("max_outstanding_cmds", self.max_outstanding_cmds),
            ("notify_ring", self.notify_ring),
            ("quantum_cycles", self.quantum_cycles),
        ] {
            if v == 0 {
                return bad(field, "must be at least 1".into());
            }
        }
        if self.dma_width_bits < 8 || self.dma_width_bits % 8 != 0 {
            return bad("dma_width_bits", format!("{} must be a positive multiple of 8", self.dma_width_bits));
        }
        if self.interconnect_bits < 8 || self.interconnect_bits % 8 != 0 {
            return bad("interconnect_bits", format!("{} must be a positive multiple of 8", self.interconnect_bits));
        }
        if !(self.line_rate_gbps > 0.0 && self.line_rate_gbps.is_finite()) {
            return bad("line_rate_gbps", format!("{} must be a positive number", self.line_rate_gbps));
        }
        if !(self.host.bandwidth_gbps > 0.0 && self.host.bandwidth_gbps.is_finite()) {
            return bad("host.bandwidth_gbps", format!("{} must be a positive number", self.host.bandwidth_gbps));
        }
        if self.hpu.clock_mhz != self.clock_mhz {
            return bad("hpu.clock_mhz", format!("{} differs from clock_mhz {}", self.hpu.clock_mhz, self.clock_mhz));
        }
        let t = &self.hpu;
        let costs = [t.alu, t.load, t.store, t.branch, t.jal, t.jalr, t.mul, t.mulh, t.div, t.csr, t.ecall];
        if costs.contains(&0) {
            return bad("hpu", "every instruction class costs at least one cycle".into());
        }
        Ok(())
    }
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_valid() {
        NicConfig::pspin().validate().unwrap();
        NicConfig::fpspin().validate().unwrap();
    }

    #[test]
    fn toml_overlays_a_profile_and_names_bad_fields() {
        let c = NicConfig::from_toml("profile = \"fpspin\"\nmpqs = 8\n[hpu]\ndiv = 20\n", "x.toml").unwrap();
        assert_eq!((c.clusters, c.mpqs, c.hpu.div, c.clock_mhz), (2, 8, 20, 40));
        let e = NicConfig::from_toml("clusters = 0\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("`clusters`"), "{e}");
        let e = NicConfig::from_toml("clusterz = 3\n", "bad.toml").unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("clusterz"), "{e}");
        let e = NicConfig::from_toml("mpqs = \"many\"\n", "t.toml").unwrap_err().to_string();
        assert!(e.contains("t.toml") && e.contains("mpqs"), "{e}");
        let e = NicConfig::from_toml("profile = \"x\"\n", "t.toml").unwrap_err().to_string();
        assert!(e.contains("unknown profile"), "{e}");
        let e = NicConfig::from_toml("l1_size = 40000\n", "t.toml").unwrap_err().to_string();
        assert!(e.contains("`l1_pkt_buffer`"), "{e}");
    }
}
