//! Execution contexts (ECTX): what the host installs so that matching
//! packets run its handlers (seed 001 §3.1, seed 000 §5.5).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use softspin_hpu::{ElfImage, Perm, Program};

/// Which packets an ECTX receives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchRule {
    /// Every packet (the usual single-ECTX case).
    #[default]
    All,
    /// UDP packets to this destination port (Ethernet or IP-first frames).
    UdpDstPort(u16),
}

/// Everything needed to install an ECTX.
#[derive(Clone, Debug)]
pub struct EctxSpec {
    pub name: String,
    pub image: ElfImage,
    /// Symbols of the header, payload and completion handlers (any may be
    /// absent).
    pub hh: Option<String>,
    pub ph: Option<String>,
    pub th: Option<String>,
    /// Handler memory in L2 (base, size). Default: the image's data
    /// segments, from their first address, rounded up to 64 bytes.
    pub handler_mem: Option<(u32, u32)>,
    /// Host-memory window handlers may reach by DMA (host address, size).
    pub host_window: (u64, u64),
    /// Bytes of each packet copied to L1 before the handler starts
    /// (u32::MAX: the whole packet).
    pub l1_copy: u32,
    /// Scratchpad bytes on each cluster (missing entries: 0).
    pub scratchpad: Vec<u32>,
    /// Instruction budget of one handler invocation.
    pub watchdog: u64,
    /// A message with no packet for this long is reset (0: never).
    pub msg_timeout_ns: u64,
    pub matching: MatchRule,
}

impl EctxSpec {
    pub fn new(name: &str, image: ElfImage) -> EctxSpec {
        EctxSpec {
            name: name.to_string(),
            image,
            hh: None,
            ph: None,
            th: None,
            handler_mem: None,
            host_window: (DEFAULT_HOST_BASE, 1 << 20),
            l1_copy: u32::MAX,
            scratchpad: Vec::new(),
            watchdog: 1_000_000,
            msg_timeout_ns: 1_000_000,
            matching: MatchRule::All,
        }
    }
}

/// Default host address of an ECTX's host window (above 4 GiB, so handlers
/// must carry the high word, as on a real 64-bit host).
pub const DEFAULT_HOST_BASE: u64 = 0x7F00_0000_0000;

/// Errors installing or managing an ECTX.
#[derive(Debug, thiserror::Error)]
pub enum EctxError {
    #[error("ECTX `{ectx}`: image has no symbol `{sym}` (the {which} handler)")]
    NoHandler { ectx: String, sym: String, which: &'static str },
    #[error("ECTX `{ectx}`: at least one of the header, payload or completion handlers must be given")]
    NoHandlers { ectx: String },
    #[error("ECTX `{ectx}`: {what} 0x{base:08x}+0x{size:x} lies outside {region} (0x{rbase:08x}+0x{rsize:x})")]
    OutOfRegion { ectx: String, what: &'static str, base: u32, size: u32, region: &'static str, rbase: u32, rsize: u32 },
    #[error("ECTX `{ectx}`: {what} 0x{base:08x}+0x{size:x} overlaps ECTX `{other}`")]
    Overlap { ectx: String, what: &'static str, base: u32, size: u32, other: String },
    #[error("ECTX `{ectx}`: image segment at 0x{addr:08x} is neither code in program memory nor data inside the handler memory")]
    Segment { ectx: String, addr: u32 },
    #[error("ECTX `{ectx}`: image was built for NB_CLUSTERS={image}, the NIC has {nic} clusters (rebuild with the NIC's profile)")]
    Clusters { ectx: String, image: u32, nic: u32 },
    #[error("ECTX `{ectx}`: scratchpad of {want} bytes on cluster {cluster} does not fit ({free} bytes free)")]
    Scratchpad { ectx: String, cluster: usize, want: u32, free: u32 },
    #[error("ECTX `{ectx}`: {msg}")]
    Decode { ectx: String, msg: String },
    #[error("ECTX `{ectx}`: host window of size 0x{size:x} at 0x{base:x} wraps around")]
    HostWindow { ectx: String, base: u64, size: u64 },
    #[error("no ECTX with id {0}")]
    NoSuchEctx(usize),
    #[error("ECTX `{0}` is already active")]
    AlreadyActive(String),
    #[error("ECTX `{0}` is not active")]
    NotActive(String),
    #[error("ECTX `{0}` still has messages in flight; deactivate it and run until idle first")]
    Busy(String),
}

/// Per-cluster scratchpad placement of an installed ECTX.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scratch {
    pub addr: u32,
    pub size: u32,
}

/// An installed ECTX as the engine keeps it.
pub struct Ectx {
    pub spec: EctxSpec,
    pub program: Arc<Program>,
    /// Entry points of the three handlers.
    pub entries: [Option<u32>; 3],
    pub handler_mem: (u32, u32),
    /// Code range in program memory.
    pub code: (u32, u32),
    pub scratch: Vec<Scratch>,
    pub active: bool,
    /// Messages currently holding an MPQ.
    pub open_messages: u32,
    /// Tasks dispatched and not yet completed (they outlive a message
    /// reset by its timeout).
    pub tasks: u32,
}

impl Ectx {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// The three handler kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HandlerKind {
    Header = 0,
    Payload = 1,
    Completion = 2,
}

impl HandlerKind {
    pub fn name(self) -> &'static str {
        match self {
            HandlerKind::Header => "header",
            HandlerKind::Payload => "payload",
            HandlerKind::Completion => "completion",
        }
    }
}

/// Code and data extents of an image: (code base, code size), (data base,
/// data end).
pub(crate) fn extents(img: &ElfImage) -> ((u32, u32), Option<(u32, u32)>) {
    let code: Vec<_> = img.segments.iter().filter(|s| s.perm.has(Perm::X)).collect();
    let data: Vec<_> = img.segments.iter().filter(|s| !s.perm.has(Perm::X)).collect();
    let c0 = code.iter().map(|s| s.vaddr).min().unwrap_or(0);
    let c1 = code.iter().map(|s| s.end()).max().unwrap_or(0) as u32;
    let d = (!data.is_empty()).then(|| {
        (data.iter().map(|s| s.vaddr).min().unwrap(), data.iter().map(|s| s.end()).max().unwrap() as u32)
    });
    ((c0, c1.saturating_sub(c0)), d)
}
