//! softspin-engine: a timed model of the PsPIN NIC.
//!
//! - [`config`]: the NIC configuration (PsPIN and FPsPIN profiles, TOML);
//! - [`ectx`]: execution contexts, installed and activated by the host;
//! - [`engine`]: the discrete-event model (inbound, MPQs, dispatcher,
//!   clusters, HPUs, command unit);
//! - [`outputs`]: what the NIC hands the host (sent packets, host writes,
//!   finished messages, handler errors, notifications);
//! - [`traffic`]: packet sources (generator, PsPIN-style traces, pcap);
//! - [`stats`]: the statistics report;
//! - [`units`]: ps, ns, cycles and Gbit/s with checked conversions.

pub mod config;
pub mod ectx;
pub mod engine;
pub mod outputs;
pub mod stats;
pub mod traffic;
pub mod units;

pub use config::{BufferFull, ConfigError, HostLink, NicConfig};
pub use ectx::{EctxError, EctxSpec, HandlerKind, MatchRule};
pub use engine::{
    DebugHpus, EctxId, Engine, HostBuffer, HostMemory, HostRegions, HostWrite, HpuDebugger,
    MessageDone, NodeTableError, Notification, OutPacket, Resume, RmaReport, RmaTransportConfig,
    SimError, TimelineEvent, RMA_COST_PS,
};
pub use stats::Report;
