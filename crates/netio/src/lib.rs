//! softspin's packet I/O: how real frames reach the engine and leave it.
//!
//! * [`rules`]: FPsPIN's matching engine (seed 000 §3.2.1) -- rulesets of
//!   match units `(I, M, S, E)` combined by `and`/`or`, an end-of-message
//!   unit and a message-id field; the pure-Rust matcher is the reference the
//!   XDP program is tested against, and socket mode's matcher.
//! * [`xdp`]: the same matcher as an XDP program on the interface (rules in
//!   a BPF map), redirecting matched frames to AF_XDP sockets and passing
//!   everything else to the kernel stack untouched (the bypass).
//! * [`xsk`]: AF_XDP sockets (UMEM, fill/completion/RX/TX rings).
//! * [`socket`]: the fallback without XDP: UDP sockets on the rules' ports.
//! * [`port`]: the [`Port`] both modes implement for the live NIC.
//!
//! All but [`rules`] need the feature `live` (default on): the XDP program
//! is built with clang and libbpf's headers, which the pure part does not
//! need (`default-features = false`).

#[cfg(feature = "live")]
pub mod port;
pub mod rules;
#[cfg(feature = "live")]
pub mod socket;
#[cfg(feature = "live")]
pub mod xdp;
#[cfg(feature = "live")]
pub mod xsk;

#[cfg(feature = "live")]
pub use port::{open_port, Mode, Port, PortStats, RxFrame};
pub use rules::{MatchUnit, Matcher, MsgIdField, Ruleset, RulesetMode, Verdict};
#[cfg(feature = "live")]
pub use socket::SocketPort;
#[cfg(feature = "live")]
pub use xsk::{XdpPort, XskConfig};

/// Errors of the packet I/O layer; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("no such interface `{0}`")]
    NoSuchInterface(String),
    /// Needs root (CAP_NET_ADMIN / CAP_BPF / CAP_NET_RAW).
    #[error("{what}: not permitted (run as root, or use --mode socket)")]
    NotPermitted { what: String },
    #[error("interface `{iface}` already has an XDP program attached; detach it first (ip link set dev {iface} xdp off) or use --mode socket")]
    XdpBusy { iface: String },
    /// The interface's frames would not fit an AF_XDP frame (the kernel
    /// would refuse the attach, or drop such frames silently).
    #[error("interface `{iface}` has MTU {mtu}, more than the {limit} bytes an AF_XDP frame takes ({frame_size}-byte frame less the kernel's {headroom}-byte XDP headroom and the 14-byte Ethernet header); lower it (ip link set dev {iface} mtu {limit}) or use --mode socket")]
    MtuTooLarge {
        iface: String,
        mtu: u32,
        limit: u32,
        frame_size: u32,
        headroom: u32,
    },
    /// The kernel or interface cannot do what XDP mode needs.
    #[error("{0} (use --mode socket)")]
    Unsupported(String),
    /// A bad ruleset or rules file: says which ruleset/field and why.
    #[error("rules: {0}")]
    Rules(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl NetError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> NetError {
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => NetError::NotPermitted { what },
            _ => NetError::Io { what, source },
        }
    }
}
