//! Execution contexts (ECTX): what the host installs so that matching
//! packets run its handlers (seed 001 §3.1, seed 000 §5.5).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use softspin_hpu::{ElfImage, Perm, Program};

use crate::config::NicConfig;
use crate::units;

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
    /// PsPIN's layout (seed 004 §3, its gdriver): `handler_mem` is a
    /// region of its own that the image's data need not lie in; the
    /// image's data/bss are installed once and shared by every ECTX of the
    /// same image. false: handler memory contains the image's data.
    pub separate_handler_mem: bool,
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
            separate_handler_mem: false,
            host_window: (DEFAULT_HOST_BASE, 1 << 20),
            l1_copy: u32::MAX,
            scratchpad: Vec::new(),
            watchdog: 1_000_000,
            msg_timeout_ns: 1_000_000,
            matching: MatchRule::All,
        }
    }
}

/// Largest host window: `task_t.host_mem_size` is a 32-bit `size_t` on the
/// HPUs, so a larger window could not be described to the handler.
pub const MAX_HOST_WINDOW: u64 = u32::MAX as u64;

impl EctxSpec {
    /// Check the spec against the NIC's limits before anything is placed;
    /// `Engine::install` calls it, so the CLI, scenario files and the host
    /// API share it. Errors name the field and its limit.
    pub fn validate(&self, cfg: &NicConfig) -> Result<(), EctxError> {
        let ectx = &self.name;
        let bad = |field: &'static str, reason: String| {
            Err(EctxError::Invalid {
                ectx: ectx.clone(),
                field,
                reason,
            })
        };
        if self.name.is_empty() {
            return bad("name", "must not be empty".into());
        }
        for (sym, which) in [
            (&self.hh, "header"),
            (&self.ph, "payload"),
            (&self.th, "completion"),
        ] {
            if let Some(s) = sym {
                if !self.image.symbols.contains_key(s) {
                    return Err(EctxError::UnknownHandler {
                        ectx: ectx.clone(),
                        sym: s.clone(),
                        which,
                        known: handler_symbols(&self.image),
                    });
                }
            }
        }
        if self.scratchpad.len() > cfg.clusters as usize {
            return bad(
                "scratchpad",
                format!(
                    "has {} entries, the NIC has {} clusters (one entry per cluster)",
                    self.scratchpad.len(),
                    cfg.clusters
                ),
            );
        }
        let room = cfg.l1_scratch_size();
        if let Some((k, &v)) = self.scratchpad.iter().enumerate().find(|(_, &v)| v > room) {
            return bad(
                "scratchpad",
                format!("of {v} bytes on cluster {k} exceeds the L1 scratchpad area of {room} bytes (l1_size minus packet buffer, runtime areas and stacks)"),
            );
        }
        let (base, size) = self.host_window;
        if size > MAX_HOST_WINDOW {
            return bad(
                "host window size",
                format!("{size} exceeds {MAX_HOST_WINDOW} bytes (task_t.host_mem_size is 32-bit)"),
            );
        }
        if base.checked_add(size).is_none() {
            return Err(EctxError::HostWindow {
                ectx: ectx.clone(),
                base,
                size,
            });
        }
        if self.watchdog == 0 {
            return bad("watchdog", "must be at least 1 instruction".into());
        }
        if self.msg_timeout_ns != 0 {
            units::delay_ns("msg_timeout_ns", self.msg_timeout_ns).map_err(|e| {
                EctxError::Invalid {
                    ectx: ectx.clone(),
                    field: e.field,
                    reason: format!(
                        "{} is out of range (limit: {}; 0 = never)",
                        e.value, e.limit
                    ),
                }
            })?;
        }
        Ok(())
    }
}

/// The image's likely handler symbols for an error message: code symbols
/// named like PsPIN handlers (`*_hh`, `*_ph`, `*_th`), else every public
/// code symbol.
pub fn handler_symbols(img: &ElfImage) -> Vec<String> {
    let code = |a: u32| {
        img.segments
            .iter()
            .any(|s| s.perm.has(Perm::X) && s.vaddr <= a && (a as u64) < s.end())
    };
    let public: Vec<&String> = img
        .symbols
        .iter()
        .filter(|(n, &a)| code(a) && !n.starts_with(['_', '.', '$']))
        .map(|(n, _)| n)
        .collect();
    let named: Vec<String> = public
        .iter()
        .filter(|n| n.ends_with("_hh") || n.ends_with("_ph") || n.ends_with("_th"))
        .map(|n| n.to_string())
        .collect();
    if named.is_empty() {
        public.into_iter().take(30).cloned().collect()
    } else {
        named
    }
}

pub fn known_handlers(known: &[String]) -> String {
    if known.is_empty() {
        "; the image has no code symbols".into()
    } else {
        format!("; handler symbols in the image: {}", known.join(", "))
    }
}

/// Default host address of an ECTX's host window (above 4 GiB, so handlers
/// must carry the high word, as on a real 64-bit host): the ABI's.
pub const DEFAULT_HOST_BASE: u64 = softspin_hpu::abi::HOST_WINDOW_BASE;

/// Errors installing or managing an ECTX.
#[derive(Debug, thiserror::Error)]
pub enum EctxError {
    #[error("ECTX `{ectx}`: image has no symbol `{sym}` (the {which} handler)")]
    NoHandler {
        ectx: String,
        sym: String,
        which: &'static str,
    },
    /// As `NoHandler`, from `EctxSpec::validate`, with the image's handler
    /// symbols.
    #[error(
        "ECTX `{ectx}`: image has no symbol `{sym}` (the {which} handler){}",
        known_handlers(known)
    )]
    UnknownHandler {
        ectx: String,
        sym: String,
        which: &'static str,
        known: Vec<String>,
    },
    #[error("ECTX `{ectx}`: `{field}` {reason}")]
    Invalid {
        ectx: String,
        field: &'static str,
        reason: String,
    },
    #[error(
        "ECTX `{ectx}`: at least one of the header, payload or completion handlers must be given"
    )]
    NoHandlers { ectx: String },
    #[error("ECTX `{ectx}`: {what} 0x{base:08x}+0x{size:x} lies outside {region} (0x{rbase:08x}+0x{rsize:x})")]
    OutOfRegion {
        ectx: String,
        what: &'static str,
        base: u32,
        size: u32,
        region: &'static str,
        rbase: u32,
        rsize: u32,
    },
    #[error("ECTX `{ectx}`: {what} 0x{base:08x}+0x{size:x} overlaps ECTX `{other}` (link one of the images elsewhere: `softspin build --code-base ADDR --data-base ADDR`)")]
    Overlap {
        ectx: String,
        what: &'static str,
        base: u32,
        size: u32,
        other: String,
    },
    /// The loader rule ([`ElfImage::check_fits`]): code in program memory,
    /// data inside the handler memory.
    #[error("ECTX `{ectx}`: image {source}")]
    Segment {
        ectx: String,
        source: softspin_hpu::ElfError,
    },
    #[error("ECTX `{ectx}`: image was built for NB_CLUSTERS={image}, the NIC has {nic} clusters ({})", cluster_hint(*image, *nic))]
    Clusters { ectx: String, image: u32, nic: u32 },
    #[error("ECTX `{ectx}`: scratchpad of {want} bytes on cluster {cluster} does not fit ({free} bytes free)")]
    Scratchpad {
        ectx: String,
        cluster: usize,
        want: u32,
        free: u32,
    },
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
    /// The image's data region (base, size) when it lies outside handler
    /// memory (`separate_handler_mem`), shared with ECTXs of the same image.
    pub image_data: Option<(u32, u32)>,
    /// Code range in program memory.
    pub code: (u32, u32),
    pub scratch: Vec<Scratch>,
    /// `task_t` with this ECTX's fields encoded and the per-task ones zero
    /// (`TaskDescriptor::encode_ectx_fields`), copied at every task start.
    pub task_t: Vec<u8>,
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
    let code: Vec<_> = img
        .segments
        .iter()
        .filter(|s| s.perm.has(Perm::X))
        .collect();
    let data: Vec<_> = img
        .segments
        .iter()
        .filter(|s| !s.perm.has(Perm::X))
        .collect();
    let c0 = code.iter().map(|s| s.vaddr).min().unwrap_or(0);
    let c1 = code.iter().map(|s| s.end()).max().unwrap_or(0) as u32;
    let d = (!data.is_empty()).then(|| {
        (
            data.iter().map(|s| s.vaddr).min().unwrap(),
            data.iter().map(|s| s.end()).max().unwrap() as u32,
        )
    });
    ((c0, c1.saturating_sub(c0)), d)
}

/// What to do about an image built for another cluster count: name the
/// profiles of both sides and the flags that pick them.
fn cluster_hint(image: u32, nic: u32) -> String {
    let of = |n: u32| {
        ["pspin", "fpspin"]
            .into_iter()
            .find(|p| crate::NicConfig::profile(p).is_some_and(|c| c.clusters == n))
    };
    let rebuild = match of(nic) {
        Some(p) => format!("rebuild it with `softspin build --profile {p}`"),
        None => {
            "rebuild it with the NIC's configuration (`softspin build --config FILE`)".to_string()
        }
    };
    match of(image) {
        Some(p) => format!(
            "the image was built with profile `{p}`: run it with `--profile {p}`, or {rebuild}"
        ),
        None => rebuild,
    }
}
