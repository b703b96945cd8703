//! softspin-host: the host API of softspin.
//!
//! An application offloads sPIN handlers the way it would launch GPU
//! kernels (seed 004 §1, §3.2; seed 000 §4.2, §5.5–§5.7): open a NIC, load a
//! handler image, lend the NIC host memory, install and activate an
//! execution context (ECTX), feed traffic, run, and collect what the
//! handlers did. The C library (`crates/host-c`) and the Python module
//! (`crates/host-py`) are thin layers over this crate: one model, three
//! languages.
//!
//! ```
//! use softspin_host::{sdk, EctxOptions, Event, Nic};
//! # let dir = std::env::temp_dir().join(format!("softspin-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! // A payload handler that sends every packet back, built with the SDK.
//! let src = dir.join("echo.c");
//! std::fs::write(&src, "#include <spin.h>\n\
//!     __handler__ void echo_ph(handler_args_t *a) {\n\
//!         spin_send_packet(a->task->pkt_mem, a->task->pkt_mem_size, NULL);\n\
//!     }\n")?;
//! sdk::build(&sdk::BuildOptions::handler(&[&src], dir.join("echo.elf")))?;
//!
//! let mut nic = Nic::open("pspin")?;
//! let image = nic.load_image(dir.join("echo.elf"))?;
//! let window = nic.host_window(1 << 20)?; // host memory handlers may DMA to
//! let ectx = nic.install(&image, EctxOptions {
//!     ph: Some("echo_ph".into()),
//!     host_window: Some(window),
//!     ..Default::default()
//! })?;
//! nic.activate(ectx)?;
//! nic.send_message(ectx, 0, &[7u8; 3000], 1024)?; // one message, split into 4 packets
//! nic.run_until_idle()?;
//! let echoed = nic.events().into_iter().filter(|e| matches!(e, Event::Outbound(_))).count();
//! assert_eq!(echoed, 4);
//! assert_eq!(nic.report().packets, 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

mod footprint;
pub mod hostif;
#[cfg(feature = "live")]
mod live;
#[cfg(not(feature = "live"))]
#[path = "live_off.rs"]
mod live;
#[cfg(feature = "live")]
mod live_capture;
mod nodes;
pub mod rma;
pub use rma::{RmaCompletion, RmaHandle, RmaOp, RmaRequest};
pub mod sdk;
pub mod slmp;
#[cfg(feature = "live")]
mod status;

/// PsPIN's generic driver (`examples/generic_driver/gdriver.c`): the NIC and
/// host memory it splits between its ECTXs. `softspin sim --gdriver` and
/// `sdk/pspin`'s gdriver (through softspin.h's `SS_GDRIVER_*`) use these.
pub mod gdriver {
    /// ECTXs the driver supports; every region below is split between them.
    pub const EC_MAX: u32 = 2;
    /// L2 handler memory for all ECTXs: 1 MiB (512 KiB each).
    pub const L2_SIZE: u32 = 1 << 20;
    /// Host memory for all ECTXs: 1 GiB (512 MiB each).
    pub const HOST_SIZE: u64 = 1 << 30;
    /// Scratchpad on every cluster for all ECTXs: 800 KiB (400 KiB each).
    pub const SCRATCHPAD_SIZE: u32 = 800 << 10;
}

pub use footprint::Footprint;
pub use hostif::client::NicClient;
#[cfg(feature = "live")]
pub use live::{AttachOptions, LiveStats, Mode, PortStats, MAX_RX_COALESCE};
#[cfg(feature = "live")]
pub use live_capture::{RxCaptured, RX_CAPTURE_MAX};
pub use nodes::{check_interface, load_node_table};
pub use softspin_cluster::{Node, NodeTable};
pub use softspin_netio::Ruleset;
#[cfg(feature = "live")]
pub use status::{drops_by_cause, EctxErrors, LiveStatus};

pub use softspin_engine::ectx::HandlerKind;
pub use softspin_engine::engine::{MessageRecord, OutputRecord};
use softspin_engine::outputs;
use softspin_engine::stats::Pending;
pub use softspin_engine::stats::{ErrorCause, Rejected, Report};
pub use softspin_engine::stats::{PENDING_ERRORS_FIRST, PENDING_ERRORS_LATEST};
pub use softspin_engine::traffic::{
    build_frame, Arrival, FrameKind, GenConfig, Payload, Source, TrafficError,
};
use softspin_engine::traffic::{Generator, LineClock, PcapSource, TraceSource};
use softspin_engine::units::{Ns, Ps, HORIZON};
pub use softspin_engine::{BufferFull, EctxId, HostBuffer, NicConfig, TimelineEvent};
use softspin_engine::{EctxError, EctxSpec, Engine, MatchRule, SimError};
pub use softspin_hpu::FaultKind;
use softspin_hpu::{abi, ElfError, ElfImage};

/// Largest host window, in bytes (the engine's limit: `task_t` gives
/// handlers the window's size in the 32-bit `host_mem_size`). Larger windows
/// are refused when made or lent, never truncated.
pub use softspin_engine::ectx::MAX_HOST_WINDOW;

/// Host memory the NIC allocates itself (`host_window`), in bytes, over all
/// its windows at once: the host memory this model keeps. Lent buffers
/// (`lend`) are the application's memory and do not count. Allocations below
/// the limit are fallible too: a failed one is an error, not an abort.
pub const MAX_HOST_MEMORY: u64 = 4 << 30;

/// Everything that can go wrong, as values. [`Error::kind`] sorts them into
/// the categories the C and Python bindings report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] softspin_engine::ConfigError),
    #[error(transparent)]
    Image(#[from] softspin_hpu::ElfError),
    #[error(transparent)]
    Ectx(#[from] softspin_engine::EctxError),
    #[error(transparent)]
    Sim(#[from] softspin_engine::SimError),
    #[error(transparent)]
    Traffic(#[from] softspin_engine::traffic::TrafficError),
    #[error("unknown profile `{0}` (known: {})", NicConfig::PROFILES.join(", "))]
    Profile(String),
    /// A file the host API reads itself (a NIC configuration) is unreadable.
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Host(String),
    #[error("NIC memory: {0}")]
    NicMemory(String),
    #[error("ECTX {0} was uninstalled (or never existed)")]
    NoEctx(u32),
    #[error("{0}")]
    Invalid(String),
    /// A size, length or time beyond a documented limit (or memory the host
    /// could not allocate for it); the message names the argument and limit.
    #[error("{0}")]
    Limit(String),
    #[error("build: {0}")]
    Build(String),
    /// The live NIC's interface, matcher or sockets.
    #[error(transparent)]
    Net(#[from] softspin_netio::NetError),
    /// The SLMP sender: bad settings, a message over 4 GiB, a socket error,
    /// or it gave up (the statistics up to then are attached).
    #[error(transparent)]
    Slmp(#[from] softspin_slmp::Error),
}

/// The category of an [`Error`], like `std::io::ErrorKind`. Each binding
/// maps every kind to its own error code or exception class (exhaustively:
/// a new kind does not compile until every binding names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument softspin cannot use (frame kind, packet size, unknown
    /// notification, HPU index, NULL pointer in C...).
    InvalidArgument,
    /// A size, length or time beyond a documented limit.
    Limit,
    /// Unknown profile or invalid NIC configuration.
    Config,
    /// A file could not be read.
    Io,
    /// Not a usable handler image.
    Image,
    /// A symbol (or a handler named at install) is not in the image.
    Symbol,
    /// The ECTX's memory overlaps an installed ECTX.
    Overlap,
    /// NIC memory: outside every region, or handler memory exhausted.
    NicMemory,
    /// Host memory: outside every window, or a window the NIC did not make.
    HostMemory,
    /// The ECTX is in the wrong state (active, inactive, busy).
    State,
    /// No such ECTX (never installed, or uninstalled).
    NoEctx,
    /// Any other install problem.
    Ectx,
    /// Bad traffic parameter, trace or pcap file.
    Traffic,
    /// The simulation refused a packet.
    Sim,
    /// Building a handler image failed.
    Build,
    /// The live NIC: no such interface, not permitted, XDP busy or
    /// unsupported, bad rules, socket errors.
    Net,
}

impl ErrorKind {
    /// Every kind, for tests and documentation.
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::InvalidArgument,
        ErrorKind::Limit,
        ErrorKind::Config,
        ErrorKind::Io,
        ErrorKind::Image,
        ErrorKind::Symbol,
        ErrorKind::Overlap,
        ErrorKind::NicMemory,
        ErrorKind::HostMemory,
        ErrorKind::State,
        ErrorKind::NoEctx,
        ErrorKind::Ectx,
        ErrorKind::Traffic,
        ErrorKind::Sim,
        ErrorKind::Build,
        ErrorKind::Net,
    ];
}

fn traffic_kind(e: &TrafficError) -> ErrorKind {
    match e {
        TrafficError::Io { .. } => ErrorKind::Io,
        _ => ErrorKind::Traffic,
    }
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Error::Config(_) | Error::Profile(_) => K::Config,
            Error::Image(ElfError::Io(_)) | Error::Io(_) => K::Io,
            Error::Image(ElfError::NoSymbol(_)) => K::Symbol,
            Error::Image(_) => K::Image,
            Error::Ectx(x) => match x {
                EctxError::NoHandler { .. } | EctxError::UnknownHandler { .. } => K::Symbol,
                EctxError::Invalid { .. } => K::Limit,
                EctxError::Overlap { .. } => K::Overlap,
                EctxError::OutOfRegion { .. }
                | EctxError::Segment { .. }
                | EctxError::Scratchpad { .. } => K::NicMemory,
                EctxError::AlreadyActive(_) | EctxError::NotActive(_) | EctxError::Busy(_) => {
                    K::State
                }
                EctxError::NoSuchEctx(_) => K::NoEctx,
                EctxError::HostWindow { .. } => K::HostMemory,
                EctxError::NoHandlers { .. }
                | EctxError::Clusters { .. }
                | EctxError::Decode { .. } => K::Ectx,
            },
            Error::Sim(SimError::Traffic(t)) | Error::Traffic(t) => traffic_kind(t),
            Error::Sim(_) => K::Sim,
            Error::Host(_) => K::HostMemory,
            Error::NicMemory(_) => K::NicMemory,
            Error::NoEctx(_) => K::NoEctx,
            Error::Invalid(_) => K::InvalidArgument,
            Error::Limit(_) => K::Limit,
            Error::Build(_) => K::Build,
            Error::Net(_) => K::Net,
            Error::Slmp(e) => match e {
                softspin_slmp::Error::Config { .. } => K::InvalidArgument,
                softspin_slmp::Error::MessageTooLarge { .. } => K::Limit,
                softspin_slmp::Error::Io { .. } | softspin_slmp::Error::GaveUp { .. } => K::Net,
            },
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A loaded handler image.
#[derive(Clone, Debug)]
pub struct Image {
    elf: ElfImage,
}

impl Image {
    /// First NIC address past the image's data in L2 handler memory (its
    /// start when it has none): where a region of its own may begin.
    pub fn data_end(&self) -> u32 {
        let data = self
            .elf
            .segments
            .iter()
            .filter(|x| !x.perm.has(softspin_hpu::Perm::X));
        data.map(|x| u32::try_from(x.end()).unwrap_or(u32::MAX))
            .max()
            .unwrap_or(abi::L2_HANDLER_BASE)
    }

    /// Address of a symbol (a handler or a global in handler memory).
    pub fn symbol(&self, name: &str) -> Result<u32> {
        Ok(self.elf.symbol(name)?)
    }

    pub fn symbols(&self) -> impl Iterator<Item = (&str, u32)> {
        self.elf.symbols.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

/// A host-memory window lent to the NIC: handlers see it at `base` (a
/// 64-bit host address). Only windows this NIC made (`host_window`, `lend`),
/// exactly as made, are accepted by `install`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostWindow {
    pub base: u64,
    pub size: u64,
}

/// An installed execution context: a handle never reused within one NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ectx(pub u32);

/// How to install an ECTX.
#[derive(Clone, Debug, Default)]
pub struct EctxOptions {
    pub name: Option<String>,
    /// Header, payload and completion handler symbols.
    pub hh: Option<String>,
    pub ph: Option<String>,
    pub th: Option<String>,
    /// Handler memory size (from the image's data start); room beyond the
    /// image's data is what `nic_alloc` hands out. Default: the data only.
    pub handler_mem_size: Option<u32>,
    /// PsPIN's handler memory: a region of its own at this L2 address
    /// (`handler_mem_size` bytes, default 64) that `task->handler_mem`
    /// points at, apart from the image's data, which is installed once and
    /// shared by every ECTX of the same image (seed 004 §3, PsPIN's
    /// gdriver). Default: handler memory starts at the image's data.
    pub handler_mem_addr: Option<u32>,
    /// A window from `host_window` or `lend` on this NIC, unchanged.
    pub host_window: Option<HostWindow>,
    /// Bytes of each packet copied to L1 (default: all).
    pub l1_copy: Option<u32>,
    /// Scratchpad bytes on each cluster (at most one entry per cluster).
    pub scratchpad: Vec<u32>,
    /// Instruction budget per handler (default 1,000,000).
    pub watchdog: Option<u64>,
    /// Message timeout in ns (default 1 ms; 0 = never; at most one hour,
    /// `softspin_engine::units::MAX_DELAY`).
    pub msg_timeout_ns: Option<u64>,
    /// Take only UDP packets to this port (default: every packet). On a
    /// live NIC this stands for the ruleset `udp:PORT`.
    pub udp_dst_port: Option<u16>,
    /// The matching-engine rulesets that select this ECTX's frames on a
    /// live NIC (seed 000 §3.2.1; see docs/rules.md). A live ECTX needs at
    /// least one (or `udp_dst_port`).
    pub rules: Vec<Ruleset>,
    /// Put the RMA transport block (docs/rma.md, "Reliability") in front of
    /// this ECTX for frames on RMA's UDP port, as node `rank` (default:
    /// none).
    pub rma: Option<softspin_engine::RmaTransportConfig>,
}

// What the NIC hands the host: the engine's types (one definition, in
// softspin_engine::outputs), with the ECTX named by its handle.

/// A packet a handler sent (spin_send_packet, or an RDMA put to `dest`).
pub type OutPacket = outputs::OutPacket<Ectx>;
/// An 8-byte host-direct write.
pub type HostWrite = outputs::HostWrite<Ectx>;
/// A message whose handlers all finished.
pub type MessageDone = outputs::MessageDone<Ectx>;
/// A handler that failed (fault, watchdog, abort, rejected command) or a
/// message that did (timeout). Fields that do not apply are `None`.
pub type HandlerError = outputs::HandlerError<Ectx>;
/// A request a handler posted to the host (spin_notify); answer it with
/// `Nic::respond(id, value)`.
pub type Notification = outputs::Notification<Ectx>;

pub use softspin_engine::outputs::{Output, OutputKind};

/// The kinds of [`Event`] and their fields, in [`Event::kind`]'s order; the
/// C and Python bindings test that they carry every one.
pub const EVENTS: [OutputKind; 5] = [
    <OutPacket as Output>::KIND,
    <HostWrite as Output>::KIND,
    <MessageDone as Output>::KIND,
    <HandlerError as Output>::KIND,
    OutputKind {
        name: "ErrorsDropped",
        fields: &["count"],
    },
];

/// What happened on the NIC, in time order within each kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Outbound(OutPacket),
    HostWrite(HostWrite),
    MessageDone(MessageDone),
    HandlerError(HandlerError),
    /// This many handler errors happened here, between the errors before
    /// and after this event, and their details were dropped: more than
    /// `PENDING_ERRORS_FIRST` (1000) came between two takes of the events,
    /// and only the first of them and the latest `PENDING_ERRORS_LATEST`
    /// (100) are kept. (The report's counts by cause include them.)
    ErrorsDropped {
        count: u64,
    },
}

impl Event {
    /// This event's entry in [`EVENTS`].
    pub fn kind(&self) -> OutputKind {
        EVENTS[match self {
            Event::Outbound(_) => 0,
            Event::HostWrite(_) => 1,
            Event::MessageDone(_) => 2,
            Event::HandlerError(_) => 3,
            Event::ErrorsDropped { .. } => 4,
        }]
    }
}

/// One packet for [`Nic::send_packets`]: a whole frame of message `msg_id`;
/// `eom` ends the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub frame: Vec<u8>,
    pub msg_id: u32,
    pub eom: bool,
}

/// How [`Nic::send_packets`] spaces packets in NIC time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// Back to back at the NIC's line rate (`line_rate_gbps`).
    LineRate,
    /// Back to back at this many Gbit/s.
    Gbps(f64),
    /// All at once (each still behind every packet sent before it).
    Burst,
}

struct EctxInfo {
    id: EctxId,
    rules: Vec<Ruleset>,
    heap: (u32, u32),
    frame: FrameKind,
    port: u16,
    /// Its host window, and where its image keeps the RMA window table
    /// (`rma::window::SYMBOL`), for `export_window`.
    host_window: Option<HostWindow>,
    rma_windows: Option<u32>,
    /// Where its image keeps the RMA initiator's table (`rma::txn::SYMBOL`).
    rma_txns: Option<u32>,
}

/// A host window this NIC made: its size, and whether the NIC owns the bytes.
struct WindowInfo {
    size: u64,
    owned: bool,
}

/// A sPIN NIC (today: the simulated PsPIN NIC; the live NIC opens through
/// the same call in a later release).
pub struct Nic {
    engine: Engine,
    ectxs: HashMap<u32, EctxInfo>,
    /// Engine ECTX slot -> the handle last installed there. Slots are reused
    /// by the engine; events are taken from it before every install, so an
    /// event always maps to the handle that caused it.
    slots: HashMap<EctxId, Ectx>,
    /// Events and notifications taken from the engine, already mapped;
    /// handler errors apart, bounded (`PendingErrors`).
    events: Vec<Event>,
    errors: softspin_engine::stats::PendingErrors<HandlerError>,
    notes: Vec<Notification>,
    next_ectx: u32,
    windows: BTreeMap<u64, WindowInfo>,
    owned_bytes: u64,
    next_window: u64,
    /// Record outbound packets as events (a live NIC sends them anyway).
    keep_events: bool,
    /// Attached to an interface (`Nic::attach`).
    live: Option<live::Live>,
    /// The cluster's node table and this NIC's rank (`Nic::set_node_table`).
    nodes: Option<(softspin_cluster::NodeTable, u32)>,
    /// Host-posted RMA operations, per ECTX (`Nic::rma_post`).
    rma: rma::Initiators,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("profile", &self.config().profile)
            .field("now_ps", &self.engine.now_ps())
            .finish()
    }
}

/// Host addresses handed to windows: high, so handlers carry 64-bit ones.
const WINDOW_BASE: u64 = softspin_hpu::abi::HOST_WINDOW_BASE;
/// Windows start this far apart, so none can grow into the next.
const WINDOW_STRIDE: u64 = softspin_hpu::abi::HOST_WINDOW_STRIDE;

/// A NIC configuration from a TOML file (see docs/sim.md), validated.
pub fn load_config(path: impl AsRef<Path>) -> Result<NicConfig> {
    let p = path.as_ref();
    let text = softspin_input::read_text(p, softspin_input::TEXT_CAP, "NIC configuration")
        .map_err(|e| Error::Io(e.to_string()))?;
    Ok(NicConfig::from_toml(&text, &p.display().to_string())?)
}

/// A zeroed buffer, allocated fallibly (a failure is an error, not an abort)
/// and lazily zeroed by the allocator (untouched pages cost no memory).
fn zeroed(size: usize, what: &str) -> Result<Vec<u8>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let fail = || {
        Error::Limit(format!(
            "{what}: cannot allocate {size} bytes of host memory"
        ))
    };
    let layout = std::alloc::Layout::array::<u8>(size).map_err(|_| fail())?;
    // SAFETY: the layout's size is non-zero.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(fail());
    }
    // SAFETY: `p` comes from the global allocator with exactly this layout
    // (size bytes, alignment 1) and all of it is initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(p, size, size) })
}

impl Nic {
    /// Open the simulated NIC with a named profile: "pspin" or "fpspin".
    pub fn open(profile: &str) -> Result<Nic> {
        let cfg = NicConfig::profile(profile).ok_or_else(|| Error::Profile(profile.into()))?;
        Nic::with_config(cfg)
    }

    /// Open the simulated NIC described by a TOML file (see docs/sim.md).
    pub fn open_config_file(path: impl AsRef<Path>) -> Result<Nic> {
        Nic::with_config(load_config(path)?)
    }

    /// Busy time of all HPUs so far, ps of NIC time (the model's handler
    /// time; live or simulated).
    pub fn hpu_busy_ps(&self) -> u64 {
        self.engine.hpu_busy().1
    }

    pub fn with_config(cfg: NicConfig) -> Result<Nic> {
        let mut engine = Engine::new(cfg)?;
        engine.keep_outputs(true);
        // Every handler error becomes an event, however long the NIC runs.
        engine.hand_over_errors(true);
        // A host program may answer notifications between runs.
        engine.pause_for_host(true);
        Ok(Nic {
            engine,
            ectxs: HashMap::new(),
            slots: HashMap::new(),
            events: Vec::new(),
            errors: Default::default(),
            notes: Vec::new(),
            next_ectx: 0,
            windows: BTreeMap::new(),
            owned_bytes: 0,
            next_window: WINDOW_BASE,
            keep_events: true,
            live: None,
            nodes: None,
            rma: Default::default(),
        })
    }

    pub fn config(&self) -> &NicConfig {
        self.engine.config()
    }

    /// Load a handler image (an RV32 ELF built by `softspin build`).
    pub fn load_image(&self, path: impl AsRef<Path>) -> Result<Image> {
        Ok(Image {
            elf: ElfImage::load(path.as_ref())?,
        })
    }

    pub fn image_from_bytes(&self, elf: &[u8]) -> Result<Image> {
        Ok(Image {
            elf: ElfImage::parse(elf)?,
        })
    }

    // -- host memory ------------------------------------------------------------

    /// A zeroed host-memory window of `size` bytes owned by the NIC object
    /// (at most [`MAX_HOST_WINDOW`], and [`MAX_HOST_MEMORY`] over all of them).
    ///
    /// ```
    /// let mut nic = softspin_host::Nic::open("fpspin")?;
    /// let w = nic.host_window(4096)?;
    /// nic.host_write(w.base + 8, b"data")?;
    /// assert_eq!(nic.host_read(w.base + 8, 4)?, b"data");
    /// assert!(nic.host_read(w.base + 4095, 2).is_err()); // past the window
    /// assert!(nic.host_window(1 << 40).is_err()); // beyond MAX_HOST_WINDOW
    /// # Ok::<(), softspin_host::Error>(())
    /// ```
    pub fn host_window(&mut self, size: usize) -> Result<HostWindow> {
        let size64 = Self::window_size(size)?;
        let total = self.owned_bytes.saturating_add(size64);
        if total > MAX_HOST_MEMORY {
            return Err(Error::Limit(format!(
                "host_window size {size}: the NIC's windows would hold {total} bytes, above MAX_HOST_MEMORY ({MAX_HOST_MEMORY}); \
                 lend application buffers instead, or unlend windows"
            )));
        }
        let buf = zeroed(size, "host_window")?;
        let w = self.add_window(Box::new(buf), size64, true)?;
        self.owned_bytes += size64;
        Ok(w)
    }

    /// Lend the NIC an application buffer (used in place, no copies), of at
    /// most [`MAX_HOST_WINDOW`] bytes.
    pub fn lend(&mut self, mut buf: Box<dyn HostBuffer>) -> Result<HostWindow> {
        let size = Self::window_size(buf.bytes().len())?;
        self.add_window(buf, size, false)
    }

    fn window_size(size: usize) -> Result<u64> {
        if size == 0 {
            return Err(Error::Host("a host window needs at least one byte".into()));
        }
        let s = u64::try_from(size).unwrap_or(u64::MAX);
        if s > MAX_HOST_WINDOW {
            return Err(Error::Limit(format!(
                "host window size {size} is above MAX_HOST_WINDOW ({MAX_HOST_WINDOW} bytes: task_t's 32-bit host_mem_size)"
            )));
        }
        Ok(s)
    }

    fn add_window(
        &mut self,
        buf: Box<dyn HostBuffer>,
        size: u64,
        owned: bool,
    ) -> Result<HostWindow> {
        let base = self.next_window;
        let next = base
            .checked_add(WINDOW_STRIDE)
            .ok_or_else(|| Error::Limit("the host address range for windows is used up".into()))?;
        self.engine
            .add_host_buffer(base, buf)
            .map_err(Error::Host)?;
        self.next_window = next;
        self.windows.insert(base, WindowInfo { size, owned });
        Ok(HostWindow { base, size })
    }

    /// Take a lent buffer back (or free a window from `host_window`).
    pub fn unlend(&mut self, w: HostWindow) -> Result<Box<dyn HostBuffer>> {
        self.known_window(w)?;
        let buf = self
            .engine
            .remove_host_buffer(w.base)
            .ok_or_else(|| Error::Host(format!("no host window at 0x{:x}", w.base)))?;
        if let Some(i) = self.windows.remove(&w.base) {
            if i.owned {
                self.owned_bytes -= i.size;
            }
        }
        Ok(buf)
    }

    /// `w` exactly as this NIC made it.
    fn known_window(&self, w: HostWindow) -> Result<()> {
        match self.windows.get(&w.base) {
            None => Err(Error::Host(format!("no host window at 0x{:x}: use a window from host_window or lend on this NIC", w.base))),
            Some(i) if i.size != w.size => Err(Error::Host(format!(
                "host window at 0x{:x} has {} bytes, not {}: pass the window as host_window/lend returned it",
                w.base, i.size, w.size
            ))),
            Some(_) => Ok(()),
        }
    }

    /// The window holding `addr..addr+len`, or an error naming the range.
    fn check_host_range(&self, addr: u64, len: usize) -> Result<()> {
        let inside = self
            .windows
            .range(..=addr)
            .next_back()
            .is_some_and(|(&b, i)| {
                let off = addr - b;
                off < i.size && (len as u64) <= i.size - off
            });
        if inside
            || len == 0
                && self
                    .windows
                    .range(..=addr)
                    .next_back()
                    .is_some_and(|(&b, i)| addr - b <= i.size)
        {
            return Ok(());
        }
        Err(Error::Host(format!(
            "host range 0x{addr:x}+{len} is not in a window (it must lie inside one host window)"
        )))
    }

    pub fn host_read(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.check_host_range(addr, len)?;
        let mut v = zeroed(len, "host_read")?;
        if !self.engine.host_memory().read(addr, &mut v) {
            return Err(Error::Host(format!(
                "host range 0x{addr:x}+{len} is not in a window"
            )));
        }
        Ok(v)
    }

    pub fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.check_host_range(addr, data.len())?;
        if !self.engine.host_memory().write(addr, data) {
            return Err(Error::Host(format!(
                "host range 0x{addr:x}+{} is not in a window",
                data.len()
            )));
        }
        Ok(())
    }

    // -- ECTX -------------------------------------------------------------------

    /// Install an ECTX for `image`: its code goes to program memory and its
    /// data to handler memory. It receives no packet before `activate`.
    pub fn install(&mut self, image: &Image, o: EctxOptions) -> Result<Ectx> {
        let handle = self.next_ectx;
        let name = o.name.clone().unwrap_or_else(|| format!("ectx{handle}"));
        if let Some(w) = o.host_window {
            self.known_window(w)?;
        }
        let mut s = EctxSpec::new(&name, image.elf.clone());
        s.hh = o.hh;
        s.ph = o.ph;
        s.th = o.th;
        let data = image
            .elf
            .segments
            .iter()
            .filter(|x| !x.perm.has(softspin_hpu::Perm::X));
        let (d0, d1) = data.fold((u64::MAX, 0u64), |(lo, hi), x| {
            (lo.min(x.vaddr as u64), hi.max(x.end()))
        });
        let (d0, d1) = if d0 == u64::MAX {
            (abi::L2_HANDLER_BASE as u64, abi::L2_HANDLER_BASE as u64)
        } else {
            (d0, d1)
        };
        let used = (d1 - d0).next_multiple_of(64);
        let size = (o.handler_mem_size.unwrap_or(0) as u64).max(used).max(64);
        let (Ok(d0), Ok(used), Ok(size), true) = (
            u32::try_from(d0),
            u32::try_from(used),
            u32::try_from(size),
            d0 + size <= 1 << 32,
        ) else {
            return Err(Error::Limit(format!(
                "handler memory of {size} bytes at 0x{d0:x} passes the end of the 32-bit NIC address space (handler_mem_size)"
            )));
        };
        s.handler_mem = Some((d0, size));
        let mut heap = (d0 + used, d0 + size);
        if let Some(a) = o.handler_mem_addr {
            let size = o.handler_mem_size.unwrap_or(64).max(64);
            let Some(end) = a.checked_add(size) else {
                return Err(Error::Limit(format!(
                    "handler memory of {size} bytes at 0x{a:x} passes the end of the 32-bit NIC address space (handler_mem_addr, handler_mem_size)"
                )));
            };
            s.handler_mem = Some((a, size));
            s.separate_handler_mem = true;
            heap = (a, end);
        }
        s.host_window = o.host_window.map(|w| (w.base, w.size)).unwrap_or((0, 0));
        s.l1_copy = o.l1_copy.unwrap_or(u32::MAX);
        s.scratchpad = o.scratchpad;
        if let Some(w) = o.watchdog {
            s.watchdog = w;
        }
        if let Some(t) = o.msg_timeout_ns {
            s.msg_timeout_ns = t;
        }
        s.matching = o
            .udp_dst_port
            .map(MatchRule::UdpDstPort)
            .unwrap_or_default();
        let rules = softspin_netio::rules::or_udp_port(o.rules, o.udp_dst_port);
        if rules.is_empty() && self.live.is_some() {
            return Err(Error::Invalid(format!(
                "ECTX `{name}`: a live NIC's ECTX needs a ruleset (EctxOptions::rules, or udp_dst_port) to select its frames"
            )));
        }
        // Events of the slot's previous holder are mapped before it changes hands.
        self.collect();
        let id = self.engine.install(s)?;
        if let Some(cfg) = o.rma {
            self.engine
                .enable_rma_transport(id, cfg)
                .map_err(Error::Invalid)?;
        }
        self.next_ectx += 1;
        let info = EctxInfo {
            id,
            rules,
            heap,
            frame: FrameKind::Ip,
            port: o
                .udp_dst_port
                .unwrap_or(softspin_engine::traffic::DEFAULT_UDP_PORT),
            host_window: o.host_window,
            rma_windows: image.symbol(softspin_wire::rma::window::SYMBOL).ok(),
            rma_txns: image.symbol(softspin_wire::rma::txn::SYMBOL).ok(),
        };
        self.ectxs.insert(handle, info);
        self.slots.insert(id, Ectx(handle));
        Ok(Ectx(handle))
    }

    fn info(&self, e: Ectx) -> Result<&EctxInfo> {
        self.ectxs.get(&e.0).ok_or(Error::NoEctx(e.0))
    }

    /// The name an ECTX was installed with.
    pub fn ectx_name(&self, e: Ectx) -> Result<String> {
        let id = self.info(e)?.id;
        Ok(self
            .engine
            .ectx(id)
            .map(|x| x.name().to_string())
            .unwrap_or_default())
    }

    /// Start delivering packets to the ECTX (on a live NIC: its ruleset
    /// goes into the matcher now).
    pub fn activate(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        self.engine.activate(id)?;
        self.reprogram_matcher()
    }

    pub fn deactivate(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        self.engine.deactivate(id)?;
        self.reprogram_matcher()
    }

    /// Remove an inactive ECTX with no message in flight.
    pub fn uninstall(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        self.collect();
        self.engine.uninstall(id)?;
        self.ectxs.remove(&e.0);
        self.rma.forget(e);
        self.reprogram_matcher()
    }

    /// Frames this ECTX's host-side sends build: IP first (PsPIN, default)
    /// or Ethernet (FPsPIN).
    pub fn set_frame_kind(&mut self, e: Ectx, k: FrameKind) -> Result<()> {
        self.ectxs.get_mut(&e.0).ok_or(Error::NoEctx(e.0))?.frame = k;
        Ok(())
    }

    // -- NIC memory -------------------------------------------------------------

    /// Allocate `size` bytes of the ECTX's handler memory (beyond its
    /// image's data; size the region with `handler_mem_size`). Returns the
    /// NIC address: store it in structures the handlers will follow.
    pub fn nic_alloc(&mut self, e: Ectx, size: usize, align: usize) -> Result<u32> {
        let info = self.ectxs.get_mut(&e.0).ok_or(Error::NoEctx(e.0))?;
        let align = align.max(1);
        if !align.is_power_of_two() {
            return Err(Error::NicMemory(format!(
                "alignment {align} is not a power of two"
            )));
        }
        let left = |at: u64| (info.heap.1 as u64).saturating_sub(at);
        let at = (info.heap.0 as u64)
            .checked_next_multiple_of(align as u64)
            .unwrap_or(u64::MAX);
        if at.saturating_add(size as u64) > info.heap.1 as u64 {
            return Err(Error::NicMemory(format!(
                "{size} bytes (aligned to {align}) do not fit the ECTX's handler memory ({} bytes left; raise handler_mem_size)",
                left(info.heap.0 as u64)
            )));
        }
        // Both fit below heap.1, a u32.
        info.heap.0 = (at + size as u64) as u32;
        Ok(at as u32)
    }

    /// `addr..addr+len` as a NIC range, or an error naming the range.
    fn nic_range(addr: u32, len: usize) -> Result<u32> {
        match u32::try_from(len) {
            Ok(l) if addr as u64 + l as u64 <= 1 << 32 => Ok(l),
            _ => Err(Error::NicMemory(format!(
                "0x{addr:08x}+{len} passes the end of the 32-bit NIC address space"
            ))),
        }
    }

    pub fn nic_write(&mut self, addr: u32, data: &[u8]) -> Result<()> {
        Self::nic_range(addr, data.len())?;
        if !self.engine.write_nic(addr, data) {
            return Err(Error::NicMemory(format!(
                "0x{addr:08x}+{} is not NIC memory",
                data.len()
            )));
        }
        Ok(())
    }

    pub fn nic_read(&self, addr: u32, len: usize) -> Result<Vec<u8>> {
        Self::nic_range(addr, len)?;
        self.engine
            .read_nic(addr, len)
            .ok_or_else(|| Error::NicMemory(format!("0x{addr:08x}+{len} is not NIC memory")))
    }

    /// Write a NIC pointer (a 32-bit NIC address) at `addr`: the relocation
    /// step when the host builds linked structures for handlers.
    pub fn nic_write_ptr(&mut self, addr: u32, target: u32) -> Result<()> {
        self.nic_write(addr, &target.to_le_bytes())
    }

    // -- traffic ----------------------------------------------------------------

    /// Hand the NIC packets (whole frames), in order, spaced by `pacing`
    /// from now or from the last packet sent before, whichever is later.
    /// Every host-side send goes through here.
    pub fn send_packets(
        &mut self,
        packets: impl IntoIterator<Item = Packet>,
        pacing: Pacing,
    ) -> Result<()> {
        let rate = match pacing {
            Pacing::LineRate => self.config().line_rate_gbps,
            Pacing::Gbps(g) => g,
            Pacing::Burst => f64::INFINITY,
        };
        let mut clock = LineClock::new(rate).map_err(|m| Error::Invalid(format!("pacing: {m}")))?;
        // Refused here, before any is queued, not when the run reaches it.
        let packets: Vec<Packet> = packets.into_iter().collect();
        let slot = self.config().pkt_slot_size as usize;
        if let Some((i, p)) = packets
            .iter()
            .enumerate()
            .find(|(_, p)| p.frame.len() > slot)
        {
            return Err(Error::Limit(format!(
                "packet {i} (message {}) is {} bytes, above the NIC's packet slot (pkt_slot_size {slot})",
                p.msg_id,
                p.frame.len()
            )));
        }
        let start = self.engine.next_inject_ps();
        let mut seq: HashMap<u32, usize> = HashMap::new();
        for p in packets {
            let t = clock
                .advance(p.frame.len())
                .and_then(|d| start.checked_add(d))
                .ok_or_else(|| {
                    Error::Limit(format!(
                        "pacing at {rate} Gbit/s runs past the end of NIC time"
                    ))
                })?;
            let k = seq.entry(p.msg_id).or_default();
            let origin = format!("message {} packet {k}", p.msg_id);
            *k += 1;
            self.engine.inject(Arrival {
                time_ps: t,
                frame: p.frame,
                msg_id: p.msg_id,
                eom: p.eom,
                origin: origin.into(),
                ectx: None,
            });
        }
        Ok(())
    }

    /// Hand the NIC one packet (a whole frame) of message `msg_id`, now
    /// (after every packet sent before).
    pub fn send_packet(&mut self, frame: Vec<u8>, msg_id: u32, eom: bool) -> Result<()> {
        self.send_packets([Packet { frame, msg_id, eom }], Pacing::Burst)
    }

    /// A frame to an ECTX's port (its frame kind) around `payload`.
    pub fn frame_for(&self, e: Ectx, payload: &[u8]) -> Result<Vec<u8>> {
        let info = self.info(e)?;
        let kind = info.frame;
        Ok(build_frame(
            kind,
            kind.header_len() + payload.len(),
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            9330,
            info.port,
            |i| payload[i],
        )?)
    }

    /// Send `payload` as message `msg_id` to an ECTX: split into packets of
    /// at most `packet_size` bytes (headers included, at most the NIC's
    /// `pkt_slot_size`) with IP/UDP (or Ethernet) headers to the ECTX's
    /// port, spaced at the line rate.
    pub fn send_message(
        &mut self,
        e: Ectx,
        msg_id: u32,
        payload: &[u8],
        packet_size: usize,
    ) -> Result<()> {
        let hdr = self.info(e)?.frame.header_len();
        let slot = self.config().pkt_slot_size as usize;
        if packet_size > slot {
            return Err(Error::Limit(format!(
                "packet_size {packet_size} is above the NIC's packet slot (pkt_slot_size {slot})"
            )));
        }
        let room = packet_size
            .checked_sub(hdr)
            .filter(|r| *r > 0)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "packet_size {packet_size} leaves no room after the {hdr} header bytes"
                ))
            })?;
        let chunks: Vec<&[u8]> = if payload.is_empty() {
            vec![&[][..]]
        } else {
            payload.chunks(room).collect()
        };
        let payloads: Vec<Vec<u8>> = chunks.into_iter().map(<[u8]>::to_vec).collect();
        self.send_payloads(e, msg_id, &payloads)
    }

    /// Send message `msg_id` to an ECTX as the given packet payloads (each
    /// gets the ECTX's IP/UDP or Ethernet headers), spaced at the line rate;
    /// the last one ends the message.
    pub fn send_payloads(&mut self, e: Ectx, msg_id: u32, payloads: &[Vec<u8>]) -> Result<()> {
        let n = payloads.len();
        let pkts = payloads
            .iter()
            .enumerate()
            .map(|(k, p)| {
                Ok(Packet {
                    frame: self.frame_for(e, p)?,
                    msg_id,
                    eom: k + 1 == n,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.send_packets(pkts, Pacing::LineRate)
    }

    /// Feed packets from the generator.
    pub fn feed_generator(&mut self, g: GenConfig) -> Result<()> {
        self.feed(Box::new(Generator::new(g)?))
    }

    /// Feed a PsPIN-style text trace.
    pub fn feed_trace(&mut self, path: impl AsRef<Path>, frame: FrameKind) -> Result<()> {
        self.feed(Box::new(TraceSource::open(path.as_ref(), frame)?))
    }

    /// Feed a pcap file (at its timestamps, or at `rate_gbps`).
    pub fn feed_pcap(&mut self, path: impl AsRef<Path>, rate_gbps: Option<f64>) -> Result<()> {
        self.feed(Box::new(PcapSource::open(path.as_ref(), rate_gbps)?))
    }

    pub fn feed(&mut self, src: Box<dyn Source>) -> Result<()> {
        Ok(self.engine.set_source(src)?)
    }

    // -- running ----------------------------------------------------------------

    /// Run until nothing is left to do (or every handler waits for the host).
    /// Live: process what has arrived, without waiting for more.
    pub fn run_until_idle(&mut self) -> Result<()> {
        if self.live.is_some() {
            return self.live_until_idle(None);
        }
        Ok(self.engine.run(None, |_| {})?)
    }

    /// Run for `ns` nanoseconds of NIC time (the NIC clock must stay within
    /// `units::HORIZON`, as `--until-ns` does, so delays on top cannot wrap).
    /// Live: `ns` of wall time (NIC time follows the wall clock).
    pub fn run_for(&mut self, ns: u64) -> Result<()> {
        // One limit for both: a live NIC's clock is NIC time too.
        let until = self.run_for_end(ns)?;
        if self.live.is_some() {
            return self.live_for(ns);
        }
        Ok(self.engine.run(Some(until.0), |_| {})?)
    }

    /// The NIC time `run_for(ns)` would end at, or why it cannot run that
    /// long (a live or simulated NIC alike).
    pub fn run_for_end(&self, ns: u64) -> Result<Ps> {
        Ns(ns)
            .to_ps()
            .and_then(|d| Ps(self.engine.now_ps()).checked_add(d))
            .filter(|&u| u <= HORIZON)
            .ok_or_else(|| {
                Error::Limit(format!(
                    "run_for({ns} ns) runs past the simulation horizon (limit: NIC time at most {} ns, 2^63 ps)",
                    HORIZON.max_ns()
                ))
            })
    }

    /// Current NIC time in nanoseconds.
    pub fn now_ns(&self) -> f64 {
        Ps(self.engine.now_ps()).as_ns_f64()
    }

    /// Current NIC time in picoseconds.
    pub fn now_ps(&self) -> u64 {
        self.engine.now_ps()
    }

    // -- results ----------------------------------------------------------------

    /// The handle of the ECTX in engine slot `slot`. Every slot an event
    /// names was installed through `install`, which maps it; uninstall keeps
    /// the mapping, and install replaces it only after taking the engine's
    /// events. So `None` cannot happen for an engine event.
    fn handle_of(&self, slot: EctxId) -> Option<Ectx> {
        let h = self.slots.get(&slot).copied();
        debug_assert!(h.is_some(), "engine slot {slot} was never installed");
        h
    }

    /// Take the engine's new events and notifications, mapping its ECTX
    /// slots to handles while the map is current.
    fn collect(&mut self) {
        let (out, hw, done) = self.engine.drain_outputs();
        for p in self.engine.drain_errors() {
            let x = match p {
                Pending::Error(x) => x,
                Pending::Dropped(n) => {
                    self.errors.add_dropped(n);
                    continue;
                }
            };
            let Some(ectx) = self.handle_of(x.ectx) else {
                continue;
            };
            self.errors.push(x.map_ectx(|_| ectx));
        }
        for o in out.into_iter().filter(|_| self.keep_events) {
            let Some(ectx) = self.handle_of(o.ectx) else {
                continue;
            };
            self.events.push(Event::Outbound(o.map_ectx(|_| ectx)));
        }
        for w in hw.into_iter().filter(|_| self.keep_events) {
            let Some(ectx) = self.handle_of(w.ectx) else {
                continue;
            };
            self.events.push(Event::HostWrite(w.map_ectx(|_| ectx)));
        }
        for d in done.into_iter().filter(|_| self.keep_events) {
            let Some(ectx) = self.handle_of(d.ectx) else {
                continue;
            };
            self.events.push(Event::MessageDone(d.map_ectx(|_| ectx)));
        }
        for n in self.engine.poll_notifications() {
            let Some(ectx) = self.handle_of(n.ectx) else {
                continue;
            };
            self.notes.push(n.map_ectx(|_| ectx));
        }
    }

    /// Events since the last call: handler errors, then outbound packets,
    /// host writes and completed messages, each kind in time order within
    /// a batch.
    /// Every handler error is reported: as a `HandlerError`, or counted in
    /// an `ErrorsDropped` at its place when more than
    /// `PENDING_ERRORS_FIRST` came since the last call.
    pub fn events(&mut self) -> Vec<Event> {
        self.collect();
        let mut v: Vec<Event> = self
            .errors
            .take()
            .into_iter()
            .map(|p| match p {
                Pending::Error(e) => Event::HandlerError(e),
                Pending::Dropped(count) => Event::ErrorsDropped { count },
            })
            .collect();
        v.append(&mut self.events);
        v
    }

    /// Host notifications that reached the host.
    pub fn poll_notifications(&mut self) -> Vec<Notification> {
        self.collect();
        std::mem::take(&mut self.notes)
    }

    /// Run until at least one notification is available (or nothing is left
    /// to run: the NIC idle, at most waiting for the host's responses),
    /// then return those available; empty means none will come.
    /// Live: wait for the wire at most `AttachOptions::wait_timeout`.
    pub fn wait_notifications(&mut self) -> Result<Vec<Notification>> {
        if self.live.is_some() {
            return self.live_wait_notifications();
        }
        loop {
            let n = self.poll_notifications();
            if !n.is_empty() {
                return Ok(n);
            }
            let until = self.engine.now_ps().saturating_add(100_000);
            self.engine.run(Some(until), |_| {})?;
            if self.engine.is_idle() {
                // Nothing will come unless the host acts.
                return Ok(self.poll_notifications());
            }
        }
    }

    /// Answer a notification with a 64-bit value.
    pub fn respond(&mut self, id: u32, value: u64) -> Result<()> {
        self.engine.respond(id, value).map_err(Error::Invalid)
    }

    pub fn report(&self) -> Report {
        self.engine.report()
    }

    /// (packets admitted, messages completed) of an ECTX.
    pub fn ectx_counts(&self, e: Ectx) -> Result<(u64, u64)> {
        Ok(self.engine.ectx_counts(self.info(e)?.id))
    }

    /// Performance counters pushed by an ECTX's handlers: (index, sum, count).
    pub fn counters(&self, e: Ectx) -> Result<Vec<(u32, u64, u64)>> {
        Ok(self.engine.counters(self.info(e)?.id))
    }

    /// The printf output of HPU `hpu` (global index).
    pub fn hpu_stdout(&self, hpu: usize) -> Result<String> {
        if hpu >= self.engine.hpu_count() {
            return Err(Error::Invalid(format!(
                "no HPU {hpu} (the NIC has {})",
                self.engine.hpu_count()
            )));
        }
        Ok(String::from_utf8_lossy(&self.engine.hpu_stdout(hpu)).into_owned())
    }

    pub fn hpu_count(&self) -> usize {
        self.engine.hpu_count()
    }

    // -- runs without a host program (`softspin sim`) ---------------------------

    /// On (the default): `run_until_idle` returns when only timers are left
    /// while a handler waits for the host, so the host can answer first.
    /// Off (nobody answers, as in `softspin sim`): such waits run out within
    /// the run.
    pub fn pause_for_host(&mut self, on: bool) {
        self.engine.pause_for_host(on);
    }

    /// Keep the packets handlers send (on by default; `events` and
    /// `kept_outbound` read them). Off, a long run keeps no memory for them.
    /// On a live NIC handlers' packets go to the wire either way; off, they
    /// are not also kept as events.
    pub fn keep_outputs(&mut self, keep: bool) {
        self.keep_events = keep;
        if self.live.is_none() {
            self.engine.keep_outputs(keep);
        }
    }

    /// Packets handlers sent and not yet taken by `events`, as
    /// (time in ps, frame).
    pub fn kept_outbound(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.engine
            .outbound()
            .iter()
            .map(|o| (o.time_ps, o.frame.as_slice()))
    }

    /// Record a Chrome trace-event timeline from now on (read it with `timeline`).
    pub fn enable_timeline(&mut self) {
        self.engine.enable_timeline();
    }

    /// Run handlers through the JIT (feature `jit`; same results, faster on
    /// hot loops: docs/perf-interpreter.md), compiling a region at its
    /// entry's `compile_after`-th use (`softspin_hpu::JIT_COMPILE_AFTER`
    /// by default).
    #[cfg(feature = "jit")]
    pub fn enable_jit(&mut self, compile_after: u32) {
        self.engine.enable_jit(compile_after);
    }

    /// Regions the JIT has compiled; `None` without `enable_jit`.
    #[cfg(feature = "jit")]
    pub fn jit_regions_compiled(&self) -> Option<u64> {
        self.engine.jit_regions_compiled()
    }

    pub fn timeline(&self) -> &[TimelineEvent] {
        self.engine.timeline()
    }

    /// The timeline events recorded since the last call (a live run takes
    /// them as it goes, `softspin nic --timeline`).
    pub fn take_timeline(&mut self) -> Vec<TimelineEvent> {
        self.engine.take_timeline()
    }

    /// Attach a debugger to the HPUs (`softspin sim --gdb`); it is called
    /// at once, before anything runs (`Engine::attach_debugger`).
    pub fn attach_debugger(&mut self, hook: Box<dyn softspin_engine::HpuDebugger>) {
        self.engine.attach_debugger(hook);
    }

    /// Take the debugger off, if one is still attached.
    pub fn detach_debugger(&mut self) -> Option<Box<dyn softspin_engine::HpuDebugger>> {
        self.engine.detach_debugger()
    }

    /// Whether a debugger killed the run.
    pub fn debug_killed(&self) -> bool {
        self.engine.debug_killed()
    }

    /// Keep a record of every message from now on (take them with
    /// `NicView::drain_message_log`).
    pub fn enable_message_log(&mut self) {
        self.engine.enable_message_log();
    }

    /// Run until idle (`until_ps`: or this NIC time, which must lie within
    /// `units::HORIZON`), calling `every` between steps with a view of the
    /// NIC (progress, results streamed while the run goes).
    pub fn run_with(
        &mut self,
        until_ps: Option<u64>,
        mut every: impl FnMut(&mut NicView<'_>),
    ) -> Result<()> {
        if let Some(u) = until_ps.filter(|&u| u > HORIZON.0) {
            return Err(Error::Limit(format!(
                "run until {u} ps is past the simulation horizon ({} ps)",
                HORIZON.0
            )));
        }
        Ok(self
            .engine
            .run_with(until_ps, |engine| every(&mut NicView { engine }))?)
    }

    /// The same view of the NIC `run_with` hands its callback, after a run.
    pub fn view(&mut self) -> NicView<'_> {
        NicView {
            engine: &mut self.engine,
        }
    }

    /// The host window an ECTX was installed with (size 0: none).
    pub fn ectx_host_window(&self, e: Ectx) -> Result<HostWindow> {
        let id = self.info(e)?.id;
        let (base, size) = self
            .engine
            .ectx(id)
            .map(|x| x.spec.host_window)
            .unwrap_or((0, 0));
        Ok(HostWindow { base, size })
    }

    /// An ECTX's handler memory: (NIC address, size in bytes).
    pub fn ectx_handler_mem(&self, e: Ectx) -> Result<(u32, u32)> {
        let id = self.info(e)?.id;
        Ok(self
            .engine
            .ectx(id)
            .map(|x| x.handler_mem)
            .unwrap_or((0, 0)))
    }
}

/// What a run without a host program reads from the NIC between steps
/// (`Nic::run_with`) and after the run (`Nic::view`).
pub struct NicView<'a> {
    engine: &'a mut Engine,
}

impl NicView<'_> {
    /// Packets whose handlers have all finished.
    pub fn packets_done(&self) -> u64 {
        self.engine.stats().packets_done
    }

    pub fn now_ps(&self) -> u64 {
        self.engine.now_ps()
    }

    /// Records of the messages finished since the last call
    /// (`Nic::enable_message_log`).
    pub fn drain_message_log(&mut self) -> Vec<MessageRecord> {
        self.engine.drain_message_log()
    }

    /// Records of the messages still open.
    pub fn open_message_records(&self) -> Vec<MessageRecord> {
        self.engine.open_message_records()
    }

    /// Handler output (printf) since the last call, in NIC-time order. Only
    /// output written before `now_ps` is complete: HPUs run ahead in quanta.
    pub fn drain_output(&mut self) -> Vec<OutputRecord> {
        self.engine.drain_output()
    }

    /// The name of the ECTX a record names (`None` if it is gone).
    pub fn ectx_name(&self, id: EctxId) -> Option<&str> {
        self.engine.ectx(id).map(|e| e.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_names_its_kind() {
        let done = MessageDone {
            ectx: Ectx(4),
            time_ps: 1,
            msg_id: 2,
        };
        let out = OutPacket {
            ectx: Ectx(4),
            time_ps: 1,
            dest: 0,
            frame: vec![],
        };
        let names: Vec<_> = [
            Event::Outbound(out),
            Event::MessageDone(done),
            Event::ErrorsDropped { count: 3 },
        ]
        .iter()
        .map(|e| e.kind().name)
        .collect();
        assert_eq!(names, ["OutPacket", "MessageDone", "ErrorsDropped"]);
        assert_eq!(EVENTS[4].fields, ["count"]);
    }
}
