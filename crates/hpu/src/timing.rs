//! Timing model of the PsPIN HPU core.
//!
//! PsPIN's HPUs are RI5CY cores (PULP): 32-bit, in-order, single-issue, four
//! pipeline stages, with single-cycle access to the cluster's L1 scratchpad
//! (seed 001 §3). The model charges every instruction a base cost by class and
//! adds the few dynamic effects an in-order core has: a stall when a load's
//! result is used by the next instruction, a penalty for taken branches and
//! jumps, and the wait for memories slower than L1.
//!
//! Costs are charged per basic block where they are static (everything but
//! taken branches and memory latency), so the model costs almost nothing at
//! run time. Every default below names its source; "estimate" marks values
//! that no seed or RTL parameter pins down.

use crate::isa::Class;

/// Latency class of a memory region, as seen from one HPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MemClass {
    /// The L1 scratchpad (TCDM) of the HPU's own cluster.
    L1Local = 0,
    /// The L1 of another cluster, reached through the cluster interconnect.
    L1Remote = 1,
    /// L2 handler memory and the L2 packet buffer.
    L2 = 2,
    /// Program memory (read as data).
    ProgMem = 3,
    /// Anything else an embedding maps (e.g. the bare-metal runner's RAM),
    /// modelled as single-cycle.
    Ideal = 4,
}

pub const MEM_CLASSES: usize = 5;

impl MemClass {
    pub const ALL: [MemClass; MEM_CLASSES] = [
        MemClass::L1Local,
        MemClass::L1Remote,
        MemClass::L2,
        MemClass::ProgMem,
        MemClass::Ideal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MemClass::L1Local => "l1",
            MemClass::L1Remote => "l1_remote",
            MemClass::L2 => "l2",
            MemClass::ProgMem => "prog_mem",
            MemClass::Ideal => "ideal",
        }
    }
}

/// PsPIN's core clock: it closes timing at 1 GHz (seed 001 §4.1).
pub const PSPIN_CLOCK_MHZ: u32 = 1000;
/// FPsPIN's clock on the FPGA: 40 MHz (seed 000 Table 6.2).
pub const FPSPIN_CLOCK_MHZ: u32 = 40;

/// The configurable timing table. All values are in core clock cycles.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct TimingModel {
    /// Core clock in MHz (PsPIN closes timing at 1 GHz, seed 001 §4.1).
    pub clock_mhz: u32,
    /// ALU, LUI/AUIPC, FENCE: 1 cycle (RI5CY: single-issue, 1 instr/cycle).
    pub alu: u32,
    /// Load/store issue cost with single-cycle L1 (seed 001 §3: "single-cycle
    /// access scratchpad").
    pub load: u32,
    pub store: u32,
    /// Extra cycle when the next instruction uses a load's result (RI5CY
    /// load-use hazard: 1 stall cycle).
    pub load_use_stall: u32,
    /// Conditional branch: 1 cycle not taken, +2 when taken (RI5CY: taken
    /// branches take 3 cycles; PsPIN's `rt_time_wait_cycles` relies on it).
    pub branch: u32,
    pub branch_taken_penalty: u32,
    /// JAL / JALR: 2 cycles (RI5CY: jumps resolve in the ID stage, one bubble).
    pub jal: u32,
    pub jalr: u32,
    /// MUL: 1 cycle; MULH*: 5 cycles (RI5CY multiplier).
    pub mul: u32,
    pub mulh: u32,
    /// DIV/REM: RI5CY's serial divider takes 3..35 cycles depending on the
    /// operands; we charge the upper bound (estimate: conservative).
    pub div: u32,
    /// Counter CSR read: 1 cycle (RI5CY CSR access in the EX stage).
    pub csr: u32,
    /// `ecall` into the runtime: cost of handing a command to the HPU driver.
    /// PsPIN issues a command with ~7 stores plus one load to the memory-mapped
    /// command unit (runtime `spin_send_packet`), so 8 cycles (estimate).
    pub ecall: u32,
    /// AMO / LR / SC on top of a load's cost and the region latency: 0.
    /// PsPIN's AMOs are performed at the memory and are single-cycle (seed
    /// 001 §4.3: "RISC-V AMOs enable single-cycle atomic operations"), so
    /// the core sees an AMO as a load.
    pub atomic: u32,
    /// Misaligned load/store: RI5CY splits it into two accesses, +1 cycle.
    pub misaligned_penalty: u32,
    /// Extra wait cycles per access, by memory class, on top of `load`/`store`:
    /// L1 local 0 (single-cycle TCDM, seed 001 §3); remote L1 8 (estimate from
    /// the interconnect hops in seed 001 Fig. 4); L2 24 (seed 001 §3.2.2:
    /// "memory accesses to L2 memories take up to 25 cycles"); program memory
    /// 24 (estimate: same interconnect as L2); ideal 0.
    pub mem_latency: [u32; MEM_CLASSES],
    /// Charge innermost counted loops as PULP hardware loops (Xpulp
    /// `lp.setup`, which PsPIN's GCC emits and clang does not): no cycles
    /// for the loop's compare-and-branch nor for a pure counter update, and
    /// one cycle for the setup when the loop exits. The rule that picks
    /// such loops is in `program.rs` (`hw_loop`). Off here; the NIC
    /// profiles turn it on (docs/validation.md §5 shows the evidence).
    pub hw_loops: bool,
}

impl Default for TimingModel {
    fn default() -> Self {
        TimingModel {
            clock_mhz: PSPIN_CLOCK_MHZ,
            alu: 1,
            load: 1,
            store: 1,
            load_use_stall: 1,
            branch: 1,
            branch_taken_penalty: 2,
            jal: 2,
            jalr: 2,
            mul: 1,
            mulh: 5,
            div: 35,
            csr: 1,
            ecall: 8,
            atomic: 0,
            misaligned_penalty: 1,
            mem_latency: [0, 8, 24, 24, 0],
            hw_loops: false,
        }
    }
}

impl TimingModel {
    /// Static cost of one instruction of class `c`, without hazards.
    pub fn base_cost(&self, c: Class) -> u32 {
        match c {
            Class::Alu => self.alu,
            Class::Load => self.load,
            Class::Store => self.store,
            Class::Branch => self.branch,
            Class::Jal => self.jal,
            Class::Jalr => self.jalr,
            Class::Mul => self.mul,
            Class::MulH => self.mulh,
            Class::Div => self.div,
            Class::Csr => self.csr,
            Class::Ecall => self.ecall,
            Class::Atomic => self.load + self.atomic,
            Class::None => 0,
        }
    }

    /// Cycles to nanoseconds at this clock (in 128 bits where `cycles *
    /// 1000` would wrap, for a long run at a fast clock; saturates).
    pub fn cycles_to_ns(&self, cycles: u64) -> u64 {
        let mhz = self.clock_mhz.max(1) as u64;
        match cycles.checked_mul(1000) {
            // The same quotient without a 128-bit division (called per task).
            Some(c) => c / mhz,
            None => u64::try_from(cycles as u128 * 1000 / mhz as u128).unwrap_or(u64::MAX),
        }
    }
}
