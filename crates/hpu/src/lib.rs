//! softspin-hpu: the handler processing unit (HPU) of softspin.
//!
//! An RV32IMAC + Zicsr interpreter built for running sPIN handlers fast and
//! with PsPIN's core timing:
//! - [`isa`] decodes instructions into a compact pre-decoded form;
//! - [`program::Program`] is the decoder cache, shared by every HPU, with
//!   per-block instruction and cycle counts;
//! - [`mem`] holds guest memory: shared blocks and per-HPU address spaces
//!   with permissions and latency classes;
//! - [`timing::TimingModel`] is the documented RI5CY/PsPIN cost table;
//! - [`hpu::Hpu`] is one core's state and its interpreter loop, which runs in
//!   bounded slices and hands `ecall`s to a [`hpu::Runtime`];
//! - [`elf`] loads RV32 ELF images, and [`baremetal`] runs whole programs
//!   (the conformance harness behind `softspin isa run`).

pub mod abi;
pub mod baremetal;
pub mod corev;
pub mod elf;
pub mod hpu;
pub mod isa;
#[cfg(feature = "jit")]
pub mod jit;
pub mod mem;
pub mod program;
pub mod timing;

pub use elf::{ElfError, ElfImage, Segment};
pub use hpu::{Ecall, Fault, FaultKind, Hpu, Runtime, Stop};
pub use mem::{AddressSpace, MemBlock, Perm};
pub use program::Program;
pub use timing::{MemClass, TimingModel};

/// The JIT (feature `jit`) compiles a region at its entry's N-th use by
/// default: compiling costs as much as interpreting it many thousand times,
/// and state machines (Embench's nsichneu) have hundreds of lukewarm regions.
/// On Embench-IoT (docs/perf-interpreter.md, "JIT by default") 65,535 gave
/// the JIT 1.40x the interpreter's speed in geometric mean, 16,000 1.30x,
/// 1,000 1.13x, 262,144 1.24x and 1,000,000 1.03x; the simulator's handlers
/// loop enough to reach it within a few hundred packets. An entry block
/// longer than 16 instructions turns hot sooner, after as many instructions
/// (`jit::heat`). Defined without the feature too, for the CLI's help.
pub const JIT_COMPILE_AFTER: u32 = 65_536;
