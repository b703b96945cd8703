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
/// default: compiling costs as much as interpreting it many thousand times
/// (on Embench-IoT, 16,000 did better than 64, 4,000 and 30,000). Defined
/// without the feature too, for the CLI's help.
pub const JIT_COMPILE_AFTER: u16 = 16_000;
