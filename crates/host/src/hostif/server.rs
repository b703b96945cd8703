//! The NIC process's side of the control socket (docs/host-interface.md).
//!
//! Served from the live loop's per-step callback, never from a thread: the
//! `Nic` belongs to the loop, and a request (export a window, read
//! counters) touches NIC memory between two engine steps, as a host
//! driver's MMIO write lands between two cycles. Every socket is
//! non-blocking, and the loop looks at them at most every `POLL_EVERY`, so
//! the datapath pays a few system calls per millisecond and never waits
//! for a client. A client that sends garbage gets an error and is
//! disconnected; one that goes away mid-request is dropped with its
//! half-message; neither affects the NIC or other clients.
//!
//! RMA from host programs (docs/host-interface.md "RMA"): a client posts an
//! operation (`Nic::rma_post` on the ECTX running the RMA handlers) and gets
//! a handle of this server's numbering; the completion the NIC reports for it
//! goes to that client only, which takes it with `rma_wait`/`rma_test`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{decode, encode, Decoded, MAX_MESSAGE, PROTOCOL_VERSION};
use crate::{
    Ectx, Error, HostWindow, Nic, Notification, Result, RmaCompletion, RmaHandle, RmaRequest,
};

/// Every request the server knows, for the error naming them.
pub const OPS: [&str; 11] = [
    "hello",
    "export_window",
    "unexport_window",
    "windows",
    "counters",
    "status",
    "wait_notification",
    "respond",
    "rma_post",
    "rma_wait",
    "rma_test",
];
/// How often the loop looks at the sockets.
const POLL_EVERY: Duration = Duration::from_millis(1);
/// After a request, or while client-posted RMA operations are in flight,
/// the sockets are looked at on every step for this long: a client chasing
/// pointers posts its next get microseconds after the last completion, and
/// POLL_EVERY would add up to a millisecond to each.
const ACTIVE_FOR: Duration = Duration::from_millis(2);
/// Clients served at once; one more is told so and disconnected.
pub const MAX_CLIENTS: usize = 64;
/// Notifications kept for clients not waiting yet; beyond that the oldest
/// goes, counted in `status`'s `notifications_dropped`.
pub const NOTIFICATION_QUEUE: usize = 4096;
/// Longest `wait_notification` parks a client.
pub const MAX_WAIT: Duration = Duration::from_secs(3600);
/// Answers held for a client that has not read them: past this, its
/// further requests wait in its socket until it reads (backpressure).
const MAX_UNREAD: usize = 2 * MAX_MESSAGE;
/// RMA operations a client may have posted and not yet taken the
/// completion of; more are refused until it waits for some (its memory here
/// is bounded whatever it does).
pub const MAX_RMA_PER_CLIENT: usize = 65536;
/// Completions one `rma_wait`/`rma_test` answer carries at most (each some
/// 100 bytes of JSON: well within MAX_MESSAGE); the rest wait for the next.
pub const RMA_COMPLETIONS_PER_ANSWER: usize = 256;

/// An ECTX as host programs see it.
#[derive(Clone, Debug)]
pub struct EctxEntry {
    pub ectx: Ectx,
    pub name: String,
    /// Its host window: where handlers see it, and where it starts in the
    /// shared memory file (None: the window is the NIC process's own).
    pub host: Option<HostWindow>,
    pub shm_offset: Option<u64>,
    /// Its image is the RMA handlers (examples/rma_target): RMA requests
    /// without `ectx` go to it when it is the only one.
    pub rma: bool,
}

/// What `hello` tells a client.
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    pub iface: String,
    /// The node's rank in a cluster's node table, when it has one.
    pub rank: Option<u32>,
    /// The shared host memory file and its size.
    pub shm: Option<(PathBuf, usize)>,
    pub ectxs: Vec<EctxEntry>,
}

struct Conn {
    /// Names the connection in the RMA routes (never reused).
    id: u64,
    stream: UnixStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    /// A parked `wait_notification` or `rma_wait`.
    waiting: Option<Wait>,
    /// Its RMA handles posted and not completed, and completed and not yet
    /// taken (by `rma_wait`/`rma_test`).
    rma_pending: BTreeSet<u64>,
    rma_done: BTreeMap<u64, Value>,
    /// Close once `out` is sent (garbled input, too many clients).
    closing: bool,
    /// The client closed its side: its complete requests are answered
    /// (except waits, which nobody would read), then it goes.
    eof: bool,
    /// The connection broke.
    gone: bool,
}

/// Counts for `status` and the final report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub connections: u64,
    pub requests: u64,
    pub errors: u64,
    pub notifications_delivered: u64,
    pub notifications_dropped: u64,
    /// RMA operations posted by clients, completions handed to them, and
    /// completions dropped because their client had gone.
    pub rma_posted: u64,
    pub rma_delivered: u64,
    pub rma_dropped: u64,
}

/// Where a completion goes: the client (connection id) and its handle, and
/// the request (for the error text naming the rank).
struct Route {
    conn: u64,
    handle: u64,
    req: RmaRequest,
}

pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
    info: NodeInfo,
    conns: Vec<Conn>,
    notes: VecDeque<Notification>,
    last_poll: Option<Instant>,
    /// When a client last sent a request or had RMA operations in flight.
    last_active: Option<Instant>,
    stats: ServerStats,
    next_conn: u64,
    next_handle: u64,
    /// The NIC's handles of the operations clients posted, per ECTX.
    routes: HashMap<(Ectx, RmaHandle), Route>,
    /// ECTXs with routes, and how many (the ones whose completions to take).
    rma_ectxs: BTreeMap<Ectx, usize>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("control socket {}: {what}: {e}", path.display()))
}

impl ControlServer {
    /// Listen at `path`. A socket left by a NIC that died is replaced; one
    /// a live NIC answers on is refused.
    pub fn bind(path: &Path, info: NodeInfo) -> Result<ControlServer> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io("creating its directory", path, e))?;
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(Error::Host(format!(
                    "control socket {}: another NIC is serving it",
                    path.display()
                )));
            }
            std::fs::remove_file(path).map_err(|e| io("removing a stale one", path, e))?;
        }
        let listener = UnixListener::bind(path).map_err(|e| io("bind", path, e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| io("set_nonblocking", path, e))?;
        Ok(ControlServer {
            listener,
            path: path.to_path_buf(),
            info,
            conns: Vec::new(),
            notes: VecDeque::new(),
            last_poll: None,
            last_active: None,
            stats: ServerStats::default(),
            next_conn: 0,
            next_handle: 0,
            routes: HashMap::new(),
            rma_ectxs: BTreeMap::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Serve what the clients sent, if `POLL_EVERY` has passed since the
    /// last look or a client is active (`ACTIVE_FOR`); call it after every
    /// step of the live loop.
    pub fn poll(&mut self, nic: &mut Nic) {
        let now = Instant::now();
        let active = self
            .last_active
            .is_some_and(|t| now.saturating_duration_since(t) < ACTIVE_FOR);
        if !active
            && self
                .last_poll
                .is_some_and(|t| now.saturating_duration_since(t) < POLL_EVERY)
        {
            return;
        }
        self.last_poll = Some(now);
        let requests = self.stats.requests;
        self.serve(nic, now);
        if self.stats.requests != requests || !self.routes.is_empty() {
            self.last_active = Some(now);
            #[cfg(feature = "live")]
            nic.keep_polling();
        }
    }

    /// One round: take notifications, accept, read, answer, write.
    pub fn serve(&mut self, nic: &mut Nic, now: Instant) {
        for n in nic.poll_notifications() {
            if self.notes.len() == NOTIFICATION_QUEUE {
                self.notes.pop_front();
                self.stats.notifications_dropped += 1;
            }
            self.notes.push_back(n);
        }
        self.route_completions(nic);
        self.accept();
        for k in 0..self.conns.len() {
            self.read(k);
            self.answer(k, nic, now);
            self.write(k);
        }
        let done = |c: &Conn| c.gone || (c.closing || c.eof) && c.out.is_empty();
        // Completions a departing client will never take; those of its
        // operations still in flight are dropped as they come.
        for c in self.conns.iter().filter(|c| done(c)) {
            self.stats.rma_dropped += c.rma_done.len() as u64;
        }
        self.conns.retain(|c| !done(c));
    }

    /// Move the NIC's completions of client-posted operations to their
    /// clients.
    fn route_completions(&mut self, nic: &mut Nic) {
        let ectxs: Vec<Ectx> = self.rma_ectxs.keys().copied().collect();
        for e in ectxs {
            for c in nic.rma_completions(e) {
                let Some(r) = self.routes.remove(&(e, c.handle)) else {
                    // Posted by someone else on this NIC (not a client).
                    continue;
                };
                if let Some(n) = self.rma_ectxs.get_mut(&e) {
                    *n -= 1;
                    if *n == 0 {
                        self.rma_ectxs.remove(&e);
                    }
                }
                let conn = self.conns.iter_mut().find(|x| x.id == r.conn);
                match conn.filter(|x| x.rma_pending.contains(&r.handle)) {
                    Some(x) => {
                        x.rma_pending.remove(&r.handle);
                        x.rma_done
                            .insert(r.handle, completion_json(r.handle, &c, &r.req));
                    }
                    None => self.stats.rma_dropped += 1,
                }
            }
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    self.stats.connections += 1;
                    self.next_conn += 1;
                    let mut c = Conn {
                        id: self.next_conn,
                        stream,
                        inbuf: Vec::new(),
                        out: Vec::new(),
                        waiting: None,
                        rma_pending: BTreeSet::new(),
                        rma_done: BTreeMap::new(),
                        closing: false,
                        eof: false,
                        gone: false,
                    };
                    if self.conns.len() >= MAX_CLIENTS {
                        c.out = encode(&error(format!(
                            "this NIC serves {MAX_CLIENTS} clients at once; try again later"
                        )));
                        c.closing = true;
                    }
                    self.conns.push(c);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // WouldBlock: nobody else; other errors (EMFILE...) are
                // retried at the next poll.
                Err(_) => return,
            }
        }
    }

    fn read(&mut self, k: usize) {
        let c = &mut self.conns[k];
        let mut buf = [0u8; 4096];
        // Bounded: at most one message and its length ahead.
        while !c.gone && !c.eof && !c.closing && c.inbuf.len() <= MAX_MESSAGE + 4 {
            match c.stream.read(&mut buf) {
                Ok(0) => c.eof = true,
                Ok(n) => c.inbuf.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => c.gone = true,
            }
        }
    }

    fn answer(&mut self, k: usize, nic: &mut Nic, now: Instant) {
        loop {
            let c = &mut self.conns[k];
            // A client's answers are kept under MAX_UNREAD (plus one): the
            // rest of its requests wait in its socket until it reads.
            if c.closing || c.out.len() > MAX_UNREAD {
                return;
            }
            if c.eof && c.waiting.is_some() {
                c.waiting = None;
            }
            match &c.waiting {
                Some(Wait::Note(deadline)) => {
                    let n = match self.notes.pop_front() {
                        Some(n) => {
                            self.stats.notifications_delivered += 1;
                            Some(note_json(&n, &self.info))
                        }
                        None if now >= *deadline => None,
                        None => return,
                    };
                    c.waiting = None;
                    c.out
                        .extend_from_slice(&encode(&ok(json!({ "notification": n }))));
                    continue;
                }
                Some(Wait::Rma(deadline, handles)) => {
                    // Something to take, or nothing left to wait for.
                    let ready = match handles {
                        Some(h) => {
                            h.iter().all(|h| !c.rma_pending.contains(h))
                                || h.iter().any(|h| c.rma_done.contains_key(h))
                        }
                        None => c.rma_pending.is_empty() || !c.rma_done.is_empty(),
                    };
                    if !ready && now < *deadline {
                        return;
                    }
                    let handles = handles.clone();
                    c.waiting = None;
                    let r = take_completions(c, handles.as_deref());
                    self.stats.rma_delivered += r.1;
                    c.out.extend_from_slice(&encode(&ok(r.0)));
                    continue;
                }
                None => {}
            }
            match decode(&c.inbuf) {
                Decoded::Partial => return,
                Decoded::Garbled(why) => {
                    self.stats.errors += 1;
                    c.out.extend_from_slice(&encode(&error(format!(
                        "garbled request ({why}); closing this connection"
                    ))));
                    c.closing = true;
                    return;
                }
                Decoded::Message(req, _) if c.eof && is_wait(&req) => {
                    return;
                }
                Decoded::Message(req, used) => {
                    c.inbuf.drain(..used);
                    self.stats.requests += 1;
                    let r = match self.handle(k, &req, nic, now) {
                        Ok(Reply::Now(v)) => ok(v),
                        Ok(Reply::Wait(w)) => {
                            self.conns[k].waiting = Some(w);
                            continue;
                        }
                        Err(e) => {
                            self.stats.errors += 1;
                            error(e)
                        }
                    };
                    let c = &mut self.conns[k];
                    c.out.extend_from_slice(&encode(&r));
                }
            }
        }
    }

    fn write(&mut self, k: usize) {
        let c = &mut self.conns[k];
        while !c.gone && !c.out.is_empty() {
            match c.stream.write(&c.out) {
                Ok(0) => c.gone = true,
                Ok(n) => {
                    c.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => c.gone = true,
            }
        }
    }

    fn ectx(&self, req: &Value) -> std::result::Result<&EctxEntry, String> {
        match req.get("ectx") {
            None | Some(Value::Null) if self.info.ectxs.len() == 1 => Ok(&self.info.ectxs[0]),
            None | Some(Value::Null) => Err(format!(
                "this NIC has {} ECTXs: name one with `ectx` (a handle from hello)",
                self.info.ectxs.len()
            )),
            Some(v) => {
                let h = v
                    .as_u64()
                    .ok_or_else(|| format!("`ectx` {v}: an ECTX handle (a number from hello)"))?;
                self.info
                    .ectxs
                    .iter()
                    .find(|e| u64::from(e.ectx.0) == h)
                    .ok_or_else(|| format!("no ECTX {h} on this NIC (hello lists them)"))
            }
        }
    }

    /// The ECTX an RMA request names, else the only one running the RMA
    /// handlers, else the only one.
    fn rma_ectx(&self, req: &Value) -> std::result::Result<&EctxEntry, String> {
        let mut rma = self.info.ectxs.iter().filter(|e| e.rma);
        match (req.get("ectx"), rma.next(), rma.next()) {
            (None | Some(Value::Null), Some(e), None) => Ok(e),
            _ => self.ectx(req),
        }
    }

    fn rma_post(
        &mut self,
        k: usize,
        req: &Value,
        nic: &mut Nic,
    ) -> std::result::Result<Value, String> {
        let e = self.rma_ectx(req)?.ectx;
        let r: RmaRequest = match req.get("request") {
            None => {
                return Err(
                    "missing `request` ({\"rank\", \"key\", \"offset\", \"op\": put|get|fetch_add|cas, ...})"
                        .into(),
                )
            }
            Some(v) => serde_json::from_value(v.clone()).map_err(|x| format!("`request`: {x}"))?,
        };
        let c = &self.conns[k];
        if c.rma_pending.len() + c.rma_done.len() >= MAX_RMA_PER_CLIENT {
            return Err(format!(
                "this client has {MAX_RMA_PER_CLIENT} RMA operations not yet waited for; take completions (rma_wait) before posting more"
            ));
        }
        let h = nic.rma_post(e, &r).map_err(|x| x.to_string())?;
        self.next_handle += 1;
        let handle = self.next_handle;
        self.routes.insert(
            (e, h),
            Route {
                conn: self.conns[k].id,
                handle,
                req: r,
            },
        );
        *self.rma_ectxs.entry(e).or_default() += 1;
        self.conns[k].rma_pending.insert(handle);
        self.stats.rma_posted += 1;
        Ok(json!({ "handle": handle }))
    }

    /// `rma_wait`/`rma_test`: the handles to watch (None: all of the
    /// client's), each one the client's.
    fn rma_handles(&self, k: usize, req: &Value) -> std::result::Result<Option<Vec<u64>>, String> {
        let hs = match req.get("handles") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(format!("`handles` {v}: a list of handles from rma_post")),
        };
        let c = &self.conns[k];
        let mut out = Vec::with_capacity(hs.len());
        for v in hs {
            let h = v.as_u64().ok_or_else(|| {
                format!("`handles`: {v} is not a handle (a number from rma_post)")
            })?;
            if !c.rma_pending.contains(&h) && !c.rma_done.contains_key(&h) {
                return Err(format!(
                    "RMA handle {h} is not an operation of this client still to be waited for (unknown, already taken, or another client's)"
                ));
            }
            out.push(h);
        }
        Ok(Some(out))
    }

    fn handle(
        &mut self,
        k: usize,
        req: &Value,
        nic: &mut Nic,
        now: Instant,
    ) -> std::result::Result<Reply, String> {
        match req.get("v").and_then(Value::as_u64) {
            Some(PROTOCOL_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "protocol version {v}: this NIC speaks {PROTOCOL_VERSION}"
                ))
            }
            None => return Err(format!("a request needs `v`: {PROTOCOL_VERSION}")),
        }
        let op = req.get("op").and_then(Value::as_str).unwrap_or_default();
        let e = |e: Error| e.to_string();
        Ok(Reply::Now(match op {
            "hello" => self.hello(),
            "export_window" => {
                let x = self.ectx(req)?.ectx;
                nic.export_window(
                    x,
                    u32_arg(req, "key")?,
                    u64_arg(req, "offset")?,
                    u64_arg(req, "size")?,
                    u32_arg(req, "perms")?,
                )
                .map_err(e)?;
                json!({})
            }
            "unexport_window" => {
                let x = self.ectx(req)?.ectx;
                nic.unexport_window(x, u32_arg(req, "key")?).map_err(e)?;
                json!({})
            }
            "windows" => {
                let x = self.ectx(req)?.ectx;
                let w: Vec<Value> = nic
                    .rma_windows(x)
                    .map_err(e)?
                    .into_iter()
                    .filter(|w| w.key != softspin_wire::rma::window::KEY_FREE)
                    .map(|w| json!({"key": w.key, "perms": w.perms, "offset": w.base, "size": w.size}))
                    .collect();
                json!({ "windows": w })
            }
            "counters" => {
                let x = self.ectx(req)?.ectx;
                let c: Vec<Value> = nic
                    .counters(x)
                    .map_err(e)?
                    .into_iter()
                    .map(|(i, sum, n)| json!({"index": i, "sum": sum, "count": n}))
                    .collect();
                json!({ "counters": c })
            }
            "status" => self.status(nic),
            "wait_notification" => {
                return Ok(Reply::Wait(Wait::Note(now + timeout_arg(req)?)));
            }
            "rma_post" => self.rma_post(k, req, nic)?,
            "rma_wait" => {
                let handles = self.rma_handles(k, req)?;
                return Ok(Reply::Wait(Wait::Rma(now + timeout_arg(req)?, handles)));
            }
            "rma_test" => {
                let handles = self.rma_handles(k, req)?;
                let (v, n) = take_completions(&mut self.conns[k], handles.as_deref());
                self.stats.rma_delivered += n;
                v
            }
            "respond" => {
                nic.respond(u32_arg(req, "id")?, u64_arg(req, "value")?)
                    .map_err(e)?;
                json!({})
            }
            "" => return Err(format!("a request needs `op`, one of {}", OPS.join(", "))),
            other => {
                return Err(format!(
                    "unknown op `{other}`; this NIC serves {}",
                    OPS.join(", ")
                ))
            }
        }))
    }

    fn hello(&self) -> Value {
        let ectxs: Vec<Value> = self
            .info
            .ectxs
            .iter()
            .map(|e| {
                json!({
                    "ectx": e.ectx.0,
                    "name": e.name,
                    "host_base": e.host.map(|w| w.base),
                    "host_size": e.host.map(|w| w.size),
                    "shm_offset": e.shm_offset,
                    "rma": e.rma,
                })
            })
            .collect();
        json!({
            "v": PROTOCOL_VERSION,
            "iface": self.info.iface,
            "rank": self.info.rank,
            "shm": self.info.shm.as_ref().map(|(p, n)| json!({"path": p.display().to_string(), "size": n})),
            "ectxs": ectxs,
        })
    }

    fn status(&self, nic: &mut Nic) -> Value {
        let r = nic.report();
        let mut ectxs = serde_json::Map::new();
        for x in &self.info.ectxs {
            let (packets, messages) = nic.ectx_counts(x.ectx).unwrap_or_default();
            ectxs.insert(
                x.name.clone(),
                json!({"ectx": x.ectx.0, "packets": packets, "messages": messages}),
            );
        }
        let s = self.stats;
        let mut v = json!({
            "now_ns": nic.now_ns(),
            "packets": r.packets,
            "packets_in": r.packets_in,
            "unmatched": r.unmatched,
            "drops": r.drops,
            "errors": r.error_details.len(),
            "message_timeouts": r.message_timeouts,
            "outbound_packets": r.outbound_packets,
            "dma_to_host_bytes": r.dma_to_host_bytes,
            "dma_from_host_bytes": r.dma_from_host_bytes,
            "latency_ns": r.latency_ns,
            // The model's handler time so far, over all HPUs.
            "hpu_busy_ns": nic.hpu_busy_ps() as f64 / 1e3,
            "ectxs": ectxs,
            "control": {
                "clients": self.conns.len(),
                "connections": s.connections,
                "requests": s.requests,
                "errors": s.errors,
                "notifications_queued": self.notes.len(),
                "notifications_delivered": s.notifications_delivered,
                "notifications_dropped": s.notifications_dropped,
                "rma_posted": s.rma_posted,
                "rma_delivered": s.rma_delivered,
                "rma_dropped": s.rma_dropped,
                "rma_in_flight": self.routes.len(),
            },
        });
        wire(&mut v, nic);
        v
    }
}

/// The live port's counters, under `wire`.
#[cfg(feature = "live")]
fn wire(v: &mut Value, nic: &Nic) {
    if let Some(l) = nic.live_stats() {
        v["wire"] = json!({
            "port": l.port,
            "rx_frames": l.rx_frames,
            "matched": l.matched,
            "passed_to_kernel": l.passed_to_kernel,
            "tx_frames": l.tx_frames,
            "drops": l.drops,
            "unprocessed": l.unprocessed,
            "wall_s": l.wall_s,
        });
    }
}

#[cfg(not(feature = "live"))]
fn wire(_: &mut Value, _: &Nic) {}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

enum Reply {
    Now(Value),
    /// Park the client.
    Wait(Wait),
}

/// What a parked client waits for.
enum Wait {
    /// A notification, until this instant.
    Note(Instant),
    /// A completion of one of these handles (None: any of its own), until
    /// this instant.
    Rma(Instant, Option<Vec<u64>>),
}

fn is_wait(req: &Value) -> bool {
    matches!(
        req.get("op").and_then(Value::as_str),
        Some("wait_notification" | "rma_wait")
    )
}

/// Take the client's completions of `handles` (None: all of its own), at
/// most RMA_COMPLETIONS_PER_ANSWER: the answer, and how many it carries.
fn take_completions(c: &mut Conn, handles: Option<&[u64]>) -> (Value, u64) {
    let mut got = Vec::new();
    match handles {
        Some(hs) => {
            for h in hs {
                if got.len() == RMA_COMPLETIONS_PER_ANSWER {
                    break;
                }
                if let Some(v) = c.rma_done.remove(h) {
                    got.push(v);
                }
            }
        }
        None => {
            while got.len() < RMA_COMPLETIONS_PER_ANSWER {
                let Some((_, v)) = c.rma_done.pop_first() else {
                    break;
                };
                got.push(v);
            }
        }
    }
    let pending = match handles {
        Some(hs) => hs.iter().filter(|h| c.rma_pending.contains(h)).count(),
        None => c.rma_pending.len(),
    };
    let n = got.len() as u64;
    let v = json!({
        "completions": got,
        "pending": pending,
        "ready": c.rma_done.len(),
    });
    (v, n)
}

/// A completion as clients get it: the handle, status and value, and for a
/// non-OK status `error`, a sentence naming the status (and the rank).
fn completion_json(handle: u64, c: &RmaCompletion, r: &RmaRequest) -> Value {
    let mut v = json!({"handle": handle, "status": c.status, "value": c.value});
    if let Some(e) = super::rma_error(c.status, r) {
        v["error"] = e.into();
    }
    v
}

fn ok(mut v: Value) -> Value {
    v["ok"] = true.into();
    v
}

fn error(msg: String) -> Value {
    json!({"ok": false, "error": msg})
}

fn u64_arg(req: &Value, name: &str) -> std::result::Result<u64, String> {
    match req.get(name) {
        None => Err(format!("missing `{name}` (a whole number)")),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("`{name}` {v}: a whole number from 0 to 2^64-1")),
    }
}

/// `timeout_ms` (absent: 0), at most MAX_WAIT.
fn timeout_arg(req: &Value) -> std::result::Result<Duration, String> {
    let ms = match req.get("timeout_ms") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("`timeout_ms` {v}: a whole number of milliseconds"))?,
    };
    Ok(Duration::from_millis(ms).min(MAX_WAIT))
}

fn u32_arg(req: &Value, name: &str) -> std::result::Result<u32, String> {
    let v = u64_arg(req, name)?;
    u32::try_from(v).map_err(|_| format!("`{name}` {v}: above 2^32-1"))
}

fn note_json(n: &Notification, info: &NodeInfo) -> Value {
    let name = info
        .ectxs
        .iter()
        .find(|e| e.ectx == n.ectx)
        .map(|e| e.name.as_str());
    json!({
        "id": n.id,
        "ectx": n.ectx.0,
        "ectx_name": name,
        "hpu": n.hpu,
        "time_ps": n.time_ps,
        "data": n.data,
        "host_ref": n.host_ref,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostif::{decode, encode};

    /// A server over a simulated NIC, and what a client sending `bytes`
    /// (then closing its side) gets back: every response a frame holding a
    /// JSON object with a boolean `ok`; afterwards a new client is served.
    fn feed(bytes: &[u8]) -> Vec<Value> {
        let dir = std::env::temp_dir().join(format!("softspin-hostif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!(
            "t{}.sock",
            bytes.len() ^ (bytes.first().copied().unwrap_or(0) as usize) << 20
        ));
        let mut nic = Nic::open("fpspin").unwrap();
        let mut srv = ControlServer::bind(&path, NodeInfo::default()).unwrap();
        let mut c = UnixStream::connect(&path).unwrap();
        c.write_all(bytes).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut got = Vec::new();
        for _ in 0..4 {
            srv.serve(&mut nic, Instant::now());
        }
        c.set_nonblocking(true).unwrap();
        let _ = c.read_to_end(&mut got);
        let mut out = Vec::new();
        let mut at = 0;
        while at < got.len() {
            match decode(&got[at..]) {
                Decoded::Message(v, n) => {
                    assert!(v["ok"].is_boolean(), "{v}");
                    out.push(v);
                    at += n;
                }
                other => panic!("the server sent a bad frame: {other:?}"),
            }
        }
        let mut c2 = UnixStream::connect(&path).unwrap();
        c2.write_all(&encode(&json!({"v": 1, "op": "hello"})))
            .unwrap();
        srv.serve(&mut nic, Instant::now());
        c2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(super::super::recv(&mut c2).unwrap()["ok"], true);
        out
    }

    /// A client that sends requests without reading its answers is held
    /// back (the server keeps at most MAX_UNREAD of its answers, plus one)
    /// while others are served.
    #[test]
    fn a_client_that_does_not_read_is_held_back() {
        let dir = std::env::temp_dir().join(format!("softspin-hostif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flood.sock");
        let mut nic = Nic::open("fpspin").unwrap();
        let mut srv = ControlServer::bind(&path, NodeInfo::default()).unwrap();
        let mut c = UnixStream::connect(&path).unwrap();
        // 2000 requests (some 50 KB: within the socket's buffer) whose
        // answers (some 1 KB each) are far more than MAX_UNREAD.
        let req = encode(&json!({"v": 1, "op": "status"}));
        let sent = 2000;
        c.write_all(&req.repeat(sent)).unwrap();
        for _ in 0..20 {
            srv.serve(&mut nic, Instant::now());
            assert!(srv.conns[0].out.len() <= MAX_UNREAD + MAX_MESSAGE + 4);
        }
        assert!(
            (srv.stats.requests as usize) < sent,
            "all {sent} answered: not held back"
        );
        let mut c2 = UnixStream::connect(&path).unwrap();
        c2.write_all(&encode(&json!({"v": 1, "op": "hello"})))
            .unwrap();
        srv.serve(&mut nic, Instant::now());
        c2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(super::super::recv(&mut c2).unwrap()["ok"], true);
    }

    /// RMA requests with bad arguments get errors naming them; a handle
    /// is only ever its client's.
    #[test]
    fn rma_requests_are_checked() {
        let mut nic = Nic::open("fpspin").unwrap();
        let dir = std::env::temp_dir().join(format!("softspin-hostif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rma.sock");
        let mut srv = ControlServer::bind(&path, NodeInfo::default()).unwrap();
        let mut c = UnixStream::connect(&path).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut ask = |req: Value| {
            c.write_all(&encode(&req)).unwrap();
            srv.serve(&mut nic, Instant::now());
            let r = super::super::recv(&mut c).unwrap();
            assert_eq!(r["ok"], false, "{r}");
            r["error"].as_str().unwrap().to_string()
        };
        let post = |request: Value| json!({"v": 1, "op": "rma_post", "request": request});
        assert!(ask(json!({"v": 1, "op": "rma_post"})).contains("this NIC has 0 ECTXs"));
        let e = ask(json!({"v": 1, "op": "rma_post", "ectx": 0}));
        assert!(e.contains("no ECTX 0"), "{e}");
        let e = ask(json!({"v": 1, "op": "rma_test", "handles": [7]}));
        assert!(
            e.contains("RMA handle 7 is not an operation of this client"),
            "{e}"
        );
        let e = ask(json!({"v": 1, "op": "rma_wait", "handles": 7}));
        assert!(e.contains("a list of handles"), "{e}");
        let e = ask(json!({"v": 1, "op": "rma_wait", "handles": ["x"]}));
        assert!(e.contains("not a handle"), "{e}");
        let e = ask(json!({"v": 1, "op": "rma_wait", "timeout_ms": -1}));
        assert!(e.contains("milliseconds"), "{e}");
        // No ECTX to name: the ECTX is checked first, then the request.
        let _ = ask(post(json!({"rank": 1, "op": "put"})));
        let srv_errors = srv.stats().errors;
        assert_eq!(srv_errors, 7);
        // With nothing posted, waiting for "all of mine" answers at once.
        c.write_all(&encode(
            &json!({"v": 1, "op": "rma_wait", "timeout_ms": 3600000}),
        ))
        .unwrap();
        srv.serve(&mut nic, Instant::now());
        let r = super::super::recv(&mut c).unwrap();
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["completions"], json!([]), "{r}");
        assert_eq!(r["pending"], 0, "{r}");
    }

    #[test]
    fn any_bytes_get_answers_never_a_crash() {
        let good = encode(&json!({"v": 1, "op": "status"}));
        assert_eq!(feed(&good)[0]["ok"], true);
        // Several requests in one write, and a half one left at the end.
        let mut two = good.repeat(2);
        two.extend_from_slice(&good[..7]);
        assert_eq!(feed(&two).len(), 2);
        // A client that closed its side is not kept waiting.
        let w = feed(&encode(
            &json!({"v": 1, "op": "wait_notification", "timeout_ms": 3600000}),
        ));
        assert!(w.is_empty());
        // Every prefix and every single-byte corruption of requests.
        let reqs = [
            encode(
                &json!({"v": 1, "op": "export_window", "ectx": 0, "key": 1, "offset": 0, "size": 8, "perms": 7}),
            ),
            encode(&json!({"v": 1, "op": "respond", "id": 4294967296u64, "value": 1})),
            encode(
                &json!({"v": 1, "op": "rma_post", "ectx": 0, "request": {"rank": 1, "key": 1, "offset": 8, "op": "cas", "width": 8, "compare": 1, "swap": 2}}),
            ),
            encode(&json!({"v": 1, "op": "rma_wait", "handles": [1, 2], "timeout_ms": 5})),
        ];
        let mut x: u32 = 27;
        for r in &reqs {
            for cut in 0..r.len() {
                feed(&r[..cut]);
            }
            for k in 0..r.len() {
                let mut m = r.clone();
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                m[k] ^= (x >> 16) as u8 | 1;
                for v in feed(&m) {
                    if v["ok"] == false {
                        assert!(!v["error"].as_str().unwrap().is_empty());
                    }
                }
            }
        }
    }
}
