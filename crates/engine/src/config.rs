//! NIC configuration: the PsPIN and FPsPIN profiles, TOML files, validation.
//!
//! One source of truth: the SDK's compile-time constants (`NB_CLUSTERS`,
//! `NB_CORES`) are derived from the same configuration (`sdk_defines`), and
//! the engine refuses images built for a different cluster count.

use serde::{Deserialize, Serialize};
use softspin_hpu::abi;
use softspin_hpu::timing::{self, TimingModel};

use crate::units::{self, Clock, Gbps};

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
    /// One-way DMA latency (see the constants below); FPsPIN measured
    /// ~450 ns (seed 000 Table 6.1).
    pub latency_ns: u64,
    /// DMA bandwidth (see the constants below).
    pub bandwidth_gbps: f64,
}

impl HostLink {
    /// The host link of PsPIN's RTL testbench, with which its published
    /// figures were produced (spcl/pspin `hw/verilator_model/src/
    /// pspinsim.cpp`): its PCIe slave answers after `DEFAULT_PCIE_SLV_L` = 2
    /// cycles and takes `PCIE_G_5_16` = 0.014782 cycles per byte, i.e.
    /// 541.2 Gbit/s at 1 GHz. A near-ideal host: it is why seed 001 Fig. 9
    /// and Fig. 12 reach 400 Gbit/s for copy_to_host and filtering, whose
    /// HPUs wait for every packet's DMA. The PsPIN profile's.
    pub const PSPIN_RTL: HostLink = HostLink {
        latency_ns: 2,
        bandwidth_gbps: 8.0 / 0.014782,
    };
    /// A discrete NIC on PCIe 4.0 x16 as the papers' text describes it:
    /// 16 GT/s x 16 lanes x 128/130 = 252 Gbit/s (seed 001 §4), 250 ns one
    /// way (seed 004 §4.3/§4.4.2). Select with `[host] latency_ns = 250`,
    /// `bandwidth_gbps = 252.0`.
    pub const PCIE4_X16: HostLink = HostLink {
        latency_ns: 250,
        bandwidth_gbps: 252.0,
    };
}

impl Default for HostLink {
    fn default() -> Self {
        HostLink::PSPIN_RTL
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
    /// Handler output (printf) kept per ECTX, in bytes: a ring that drops
    /// its oldest output when full, counting what it dropped (64 KiB), so a
    /// handler looping on printf cannot exhaust host memory.
    pub output_buffer: u32,
    /// `spin_push_counter` indices per ECTX (0..64, as FPsPIN's counter
    /// file and the single-HPU harness); a larger index is rejected.
    pub counters_per_ectx: u32,
    /// Longest a handler may wait for one command or host notification, in
    /// NIC time; past it the handler is ended with "wait timeout" (1 ms, the
    /// default message timeout).
    pub wait_limit_ns: u64,
    /// Share of all HPUs (0 < share <= 1), and of each cluster's, one ECTX
    /// may hold while another ECTX is active: handlers are not preempted,
    /// so the reserve must exist before the other tenant's packets come.
    /// 0.75 keeps a quarter (8 of PsPIN's 32, 2 per cluster) for other
    /// tenants while a busy tenant still reaches 24 HPUs, above the ~19
    /// PsPIN keeps busy at line rate with 64 B packets (seed 001 §4.2). A
    /// lone active ECTX is not limited.
    pub max_hpu_share: f64,
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
    #[error("{file}: unknown profile `{name}` (known: {})", NicConfig::PROFILES.join(", "))]
    Profile { file: String, name: String },
    #[error("configuration field `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
}

/// One FPsPIN clock cycle in ns (25).
const FPSPIN_NS_PER_CYCLE: u64 = 1000 / timing::FPSPIN_CLOCK_MHZ as u64;

impl NicConfig {
    /// PsPIN as evaluated in seed 001: 4 clusters x 8 HPUs at 1 GHz.
    pub fn pspin() -> NicConfig {
        NicConfig {
            profile: "pspin".into(),
            clusters: 4,
            hpus_per_cluster: 8,
            clock_mhz: timing::PSPIN_CLOCK_MHZ,
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
            // PsPIN's cores run GCC's Xpulp hardware loops (docs/validation.md §5).
            hpu: TimingModel {
                hw_loops: true,
                ..TimingModel::default()
            },
            output_buffer: 64 << 10,
            counters_per_ectx: 64,
            wait_limit_ns: 1_000_000,
            max_hpu_share: 0.75,
        }
    }

    /// FPsPIN (seed 000 Table 6.2): 2 clusters x 8 HPUs at 40 MHz, 16 MPQs,
    /// 256 KiB L1, 32 KiB program memory, 512 KiB packet and 1 MiB handler
    /// memory; host DMA ~450 ns (Table 6.1); 100 Gbit/s Corundum link.
    pub fn fpspin() -> NicConfig {
        NicConfig {
            profile: "fpspin".into(),
            clusters: 2,
            clock_mhz: timing::FPSPIN_CLOCK_MHZ,
            l1_size: 256 << 10,
            l2_handler_size: 1 << 20,
            l2_pkt_size: 512 << 10,
            mpqs: 16,
            line_rate_gbps: 100.0,
            host: HostLink {
                latency_ns: 450,
                bandwidth_gbps: 100.0,
            },
            // Control-path overheads scale with the clock: in cycles they
            // are PsPIN's (3, 7, 1 cycles).
            to_cluster_ns: 3 * FPSPIN_NS_PER_CYCLE,
            invoke_ns: 7 * FPSPIN_NS_PER_CYCLE,
            completion_ns: FPSPIN_NS_PER_CYCLE,
            hpu: TimingModel {
                clock_mhz: timing::FPSPIN_CLOCK_MHZ,
                ..NicConfig::pspin().hpu
            },
            ..NicConfig::pspin()
        }
    }

    /// The names [`NicConfig::profile`] knows, for messages.
    pub const PROFILES: &'static [&'static str] = &["pspin", "fpspin"];

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
        let terr = |e: toml::de::Error| ConfigError::Toml {
            file: file.to_string(),
            msg: e.to_string(),
        };
        let value: toml::Table = text.parse().map_err(terr)?;
        let name = match value.get("profile") {
            None => "pspin".to_string(),
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(ConfigError::Toml {
                    file: file.into(),
                    msg: "`profile` must be a string".into(),
                })
            }
        };
        let base = NicConfig::profile(&name).ok_or(ConfigError::Profile {
            file: file.into(),
            name: name.clone(),
        })?;
        // Overlay the file on the profile: serialise the base, merge keys.
        let mut merged = toml::Table::try_from(&base).expect("config serialises");
        merge(&mut merged, value);
        let mut cfg: NicConfig = toml::Value::Table(merged).try_into().map_err(terr)?;
        // The core clock is the NIC clock; `hpu.clock_mhz` just follows it.
        cfg.hpu.clock_mhz = cfg.clock_mhz;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The NIC clock (valid once `validate` passed).
    pub fn clock(&self) -> Clock {
        Clock::from_mhz(self.clock_mhz).expect("validated clock_mhz")
    }

    pub fn ps_per_cycle(&self) -> u64 {
        self.clock().ps_per_cycle()
    }

    pub fn hpus(&self) -> usize {
        (self.clusters * self.hpus_per_cluster) as usize
    }

    /// Size of `task_t` for this cluster count (the SDK's packed layout,
    /// described once by `abi::TaskLayout`).
    pub fn task_t_size(&self) -> u32 {
        softspin_hpu::abi::TaskLayout::new(self.clusters).size()
    }

    /// Bytes of the per-HPU runtime area (task_t + handler_args_t).
    pub fn runtime_area(&self) -> u32 {
        (self.task_t_size() + 16).next_multiple_of(64)
    }

    /// L1 offset where the ECTX scratchpads begin (after the packet buffer,
    /// runtime areas and stacks).
    pub fn l1_scratch_base(&self) -> u32 {
        // Fits: validate checked l1_layout_bytes() <= l1_size.
        self.l1_layout_bytes() as u32
    }

    /// Bytes of L1 before the scratchpads, computed without overflow.
    fn l1_layout_bytes(&self) -> u64 {
        self.l1_pkt_buffer as u64
            + self.hpus_per_cluster as u64
                * (self.runtime_area() as u64 + self.hpu_stack_size as u64)
    }

    /// Bytes of each cluster's L1 left for ECTX scratchpads.
    pub fn l1_scratch_size(&self) -> u32 {
        self.l1_size - self.l1_scratch_base()
    }

    /// Region sizes handler images are linked against (`softspin build`
    /// passes them to the linker).
    pub fn memory_map(&self) -> abi::MemoryMap {
        abi::MemoryMap {
            l1_size: self.l1_size,
            l2_handler_size: self.l2_handler_size,
            l2_pkt_size: self.l2_pkt_size,
            prog_mem_size: self.prog_mem_size,
        }
    }

    /// `-D` flags that make the SDK match this configuration. A
    /// configuration equal to its named profile also records that name in
    /// the image ([`PROFILE_SYMBOL`], read back by [`image_profile`]).
    pub fn sdk_defines(&self) -> Vec<String> {
        let mut d = vec![
            format!("NB_CLUSTERS={}", self.clusters),
            format!("NB_CORES={}", self.hpus_per_cluster),
        ];
        if NicConfig::profile(&self.profile).as_ref() == Some(self) {
            d.push(format!("SOFTSPIN_PROFILE_NAME={}", self.profile));
        }
        d
    }

    /// Check every field against the model's limits; the first problem is
    /// returned, naming the field and its limit. The CLI, TOML files and the
    /// host API all come through here.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: String| Err(ConfigError::Invalid { field, reason });
        let range = |field: &'static str, v: u32, lo: u32, hi: u32| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ConfigError::Invalid {
                    field,
                    reason: format!("{v} is not in {lo}..={hi}"),
                })
            }
        };
        range("clusters", self.clusters, 1, MAX_CLUSTERS)?;
        range(
            "hpus_per_cluster",
            self.hpus_per_cluster,
            1,
            MAX_HPUS_PER_CLUSTER,
        )?;
        let Some(clock) = Clock::from_mhz(self.clock_mhz) else {
            return bad(
                "clock_mhz",
                format!(
                    "{} MHz: must divide 1,000,000 (whole picoseconds per cycle)",
                    self.clock_mhz
                ),
            );
        };
        if self.hpu.clock_mhz != self.clock_mhz {
            return bad(
                "hpu.clock_mhz",
                format!(
                    "{} differs from clock_mhz {}",
                    self.hpu.clock_mhz, self.clock_mhz
                ),
            );
        }
        // The memory map (abi.rs): an L1 cannot exceed the cluster stride,
        // and holds the packet buffer, then per HPU a runtime area and a
        // stack, then the ECTX scratchpads.
        range("l1_size", self.l1_size, 1, abi::L1_CLUSTER_STRIDE)?;
        if self.l1_pkt_buffer < 64 || self.l1_pkt_buffer > self.l1_size {
            return bad(
                "l1_pkt_buffer",
                format!(
                    "{} must be in 64..=l1_size ({})",
                    self.l1_pkt_buffer, self.l1_size
                ),
            );
        }
        if self.hpu_stack_size < 256 || !self.hpu_stack_size.is_multiple_of(16) {
            return bad(
                "hpu_stack_size",
                format!(
                    "{} must be >= 256 and a multiple of 16",
                    self.hpu_stack_size
                ),
            );
        }
        if self.l1_layout_bytes() > self.l1_size as u64 {
            let hpus = self.hpus_per_cluster as u64;
            let room = (self.l1_size as u64)
                .saturating_sub(self.l1_pkt_buffer as u64 + hpus * self.runtime_area() as u64);
            let max_stack = room / hpus / 16 * 16;
            let sum = format!(
                "l1_pkt_buffer {} + {} HPUs x (runtime area {} + hpu_stack_size {}) = {} bytes exceed l1_size {}",
                self.l1_pkt_buffer,
                hpus,
                self.runtime_area(),
                self.hpu_stack_size,
                self.l1_layout_bytes(),
                self.l1_size
            );
            return if max_stack >= 256 {
                bad(
                    "hpu_stack_size",
                    format!("{sum}: at most {max_stack} with these settings"),
                )
            } else {
                bad(
                    "l1_pkt_buffer",
                    format!("{sum}: no room left for 256-byte stacks"),
                )
            };
        }
        range(
            "l2_handler_size",
            self.l2_handler_size,
            1,
            abi::L2_PKT_BASE - abi::L2_HANDLER_BASE,
        )?;
        range(
            "l2_pkt_size",
            self.l2_pkt_size,
            1,
            abi::PROG_MEM_BASE - abi::L2_PKT_BASE,
        )?;
        // Slots start on L1 granules (64 B), so a packet's headers are as
        // aligned in the L2 slot as in L1 whatever the slot size.
        if self.pkt_slot_size < 64
            || !self.pkt_slot_size.is_multiple_of(64)
            || self.pkt_slot_size > self.l2_pkt_size
            || self.pkt_slot_size > self.l1_pkt_buffer
        {
            return bad(
                "pkt_slot_size",
                format!(
                    "{} must be a multiple of 64 (at least 64) and fit both the L2 packet buffer (l2_pkt_size {}) and the L1 packet buffer (l1_pkt_buffer {})",
                    self.pkt_slot_size, self.l2_pkt_size, self.l1_pkt_buffer
                ),
            );
        }
        range("prog_mem_size", self.prog_mem_size, 1, MAX_PROG_MEM)?;
        range("mpqs", self.mpqs, 1, MAX_MPQS)?;
        range(
            "cluster_task_queue",
            self.cluster_task_queue,
            1,
            MAX_CLUSTER_TASK_QUEUE,
        )?;
        range(
            "max_outstanding_cmds",
            self.max_outstanding_cmds,
            1,
            MAX_OUTSTANDING_CMDS,
        )?;
        range("notify_ring", self.notify_ring, 1, MAX_NOTIFY_RING)?;
        range("quantum_cycles", self.quantum_cycles, 1, MAX_QUANTUM_CYCLES)?;
        range("output_buffer", self.output_buffer, 64, MAX_OUTPUT_BUFFER)?;
        range(
            "counters_per_ectx",
            self.counters_per_ectx,
            1,
            MAX_COUNTERS_PER_ECTX,
        )?;
        if self.wait_limit_ns == 0 {
            return bad("wait_limit_ns", "must be at least 1 ns".into());
        }
        units::delay_ns("wait_limit_ns", self.wait_limit_ns)?;
        if !(self.max_hpu_share > 0.0 && self.max_hpu_share <= 1.0) {
            return bad(
                "max_hpu_share",
                format!("{} must be a fraction in (0, 1]", self.max_hpu_share),
            );
        }
        for (field, v) in [
            ("dma_width_bits", self.dma_width_bits),
            ("interconnect_bits", self.interconnect_bits),
        ] {
            if v < 8 || v % 8 != 0 || v > MAX_BUS_BITS {
                return bad(
                    field,
                    format!("{v} must be a multiple of 8 in 8..={MAX_BUS_BITS}"),
                );
            }
        }
        // Every delay converts to picoseconds without overflow and stays
        // below units::MAX_DELAY, so `now + delay` cannot wrap.
        for (field, ns) in [
            ("to_cluster_ns", self.to_cluster_ns),
            ("invoke_ns", self.invoke_ns),
            ("completion_ns", self.completion_ns),
            ("host.latency_ns", self.host.latency_ns),
        ] {
            units::delay_ns(field, ns)?;
        }
        for (field, c) in [
            ("dma_latency_cycles", self.dma_latency_cycles),
            ("assign_cycles", self.assign_cycles),
            ("doorbell_cycles", self.doorbell_cycles),
            ("quantum_cycles", self.quantum_cycles),
        ] {
            units::delay_cycles(field, c as u64, clock)?;
        }
        for (field, r) in [
            ("line_rate_gbps", self.line_rate_gbps),
            ("host.bandwidth_gbps", self.host.bandwidth_gbps),
        ] {
            if !Gbps(r).is_valid() {
                return bad(
                    field,
                    format!("{r} must be in {}..={} Gbit/s", Gbps::MIN, Gbps::MAX),
                );
            }
        }
        let t = &self.hpu;
        let costs = [
            ("hpu.alu", t.alu),
            ("hpu.load", t.load),
            ("hpu.store", t.store),
            ("hpu.branch", t.branch),
            ("hpu.jal", t.jal),
            ("hpu.jalr", t.jalr),
            ("hpu.mul", t.mul),
            ("hpu.mulh", t.mulh),
            ("hpu.div", t.div),
            ("hpu.csr", t.csr),
            ("hpu.ecall", t.ecall),
        ];
        for (field, v) in costs {
            // Every instruction costs at least one cycle: the watchdog and
            // the slice end rely on it.
            range(field, v, 1, MAX_INSTR_CYCLES)?;
        }
        let extras = [
            ("hpu.load_use_stall", t.load_use_stall),
            ("hpu.branch_taken_penalty", t.branch_taken_penalty),
            ("hpu.atomic", t.atomic),
            ("hpu.misaligned_penalty", t.misaligned_penalty),
        ];
        for (field, v) in extras
            .into_iter()
            .chain(t.mem_latency.iter().map(|&v| ("hpu.mem_latency", v)))
        {
            range(field, v, 0, MAX_INSTR_CYCLES)?;
        }
        Ok(())
    }
}

/// Documented maxima of the counts and sizes (not PsPIN values; those are
/// the profiles). Each keeps the memory the model allocates for it small.
/// Clusters: the SDK's `task_t` and the engine's maps are sized for 16.
pub const MAX_CLUSTERS: u32 = abi::MAX_CLUSTERS;
pub const MAX_HPUS_PER_CLUSTER: u32 = 64;
/// Program memory: 16 MiB above `PROG_MEM_BASE`.
pub const MAX_PROG_MEM: u32 = 16 << 20;
/// MPQs: 16x PsPIN's 256 (each costs the engine ~140 bytes).
pub const MAX_MPQS: u32 = 4096;
pub const MAX_CLUSTER_TASK_QUEUE: u32 = 4096;
pub const MAX_OUTSTANDING_CMDS: u32 = 256;
pub const MAX_NOTIFY_RING: u32 = 65536;
pub const MAX_QUANTUM_CYCLES: u32 = 1_000_000;
/// Handler output ring per ECTX: 64 MiB.
pub const MAX_OUTPUT_BUFFER: u32 = 64 << 20;
/// Counter indices per ECTX (each costs 16 bytes when used).
pub const MAX_COUNTERS_PER_ECTX: u32 = 65536;
/// DMA and interconnect width (PsPIN: 512 bit).
pub const MAX_BUS_BITS: u32 = 8192;
/// Any one entry of the HPU timing table (RI5CY's slowest, DIV, is 35).
pub const MAX_INSTR_CYCLES: u32 = 1000;

// All clusters' L1s fit the address map below L2.
const _: () = assert!(
    abi::L1_BASE as u64 + MAX_CLUSTERS as u64 * abi::L1_CLUSTER_STRIDE as u64
        <= abi::L2_HANDLER_BASE as u64
);

impl From<units::OutOfRange> for ConfigError {
    fn from(e: units::OutOfRange) -> ConfigError {
        ConfigError::Invalid {
            field: e.field,
            reason: format!("{} is out of range (limit: {})", e.value, e.limit),
        }
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

/// The image symbol naming the profile an image was built for
/// (`sdk/src/libc.c`, from `SOFTSPIN_PROFILE_NAME` of [`NicConfig::sdk_defines`]).
pub const PROFILE_SYMBOL: &str = "__softspin_profile";

/// The profile `img` records it was built for (`softspin build --profile`),
/// if it records one that is known.
pub fn image_profile(img: &softspin_hpu::ElfImage) -> Option<String> {
    let addr = *img.symbols.get(PROFILE_SYMBOL)?;
    let bytes = img.segments.iter().find_map(|s| {
        let off = addr.checked_sub(s.vaddr)? as usize;
        s.data.get(off..).filter(|b| !b.is_empty())
    })?;
    let name = &bytes[..bytes.iter().position(|&b| b == 0)?];
    let name = std::str::from_utf8(name).ok()?;
    NicConfig::profile(name).map(|_| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `image_profile` on what a hostile image may hold at the symbol: no
    /// NUL, an unknown name, bytes that are not UTF-8, an address in no
    /// segment or past a segment's data. Only a known name comes back.
    #[test]
    fn image_profile_reads_only_known_names() {
        use softspin_hpu::{ElfImage, Perm, Segment};
        let img = |at: u32, data: &[u8]| ElfImage {
            entry: 0,
            segments: vec![
                Segment {
                    vaddr: 0x100,
                    memsz: 8,
                    data: vec![1; 8],
                    perm: Perm::R,
                },
                Segment {
                    vaddr: 0x1000,
                    memsz: 0x100,
                    data: data.to_vec(),
                    perm: Perm::R,
                },
            ],
            symbols: [(PROFILE_SYMBOL.to_string(), at)].into(),
        };
        assert_eq!(
            image_profile(&img(0x1000, b"fpspin\0")),
            Some("fpspin".into())
        );
        assert_eq!(
            image_profile(&img(0x1004, b"xxxxpspin\0")),
            Some("pspin".into())
        );
        assert_eq!(image_profile(&img(0x1000, b"fpspin")), None);
        assert_eq!(image_profile(&img(0x1000, b"other\0")), None);
        assert_eq!(image_profile(&img(0x1000, b"\xff\xfe\0")), None);
        assert_eq!(image_profile(&img(0x1010, b"pspin\0")), None);
        assert_eq!(image_profile(&img(0x50, b"pspin\0")), None);
        assert_eq!(image_profile(&img(u32::MAX, b"pspin\0")), None);
    }

    /// A configuration equal to its named profile records the name; one
    /// that differs does not (sim cannot rebuild it from the name).
    #[test]
    fn sdk_defines_record_only_unchanged_profiles() {
        let rec = |c: &NicConfig| {
            c.sdk_defines()
                .into_iter()
                .find(|d| d.starts_with("SOFTSPIN_PROFILE_NAME="))
        };
        assert_eq!(
            rec(&NicConfig::fpspin()).as_deref(),
            Some("SOFTSPIN_PROFILE_NAME=fpspin")
        );
        assert_eq!(
            rec(&NicConfig::pspin()).as_deref(),
            Some("SOFTSPIN_PROFILE_NAME=pspin")
        );
        let mut c = NicConfig::pspin();
        c.hpu_stack_size *= 2;
        assert_eq!(rec(&c), None);
    }

    #[test]
    fn profiles_are_valid() {
        NicConfig::pspin().validate().unwrap();
        NicConfig::fpspin().validate().unwrap();
        // Every name in PROFILES (the messages' list) is one `profile` knows.
        for name in NicConfig::PROFILES {
            assert_eq!(NicConfig::profile(name).unwrap().profile, *name);
        }
        assert!(NicConfig::profile("gpspin").is_none());
    }

    /// Issue 29's 4 KiB MTU: a larger slot by configuration, within the
    /// packet buffers and on granules; the defaults stay 2 KiB.
    #[test]
    fn packet_slots_grow_by_config_within_the_buffers() {
        assert_eq!(NicConfig::pspin().pkt_slot_size, 2048);
        assert_eq!(NicConfig::fpspin().pkt_slot_size, 2048);
        let c = NicConfig::from_toml("pkt_slot_size = 4160\n", "t.toml").unwrap();
        assert_eq!(c.pkt_slot_size, 4160);
        NicConfig::from_toml("profile = \"fpspin\"\npkt_slot_size = 9216\n", "t.toml").unwrap();
        for (toml, why) in [
            ("pkt_slot_size = 4138\n", "multiple of 64"),
            ("pkt_slot_size = 32\n", "multiple of 64"),
            ("pkt_slot_size = 65536\n", "l1_pkt_buffer 32768"),
            (
                "l2_pkt_size = 4096\npkt_slot_size = 8192\n",
                "l2_pkt_size 4096",
            ),
        ] {
            let e = NicConfig::from_toml(toml, "t.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`pkt_slot_size`") && e.contains(why),
                "{toml}: {e}"
            );
        }
    }

    #[test]
    fn toml_overlays_a_profile_and_names_bad_fields() {
        let c = NicConfig::from_toml(
            "profile = \"fpspin\"\nmpqs = 8\n[hpu]\ndiv = 20\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!((c.clusters, c.mpqs, c.hpu.div, c.clock_mhz), (2, 8, 20, 40));
        let e = NicConfig::from_toml("clusters = 0\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`clusters`"), "{e}");
        let e = NicConfig::from_toml("clusterz = 3\n", "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.toml") && e.contains("clusterz"), "{e}");
        let e = NicConfig::from_toml("mpqs = \"many\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("mpqs"), "{e}");
        let e = NicConfig::from_toml("profile = \"x\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown profile"), "{e}");
        let e = NicConfig::from_toml("l1_size = 40000\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`hpu_stack_size`") && e.contains("at most 768"),
            "{e}"
        );
        let e = NicConfig::from_toml("l1_size = 33000\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`l1_pkt_buffer`") && e.contains("no room"),
            "{e}"
        );
    }

    fn err(toml: &str) -> String {
        NicConfig::from_toml(toml, "t.toml")
            .unwrap_err()
            .to_string()
    }

    /// The reproductions of issue 10: each was a panic, an abort or a
    /// silently wrong model before validation covered it.
    #[test]
    fn absurd_sizes_and_times_name_the_field_and_its_limit() {
        // u32 wrap in the L1 layout sum (was: panic).
        let e = err("l1_pkt_buffer = 4294967040\n");
        assert!(
            e.contains("`l1_pkt_buffer`") && e.contains("64..=l1_size (1048576)"),
            "{e}"
        );
        // 8 x 512 MiB stacks wrapped to a small sum (was: accepted).
        let e = err("hpu_stack_size = 536870912\n");
        assert!(
            e.contains("`hpu_stack_size`") && e.contains("at most 126848"),
            "{e}"
        );
        // 13.6 GB of MPQ state (was: allocation abort).
        let e = err("mpqs = 100000000\n");
        assert!(e.contains("`mpqs`") && e.contains("1..=4096"), "{e}");
        // ns -> ps wrapped to a latency lower than the default.
        let e = err("[host]\nlatency_ns = 9223372036854775807\n");
        assert!(
            e.contains("`host.latency_ns`") && e.contains("3600000000000 ns"),
            "{e}"
        );
        let e = err("quantum_cycles = 4294967295\n");
        assert!(e.contains("`quantum_cycles`"), "{e}");
        let e = err("clock_mhz = 1\ndma_latency_cycles = 4294967295\n");
        assert!(
            e.contains("`dma_latency_cycles`") && e.contains("3600000000 cycles"),
            "{e}"
        );
        let e = err("line_rate_gbps = 1e-300\n");
        assert!(e.contains("`line_rate_gbps`"), "{e}");
        let e = err("[hpu]\ndiv = 4000000000\n");
        assert!(e.contains("`hpu.div`") && e.contains("1..=1000"), "{e}");
        let e = err("l2_pkt_size = 4294967295\n");
        assert!(
            e.contains("`l2_pkt_size`") && e.contains("1..=12582912"),
            "{e}"
        );
        // The largest accepted values still give a working layout.
        let c = NicConfig::from_toml(
            "hpu_stack_size = 2896\nmpqs = 4096\n[host]\nlatency_ns = 3600000000000\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(c.l1_scratch_size(), 1048576 - 32768 - 8 * (128 + 2896));
    }
}
