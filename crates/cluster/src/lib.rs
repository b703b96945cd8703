//! A cluster of softspin NICs (issue 27): many hosts, each with its own
//! sPIN NIC (one `softspin nic` process per host, as on real machines),
//! that handlers and host programs address by rank.
//!
//! - [`table`]: the node table (TOML, docs/cluster.md): rank -> interface,
//!   IPv4, MAC, UDP port; parsed and validated once, the same file for
//!   real machines and for a local cluster. Pure: no system calls.
//! - [`local`]: a cluster on one Linux machine, one network namespace per
//!   node on a bridge (optionally through `softspin-lossy`), with a NIC
//!   process per node: what `softspin cluster up/down/exec/status` do.

pub mod local;
pub mod table;

pub use table::{Mac, Node, NodeTable, TableError};
