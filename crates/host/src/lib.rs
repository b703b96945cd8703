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

use std::collections::HashMap;
use std::path::Path;

pub mod sdk;

pub use softspin_engine::ectx::HandlerKind;
pub use softspin_engine::stats::{HandlerError, Report};
pub use softspin_engine::traffic::{build_frame, Arrival, FrameKind, GenConfig, Payload, Source, TrafficError};
pub use softspin_engine::{BufferFull, HostBuffer, HostWrite, MessageDone, NicConfig, Notification, OutPacket};
use softspin_engine::traffic::{Generator, PcapSource, TraceSource};
use softspin_engine::{EctxSpec, Engine, MatchRule};
use softspin_hpu::{abi, ElfImage};

/// Everything that can go wrong, as values.
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
    #[error("unknown profile `{0}` (known: pspin, fpspin)")]
    Profile(String),
    #[error("{0}")]
    Host(String),
    #[error("NIC memory: {0}")]
    NicMemory(String),
    #[error("ECTX {0} was uninstalled (or never existed)")]
    NoEctx(u32),
    #[error("{0}")]
    Invalid(String),
    #[error("build: {0}")]
    Build(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A loaded handler image.
#[derive(Clone, Debug)]
pub struct Image {
    elf: ElfImage,
}

impl Image {
    /// Address of a symbol (a handler or a global in handler memory).
    pub fn symbol(&self, name: &str) -> Result<u32> {
        Ok(self.elf.symbol(name)?)
    }

    pub fn symbols(&self) -> impl Iterator<Item = (&str, u32)> {
        self.elf.symbols.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

/// A host-memory window lent to the NIC: handlers see it at `base` (a
/// 64-bit host address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostWindow {
    pub base: u64,
    pub size: u64,
}

/// An installed execution context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    pub host_window: Option<HostWindow>,
    /// Bytes of each packet copied to L1 (default: all).
    pub l1_copy: Option<u32>,
    /// Scratchpad bytes on each cluster.
    pub scratchpad: Vec<u32>,
    /// Instruction budget per handler (default 1,000,000).
    pub watchdog: Option<u64>,
    /// Message timeout in ns (default 1 ms; 0 = never).
    pub msg_timeout_ns: Option<u64>,
    /// Take only UDP packets to this port (default: every packet).
    pub udp_dst_port: Option<u16>,
}

/// What happened on the NIC, in time order within each kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Outbound(OutPacket),
    HostWrite(HostWrite),
    MessageDone(MessageDone),
    HandlerError(HandlerError),
}

struct EctxInfo {
    id: usize,
    heap: (u32, u32),
    frame: FrameKind,
    port: u16,
}

/// A sPIN NIC (today: the simulated PsPIN NIC; the live NIC opens through
/// the same call in a later release).
pub struct Nic {
    engine: Engine,
    ectxs: HashMap<u32, EctxInfo>,
    next_ectx: u32,
    next_window: u64,
    errors_seen: usize,
    line_rate: f64,
}

/// Host addresses handed to windows: high, so handlers carry 64-bit ones.
const WINDOW_BASE: u64 = 0x7F00_0000_0000;

impl Nic {
    /// Open the simulated NIC with a named profile: "pspin" or "fpspin".
    pub fn open(profile: &str) -> Result<Nic> {
        let cfg = NicConfig::profile(profile).ok_or_else(|| Error::Profile(profile.into()))?;
        Nic::with_config(cfg)
    }

    /// Open the simulated NIC described by a TOML file (see docs/sim.md).
    pub fn open_config_file(path: impl AsRef<Path>) -> Result<Nic> {
        let p = path.as_ref();
        let text = std::fs::read_to_string(p).map_err(|e| Error::Host(format!("{}: {e}", p.display())))?;
        Nic::with_config(NicConfig::from_toml(&text, &p.display().to_string())?)
    }

    pub fn with_config(cfg: NicConfig) -> Result<Nic> {
        let line_rate = cfg.line_rate_gbps;
        let mut engine = Engine::new(cfg)?;
        engine.keep_outputs(true);
        Ok(Nic { engine, ectxs: HashMap::new(), next_ectx: 0, next_window: WINDOW_BASE, errors_seen: 0, line_rate })
    }

    pub fn config(&self) -> &NicConfig {
        self.engine.config()
    }

    /// The engine underneath (statistics, timeline, ...).
    pub fn engine(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// Load a handler image (an RV32 ELF built by `softspin build`).
    pub fn load_image(&self, path: impl AsRef<Path>) -> Result<Image> {
        Ok(Image { elf: ElfImage::load(path.as_ref())? })
    }

    pub fn image_from_bytes(&self, elf: &[u8]) -> Result<Image> {
        Ok(Image { elf: ElfImage::parse(elf)? })
    }

    // -- host memory ------------------------------------------------------------

    /// A zeroed host-memory window of `size` bytes owned by the NIC object.
    ///
    /// ```
    /// let mut nic = softspin_host::Nic::open("fpspin")?;
    /// let w = nic.host_window(4096)?;
    /// nic.host_write(w.base + 8, b"data")?;
    /// assert_eq!(nic.host_read(w.base + 8, 4)?, b"data");
    /// assert!(nic.host_read(w.base + 4095, 2).is_err()); // past the window
    /// # Ok::<(), softspin_host::Error>(())
    /// ```
    pub fn host_window(&mut self, size: usize) -> Result<HostWindow> {
        self.lend(Box::new(vec![0u8; size]))
    }

    /// Lend the NIC an application buffer (used in place, no copies).
    pub fn lend(&mut self, mut buf: Box<dyn HostBuffer>) -> Result<HostWindow> {
        let size = buf.bytes().len() as u64;
        if size == 0 {
            return Err(Error::Host("a host window needs at least one byte".into()));
        }
        let base = self.next_window;
        self.engine.add_host_buffer(base, buf).map_err(Error::Host)?;
        // Windows sit 4 GiB apart (and are 4 GiB at most).
        self.next_window += (size.max(1) + 0xFFFF_FFFF) & !0xFFFF_FFFF;
        Ok(HostWindow { base, size })
    }

    /// Take a lent buffer back.
    pub fn unlend(&mut self, w: HostWindow) -> Result<Box<dyn HostBuffer>> {
        self.engine.remove_host_buffer(w.base).ok_or_else(|| Error::Host(format!("no host window at 0x{:x}", w.base)))
    }

    pub fn host_read(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0; len];
        if !self.engine.host_memory().read(addr, &mut v) {
            return Err(Error::Host(format!("host range 0x{addr:x}+{len} is not in a window")));
        }
        Ok(v)
    }

    pub fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        if !self.engine.host_memory().write(addr, data) {
            return Err(Error::Host(format!("host range 0x{addr:x}+{} is not in a window", data.len())));
        }
        Ok(())
    }

    // -- ECTX -------------------------------------------------------------------

    /// Install an ECTX for `image`: its code goes to program memory and its
    /// data to handler memory. It receives no packet before `activate`.
    pub fn install(&mut self, image: &Image, o: EctxOptions) -> Result<Ectx> {
        let handle = self.next_ectx;
        let name = o.name.clone().unwrap_or_else(|| format!("ectx{handle}"));
        let mut s = EctxSpec::new(&name, image.elf.clone());
        s.hh = o.hh;
        s.ph = o.ph;
        s.th = o.th;
        let data = image.elf.segments.iter().filter(|x| !x.perm.has(softspin_hpu::Perm::X));
        let (d0, d1) = data.fold((u32::MAX, 0u32), |(lo, hi), x| (lo.min(x.vaddr), hi.max(x.end() as u32)));
        let (d0, d1) = if d0 == u32::MAX { (abi::L2_HANDLER_BASE, abi::L2_HANDLER_BASE) } else { (d0, d1) };
        let used = (d1 - d0).next_multiple_of(64);
        let size = o.handler_mem_size.unwrap_or(used).max(used).max(64);
        s.handler_mem = Some((d0, size));
        if let Some(w) = o.host_window {
            s.host_window = (w.base, w.size);
        } else {
            s.host_window = (0, 0);
        }
        s.l1_copy = o.l1_copy.unwrap_or(u32::MAX);
        s.scratchpad = o.scratchpad;
        if let Some(w) = o.watchdog {
            s.watchdog = w;
        }
        if let Some(t) = o.msg_timeout_ns {
            s.msg_timeout_ns = t;
        }
        s.matching = o.udp_dst_port.map(MatchRule::UdpDstPort).unwrap_or_default();
        let id = self.engine.install(s)?;
        self.next_ectx += 1;
        let info = EctxInfo { id, heap: (d0 + used, d0 + size), frame: FrameKind::Ip, port: o.udp_dst_port.unwrap_or(9330) };
        self.ectxs.insert(handle, info);
        Ok(Ectx(handle))
    }

    fn info(&self, e: Ectx) -> Result<&EctxInfo> {
        self.ectxs.get(&e.0).ok_or(Error::NoEctx(e.0))
    }

    pub fn activate(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        Ok(self.engine.activate(id)?)
    }

    pub fn deactivate(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        Ok(self.engine.deactivate(id)?)
    }

    /// Remove an inactive ECTX with no message in flight.
    pub fn uninstall(&mut self, e: Ectx) -> Result<()> {
        let id = self.info(e)?.id;
        self.engine.uninstall(id)?;
        self.ectxs.remove(&e.0);
        Ok(())
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
    pub fn nic_alloc(&mut self, e: Ectx, size: u32, align: u32) -> Result<u32> {
        let info = self.ectxs.get_mut(&e.0).ok_or(Error::NoEctx(e.0))?;
        let align = align.max(1);
        if !align.is_power_of_two() {
            return Err(Error::NicMemory(format!("alignment {align} is not a power of two")));
        }
        let at = info.heap.0.next_multiple_of(align);
        if at as u64 + size as u64 > info.heap.1 as u64 {
            return Err(Error::NicMemory(format!(
                "{size} bytes do not fit the ECTX's handler memory ({} bytes left; raise handler_mem_size)",
                info.heap.1.saturating_sub(at)
            )));
        }
        info.heap.0 = at + size;
        Ok(at)
    }

    pub fn nic_write(&mut self, addr: u32, data: &[u8]) -> Result<()> {
        if !self.engine.write_nic(addr, data) {
            return Err(Error::NicMemory(format!("0x{addr:08x}+{} is not NIC memory", data.len())));
        }
        Ok(())
    }

    pub fn nic_read(&self, addr: u32, len: usize) -> Result<Vec<u8>> {
        self.engine.read_nic(addr, len).ok_or_else(|| Error::NicMemory(format!("0x{addr:08x}+{len} is not NIC memory")))
    }

    /// Write a NIC pointer (a 32-bit NIC address) at `addr`: the relocation
    /// step when the host builds linked structures for handlers.
    pub fn nic_write_ptr(&mut self, addr: u32, target: u32) -> Result<()> {
        self.nic_write(addr, &target.to_le_bytes())
    }

    // -- traffic ----------------------------------------------------------------

    /// Hand the NIC one packet (a whole frame) of message `msg_id`.
    pub fn send_packet(&mut self, frame: Vec<u8>, msg_id: u32, eom: bool) -> Result<()> {
        let t = self.engine.now_ps();
        self.engine.inject(Arrival { time_ps: t, frame, msg_id, eom, origin: format!("host packet (message {msg_id})") });
        Ok(())
    }

    /// Send `payload` as message `msg_id` to an ECTX: split into packets of
    /// at most `packet_size` bytes (headers included) with IP/UDP (or
    /// Ethernet) headers to the ECTX's port, spaced at the line rate.
    pub fn send_message(&mut self, e: Ectx, msg_id: u32, payload: &[u8], packet_size: usize) -> Result<()> {
        let info = self.info(e)?;
        let (kind, port) = (info.frame, info.port);
        let room = packet_size
            .checked_sub(kind.header_len())
            .filter(|r| *r > 0)
            .ok_or_else(|| Error::Invalid(format!("packet size {packet_size} leaves no room after the headers")))?;
        let chunks: Vec<&[u8]> = if payload.is_empty() { vec![&[][..]] } else { payload.chunks(room).collect() };
        let mut t = self.engine.next_inject_ps();
        let n = chunks.len();
        for (k, c) in chunks.into_iter().enumerate() {
            let frame = build_frame(kind, kind.header_len() + c.len(), [10, 0, 0, 1], [10, 0, 0, 2], 9330, port, |i| c[i])?;
            t += ((frame.len() * 8) as f64 * 1000.0 / self.line_rate) as u64;
            self.engine.inject(Arrival { time_ps: t, frame, msg_id, eom: k + 1 == n, origin: format!("message {msg_id} packet {k}") });
        }
        Ok(())
    }

    /// Send message `msg_id` to an ECTX as the given packet payloads (each
    /// gets the ECTX's IP/UDP or Ethernet headers), spaced at the line rate;
    /// the last one ends the message.
    pub fn send_payloads(&mut self, e: Ectx, msg_id: u32, payloads: &[Vec<u8>]) -> Result<()> {
        let info = self.info(e)?;
        let (kind, port) = (info.frame, info.port);
        let mut t = self.engine.next_inject_ps();
        for (k, c) in payloads.iter().enumerate() {
            let frame = build_frame(kind, kind.header_len() + c.len(), [10, 0, 0, 1], [10, 0, 0, 2], 9330, port, |i| c[i])?;
            t += ((frame.len() * 8) as f64 * 1000.0 / self.line_rate) as u64;
            let eom = k + 1 == payloads.len();
            self.engine.inject(Arrival { time_ps: t, frame, msg_id, eom, origin: format!("message {msg_id} packet {k}") });
        }
        Ok(())
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
    pub fn run_until_idle(&mut self) -> Result<()> {
        Ok(self.engine.run(None, |_| {})?)
    }

    /// Run for `ns` nanoseconds of NIC time.
    pub fn run_for(&mut self, ns: u64) -> Result<()> {
        let until = ns
            .checked_mul(1000)
            .and_then(|d| self.engine.now_ps().checked_add(d))
            .ok_or_else(|| Error::Invalid(format!("run_for({ns} ns) overflows NIC time")))?;
        Ok(self.engine.run(Some(until), |_| {})?)
    }

    /// Current NIC time in nanoseconds.
    pub fn now_ns(&self) -> f64 {
        self.engine.now_ps() as f64 / 1000.0
    }

    // -- results ----------------------------------------------------------------

    /// Events since the last call: outbound packets, host writes, completed
    /// messages, handler errors.
    pub fn events(&mut self) -> Vec<Event> {
        let (out, hw, done) = self.engine.drain_outputs();
        let errors = &self.engine.errors()[self.errors_seen..];
        self.errors_seen += errors.len();
        let mut ev: Vec<Event> = errors.iter().cloned().map(Event::HandlerError).collect();
        ev.extend(out.into_iter().map(Event::Outbound));
        ev.extend(hw.into_iter().map(Event::HostWrite));
        ev.extend(done.into_iter().map(Event::MessageDone));
        ev
    }

    /// Host notifications that reached the host.
    pub fn poll_notifications(&mut self) -> Vec<Notification> {
        self.engine.poll_notifications()
    }

    /// Run until at least one notification is available (or nothing is left
    /// to run: the NIC idle, at most waiting for the host's responses),
    /// then return those available; empty means none will come.
    pub fn wait_notifications(&mut self) -> Result<Vec<Notification>> {
        loop {
            let n = self.engine.poll_notifications();
            if !n.is_empty() {
                return Ok(n);
            }
            let until = self.engine.now_ps() + 100_000;
            self.engine.run(Some(until), |_| {})?;
            if self.engine.is_idle() {
                // Nothing will come unless the host acts.
                return Ok(self.engine.poll_notifications());
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
            return Err(Error::Invalid(format!("no HPU {hpu} (the NIC has {})", self.engine.hpu_count())));
        }
        Ok(String::from_utf8_lossy(self.engine.hpu_stdout(hpu)).into_owned())
    }

    pub fn hpu_count(&self) -> usize {
        self.engine.hpu_count()
    }
}
