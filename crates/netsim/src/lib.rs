//! Networks of simulated sPIN NICs (issue 29, docs/scale.md).
//!
//! Seed 004 §4.2 coupled a network simulator (LogGOPSim) with a CPU
//! simulator (gem5) that timed every handler. Here SimGrid owns simulated
//! time and the network (a fat tree of 36-port switches), and every node's
//! NIC is a softspin engine driven through its embedding API
//! (`softspin_engine::Engine`, "Embedding") running the same handler
//! binaries as the live cluster.

pub mod loggp;
pub mod params;
pub mod trace;

pub use params::{NetParams, NicKind, ParamsError};
pub mod hostmem;
pub mod node;
pub mod platform;
pub mod sg;
pub mod sim;
pub mod workload;

pub use platform::FatTree;
pub use sim::{run, NodeStats, Outcome, RunSpec};
