//! The `softspin` Python module: a thin pyo3 layer over `softspin_host::Nic`
//! (one host API model in Rust, C and Python). The Python package
//! (`python/softspin`) re-exports everything from `softspin._native`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use softspin_engine::units::Ps;
use softspin_host as host;
use softspin_host::{FrameKind, GenConfig, HostBuffer, Payload};

create_exception!(
    softspin,
    Error,
    PyException,
    "Base class of every error softspin raises (one subclass per softspin_host::ErrorKind)."
);
create_exception!(
    softspin,
    InvalidArgumentError,
    Error,
    "An argument softspin cannot use (frame kind, packet size, notification id, HPU index...)."
);
create_exception!(softspin, LimitError, Error, "A size, length or time beyond a documented limit (the message names the argument and the limit), or host memory that could not be allocated.");
create_exception!(
    softspin,
    ConfigError,
    Error,
    "Bad NIC configuration or unknown profile."
);
create_exception!(
    softspin,
    IoError,
    Error,
    "A file (handler image, configuration, trace, pcap) could not be read."
);
create_exception!(softspin, ImageError, Error, "Not a usable handler image.");
create_exception!(
    softspin,
    SymbolError,
    Error,
    "A symbol (or a handler named at install) is not in the image."
);
create_exception!(
    softspin,
    OverlapError,
    Error,
    "The ECTX's code or handler memory overlaps an installed ECTX."
);
create_exception!(
    softspin,
    NicMemoryError,
    Error,
    "A NIC address range outside NIC memory, or handler memory exhausted."
);
create_exception!(softspin, HostMemoryError, Error, "A host address range outside every window, a window this NIC did not make, or a buffer that cannot be lent.");
create_exception!(
    softspin,
    StateError,
    Error,
    "The ECTX is in the wrong state (already active, not active, messages in flight)."
);
create_exception!(
    softspin,
    NoEctxError,
    Error,
    "No such ECTX on this NIC (never installed, uninstalled, or another NIC's)."
);
create_exception!(softspin, EctxError, Error, "Any other install problem (no handler given, image for another cluster count, undecodable code).");
create_exception!(
    softspin,
    TrafficError,
    Error,
    "Bad traffic: generator parameter, trace or pcap file."
);
create_exception!(
    softspin,
    SimError,
    Error,
    "The simulation rejected a packet (too large for a slot, too short)."
);
create_exception!(
    softspin,
    BuildError,
    Error,
    "Compiling or linking a handler image failed (diagnostics went to stderr)."
);
create_exception!(softspin, NetError, Error, "The live NIC: no such interface, not permitted (root, or mode='socket'), XDP busy or unsupported, bad rules, socket errors.");
create_exception!(
    softspin,
    ThreadError,
    Error,
    "A Nic used from another thread than the one that created it."
);
create_exception!(softspin, SlmpGaveUpError, NetError, "The SLMP sender gave up (a segment unacknowledged after its retransmissions, or no ACK for give_up_s); `.stats` holds the statistics up to then.");

/// Every `softspin_host::Error` as the exception of its kind, with its message.
fn err(e: host::Error) -> PyErr {
    let msg = e.to_string();
    use host::ErrorKind as K;
    match e.kind() {
        K::InvalidArgument => InvalidArgumentError::new_err(msg),
        K::Limit => LimitError::new_err(msg),
        K::Config => ConfigError::new_err(msg),
        K::Io => IoError::new_err(msg),
        K::Image => ImageError::new_err(msg),
        K::Symbol => SymbolError::new_err(msg),
        K::Overlap => OverlapError::new_err(msg),
        K::NicMemory => NicMemoryError::new_err(msg),
        K::HostMemory => HostMemoryError::new_err(msg),
        K::State => StateError::new_err(msg),
        K::NoEctx => NoEctxError::new_err(msg),
        K::Ectx => EctxError::new_err(msg),
        K::Traffic => TrafficError::new_err(msg),
        K::Sim => SimError::new_err(msg),
        K::Build => BuildError::new_err(msg),
        K::Net => NetError::new_err(msg),
    }
}

/// A handler error's cause as a short name ("store_access", "watchdog",
/// "message_timeout", "aborted", "rejected_host_dma_window", ...).
fn cause_name(c: host::ErrorCause) -> &'static str {
    use host::FaultKind as F;
    match c {
        host::ErrorCause::Fault(k) => match k {
            F::LoadAccess => "load_access",
            F::StoreAccess => "store_access",
            F::LoadDenied => "load_denied",
            F::StoreDenied => "store_denied",
            F::FetchAccess => "fetch_access",
            F::Misaligned => "misaligned",
            F::IllegalInstruction => "illegal_instruction",
            F::Breakpoint => "breakpoint",
            F::Watchdog => "watchdog",
            F::UnknownService => "unknown_service",
            F::ServiceFault => "service_fault",
        },
        host::ErrorCause::MessageTimeout => "message_timeout",
        host::ErrorCause::WaitTimeout => "wait_timeout",
        host::ErrorCause::Aborted { .. } => "aborted",
        host::ErrorCause::Rejected(r) => match r {
            host::Rejected::HostDmaWindow => "rejected_host_dma_window",
            host::Rejected::HostWriteWindow => "rejected_host_write_window",
            host::Rejected::NicAccess => "rejected_nic_access",
            host::Rejected::SendTooLarge => "rejected_send_too_large",
            host::Rejected::EmptyDma => "rejected_empty_dma",
            host::Rejected::BadFd => "rejected_bad_fd",
            host::Rejected::CounterIndex => "rejected_counter_index",
            host::Rejected::NotifyId => "rejected_notify_id",
            host::Rejected::NotifyTooLong => "rejected_notify_too_long",
        },
    }
}

/// `v` as a u32 argument, or a LimitError naming it.
fn arg_u32(v: u64, what: &str) -> PyResult<u32> {
    u32::try_from(v)
        .map_err(|_| LimitError::new_err(format!("{what} {v} is above {} (32 bits)", u32::MAX)))
}

fn frame_kind(s: &str) -> PyResult<FrameKind> {
    match s {
        "ip" => Ok(FrameKind::Ip),
        "eth" => Ok(FrameKind::Eth),
        _ => Err(InvalidArgumentError::new_err(format!(
            "unknown frame kind `{s}` (known: ip, eth)"
        ))),
    }
}

/// Bytes from `bytes` or any object with the buffer protocol (copied).
fn bytes_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    let buf = PyBuffer::<u8>::get(obj).map_err(|_| {
        PyTypeError::new_err(format!("expected bytes-like data, got {}", type_name(obj)))
    })?;
    buf.to_vec(obj.py())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn json_to_py(py: Python<'_>, s: &str) -> PyResult<PyObject> {
    Ok(py.import("json")?.call_method1("loads", (s,))?.unbind())
}

fn ns(ps: u64) -> f64 {
    Ps(ps).as_ns_f64()
}

// ---------------------------------------------------------------- handles

/// A loaded handler image (an RV32 ELF built by `softspin build`).
#[pyclass(module = "softspin", frozen)]
pub struct Image {
    inner: host::Image,
    /// The file it was loaded from (None when loaded from bytes).
    #[pyo3(get)]
    path: Option<String>,
}

#[pymethods]
impl Image {
    /// Address of a symbol (a handler or a global in handler memory).
    /// Raises ImageError if the image has no such symbol.
    fn symbol(&self, name: &str) -> PyResult<u32> {
        self.inner.symbol(name).map_err(err)
    }

    /// First NIC address past the image's data: where handler memory of an
    /// ECTX's own (`install(handler_mem_addr=...)`) may start.
    #[getter]
    fn data_end(&self) -> u32 {
        self.inner.data_end()
    }

    /// All symbols as a dict {name: address}.
    fn symbols(&self) -> HashMap<String, u32> {
        self.inner
            .symbols()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn __repr__(&self) -> String {
        match &self.path {
            Some(p) => format!("Image({p:?})"),
            None => "Image(<bytes>)".into(),
        }
    }
}

/// A host-memory window the NIC may DMA to: handlers see it at `base`
/// (a 64-bit host address), `size` bytes long. `buffer` is the lent
/// object (None for a window the NIC owns, from `Nic.host_window`).
#[pyclass(module = "softspin", frozen)]
pub struct HostWindow {
    #[pyo3(get)]
    base: u64,
    #[pyo3(get)]
    size: u64,
    #[pyo3(get)]
    buffer: Option<PyObject>,
    /// The NIC that made it: windows of different NICs share addresses.
    nic: u64,
}

#[pymethods]
impl HostWindow {
    fn __repr__(&self) -> String {
        format!("HostWindow(base=0x{:x}, size={})", self.base, self.size)
    }
}

/// An installed execution context. Compare and hash by identity on its NIC.
#[pyclass(module = "softspin", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Ectx {
    /// Handle number (unique per NIC, never reused).
    #[pyo3(get)]
    id: u32,
    #[pyo3(get)]
    name: String,
    nic: u64,
}

#[pymethods]
impl Ectx {
    fn __repr__(&self) -> String {
        format!("Ectx({}, {:?})", self.id, self.name)
    }
}

// ---------------------------------------------------------------- events

/// A packet a handler sent (spin_send_packet, or an RDMA put to `dest`).
#[pyclass(module = "softspin", frozen, get_all)]
pub struct OutboundPacket {
    /// When it left the NIC (ns, and exact in ps).
    time_ns: f64,
    time_ps: u64,
    /// The sending ECTX (None if it was uninstalled meanwhile).
    ectx: Option<Ectx>,
    /// RDMA put destination (0 for spin_send_packet).
    dest: u32,
    /// The whole frame.
    frame: Py<PyBytes>,
}

#[pymethods]
impl OutboundPacket {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "OutboundPacket(time_ns={}, ectx={:?}, dest={}, len={})",
            self.time_ns,
            self.ectx.as_ref().map(|e| e.id),
            self.dest,
            self.frame.as_bytes(py).len()
        )
    }
}

/// An 8-byte host-direct write (spin_host_write).
#[pyclass(module = "softspin", frozen, get_all)]
pub struct HostWrite {
    /// When it reached host memory (ns, and exact in ps).
    time_ns: f64,
    time_ps: u64,
    /// The writing ECTX (None if it was uninstalled meanwhile).
    ectx: Option<Ectx>,
    /// Host address.
    addr: u64,
    value: u64,
}

#[pymethods]
impl HostWrite {
    fn __repr__(&self) -> String {
        format!(
            "HostWrite(time_ns={}, addr=0x{:x}, value=0x{:x})",
            self.time_ns, self.addr, self.value
        )
    }
}

/// A message whose handlers all finished.
#[pyclass(module = "softspin", frozen, get_all)]
pub struct MessageDone {
    /// When its last handler completed (ns, and exact in ps).
    time_ns: f64,
    time_ps: u64,
    /// Its ECTX (None if it was uninstalled meanwhile).
    ectx: Option<Ectx>,
    msg_id: u32,
}

#[pymethods]
impl MessageDone {
    fn __repr__(&self) -> String {
        format!(
            "MessageDone(time_ns={}, msg_id={})",
            self.time_ns, self.msg_id
        )
    }
}

/// `count` handler errors happened here whose details were dropped: more
/// than 1000 came between two calls of `events()`, and only the first of
/// them and the latest 100 are kept (the report's counts include them all).
#[pyclass(module = "softspin", frozen, get_all)]
pub struct ErrorsDropped {
    count: u64,
}

#[pymethods]
impl ErrorsDropped {
    fn __repr__(&self) -> String {
        format!("ErrorsDropped(count={})", self.count)
    }
}

/// A handler that faulted, looped past its watchdog or misbehaved (only that
/// invocation ended), or a message that timed out.
#[pyclass(module = "softspin", frozen, get_all)]
pub struct HandlerError {
    /// The ECTX (the handle `install` returned, even if uninstalled since).
    ectx: Option<Ectx>,
    /// The ECTX's name.
    ectx_name: String,
    /// The message.
    msg_id: u32,
    /// The handler's symbol (None for a message timeout).
    handler: Option<String>,
    /// What went wrong, as a name: "load_access", "store_access",
    /// "load_denied", "store_denied", "fetch_access", "misaligned",
    /// "illegal_instruction", "breakpoint", "watchdog", "unknown_service",
    /// "service_fault", "message_timeout", "wait_timeout", "aborted",
    /// "rejected_*" (a refused command).
    kind: &'static str,
    /// What went wrong, in words.
    cause: String,
    /// More about it (an abort's status and text, a command's limit), or None.
    detail: Option<String>,
    /// Faulting instruction and offending address (None where they do not apply).
    pc: Option<u32>,
    addr: Option<u64>,
    time_ns: f64,
    /// Global HPU index (None for a message timeout).
    hpu: Option<u32>,
}

#[pymethods]
impl HandlerError {
    fn __repr__(&self) -> String {
        format!(
            "HandlerError(ectx={:?}, msg_id={}, handler={:?}, kind={:?}, cause={:?}, pc={:?}, addr={:?}, time_ns={}, hpu={:?})",
            self.ectx_name, self.msg_id, self.handler, self.kind, self.cause, self.pc, self.addr, self.time_ns, self.hpu
        )
    }
}

/// A request a handler posted with spin_notify; answer it with
/// `Nic.respond(id, value)`.
#[pyclass(module = "softspin", frozen, get_all)]
pub struct Notification {
    /// Pass it to `Nic.respond`.
    id: u32,
    /// The posting ECTX (None if it was uninstalled meanwhile).
    ectx: Option<Ectx>,
    /// Global index of the posting HPU.
    hpu: u32,
    /// When it became visible to the host (ns, and exact in ps).
    time_ns: f64,
    time_ps: u64,
    /// Inline payload (up to 64 bytes).
    data: Py<PyBytes>,
    /// The reference the handler passed (e.g. a host address).
    host_ref: u64,
}

#[pymethods]
impl Notification {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Notification(id={}, hpu={}, time_ns={}, data={:?}, host_ref=0x{:x})",
            self.id,
            self.hpu,
            self.time_ns,
            self.data.as_bytes(py),
            self.host_ref
        )
    }
}

// ---------------------------------------------------------------- lending

/// A Python buffer lent in place. Holding the buffer export keeps the
/// object alive and makes Python refuse to resize it (bytearray, numpy).
struct Lent(PyBuffer<u8>);

impl HostBuffer for Lent {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: checked writable and C-contiguous when lent; the export
        // pins it. The engine only touches it while the GIL is held by a Nic
        // call.
        unsafe { std::slice::from_raw_parts_mut(self.0.buf_ptr() as *mut u8, self.0.len_bytes()) }
    }
}

// ---------------------------------------------------------------- the NIC

static NEXT_NIC: AtomicU64 = AtomicU64::new(1);

/// A `host::Nic` and the thread that made it. The engine and its port are
/// not `Send` (trait objects for host memory and the wire), so a NIC stays
/// on its thread; Python may still hand the object to another thread, whose
/// calls get a `ThreadError` instead of pyo3's panic.
struct Owned {
    nic: std::mem::ManuallyDrop<host::Nic>,
    owner: std::thread::ThreadId,
}

// SAFETY: the `host::Nic` is reached only through `get`, which refuses
// every thread but `owner`, and dropped only on `owner` (else leaked).
unsafe impl Send for Owned {}
// SAFETY: a shared `&Owned` reaches the NIC only through `get_ref`, which
// refuses every thread but `owner` too.
unsafe impl Sync for Owned {}

impl Owned {
    fn new(nic: host::Nic) -> Owned {
        Owned {
            nic: std::mem::ManuallyDrop::new(nic),
            owner: std::thread::current().id(),
        }
    }

    fn check_thread(&self) -> PyResult<()> {
        if std::thread::current().id() != self.owner {
            return Err(ThreadError::new_err(
                "this Nic was created on another thread: use it from the thread that created it (a NIC is not shared between threads)",
            ));
        }
        Ok(())
    }

    fn get(&mut self) -> PyResult<&mut host::Nic> {
        self.check_thread()?;
        Ok(&mut self.nic)
    }

    fn get_ref(&self) -> PyResult<&host::Nic> {
        self.check_thread()?;
        Ok(&self.nic)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if std::thread::current().id() == self.owner {
            // SAFETY: dropped once, here, on its own thread.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.nic) };
        } else {
            // Collected on another thread: the NIC is leaked (a live one
            // stays attached until the process exits), as pyo3 does.
            eprintln!("softspin: a Nic collected on another thread than its own is leaked");
        }
    }
}

/// A sPIN NIC: the simulated PsPIN NIC (`Nic(profile)`), or one attached to
/// a network interface (`Nic.attach(iface)`). Use it from the thread that
/// created it: a call from another thread raises `ThreadError`.
#[pyclass(module = "softspin")]
pub struct Nic {
    owned: Owned,
    uid: u64,
    /// Every ECTX installed on this NIC by handle (handles are never
    /// reused), for the ECTX objects of events and notifications.
    ectxs: HashMap<u32, Ectx>,
}

/// A live run's slice: short enough that Ctrl-C is answered promptly (the
/// GIL stays held, as in every run, so Python's signal handlers run only
/// between slices).
const LIVE_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

impl Nic {
    /// Run a live NIC for `d` (None: until interrupted) in slices, checking
    /// for signals between them.
    fn live_slices(&mut self, py: Python<'_>, d: Option<std::time::Duration>) -> PyResult<()> {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let end = d.map(|d| std::time::Instant::now() + d);
        loop {
            let slice = match end {
                None => LIVE_SLICE,
                Some(e) => match e.checked_duration_since(std::time::Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(LIVE_SLICE),
                    _ => return Ok(()),
                },
            };
            self.owned
                .get()?
                .run_live(Some(slice), &stop)
                .map_err(err)?;
            py.check_signals()?;
        }
    }

    fn wrap(nic: host::Nic) -> Nic {
        Nic {
            owned: Owned::new(nic),
            uid: NEXT_NIC.fetch_add(1, Ordering::Relaxed),
            ectxs: HashMap::new(),
        }
    }

    fn handle(&self, e: &Ectx) -> PyResult<host::Ectx> {
        if e.nic != self.uid {
            return Err(NoEctxError::new_err(format!(
                "ECTX `{}` belongs to another NIC",
                e.name
            )));
        }
        Ok(host::Ectx(e.id))
    }

    fn ectx_obj(&self, e: host::Ectx) -> Option<Ectx> {
        self.ectxs.get(&e.0).cloned()
    }

    fn event_objects(&mut self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        let mut v = Vec::new();
        for ev in self.owned.get()?.events() {
            let obj = match ev {
                host::Event::Outbound(o) => Py::new(
                    py,
                    OutboundPacket {
                        time_ns: ns(o.time_ps),
                        time_ps: o.time_ps,
                        ectx: self.ectx_obj(o.ectx),
                        dest: o.dest,
                        frame: PyBytes::new(py, &o.frame).unbind(),
                    },
                )?
                .into_any(),
                host::Event::HostWrite(w) => Py::new(
                    py,
                    HostWrite {
                        time_ns: ns(w.time_ps),
                        time_ps: w.time_ps,
                        ectx: self.ectx_obj(w.ectx),
                        addr: w.addr,
                        value: w.value,
                    },
                )?
                .into_any(),
                host::Event::MessageDone(d) => Py::new(
                    py,
                    MessageDone {
                        time_ns: ns(d.time_ps),
                        time_ps: d.time_ps,
                        ectx: self.ectx_obj(d.ectx),
                        msg_id: d.msg_id,
                    },
                )?
                .into_any(),
                host::Event::ErrorsDropped { count } => {
                    Py::new(py, ErrorsDropped { count })?.into_any()
                }
                host::Event::HandlerError(h) => Py::new(
                    py,
                    HandlerError {
                        ectx: self.ectx_obj(h.ectx),
                        ectx_name: h.ectx_name,
                        msg_id: h.msg_id,
                        handler: h.handler,
                        kind: cause_name(h.kind),
                        cause: h.cause,
                        detail: h.detail,
                        pc: h.pc,
                        addr: h.addr,
                        time_ns: h.time_ns as f64,
                        hpu: h.hpu,
                    },
                )?
                .into_any(),
            };
            v.push(obj);
        }
        Ok(v)
    }

    fn notes(&self, py: Python<'_>, v: Vec<host::Notification>) -> PyResult<Vec<Py<Notification>>> {
        v.into_iter()
            .map(|n| {
                Py::new(
                    py,
                    Notification {
                        id: n.id,
                        ectx: self.ectx_obj(n.ectx),
                        hpu: n.hpu,
                        time_ns: ns(n.time_ps),
                        time_ps: n.time_ps,
                        data: PyBytes::new(py, &n.data).unbind(),
                        host_ref: n.host_ref,
                    },
                )
            })
            .collect()
    }

    fn window(
        &self,
        py: Python<'_>,
        w: host::HostWindow,
        buffer: Option<PyObject>,
    ) -> PyResult<Py<HostWindow>> {
        Py::new(
            py,
            HostWindow {
                base: w.base,
                size: w.size,
                buffer,
                nic: self.uid,
            },
        )
    }

    /// A window of this NIC.
    fn own_window(&self, w: &HostWindow) -> PyResult<host::HostWindow> {
        if w.nic != self.uid {
            return Err(HostMemoryError::new_err(format!(
                "host window at 0x{:x} belongs to another NIC",
                w.base
            )));
        }
        Ok(host::HostWindow {
            base: w.base,
            size: w.size,
        })
    }
}

#[pymethods]
impl Nic {
    /// Open the simulated NIC with a named profile: "pspin" or "fpspin".
    #[new]
    #[pyo3(signature = (profile = "pspin"))]
    fn new(profile: &str) -> PyResult<Nic> {
        Ok(Nic::wrap(host::Nic::open(profile).map_err(err)?))
    }

    /// Open a NIC on the network interface `iface` (a live NIC): frames that
    /// match an active ECTX's rulesets (`install(match=..., rules=...)`) run
    /// its handlers and what they send goes out on the interface; every
    /// other frame goes to the kernel untouched. `mode` "xdp" (the XDP
    /// matching engine and AF_XDP; needs root) or "socket" (UDP sockets on
    /// the `udp:PORT` rules' ports; no root). `profile` (default "fpspin":
    /// handlers get Ethernet frames) or `config` (a NIC TOML file) chooses
    /// the NIC model; `wait_timeout` (seconds) bounds how long
    /// `wait_notifications` waits for the wire. Everything else works as on
    /// the simulated NIC, paced by the wall clock. Raises NetError (no such
    /// interface, not permitted, XDP busy or unsupported).
    #[staticmethod]
    #[pyo3(signature = (iface, mode = "xdp", profile = None, config = None, wait_timeout = 10.0))]
    fn attach(
        iface: &str,
        mode: &str,
        profile: Option<&str>,
        config: Option<std::path::PathBuf>,
        wait_timeout: f64,
    ) -> PyResult<Nic> {
        let mode = match mode {
            "xdp" => host::Mode::Xdp,
            "socket" => host::Mode::Socket,
            m => {
                return Err(InvalidArgumentError::new_err(format!(
                    "unknown mode `{m}` (known: xdp, socket)"
                )))
            }
        };
        let wait_timeout = std::time::Duration::try_from_secs_f64(wait_timeout).map_err(|_| {
            InvalidArgumentError::new_err(format!(
                "wait_timeout {wait_timeout} s is not a duration (0 or more seconds)"
            ))
        })?;
        let config = match (profile, config) {
            (Some(_), Some(_)) => {
                return Err(InvalidArgumentError::new_err(
                    "give profile or config, not both",
                ))
            }
            (Some(p), None) => Some(
                host::NicConfig::profile(p).ok_or_else(|| err(host::Error::Profile(p.into())))?,
            ),
            (None, Some(path)) => Some(host::load_config(&path).map_err(err)?),
            (None, None) => None,
        };
        let nic = host::Nic::attach(
            iface,
            host::AttachOptions {
                mode,
                config,
                wait_timeout,
            },
        )
        .map_err(err)?;
        Ok(Nic::wrap(nic))
    }

    /// Whether this NIC is attached to a network interface (`Nic.attach`).
    #[getter]
    fn is_live(&self) -> PyResult<bool> {
        Ok(self.owned.get_ref()?.is_live())
    }

    /// Run a live NIC for `duration` seconds of wall time, or until
    /// interrupted (Ctrl-C raises KeyboardInterrupt, after the NIC has
    /// stopped cleanly). Read events and notifications afterwards, or run
    /// in slices and read them between.
    #[pyo3(signature = (duration = None))]
    fn run_live(&mut self, py: Python<'_>, duration: Option<f64>) -> PyResult<()> {
        if !self.owned.get()?.is_live() {
            return Err(InvalidArgumentError::new_err(
                "this NIC is simulated; open it with Nic.attach(iface) to run it live",
            ));
        }
        let d = duration
            .map(|s| {
                std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                    InvalidArgumentError::new_err(format!(
                        "duration {s} s is not a duration (0 or more seconds)"
                    ))
                })
            })
            .transpose()?;
        self.live_slices(py, d)
    }

    /// What a live NIC did on the wire: a dict with `iface`, `port` (e.g.
    /// "socket on lo"), `rx_frames`, `matched`, `passed_to_kernel`,
    /// `tx_frames`, `drops` ({cause: frames}), `unprocessed` (frames taken
    /// and not processed yet), `fragments_matched`, `fragments_passed`
    /// (IPv4 fragments), `tx_lag_ns` ({min, mean, p50, p99, max}: how long
    /// after its NIC time each sent frame reached the port) and `wall_s`;
    /// None for a simulated NIC.
    fn live_stats(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let Some(s) = self.owned.get_ref()?.live_stats() else {
            return Ok(None);
        };
        let d = pyo3::types::PyDict::new(py);
        d.set_item("iface", s.iface)?;
        d.set_item("port", s.port)?;
        d.set_item("rx_frames", s.rx_frames)?;
        d.set_item("matched", s.matched)?;
        d.set_item("passed_to_kernel", s.passed_to_kernel)?;
        d.set_item("tx_frames", s.tx_frames)?;
        d.set_item("drops", s.drops)?;
        d.set_item("unprocessed", s.unprocessed)?;
        d.set_item("fragments_matched", s.fragments_matched)?;
        d.set_item("fragments_passed", s.fragments_passed)?;
        d.set_item("wall_s", s.wall_s)?;
        let lag = pyo3::types::PyDict::new(py);
        let l = &s.tx_lag_ns;
        for (k, v) in [
            ("min", l.min),
            ("mean", l.mean),
            ("p50", l.p50),
            ("p99", l.p99),
            ("max", l.max),
        ] {
            lag.set_item(k, v)?;
        }
        d.set_item("tx_lag_ns", lag)?;
        Ok(Some(d.into_any().unbind()))
    }

    /// A snapshot of the live NIC's progress (what `softspin nic
    /// --progress` shows; docs/live.md, "Live status"): a dict with the
    /// keys of a `--progress json` status line that are totals, namely
    /// `wall_s`, `nic_time_ns`, `rx_frames`, `matched`, `passed_to_kernel`,
    /// `fragments` ({matched, passed_to_kernel}), `tx_frames`, `drops`
    /// ({cause: frames}, the engine's included), `unprocessed`, `packets`,
    /// `invocations`, `errors` ([{ectx, total, by_cause}]), `errors_total`,
    /// `hpus`, `hpus_busy`, and `hpu_busy_ps` (busy time of all HPUs, for
    /// occupancy between two snapshots); None for a simulated NIC.
    fn live_status(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let Some(s) = self.owned.get_ref()?.live_status() else {
            return Ok(None);
        };
        let d = pyo3::types::PyDict::new(py);
        let w = &s.wire;
        d.set_item("wall_s", w.wall_s)?;
        d.set_item("nic_time_ns", s.nic_time_ps as f64 / 1000.0)?;
        d.set_item("rx_frames", w.rx_frames)?;
        d.set_item("matched", w.matched)?;
        d.set_item("passed_to_kernel", w.passed_to_kernel)?;
        let f = pyo3::types::PyDict::new(py);
        f.set_item("matched", w.fragments_matched)?;
        f.set_item("passed_to_kernel", w.fragments_passed)?;
        d.set_item("fragments", f)?;
        d.set_item("tx_frames", w.tx_frames)?;
        d.set_item("drops", &s.drops)?;
        d.set_item("unprocessed", w.unprocessed)?;
        d.set_item("packets", s.packets)?;
        d.set_item("invocations", s.invocations)?;
        let errors = pyo3::types::PyList::empty(py);
        for e in &s.errors {
            let x = pyo3::types::PyDict::new(py);
            x.set_item("ectx", &e.ectx)?;
            x.set_item("total", e.total)?;
            x.set_item("by_cause", &e.by_cause)?;
            errors.append(x)?;
        }
        d.set_item("errors", errors)?;
        d.set_item("errors_total", s.errors_total())?;
        d.set_item("hpus", s.hpus)?;
        d.set_item("hpus_busy", s.hpus_busy)?;
        d.set_item("hpu_busy_ps", s.hpu_busy_ps)?;
        Ok(Some(d.into_any().unbind()))
    }

    /// Open the simulated NIC described by a TOML file (see docs/sim.md).
    #[staticmethod]
    fn from_config(path: std::path::PathBuf) -> PyResult<Nic> {
        // An unreadable file is a configuration problem here, not host memory.
        Ok(Nic::wrap(host::Nic::open_config_file(path).map_err(err)?))
    }

    /// The NIC configuration as a dict (every field of the model).
    fn config(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = serde_json::to_string(self.owned.get_ref()?.config())
            .map_err(|e| Error::new_err(e.to_string()))?;
        json_to_py(py, &s)
    }

    /// The profile name ("pspin", "fpspin").
    #[getter]
    fn profile(&self) -> PyResult<String> {
        Ok(self.owned.get_ref()?.config().profile.clone())
    }

    /// Number of HPUs.
    #[getter]
    fn hpu_count(&self) -> PyResult<usize> {
        Ok(self.owned.get_ref()?.hpu_count())
    }

    /// Current NIC time in nanoseconds.
    #[getter]
    fn now_ns(&self) -> PyResult<f64> {
        Ok(self.owned.get_ref()?.now_ns())
    }

    /// Load a handler image (an RV32 ELF built by `softspin build`).
    fn load_image(&self, path: std::path::PathBuf) -> PyResult<Image> {
        let inner = self.owned.get_ref()?.load_image(&path).map_err(err)?;
        Ok(Image {
            inner,
            path: Some(path.display().to_string()),
        })
    }

    /// Load a handler image from the bytes of an ELF file.
    fn image_from_bytes(&self, data: &Bound<'_, PyAny>) -> PyResult<Image> {
        Ok(Image {
            inner: self
                .owned
                .get_ref()?
                .image_from_bytes(&bytes_arg(data)?)
                .map_err(err)?,
            path: None,
        })
    }

    // -- host memory

    /// A zeroed host-memory window of `size` bytes owned by the NIC (read it
    /// with `host_read`).
    fn host_window(&mut self, py: Python<'_>, size: usize) -> PyResult<Py<HostWindow>> {
        let w = self.owned.get()?.host_window(size).map_err(err)?;
        self.window(py, w, None)
    }

    /// Lend the NIC a writable, C-contiguous byte buffer (a numpy uint8
    /// array, a bytearray, ...), used in place: handler DMA lands in it
    /// directly and host-side writes to it are what handlers read. The NIC
    /// keeps a buffer export until `unlend`, so the object stays alive and
    /// cannot be resized meanwhile (Python refuses). Do not touch it from
    /// another thread while the NIC runs.
    fn lend(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<Py<HostWindow>> {
        let b = PyBuffer::<u8>::get(buffer).map_err(|_| {
            PyTypeError::new_err(format!(
                "lend() needs a uint8 buffer (numpy.uint8 array, bytearray), got {}",
                type_name(buffer)
            ))
        })?;
        if b.readonly() {
            return Err(HostMemoryError::new_err(format!(
                "cannot lend a read-only {}",
                type_name(buffer)
            )));
        }
        if !b.is_c_contiguous() {
            return Err(HostMemoryError::new_err(
                "cannot lend a non-contiguous buffer (use numpy.ascontiguousarray)",
            ));
        }
        let w = self.owned.get()?.lend(Box::new(Lent(b))).map_err(err)?;
        self.window(py, w, Some(buffer.clone().unbind()))
    }

    /// A new zeroed numpy uint8 array of `size` bytes, lent to the NIC:
    /// the window's `buffer`.
    fn host_array(&mut self, py: Python<'_>, size: usize) -> PyResult<Py<HostWindow>> {
        if size as u64 > host::MAX_HOST_WINDOW {
            return Err(LimitError::new_err(format!(
                "host_array size {size} is above MAX_HOST_WINDOW ({} bytes: task_t's 32-bit host_mem_size)",
                host::MAX_HOST_WINDOW
            )));
        }
        // Through numpy's Python API: a failed allocation is a MemoryError.
        let a = py.import("numpy")?.call_method1("zeros", (size, "uint8"))?;
        self.lend(py, &a)
    }

    /// Take a window back (a lent buffer is released and may be resized again).
    fn unlend(&mut self, window: PyRef<'_, HostWindow>) -> PyResult<()> {
        let w = self.own_window(&window)?;
        self.owned.get()?.unlend(w).map_err(err)?;
        Ok(())
    }

    /// Read `n` bytes of host memory at host address `addr`.
    fn host_read<'py>(
        &mut self,
        py: Python<'py>,
        addr: u64,
        n: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(
            py,
            &self.owned.get()?.host_read(addr, n).map_err(err)?,
        ))
    }

    /// Write bytes to host memory at host address `addr`.
    fn host_write(&mut self, addr: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.owned
            .get()?
            .host_write(addr, &bytes_arg(data)?)
            .map_err(err)
    }

    // -- ECTX

    /// Install an ECTX for `image` (inactive until `activate`). Handlers are
    /// symbol names: `hh` header, `ph` payload, `th` completion (at least
    /// one). `host_window` is the window handlers may DMA to;
    /// `handler_mem_size` sizes handler memory (room for `nic_alloc`);
    /// `handler_mem_addr` puts it in a region of its own at that L2 address
    /// (PsPIN's layout: the image's data is shared by its ECTXs, e.g. at
    /// `image.data_end` rounded up);
    /// `l1_copy` bytes of each packet copied to L1 (default all);
    /// `scratchpad` bytes per cluster (an int for every cluster, or a list);
    /// `watchdog` instructions per handler; `msg_timeout_ns` (0 = never);
    /// `udp_dst_port` match rule (default: every packet); `frame` ("ip" or
    /// "eth") the frames `send_message` builds for it. On a live NIC the
    /// matching engine's rulesets select its frames (at least one needed):
    /// `match` lists `--match` shortcuts ("udp:PORT", "icmp", "ipv4", "all",
    /// "slmp[:PORT]"); `rules` is a TOML rules file (docs/rules.md) and
    /// `rules_toml` the same as text, of which the rulesets naming no ECTX
    /// or this one (`ectx = NAME`) apply; `udp_dst_port` alone means
    /// "udp:PORT". `rma_rank` puts the RMA transport block (docs/rma.md
    /// "Reliability") in front of the ECTX as that node (0..=65535).
    #[pyo3(signature = (image, *, ph=None, hh=None, th=None, host_window=None, handler_mem_size=None, handler_mem_addr=None, l1_copy=None, scratchpad=None, watchdog=None, msg_timeout_ns=None, udp_dst_port=None, name=None, frame=None, r#match=None, rules=None, rules_toml=None, rma_rank=None))]
    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        image: PyRef<'_, Image>,
        ph: Option<String>,
        hh: Option<String>,
        th: Option<String>,
        host_window: Option<PyRef<'_, HostWindow>>,
        handler_mem_size: Option<u64>,
        handler_mem_addr: Option<u64>,
        l1_copy: Option<u64>,
        scratchpad: Option<&Bound<'_, PyAny>>,
        watchdog: Option<u64>,
        msg_timeout_ns: Option<u64>,
        udp_dst_port: Option<u16>,
        name: Option<String>,
        frame: Option<&str>,
        r#match: Option<Vec<String>>,
        rules: Option<std::path::PathBuf>,
        rules_toml: Option<String>,
        rma_rank: Option<u16>,
    ) -> PyResult<Ectx> {
        let frame = frame.map(frame_kind).transpose()?;
        let net = |e: softspin_netio::NetError| err(host::Error::Net(e));
        let mut from_file = Vec::new();
        if let Some(path) = rules {
            from_file.extend(softspin_netio::rules::load_rules(path).map_err(net)?);
        }
        if let Some(text) = rules_toml {
            from_file.extend(softspin_netio::rules::parse_rules(&text).map_err(net)?);
        }
        let rulesets = softspin_netio::rules::ectx_rulesets(
            &r#match.unwrap_or_default(),
            from_file,
            name.as_deref(),
            udp_dst_port,
        )
        .map_err(net)?;
        let scratchpad = match scratchpad {
            None => Vec::new(),
            Some(s) => match s.extract::<u64>() {
                Ok(n) => {
                    vec![arg_u32(n, "scratchpad")?; self.owned.get()?.config().clusters as usize]
                }
                Err(_) => s
                    .extract::<Vec<u64>>()?
                    .into_iter()
                    .map(|n| arg_u32(n, "scratchpad entry"))
                    .collect::<PyResult<_>>()?,
            },
        };
        let handler_mem_size = handler_mem_size
            .map(|v| arg_u32(v, "handler_mem_size"))
            .transpose()?;
        let l1_copy = l1_copy.map(|v| arg_u32(v, "l1_copy")).transpose()?;
        let opts = host::EctxOptions {
            name: name.clone(),
            hh,
            ph,
            th,
            handler_mem_size,
            handler_mem_addr: handler_mem_addr
                .map(|v| arg_u32(v, "handler_mem_addr"))
                .transpose()?,
            host_window: host_window.map(|w| self.own_window(&w)).transpose()?,
            l1_copy,
            scratchpad,
            watchdog,
            msg_timeout_ns,
            udp_dst_port,
            rules: rulesets,
            rma: rma_rank.map(softspin_engine::RmaTransportConfig::new),
        };
        let h = self.owned.get()?.install(&image.inner, opts).map_err(err)?;
        let e = Ectx {
            id: h.0,
            name: self.owned.get()?.ectx_name(h).map_err(err)?,
            nic: self.uid,
        };
        self.ectxs.insert(h.0, e.clone());
        if let Some(k) = frame {
            self.owned.get()?.set_frame_kind(h, k).map_err(err)?;
        }
        Ok(e)
    }

    /// Let the ECTX receive packets.
    fn activate(&mut self, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.owned.get()?.activate(h).map_err(err)
    }

    /// Stop the ECTX receiving new packets.
    fn deactivate(&mut self, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.owned.get()?.deactivate(h).map_err(err)
    }

    /// Remove an inactive ECTX with no message in flight; its handle is dead
    /// afterwards.
    fn uninstall(&mut self, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.owned.get()?.uninstall(h).map_err(err)
    }

    /// Frames `send_message` builds for this ECTX: "ip" (PsPIN's IP-first
    /// layout, default) or "eth" (Ethernet/IPv4/UDP).
    fn set_frame_kind(&mut self, ectx: &Ectx, frame: &str) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.owned
            .get()?
            .set_frame_kind(h, frame_kind(frame)?)
            .map_err(err)
    }

    // -- NIC memory

    /// Allocate `size` bytes of the ECTX's handler memory (beyond its image's
    /// data); returns the NIC address.
    #[pyo3(signature = (ectx, size, align = 8))]
    fn nic_alloc(&mut self, ectx: &Ectx, size: usize, align: usize) -> PyResult<u32> {
        let h = self.handle(ectx)?;
        self.owned.get()?.nic_alloc(h, size, align).map_err(err)
    }

    /// Read `n` bytes of NIC memory at NIC address `addr`.
    fn nic_read<'py>(&self, py: Python<'py>, addr: u64, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(
            py,
            &self
                .owned
                .get_ref()?
                .nic_read(arg_u32(addr, "NIC address")?, n)
                .map_err(err)?,
        ))
    }

    /// Write bytes to NIC memory at NIC address `addr`.
    fn nic_write(&mut self, addr: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.owned
            .get()?
            .nic_write(arg_u32(addr, "NIC address")?, &bytes_arg(data)?)
            .map_err(err)
    }

    /// Store the 32-bit NIC pointer `target` at NIC address `addr`.
    fn nic_write_ptr(&mut self, addr: u32, target: u32) -> PyResult<()> {
        self.owned.get()?.nic_write_ptr(addr, target).map_err(err)
    }

    // -- RMA memory registration (docs/rma.md "Windows and keys")

    /// Export `size` bytes at `offset` of the ECTX's host window under `key`
    /// with permissions `perms` (READ 1 | WRITE 2 | ATOMIC 4) in the RMA
    /// target handlers' window table; the same key again replaces its window.
    fn export_window(
        &mut self,
        ectx: &Ectx,
        key: u32,
        offset: u64,
        size: u64,
        perms: u32,
    ) -> PyResult<()> {
        let e = self.handle(ectx)?;
        self.owned
            .get()?
            .export_window(e, key, offset, size, perms)
            .map_err(err)
    }

    /// Withdraw the window exported under `key`.
    fn unexport_window(&mut self, ectx: &Ectx, key: u32) -> PyResult<()> {
        let e = self.handle(ectx)?;
        self.owned.get()?.unexport_window(e, key).map_err(err)
    }

    /// The ECTX's RMA window table: [(key, perms, base, size)], free entries (key 0) included.
    fn rma_windows(&self, ectx: &Ectx) -> PyResult<Vec<(u32, u32, u64, u64)>> {
        let e = self.handle(ectx)?;
        Ok(self
            .owned
            .get_ref()?
            .rma_windows(e)
            .map_err(err)?
            .into_iter()
            .map(|w| (w.key, w.perms, w.base, w.size))
            .collect())
    }

    /// Post an RMA operation on the ECTX running the RMA handlers (docs/rma.md
    /// "From the host"): `op` is "put"/"get" (`local`, `len`: bytes of the
    /// ECTX's host window), "fetch_add" (`width`, `addend`) or "cas"
    /// (`width`, `compare`, `swap`). Never blocks; the handle's completion
    /// comes from rma_completions while the NIC runs.
    #[pyo3(signature = (ectx, rank, key, offset, op, local = 0, len = 0, width = 8, addend = 0, compare = 0, swap = 0))]
    #[allow(clippy::too_many_arguments)]
    fn rma_post(
        &mut self,
        ectx: &Ectx,
        rank: u16,
        key: u32,
        offset: u64,
        op: &str,
        local: u64,
        len: u64,
        width: u8,
        addend: u64,
        compare: u64,
        swap: u64,
    ) -> PyResult<u64> {
        use softspin_host::RmaOp;
        let e = self.handle(ectx)?;
        let op = match op {
            "put" => RmaOp::Put { local, len },
            "get" => RmaOp::Get { local, len },
            "fetch_add" => RmaOp::FetchAdd { width, addend },
            "cas" => RmaOp::Cas {
                width,
                compare,
                swap,
            },
            other => {
                return Err(err(softspin_host::Error::Invalid(format!(
                    "RMA op `{other}`: put, get, fetch_add or cas"
                ))))
            }
        };
        let r = softspin_host::RmaRequest {
            rank,
            key,
            offset,
            op,
        };
        Ok(self.owned.get()?.rma_post(e, &r).map_err(err)?.0)
    }

    /// The completions of the ECTX's host-posted RMA operations since the
    /// last call, each once: [(handle, status, value)] (status 0 OK, 1
    /// BAD_KEY ... 7 PEER_FAILED; value: an atomic's old word).
    fn rma_completions(&mut self, ectx: &Ectx) -> PyResult<Vec<(u64, u8, u64)>> {
        let e = self.handle(ectx)?;
        Ok(self
            .owned
            .get()?
            .rma_completions(e)
            .into_iter()
            .map(|c| (c.handle.0, c.status, c.value))
            .collect())
    }

    /// RMA operations posted on the ECTX and not yet completed.
    fn rma_outstanding(&self, ectx: &Ectx) -> PyResult<usize> {
        let e = self.handle(ectx)?;
        Ok(self.owned.get_ref()?.rma_outstanding(e))
    }

    // -- traffic

    /// Hand the NIC one packet (a whole frame) of message `msg_id` now.
    #[pyo3(signature = (frame, msg_id = 0, eom = true))]
    fn send_packet(&mut self, frame: &Bound<'_, PyAny>, msg_id: u32, eom: bool) -> PyResult<()> {
        self.owned
            .get()?
            .send_packet(bytes_arg(frame)?, msg_id, eom)
            .map_err(err)
    }

    /// Send `payload` as message `msg_id` to an ECTX: packets of at most
    /// `packet_size` bytes (headers included) to its UDP port, spaced at the
    /// line rate.
    #[pyo3(signature = (ectx, msg_id, payload, packet_size = 1024))]
    fn send_message(
        &mut self,
        ectx: &Ectx,
        msg_id: u32,
        payload: &Bound<'_, PyAny>,
        packet_size: usize,
    ) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.owned
            .get()?
            .send_message(h, msg_id, &bytes_arg(payload)?, packet_size)
            .map_err(err)
    }

    /// Feed a PsPIN-style text trace (`frame`: "ip" or "eth").
    #[pyo3(signature = (path, frame = "ip"))]
    fn feed_trace(&mut self, path: std::path::PathBuf, frame: &str) -> PyResult<()> {
        self.owned
            .get()?
            .feed_trace(path, frame_kind(frame)?)
            .map_err(err)
    }

    /// Feed a pcap(ng) file of Ethernet frames, at its timestamps or back to
    /// back at `rate_gbps`.
    #[pyo3(signature = (path, rate_gbps = None))]
    fn feed_pcap(&mut self, path: std::path::PathBuf, rate_gbps: Option<f64>) -> PyResult<()> {
        self.owned.get()?.feed_pcap(path, rate_gbps).map_err(err)
    }

    /// Feed synthetic traffic: `messages` messages of `packets` packets of
    /// `size` bytes (headers included) at `rate_gbps` (default: the line
    /// rate), `concurrent` messages interleaved; `payload` "zero", "seq" or
    /// "random" (with `seed`).
    #[pyo3(signature = (*, messages = 1, packets = 1, size = 1024, rate_gbps = None, frame = "ip", concurrent = 1, payload = "seq", seed = 0, first_msg_id = 0, udp_dst_port = None, udp_src_port = None))]
    #[allow(clippy::too_many_arguments)]
    fn feed_generator(
        &mut self,
        messages: u32,
        packets: u32,
        size: usize,
        rate_gbps: Option<f64>,
        frame: &str,
        concurrent: u32,
        payload: &str,
        seed: u64,
        first_msg_id: u32,
        udp_dst_port: Option<u16>,
        udp_src_port: Option<u16>,
    ) -> PyResult<()> {
        let payload = match payload {
            "zero" => Payload::Zero,
            "seq" => Payload::Sequence,
            "random" => Payload::Random { seed },
            p => {
                return Err(InvalidArgumentError::new_err(format!(
                    "unknown payload `{p}` (known: zero, seq, random)"
                )))
            }
        };
        let d = GenConfig::default();
        let g = GenConfig {
            messages,
            packets_per_message: packets,
            size,
            rate_gbps: rate_gbps.unwrap_or(self.owned.get()?.config().line_rate_gbps),
            concurrent,
            frame: frame_kind(frame)?,
            payload,
            first_msg_id,
            udp_src_port: udp_src_port.unwrap_or(d.udp_src_port),
            udp_dst_port: udp_dst_port.unwrap_or(d.udp_dst_port),
            ..d
        };
        self.owned.get()?.feed_generator(g).map_err(err)
    }

    // -- running

    /// Run until nothing is left to do (or every handler waits for the host).
    fn run_until_idle(&mut self) -> PyResult<()> {
        self.owned.get()?.run_until_idle().map_err(err)
    }

    /// Run for `ns` nanoseconds of NIC time (live: of wall time, stopping
    /// early with KeyboardInterrupt on Ctrl-C).
    fn run_for(&mut self, py: Python<'_>, ns: u64) -> PyResult<()> {
        let nic = self.owned.get()?;
        nic.run_for_end(ns).map_err(err)?;
        if nic.is_live() {
            return self.live_slices(py, Some(std::time::Duration::from_nanos(ns)));
        }
        self.owned.get()?.run_for(ns).map_err(err)
    }

    // -- results

    /// Events since the last call: OutboundPacket, HostWrite, MessageDone
    /// and HandlerError objects (handler errors first, then each kind in
    /// time order).
    fn events(&mut self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        self.event_objects(py)
    }

    /// The statistics report as a dict, the same as `softspin sim --json`.
    fn report(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = serde_json::to_string(&self.owned.get_ref()?.report())
            .map_err(|e| Error::new_err(e.to_string()))?;
        json_to_py(py, &s)
    }

    /// The statistics report as text (what `softspin sim` prints).
    fn report_text(&self) -> PyResult<String> {
        Ok(self.owned.get_ref()?.report().text())
    }

    /// (packets admitted, messages completed) of an ECTX.
    fn ectx_counts(&self, ectx: &Ectx) -> PyResult<(u64, u64)> {
        self.owned
            .get_ref()?
            .ectx_counts(self.handle(ectx)?)
            .map_err(err)
    }

    /// Give the NIC a cluster's node table (a file, docs/cluster.md) and its
    /// rank: handlers read them through spin_node.h.
    fn set_node_table(&mut self, path: std::path::PathBuf, rank: u32) -> PyResult<()> {
        let t = host::load_node_table(&path).map_err(err)?;
        self.owned.get()?.set_node_table(&t, rank).map_err(err)
    }

    /// This NIC's rank in its node table, or None without one.
    #[getter]
    fn rank(&self) -> PyResult<Option<u32>> {
        Ok(self.owned.get_ref()?.rank())
    }

    /// The NIC's node table as `load_nodes` gives it ([] without one).
    fn nodes(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        match self.owned.get_ref()?.node_table() {
            Some((t, _)) => t.nodes().iter().map(|n| node_dict(py, n)).collect(),
            None => Ok(Vec::new()),
        }
    }

    /// Performance counters pushed by an ECTX's handlers: [(index, sum, count)].
    fn counters(&self, ectx: &Ectx) -> PyResult<Vec<(u32, u64, u64)>> {
        self.owned
            .get_ref()?
            .counters(self.handle(ectx)?)
            .map_err(err)
    }

    /// The printf output of HPU `hpu` (global index).
    fn hpu_stdout(&self, hpu: usize) -> PyResult<String> {
        self.owned.get_ref()?.hpu_stdout(hpu).map_err(err)
    }

    // -- host notifications

    /// Notifications that reached the host by now (does not run the NIC).
    fn poll_notifications(&mut self, py: Python<'_>) -> PyResult<Vec<Py<Notification>>> {
        let v = self.owned.get()?.poll_notifications();
        self.notes(py, v)
    }

    /// Run the NIC until at least one notification is available, or nothing
    /// is left to run (then the list may be empty).
    fn wait_notifications(&mut self, py: Python<'_>) -> PyResult<Vec<Py<Notification>>> {
        let v = self.owned.get()?.wait_notifications().map_err(err)?;
        self.notes(py, v)
    }

    /// Answer notification `id` with a 64-bit value.
    fn respond(&mut self, id: u32, value: u64) -> PyResult<()> {
        self.owned.get()?.respond(id, value).map_err(err)
    }

    /// Iterate over notifications, running the NIC as needed; ends when the
    /// NIC is idle with none pending. Answer each with `respond`.
    fn notifications(slf: Py<Self>) -> NotificationIter {
        NotificationIter {
            nic: slf,
            queue: VecDeque::new(),
        }
    }

    fn __repr__(&self) -> PyResult<String> {
        let nic = self.owned.get_ref()?;
        Ok(format!(
            "Nic(profile={:?}, now_ns={})",
            nic.config().profile,
            nic.now_ns()
        ))
    }
}

/// Iterator returned by `Nic.notifications()`.
#[pyclass(module = "softspin")]
pub struct NotificationIter {
    nic: Py<Nic>,
    queue: VecDeque<Py<Notification>>,
}

#[pymethods]
impl NotificationIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<Notification>>> {
        if self.queue.is_empty() {
            let mut nic = self.nic.borrow_mut(py);
            self.queue.extend(nic.wait_notifications(py)?);
        }
        Ok(self.queue.pop_front())
    }
}

/// Build a handler image from C sources with the softspin SDK (clang-19,
/// ld.lld-19), as `softspin build` does; returns `output`. `define` holds
/// `NAME` or `NAME=VALUE`; `code_base`/`data_base` link a second ECTX's
/// image elsewhere; `bare` builds a bare-metal program; `profile` ("pspin",
/// "fpspin") sets that NIC's NB_CLUSTERS/NB_CORES (default: the SDK's, PsPIN).
#[pyfunction]
#[pyo3(signature = (sources, output, *, profile = None, define = None, include = None, cflags = None, code_base = None, data_base = None, bare = false, verbose = false))]
#[allow(clippy::too_many_arguments)]
fn build(
    sources: &Bound<'_, PyAny>,
    output: std::path::PathBuf,
    profile: Option<&str>,
    define: Option<Vec<String>>,
    include: Option<Vec<std::path::PathBuf>>,
    cflags: Option<Vec<String>>,
    code_base: Option<u32>,
    data_base: Option<u32>,
    bare: bool,
    verbose: bool,
) -> PyResult<std::path::PathBuf> {
    let sources: Vec<std::path::PathBuf> = match sources.extract::<std::path::PathBuf>() {
        Ok(p) => vec![p],
        Err(_) => sources.extract()?,
    };
    let (mut define, include, cflags) = (
        define.unwrap_or_default(),
        include.unwrap_or_default(),
        cflags.unwrap_or_default(),
    );
    let mut link_symbols = Vec::new();
    if let Some(p) = profile {
        let cfg = host::NicConfig::profile(p).ok_or_else(|| err(host::Error::Profile(p.into())))?;
        define.splice(0..0, cfg.sdk_defines());
        link_symbols = cfg.memory_map().link_symbols();
    }
    let o = host::sdk::BuildOptions {
        sources,
        output: output.clone(),
        include,
        define,
        bare,
        cflags,
        code_base,
        data_base,
        link_symbols,
        verbose,
    };
    host::sdk::build(&o).map_err(err)?;
    Ok(output)
}

/// The node table of a cluster (docs/cluster.md, e.g. what `softspin
/// cluster up` wrote) as a list of dicts in rank order: rank, iface, ipv4,
/// mac, udp_port, netns (None on real machines). Raises IoError, or
/// InvalidArgumentError naming the line and field.
#[pyfunction]
fn load_nodes(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Vec<PyObject>> {
    let t = host::load_node_table(&path).map_err(err)?;
    t.nodes().iter().map(|n| node_dict(py, n)).collect()
}

fn node_dict(py: Python<'_>, n: &host::Node) -> PyResult<PyObject> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("rank", n.rank)?;
    d.set_item("iface", &n.iface)?;
    d.set_item("ipv4", n.ipv4.to_string())?;
    d.set_item("mac", n.mac.to_string())?;
    d.set_item("udp_port", n.udp_port)?;
    d.set_item("netns", n.netns.as_deref())?;
    Ok(d.into_any().unbind())
}

/// Send `messages` (bytes-like, or a list of them: one SLMP message each,
/// message ids counting up from `first_msg_id`) to the SLMP receiver at
/// `to` ("ADDR[:PORT]", default port 9330), e.g. a NIC running
/// examples/slmp_recv's handlers. Retransmits lost segments; `window` is
/// "auto" (adaptive) or a packet count; `sync` is "all" (every segment
/// acknowledged), "msg" (first and last) or "none". Returns the statistics
/// as a dict (as `softspin slmp send --json`); `delivery_confirmed` is
/// True for sync "all". Raises SlmpGaveUpError (a NetError, with `.stats`)
/// when it gives up, InvalidArgumentError for bad settings. The GIL is
/// released while sending.
#[pyfunction]
// Python keyword arguments, one Rust parameter each.
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (to, messages, *, window = "auto", sync = "all", segment = None, give_up_s = 10.0, first_msg_id = 1))]
fn slmp_send(
    py: Python<'_>,
    to: &str,
    messages: &Bound<'_, PyAny>,
    window: &str,
    sync: &str,
    segment: Option<usize>,
    give_up_s: f64,
    first_msg_id: u32,
) -> PyResult<PyObject> {
    use pyo3::buffer::PyBuffer;
    let one = |o: &Bound<'_, PyAny>| -> PyResult<Vec<u8>> { PyBuffer::<u8>::get(o)?.to_vec(py) };
    let msgs: Vec<Vec<u8>> = match one(messages) {
        Ok(m) => vec![m],
        Err(_) => messages
            .try_iter()?
            .map(|m| one(&m?))
            .collect::<PyResult<_>>()
            .map_err(|e| {
                InvalidArgumentError::new_err(format!(
                    "messages: expected a bytes-like object or a list of them ({e})"
                ))
            })?,
    };
    let give_up = std::time::Duration::try_from_secs_f64(give_up_s).map_err(|_| {
        InvalidArgumentError::new_err(format!("give_up_s {give_up_s}: expected seconds > 0"))
    })?;
    let opts = host::slmp::SendOptions {
        window: window.into(),
        sync: sync.into(),
        segment: segment.unwrap_or(host::slmp::SendOptions::default().segment),
        give_up,
        first_msg_id,
    };
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let stats_dict = |py: Python<'_>, s: &host::slmp::Stats| -> PyResult<PyObject> {
        let j = serde_json::to_string(s).map_err(|e| Error::new_err(e.to_string()))?;
        json_to_py(py, &j)
    };
    match py.allow_threads(|| host::slmp::send(to, &refs, &opts)) {
        Ok(s) => stats_dict(py, &s),
        Err(host::Error::Slmp(softspin_slmp::Error::GaveUp {
            msg_id,
            index,
            reason,
            stats,
        })) => {
            let d = stats_dict(py, &stats)?;
            let e = softspin_slmp::Error::GaveUp {
                msg_id,
                index,
                reason,
                stats,
            };
            let exc = SlmpGaveUpError::new_err(e.to_string());
            exc.value(py).setattr("stats", d)?;
            Err(exc)
        }
        Err(e) => Err(err(e)),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Nic>()?;
    m.add_class::<Image>()?;
    m.add_class::<HostWindow>()?;
    m.add_class::<Ectx>()?;
    m.add_class::<OutboundPacket>()?;
    m.add_class::<HostWrite>()?;
    m.add_class::<MessageDone>()?;
    m.add_class::<HandlerError>()?;
    m.add_class::<ErrorsDropped>()?;
    m.add_class::<Notification>()?;
    m.add_class::<NotificationIter>()?;
    m.add("Error", py.get_type::<Error>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("LimitError", py.get_type::<LimitError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("IoError", py.get_type::<IoError>())?;
    m.add("ImageError", py.get_type::<ImageError>())?;
    m.add("SymbolError", py.get_type::<SymbolError>())?;
    m.add("OverlapError", py.get_type::<OverlapError>())?;
    m.add("NicMemoryError", py.get_type::<NicMemoryError>())?;
    m.add("HostMemoryError", py.get_type::<HostMemoryError>())?;
    m.add("StateError", py.get_type::<StateError>())?;
    m.add("NoEctxError", py.get_type::<NoEctxError>())?;
    m.add("EctxError", py.get_type::<EctxError>())?;
    m.add("TrafficError", py.get_type::<TrafficError>())?;
    m.add("SimError", py.get_type::<SimError>())?;
    m.add("BuildError", py.get_type::<BuildError>())?;
    m.add("NetError", py.get_type::<NetError>())?;
    m.add("ThreadError", py.get_type::<ThreadError>())?;
    m.add("SlmpGaveUpError", py.get_type::<SlmpGaveUpError>())?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(slmp_send, m)?)?;
    m.add_function(wrap_pyfunction!(load_nodes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The host API's event kinds and their fields (softspin_host::EVENTS,
    // and Notification): tests check that the classes above carry them all.
    let kinds = pyo3::types::PyDict::new(py);
    for k in host::EVENTS
        .iter()
        .chain([&<host::Notification as host::Output>::KIND])
    {
        kinds.set_item(k.name, k.fields.to_vec())?;
    }
    m.add("_EVENT_FIELDS", kinds)?;
    Ok(())
}
