//! The `softspin` Python module: a thin pyo3 layer over `softspin_host::Nic`
//! (one host API model in Rust, C and Python). The Python package
//! (`python/softspin`) re-exports everything from `softspin._native`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use numpy::PyArray1;
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use softspin_engine::SimError as EngineSimError;
use softspin_host as host;
use softspin_host::{FrameKind, GenConfig, HostBuffer, Payload};

create_exception!(softspin, SoftspinError, PyException, "Base class of every error softspin raises.");
create_exception!(softspin, ConfigError, SoftspinError, "Bad NIC configuration or unknown profile.");
create_exception!(softspin, ImageError, SoftspinError, "A handler image could not be read, parsed, or lacks a symbol.");
create_exception!(softspin, EctxError, SoftspinError, "Installing or managing an ECTX failed (missing handler, overlap, state, uninstalled).");
create_exception!(softspin, TrafficError, SoftspinError, "Bad traffic: generator parameter, trace or pcap file.");
create_exception!(softspin, SimError, SoftspinError, "The simulation rejected a packet (too large for a slot, too short).");
create_exception!(softspin, HostMemoryError, SoftspinError, "A host address range outside every window, or a buffer that cannot be lent.");
create_exception!(softspin, NicMemoryError, SoftspinError, "A NIC address range outside NIC memory, or handler memory exhausted.");
create_exception!(softspin, BuildError, SoftspinError, "Compiling or linking a handler image failed (diagnostics went to stderr).");
create_exception!(softspin, InvalidArgumentError, SoftspinError, "An argument softspin cannot use (frame kind, packet size, notification id, HPU index...).");

/// Every `softspin_host::Error` as a Python exception carrying its message.
fn err(e: host::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        host::Error::Config(_) | host::Error::Profile(_) => ConfigError::new_err(msg),
        host::Error::Image(_) => ImageError::new_err(msg),
        host::Error::Ectx(_) | host::Error::NoEctx(_) => EctxError::new_err(msg),
        host::Error::Traffic(_) | host::Error::Sim(EngineSimError::Traffic(_)) => TrafficError::new_err(msg),
        host::Error::Sim(_) => SimError::new_err(msg),
        host::Error::Host(_) => HostMemoryError::new_err(msg),
        host::Error::NicMemory(_) => NicMemoryError::new_err(msg),
        host::Error::Invalid(_) => InvalidArgumentError::new_err(msg),
        host::Error::Build(_) => BuildError::new_err(msg),
        #[allow(unreachable_patterns)]
        _ => SoftspinError::new_err(msg),
    }
}

fn frame_kind(s: &str) -> PyResult<FrameKind> {
    match s {
        "ip" => Ok(FrameKind::Ip),
        "eth" => Ok(FrameKind::Eth),
        _ => Err(InvalidArgumentError::new_err(format!("unknown frame kind `{s}` (known: ip, eth)"))),
    }
}

/// Bytes from `bytes` or any object with the buffer protocol (copied).
fn bytes_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    let buf = PyBuffer::<u8>::get(obj)
        .map_err(|_| PyTypeError::new_err(format!("expected bytes-like data, got {}", type_name(obj))))?;
    buf.to_vec(obj.py())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

fn json_to_py(py: Python<'_>, s: &str) -> PyResult<PyObject> {
    Ok(py.import("json")?.call_method1("loads", (s,))?.unbind())
}

fn ns(ps: u64) -> f64 {
    ps as f64 / 1000.0
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

    /// All symbols as a dict {name: address}.
    fn symbols(&self) -> HashMap<String, u32> {
        self.inner.symbols().map(|(k, v)| (k.to_string(), v)).collect()
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
        format!("OutboundPacket(time_ns={}, ectx={:?}, dest={}, len={})", self.time_ns, self.ectx.as_ref().map(|e| e.id), self.dest, self.frame.as_bytes(py).len())
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
        format!("HostWrite(time_ns={}, addr=0x{:x}, value=0x{:x})", self.time_ns, self.addr, self.value)
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
        format!("MessageDone(time_ns={}, msg_id={})", self.time_ns, self.msg_id)
    }
}

/// A handler that faulted, looped past its watchdog or misbehaved; only that
/// invocation ended. `ectx` is the ECTX's name.
#[pyclass(module = "softspin", frozen, get_all)]
pub struct HandlerError {
    /// The ECTX's name.
    ectx: String,
    /// "ectx:symbol" of the handler.
    handler: String,
    /// What went wrong (fault kind, watchdog, ...).
    cause: String,
    /// Faulting instruction and data address.
    pc: u32,
    addr: u32,
    time_ns: f64,
    /// Global HPU index.
    hpu: u32,
}

#[pymethods]
impl HandlerError {
    fn __repr__(&self) -> String {
        format!(
            "HandlerError(ectx={:?}, handler={:?}, cause={:?}, pc=0x{:08x}, addr=0x{:08x}, time_ns={}, hpu={})",
            self.ectx, self.handler, self.cause, self.pc, self.addr, self.time_ns, self.hpu
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
    /// When it became visible to the host.
    time_ns: f64,
    /// Inline payload (up to 64 bytes).
    data: Py<PyBytes>,
    /// The reference the handler passed (e.g. a host address).
    host_ref: u64,
}

#[pymethods]
impl Notification {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Notification(id={}, hpu={}, time_ns={}, data={:?}, host_ref=0x{:x})", self.id, self.hpu, self.time_ns, self.data.as_bytes(py), self.host_ref)
    }
}

// ---------------------------------------------------------------- lending

/// A Python buffer lent in place. Holding the buffer export keeps the
/// object alive and makes Python refuse to resize it (bytearray, numpy).
struct Lent(PyBuffer<u8>);

impl HostBuffer for Lent {
    fn bytes(&mut self) -> &mut [u8] {
        // Checked writable and C-contiguous when lent; the export pins it. The
        // engine only touches it while the GIL is held by a Nic call.
        unsafe { std::slice::from_raw_parts_mut(self.0.buf_ptr() as *mut u8, self.0.len_bytes()) }
    }
}

// ---------------------------------------------------------------- the NIC

static NEXT_NIC: AtomicU64 = AtomicU64::new(1);

/// A sPIN NIC (the simulated PsPIN NIC). Use it from the thread that
/// created it.
#[pyclass(module = "softspin", unsendable)]
pub struct Nic {
    nic: host::Nic,
    uid: u64,
    /// Engine ECTX id -> handle, for events and notifications.
    by_engine: HashMap<usize, Ectx>,
    /// Events drained early (before an uninstall), handed out by `events`.
    pending: Vec<PyObject>,
}

impl Nic {
    fn wrap(nic: host::Nic) -> Nic {
        Nic { nic, uid: NEXT_NIC.fetch_add(1, Ordering::Relaxed), by_engine: HashMap::new(), pending: Vec::new() }
    }

    fn handle(&self, e: &Ectx) -> PyResult<host::Ectx> {
        if e.nic != self.uid {
            return Err(EctxError::new_err(format!("ECTX `{}` belongs to another NIC", e.name)));
        }
        Ok(host::Ectx(e.id))
    }

    fn drain_events(&mut self, py: Python<'_>) -> PyResult<()> {
        for ev in self.nic.events() {
            let lookup = |id: usize| self.by_engine.get(&id).cloned();
            let obj = match ev {
                host::Event::Outbound(o) => Py::new(
                    py,
                    OutboundPacket { time_ns: ns(o.time_ps), time_ps: o.time_ps, ectx: lookup(o.ectx), dest: o.dest, frame: PyBytes::new(py, &o.frame).unbind() },
                )?
                .into_any(),
                host::Event::HostWrite(w) => {
                    Py::new(py, HostWrite { time_ns: ns(w.time_ps), time_ps: w.time_ps, ectx: lookup(w.ectx), addr: w.addr, value: w.value })?.into_any()
                }
                host::Event::MessageDone(d) => {
                    Py::new(py, MessageDone { time_ns: ns(d.time_ps), time_ps: d.time_ps, ectx: lookup(d.ectx), msg_id: d.msg_id })?.into_any()
                }
                host::Event::HandlerError(h) => Py::new(
                    py,
                    HandlerError { ectx: h.ectx, handler: h.handler, cause: h.cause, pc: h.pc, addr: h.addr, time_ns: h.time_ns as f64, hpu: h.hpu },
                )?
                .into_any(),
            };
            self.pending.push(obj);
        }
        Ok(())
    }

    fn notes(&self, py: Python<'_>, v: Vec<host::Notification>) -> PyResult<Vec<Py<Notification>>> {
        v.into_iter()
            .map(|n| {
                Py::new(
                    py,
                    Notification {
                        id: n.id,
                        ectx: self.by_engine.get(&n.ectx).cloned(),
                        hpu: n.hpu,
                        time_ns: ns(n.time_ps),
                        data: PyBytes::new(py, &n.data).unbind(),
                        host_ref: n.host_ref,
                    },
                )
            })
            .collect()
    }

    fn window(&self, py: Python<'_>, w: host::HostWindow, buffer: Option<PyObject>) -> PyResult<Py<HostWindow>> {
        Py::new(py, HostWindow { base: w.base, size: w.size, buffer })
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

    /// Open the simulated NIC described by a TOML file (see docs/sim.md).
    #[staticmethod]
    fn from_config(path: std::path::PathBuf) -> PyResult<Nic> {
        // An unreadable file is a configuration problem here, not host memory.
        let nic = host::Nic::open_config_file(path).map_err(|e| match e {
            host::Error::Host(m) => ConfigError::new_err(m),
            e => err(e),
        })?;
        Ok(Nic::wrap(nic))
    }

    /// The NIC configuration as a dict (every field of the model).
    fn config(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = serde_json::to_string(self.nic.config()).map_err(|e| SoftspinError::new_err(e.to_string()))?;
        json_to_py(py, &s)
    }

    /// The profile name ("pspin", "fpspin").
    #[getter]
    fn profile(&self) -> String {
        self.nic.config().profile.clone()
    }

    /// Number of HPUs.
    #[getter]
    fn hpu_count(&self) -> usize {
        self.nic.hpu_count()
    }

    /// Current NIC time in nanoseconds.
    #[getter]
    fn now_ns(&self) -> f64 {
        self.nic.now_ns()
    }

    /// Load a handler image (an RV32 ELF built by `softspin build`).
    fn load_image(&self, path: std::path::PathBuf) -> PyResult<Image> {
        let inner = self.nic.load_image(&path).map_err(err)?;
        Ok(Image { inner, path: Some(path.display().to_string()) })
    }

    /// Load a handler image from the bytes of an ELF file.
    fn image_from_bytes(&self, data: &Bound<'_, PyAny>) -> PyResult<Image> {
        Ok(Image { inner: self.nic.image_from_bytes(&bytes_arg(data)?).map_err(err)?, path: None })
    }

    // -- host memory

    /// A zeroed host-memory window of `size` bytes owned by the NIC (read it
    /// with `host_read`).
    fn host_window(&mut self, py: Python<'_>, size: usize) -> PyResult<Py<HostWindow>> {
        let w = self.nic.host_window(size).map_err(err)?;
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
            PyTypeError::new_err(format!("lend() needs a uint8 buffer (numpy.uint8 array, bytearray), got {}", type_name(buffer)))
        })?;
        if b.readonly() {
            return Err(HostMemoryError::new_err(format!("cannot lend a read-only {}", type_name(buffer))));
        }
        if !b.is_c_contiguous() {
            return Err(HostMemoryError::new_err("cannot lend a non-contiguous buffer (use numpy.ascontiguousarray)"));
        }
        let w = self.nic.lend(Box::new(Lent(b))).map_err(err)?;
        self.window(py, w, Some(buffer.clone().unbind()))
    }

    /// A new zeroed numpy uint8 array of `size` bytes, lent to the NIC:
    /// the window's `buffer`.
    fn host_array(&mut self, py: Python<'_>, size: usize) -> PyResult<Py<HostWindow>> {
        let a = PyArray1::<u8>::zeros(py, size, false);
        self.lend(py, a.as_any())
    }

    /// Take a window back (a lent buffer is released and may be resized again).
    fn unlend(&mut self, window: PyRef<'_, HostWindow>) -> PyResult<()> {
        self.nic.unlend(host::HostWindow { base: window.base, size: window.size }).map_err(err)?;
        Ok(())
    }

    /// Read `n` bytes of host memory at host address `addr`.
    fn host_read<'py>(&mut self, py: Python<'py>, addr: u64, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.nic.host_read(addr, n).map_err(err)?))
    }

    /// Write bytes to host memory at host address `addr`.
    fn host_write(&mut self, addr: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.nic.host_write(addr, &bytes_arg(data)?).map_err(err)
    }

    // -- ECTX

    /// Install an ECTX for `image` (inactive until `activate`). Handlers are
    /// symbol names: `hh` header, `ph` payload, `th` completion (at least
    /// one). `host_window` is the window handlers may DMA to;
    /// `handler_mem_size` sizes handler memory (room for `nic_alloc`);
    /// `l1_copy` bytes of each packet copied to L1 (default all);
    /// `scratchpad` bytes per cluster (an int for every cluster, or a list);
    /// `watchdog` instructions per handler; `msg_timeout_ns` (0 = never);
    /// `udp_dst_port` match rule (default: every packet); `frame` ("ip" or
    /// "eth") the frames `send_message` builds for it.
    #[pyo3(signature = (image, *, ph=None, hh=None, th=None, host_window=None, handler_mem_size=None, l1_copy=None, scratchpad=None, watchdog=None, msg_timeout_ns=None, udp_dst_port=None, name=None, frame=None))]
    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        py: Python<'_>,
        image: PyRef<'_, Image>,
        ph: Option<String>,
        hh: Option<String>,
        th: Option<String>,
        host_window: Option<PyRef<'_, HostWindow>>,
        handler_mem_size: Option<u32>,
        l1_copy: Option<u32>,
        scratchpad: Option<&Bound<'_, PyAny>>,
        watchdog: Option<u64>,
        msg_timeout_ns: Option<u64>,
        udp_dst_port: Option<u16>,
        name: Option<String>,
        frame: Option<&str>,
    ) -> PyResult<Ectx> {
        let frame = frame.map(frame_kind).transpose()?;
        let scratchpad = match scratchpad {
            None => Vec::new(),
            Some(s) => match s.extract::<u32>() {
                Ok(n) => vec![n; self.nic.config().clusters as usize],
                Err(_) => s.extract::<Vec<u32>>()?,
            },
        };
        let opts = host::EctxOptions {
            name: name.clone(),
            hh,
            ph,
            th,
            handler_mem_size,
            host_window: host_window.map(|w| host::HostWindow { base: w.base, size: w.size }),
            l1_copy,
            scratchpad,
            watchdog,
            msg_timeout_ns,
            udp_dst_port,
        };
        // The engine gives the new ECTX its first free slot.
        let eng = self.nic.engine();
        let engine_id = (0..).find(|&i| eng.ectx(i).is_none()).unwrap_or(0);
        self.drain_events(py)?;
        let h = self.nic.install(&image.inner, opts).map_err(err)?;
        let name = self.nic.engine().ectx(engine_id).map(|e| e.name().to_string()).unwrap_or_else(|| name.unwrap_or_default());
        let e = Ectx { id: h.0, name, nic: self.uid };
        self.by_engine.insert(engine_id, e.clone());
        if let Some(k) = frame {
            self.nic.set_frame_kind(h, k).map_err(err)?;
        }
        Ok(e)
    }

    /// Let the ECTX receive packets.
    fn activate(&mut self, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.nic.activate(h).map_err(err)
    }

    /// Stop the ECTX receiving new packets.
    fn deactivate(&mut self, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.nic.deactivate(h).map_err(err)
    }

    /// Remove an inactive ECTX with no message in flight; its handle is dead
    /// afterwards.
    fn uninstall(&mut self, py: Python<'_>, ectx: &Ectx) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.drain_events(py)?;
        self.nic.uninstall(h).map_err(err)?;
        self.by_engine.retain(|_, e| e.id != ectx.id);
        Ok(())
    }

    /// Frames `send_message` builds for this ECTX: "ip" (PsPIN's IP-first
    /// layout, default) or "eth" (Ethernet/IPv4/UDP).
    fn set_frame_kind(&mut self, ectx: &Ectx, frame: &str) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.nic.set_frame_kind(h, frame_kind(frame)?).map_err(err)
    }

    // -- NIC memory

    /// Allocate `size` bytes of the ECTX's handler memory (beyond its image's
    /// data); returns the NIC address.
    #[pyo3(signature = (ectx, size, align = 8))]
    fn nic_alloc(&mut self, ectx: &Ectx, size: u32, align: u32) -> PyResult<u32> {
        let h = self.handle(ectx)?;
        self.nic.nic_alloc(h, size, align).map_err(err)
    }

    /// Read `n` bytes of NIC memory at NIC address `addr`.
    fn nic_read<'py>(&self, py: Python<'py>, addr: u32, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.nic.nic_read(addr, n).map_err(err)?))
    }

    /// Write bytes to NIC memory at NIC address `addr`.
    fn nic_write(&mut self, addr: u32, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.nic.nic_write(addr, &bytes_arg(data)?).map_err(err)
    }

    /// Store the 32-bit NIC pointer `target` at NIC address `addr`.
    fn nic_write_ptr(&mut self, addr: u32, target: u32) -> PyResult<()> {
        self.nic.nic_write_ptr(addr, target).map_err(err)
    }

    // -- traffic

    /// Hand the NIC one packet (a whole frame) of message `msg_id` now.
    #[pyo3(signature = (frame, msg_id = 0, eom = true))]
    fn send_packet(&mut self, frame: &Bound<'_, PyAny>, msg_id: u32, eom: bool) -> PyResult<()> {
        self.nic.send_packet(bytes_arg(frame)?, msg_id, eom).map_err(err)
    }

    /// Send `payload` as message `msg_id` to an ECTX: packets of at most
    /// `packet_size` bytes (headers included) to its UDP port, spaced at the
    /// line rate.
    #[pyo3(signature = (ectx, msg_id, payload, packet_size = 1024))]
    fn send_message(&mut self, ectx: &Ectx, msg_id: u32, payload: &Bound<'_, PyAny>, packet_size: usize) -> PyResult<()> {
        let h = self.handle(ectx)?;
        self.nic.send_message(h, msg_id, &bytes_arg(payload)?, packet_size).map_err(err)
    }

    /// Feed a PsPIN-style text trace (`frame`: "ip" or "eth").
    #[pyo3(signature = (path, frame = "ip"))]
    fn feed_trace(&mut self, path: std::path::PathBuf, frame: &str) -> PyResult<()> {
        self.nic.feed_trace(path, frame_kind(frame)?).map_err(err)
    }

    /// Feed a pcap(ng) file of Ethernet frames, at its timestamps or back to
    /// back at `rate_gbps`.
    #[pyo3(signature = (path, rate_gbps = None))]
    fn feed_pcap(&mut self, path: std::path::PathBuf, rate_gbps: Option<f64>) -> PyResult<()> {
        self.nic.feed_pcap(path, rate_gbps).map_err(err)
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
            p => return Err(InvalidArgumentError::new_err(format!("unknown payload `{p}` (known: zero, seq, random)"))),
        };
        let d = GenConfig::default();
        let g = GenConfig {
            messages,
            packets_per_message: packets,
            size,
            rate_gbps: rate_gbps.unwrap_or(self.nic.config().line_rate_gbps),
            concurrent,
            frame: frame_kind(frame)?,
            payload,
            first_msg_id,
            udp_src_port: udp_src_port.unwrap_or(d.udp_src_port),
            udp_dst_port: udp_dst_port.unwrap_or(d.udp_dst_port),
            ..d
        };
        self.nic.feed_generator(g).map_err(err)
    }

    // -- running

    /// Run until nothing is left to do (or every handler waits for the host).
    fn run_until_idle(&mut self) -> PyResult<()> {
        self.nic.run_until_idle().map_err(err)
    }

    /// Run for `ns` nanoseconds of NIC time.
    fn run_for(&mut self, ns: u64) -> PyResult<()> {
        self.nic.run_for(ns).map_err(err)
    }

    // -- results

    /// Events since the last call: OutboundPacket, HostWrite, MessageDone
    /// and HandlerError objects (handler errors first, then each kind in
    /// time order).
    fn events(&mut self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        self.drain_events(py)?;
        Ok(std::mem::take(&mut self.pending))
    }

    /// The statistics report as a dict, the same as `softspin sim --json`.
    fn report(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = serde_json::to_string(&self.nic.report()).map_err(|e| SoftspinError::new_err(e.to_string()))?;
        json_to_py(py, &s)
    }

    /// The statistics report as text (what `softspin sim` prints).
    fn report_text(&self) -> String {
        self.nic.report().text()
    }

    /// (packets admitted, messages completed) of an ECTX.
    fn ectx_counts(&self, ectx: &Ectx) -> PyResult<(u64, u64)> {
        self.nic.ectx_counts(self.handle(ectx)?).map_err(err)
    }

    /// Performance counters pushed by an ECTX's handlers: [(index, sum, count)].
    fn counters(&self, ectx: &Ectx) -> PyResult<Vec<(u32, u64, u64)>> {
        self.nic.counters(self.handle(ectx)?).map_err(err)
    }

    /// The printf output of HPU `hpu` (global index).
    fn hpu_stdout(&self, hpu: usize) -> PyResult<String> {
        self.nic.hpu_stdout(hpu).map_err(err)
    }

    // -- host notifications

    /// Notifications that reached the host by now (does not run the NIC).
    fn poll_notifications(&mut self, py: Python<'_>) -> PyResult<Vec<Py<Notification>>> {
        let v = self.nic.poll_notifications();
        self.notes(py, v)
    }

    /// Run the NIC until at least one notification is available, or nothing
    /// is left to run (then the list may be empty).
    fn wait_notifications(&mut self, py: Python<'_>) -> PyResult<Vec<Py<Notification>>> {
        let v = self.nic.wait_notifications().map_err(err)?;
        self.notes(py, v)
    }

    /// Answer notification `id` with a 64-bit value.
    fn respond(&mut self, id: u32, value: u64) -> PyResult<()> {
        self.nic.respond(id, value).map_err(err)
    }

    /// Iterate over notifications, running the NIC as needed; ends when the
    /// NIC is idle with none pending. Answer each with `respond`.
    fn notifications(slf: Py<Self>) -> NotificationIter {
        NotificationIter { nic: slf, queue: VecDeque::new() }
    }

    fn __repr__(&self) -> String {
        format!("Nic(profile={:?}, now_ns={})", self.nic.config().profile, self.nic.now_ns())
    }
}

/// Iterator returned by `Nic.notifications()`.
#[pyclass(module = "softspin", unsendable)]
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

/// Build a handler image from C sources with the softspin SDK (clang-14,
/// ld.lld-14), as `softspin build` does; returns `output`. `define` holds
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
    let (mut define, include, cflags) = (define.unwrap_or_default(), include.unwrap_or_default(), cflags.unwrap_or_default());
    let mut link_symbols = Vec::new();
    if let Some(p) = profile {
        let cfg = host::NicConfig::profile(p).ok_or_else(|| err(host::Error::Profile(p.into())))?;
        define.splice(0..0, cfg.sdk_defines());
        link_symbols = cfg.memory_map().link_symbols();
    }
    let o = host::sdk::BuildOptions { sources, output: output.clone(), include, define, bare, cflags, code_base, data_base, link_symbols, verbose };
    host::sdk::build(&o).map_err(err)?;
    Ok(output)
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
    m.add_class::<Notification>()?;
    m.add_class::<NotificationIter>()?;
    m.add("SoftspinError", py.get_type::<SoftspinError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("ImageError", py.get_type::<ImageError>())?;
    m.add("EctxError", py.get_type::<EctxError>())?;
    m.add("TrafficError", py.get_type::<TrafficError>())?;
    m.add("SimError", py.get_type::<SimError>())?;
    m.add("HostMemoryError", py.get_type::<HostMemoryError>())?;
    m.add("NicMemoryError", py.get_type::<NicMemoryError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("BuildError", py.get_type::<BuildError>())?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
