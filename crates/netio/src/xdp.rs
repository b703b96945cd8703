//! The matcher as an XDP program. OWNER: rules/XDP helper. Contract:
//!
//! ```ignore
//! pub struct XdpMatcher;            // loaded + attached via a BPF link (detaches when dropped or the process dies)
//! impl XdpMatcher {
//!     pub fn attach(iface: &str) -> Result<XdpMatcher, NetError>;        // no rulesets: all frames XDP_PASS
//!     pub fn set_rulesets(&mut self, r: &[Ruleset]) -> Result<(), NetError>;
//!     pub fn register_socket(&mut self, queue: u32, fd: std::os::fd::RawFd) -> Result<(), NetError>;
//!     pub fn stats(&self) -> Result<XdpStats, NetError>;
//!     pub fn queues(iface: &str) -> Result<u32, NetError>;              // RX queues of the interface
//! }
//! pub struct XdpStats { pub matched: Vec<u64>, pub passed: u64, pub no_socket: u64 }
//! ```
