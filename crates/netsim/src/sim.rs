//! The coupling (issue 29 §1; seed 004 §4.2's LogGOPSim + gem5, here
//! SimGrid + softspin engines): SimGrid owns simulated time and the
//! network; every node is a NIC actor owning one `softspin_engine::Engine`
//! (created on the node's first packet) and, where the workload has host
//! work, a host actor.
//!
//! A NIC actor waits for the earlier of its next arrival and its engine's
//! next event (no polling step). On an arrival it runs its engine to now
//! and injects the frame; every frame its handlers send becomes one SimGrid
//! transfer (one per packet) to the node the frame's destination MAC
//! names, started at the NIC time it was emitted. Host DMA stays in the
//! engine's PCIe model. All actors run in one OS thread, one at a time
//! (SimGrid's contexts), so the shared [`World`] is never touched by two at
//! once; a borrow of it never spans a SimGrid call that blocks.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::time::Instant;

use serde::Serialize;
use softspin_engine::traffic::{wire_time_ps, Arrival};
use softspin_engine::{EctxId, EctxSpec, Engine, HostLink, MatchRule, NicConfig};
use softspin_netio::rules::{parse_rules, Matcher};

use crate::hostmem::SparseHost;
use crate::params::{NetParams, NicKind};
use crate::platform::FatTree;
use crate::sg;
use crate::workload::{HostProgram, HostSend, HostSignal, HostStep, Workload, HOST_BASE};

/// The NIC model every node runs: PsPIN (1 GHz, 4 x 8 HPUs), the profile
/// examples/cluster's use cases verify on at full speed, with the host link
/// from the parameters and the packet slot grown for the MTU.
pub fn nic_config(p: &NetParams, kind: NicKind) -> NicConfig {
    let mut cfg = NicConfig::pspin();
    let dma = p.dma(kind);
    cfg.host = HostLink {
        latency_ns: dma.latency_ns.round() as u64,
        bandwidth_gbps: dma.bandwidth_gib_s * 8.0 * (1u64 << 30) as f64 / 1e9,
    };
    // A 4 KiB MTU packet with its Ethernet/IPv4/UDP headers, rounded up to
    // 64 bytes.
    cfg.pkt_slot_size = (p.mtu + SLOT_HEADROOM).div_ceil(64) * 64;
    cfg.line_rate_gbps = p.link_gib_s * 8.0 * (1u64 << 30) as f64 / 1e9;
    cfg
}

/// Bytes of a packet slot above the MTU (`nic_config`): the headers.
const SLOT_HEADROOM: u32 = 64;

/// The IP MTU the RMA transport's packets are built for on a NIC of
/// `cfg` from [`nic_config`] (spin_rma.h's RMA_MTU, passed to the
/// handlers' build): what its packet slot holds, the profile's `mtu`
/// rounded up to 64 bytes (4,096 for sc17), within the MTUs spin_rma.h
/// builds with. The live NIC keeps Ethernet's 1,500.
pub fn rma_mtu(cfg: &NicConfig) -> u32 {
    let range = softspin_wire::rma::MTU_RANGE;
    let (lo, hi) = (*range.start() as u32, *range.end() as u32);
    cfg.pkt_slot_size
        .saturating_sub(SLOT_HEADROOM)
        .clamp(lo, hi)
}

/// One run's settings.
pub struct RunSpec {
    pub params: NetParams,
    pub nic: NicKind,
    pub nodes: u32,
    /// Simulated time after which the run stops, complete or not.
    pub limit_s: f64,
}

/// Per-node handler statistics.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NodeStats {
    pub node: u32,
    /// The NIC ran an engine (saw a packet).
    pub engine: bool,
    pub packets: u64,
    pub handlers: u64,
    pub hpu_busy_ps: u64,
    pub errors: u64,
    /// Packets the NIC dropped, did not match, or that timed out, plus
    /// frames to no node.
    pub drops: u64,
    /// `spin_push_counter` events (the use case's counted bad input).
    pub counters: u64,
    pub sent: u64,
    /// When the NIC's first sent frame left its port (last byte, ps).
    pub first_send_ps: Option<u64>,
    /// When the NIC's first packet arrived (ps).
    pub first_arrival_ps: Option<u64>,
    /// When the workload saw this node done (ps).
    pub done_ps: Option<u64>,
    pub verified: bool,
}

/// What a run produced.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub nodes: u32,
    pub completed: bool,
    /// Why the run ended: "done" (every node done), "quiet" (nothing left
    /// to happen: no transfer in flight, no engine event pending) or
    /// "limit" (the simulated time limit).
    pub ended: &'static str,
    /// The last node's done time (ps since the start).
    pub completion_ps: Option<u64>,
    pub verified: bool,
    pub engines: u32,
    pub transfers: u64,
    /// First handler errors, in words (node: error).
    pub error_samples: Vec<String>,
    /// Largest shift of a frame's time by the coupling (ps): a sent frame's
    /// transfer starting after its NIC time, or an arrival taken later than
    /// its time because the receiving engine was already past it.
    pub max_send_lag_ps: u64,
    pub wall_s: f64,
    pub per_node: Vec<NodeStats>,
}

enum Msg {
    /// A frame, and how long before its transfer started its sender's port
    /// had already been serialising it (ps; see `World::step`).
    Frame(Vec<u8>, u64),
    Stop,
}

struct Nic {
    engine: Option<Box<Engine>>,
    /// Frames whose NIC time is still ahead (the engine stamps a frame when
    /// its last byte will have left the port, which can be after the time
    /// it was run to): (time, destination, frame), in time order.
    pending: std::collections::VecDeque<(u64, u32, Vec<u8>)>,
    ectx: Option<EctxId>,
    stats: NodeStats,
    has_event: bool,
    /// The last message id this NIC numbered for a ruleset whose ids are
    /// its arrival order (`msg_id = "sequence"`, e.g. RMA's): the caller
    /// numbers those (softspin-netio's `RxFrame::msg_id`).
    seq_msg: u32,
}

/// A node's host program and what the coupling keeps for it.
struct Prog {
    /// Taken out while it runs (`resume` borrows the engine).
    prog: Option<Box<dyn HostProgram>>,
    watch: Vec<std::ops::Range<u64>>,
    signals: Vec<HostSignal>,
    /// The host actor, while it is suspended in a `Wait`.
    waiting: Option<sg::Actor>,
}

struct World {
    spec: RunSpec,
    workload: Box<dyn Workload>,
    matcher: Matcher,
    /// The UDP port in every node-table entry.
    udp_port: u16,
    cfg: NicConfig,
    nics: Vec<Nic>,
    in_flight: u64,
    busy: u64,
    hosts_sending: u32,
    done: u32,
    transfers: u64,
    notified: bool,
    errors: Vec<String>,
    max_lag: u64,
    fatal: Option<String>,
    /// Per node: host work waiting (from the NIC time it became due), and
    /// whether the node's host actor is alive to take it.
    host_queue: Vec<std::collections::VecDeque<(u64, Vec<crate::workload::HostSend>)>>,
    host_alive: Vec<bool>,
    hit_limit: bool,
    /// Per node: its host program, if the workload gives one.
    progs: Vec<Option<Prog>>,
    /// Waiting host programs a NIC step signalled: resumed by that NIC's
    /// actor once its borrow of the world is over.
    to_resume: Vec<sg::Actor>,
    /// The run is over: host programs stop at their next step.
    stopping: bool,
}

thread_local! {
    static WORLD: RefCell<Option<World>> = const { RefCell::new(None) };
}

fn with_world<R>(f: impl FnOnce(&mut World) -> R) -> R {
    WORLD.with(|w| {
        f(w.borrow_mut()
            .as_mut()
            .expect("the world exists while actors run"))
    })
}

/// Node `k`'s engine of `nodes`, as the coupling makes it on the node's
/// first packet: the workload's program installed and active on one ECTX
/// (its id returned) taking every frame the rules gave it, sparse host
/// memory (watching `watch` for a host program), the node table's
/// entries the workload's handlers read, the workload's own set-up. Also
/// for tools that time one node alone (examples/bcast_hop.rs).
pub fn node_engine(
    cfg: &NicConfig,
    workload: &dyn Workload,
    k: u32,
    nodes: u32,
    udp_port: u16,
    watch: Option<Vec<std::ops::Range<u64>>>,
) -> Result<(Engine, EctxId), String> {
    let p = workload.program();
    let mut e = Engine::new(cfg.clone()).map_err(|e| e.to_string())?;
    let mut host = SparseHost::new(HOST_BASE, p.host_window);
    if let Some(w) = watch {
        host.set_watch(w);
    }
    e.set_host_memory(Box::new(host));
    let mut s = EctxSpec::new(workload.name(), p.image.clone());
    s.hh = p.hh.clone();
    s.ph = p.ph.clone();
    s.th = p.th.clone();
    s.host_window = (HOST_BASE, p.host_window);
    s.scratchpad = vec![p.scratchpad; cfg.clusters as usize];
    s.watchdog = p.watchdog;
    s.msg_timeout_ns = p.msg_timeout_ns;
    // The workload's rules (the World's matcher) already chose the
    // frames this one ECTX takes, on any of their ports (the use
    // cases' and RMA's, as `softspin nic --rules --match` does).
    s.matching = MatchRule::All;
    let id = e.install(s).map_err(|e| format!("node {k}: {e}"))?;
    e.activate(id).map_err(|e| format!("node {k}: {e}"))?;
    let mut peers = workload.peers(k).unwrap_or_else(|| (0..nodes).collect());
    peers.push(k);
    let entries: Vec<_> = peers
        .into_iter()
        .map(|r| (r, crate::node::entry(r, udp_port)))
        .collect();
    e.set_node_entries(k, nodes, &entries)
        .map_err(|e| format!("node {k}: node table: {e}"))?;
    workload
        .setup_engine(k, &mut e, id)
        .map_err(|m| format!("node {k}: {m}"))?;
    Ok((e, id))
}

fn ps(t_s: f64) -> u64 {
    (t_s * 1e12).round().max(0.0) as u64
}

impl World {
    fn engine_for(&mut self, k: u32) -> Result<&mut Engine, String> {
        let i = k as usize;
        if self.nics[i].engine.is_none() {
            let watch = self.progs[i].as_ref().map(|pr| pr.watch.clone());
            let (e, id) = node_engine(
                &self.cfg,
                self.workload.as_ref(),
                k,
                self.spec.nodes,
                self.udp_port,
                watch,
            )?;
            self.nics[i].engine = Some(Box::new(e));
            self.nics[i].ectx = Some(id);
            self.nics[i].stats.engine = true;
        }
        Ok(self.nics[i].engine.as_mut().expect("made above"))
    }

    /// Run node k's engine to `t` and take what it produced: frames to send
    /// (destination node, bytes), done checks, errors.
    ///
    /// A frame a handler sent is stamped when its last byte left the NIC's
    /// port (the engine serialises it at the link's rate), and its SimGrid
    /// transfer, started then, serialises it again on the first link. The
    /// receiver takes that once back (`credit_ps`): the frame is injected
    /// at its transfer's end minus the sender's serialisation, so a frame
    /// costs its latency plus one serialisation. An engine already past
    /// that time takes it at its own now (the largest such shift is
    /// reported in `max_send_lag_ps`).
    fn step(&mut self, k: u32, t: u64, arrival: Option<(Vec<u8>, u64)>) -> Vec<(u32, Vec<u8>)> {
        let n = self.spec.nodes;
        let i = k as usize;
        let mut verdict = None;
        if let Some((frame, _)) = &arrival {
            self.nics[i].stats.packets += 1;
            verdict = self.matcher.classify(frame);
            if verdict.is_none() {
                // Not the NIC's: the host's network stack takes it (its
                // DMA into host memory paid), if the workload expects it.
                let dma = self.spec.params.dma(self.spec.nic);
                let at = t.saturating_sub(arrival.as_ref().map_or(0, |a| a.1))
                    + (dma.latency_ns * 1e3) as u64
                    + (frame.len() as f64 * 1e12 / (dma.bandwidth_gib_s * (1u64 << 30) as f64))
                        as u64;
                let nic = &mut self.nics[i];
                let taken = self.workload.host_receives(k, frame);
                if let (Some(_), Some(pr)) = (taken, self.progs[i].as_mut()) {
                    // A host program takes it from its memory (the host
                    // matching of trace replay).
                    pr.signals.push(HostSignal::Received {
                        frame: frame.clone(),
                        time_ps: at,
                    });
                    if let Some(a) = pr.waiting.take() {
                        self.to_resume.push(a);
                        self.hosts_sending += 1;
                    }
                }
                match taken {
                    None => nic.stats.drops += 1,
                    Some(true) if nic.stats.done_ps.is_none() => {
                        nic.stats.done_ps = Some(at);
                        self.done += 1;
                    }
                    Some(_) => {}
                }
                return Vec::new();
            }
            if let Some(v) = verdict.as_mut().filter(|v| v.msg_id.is_none()) {
                let n = &mut self.nics[i].seq_msg;
                *n = n.wrapping_add(1);
                v.msg_id = Some(*n);
            }
        }
        if arrival.is_none() && self.nics[i].engine.is_none() {
            return Vec::new();
        }
        let has_prog = self.progs[i].is_some();
        let e = match self.engine_for(k) {
            Ok(e) => e,
            Err(m) => {
                self.fatal.get_or_insert(m);
                return Vec::new();
            }
        };
        let t = t.max(e.now_ps());
        let mut failed = None;
        // With an arrival, run only to its (credited) time first.
        let first = match &arrival {
            Some((_, credit)) => t.saturating_sub(*credit).max(e.now_ps()),
            None => t,
        };
        if let Err(err) = e.run_until(first) {
            failed = Some(err.to_string());
        }
        let mut clamp = 0;
        if let Some((frame, credit)) = arrival {
            let v = verdict.expect("classified above");
            let at = t.saturating_sub(credit).max(e.now_ps());
            clamp = at - t.saturating_sub(credit);
            e.inject(Arrival {
                time_ps: at,
                frame,
                msg_id: v.msg_id.unwrap_or(0),
                eom: v.eom,
                origin: "netsim".into(),
                ectx: None,
            });
            if let Err(err) = e.run_until(t) {
                failed = Some(err.to_string());
            }
        }
        let (out, _writes, done) = e.drain_outputs();
        let touched = if has_prog {
            take_touched(e)
        } else {
            Vec::new()
        };
        let next = e.next_event_ps();
        let mut unroutable = 0;
        let pending = &mut self.nics[i].pending;
        for p in out {
            match crate::node::of_frame(&p.frame, n) {
                Some(d) => {
                    let at = pending.partition_point(|q| q.0 <= p.time_ps);
                    pending.insert(at, (p.time_ps, d, p.frame));
                }
                None => unroutable += 1,
            }
        }
        let mut sends = Vec::new();
        let mut lag = 0;
        let mut first_send = None;
        while pending.front().is_some_and(|q| q.0 <= t) {
            let (at, d, frame) = pending.pop_front().expect("checked");
            lag = lag.max(t - at);
            first_send.get_or_insert(at);
            sends.push((d, frame));
        }
        let next = match (next, pending.front()) {
            (Some(a), Some(q)) => Some(a.min(q.0)),
            (a, q) => a.or(q.map(|q| q.0)),
        };
        let mut node_done = None;
        if let Some(pr) = self.progs[i].as_mut() {
            pr.signals
                .extend(done.iter().map(|d| HostSignal::Completed {
                    msg_id: d.msg_id,
                    time_ps: d.time_ps,
                }));
            pr.signals
                .extend(touched.into_iter().map(|(addr, len)| HostSignal::Wrote {
                    addr,
                    len,
                    time_ps: t,
                }));
            if !pr.signals.is_empty() {
                if let Some(a) = pr.waiting.take() {
                    self.to_resume.push(a);
                    self.hosts_sending += 1;
                }
            }
        }
        for d in &done {
            let nic = &mut self.nics[i];
            let e = nic.engine.as_mut().expect("ran above");
            let r = self.workload.host_reacts(k, d.msg_id, e);
            if !r.is_empty() {
                let due = d.time_ps + self.workload.host_react_delay_ps(k, d.msg_id, d.time_ps);
                self.host_queue[i].push_back((due, r));
            }
            if !has_prog
                && nic.stats.done_ps.is_none()
                && node_done.is_none()
                && self.workload.node_done(k, e)
            {
                node_done = Some(d.time_ps);
            }
        }
        let nic = &mut self.nics[i];
        if let Some(m) = failed {
            nic.stats.errors += 1;
            if self.errors.len() < 8 {
                self.errors.push(format!("node {k}: {m}"));
            }
        }
        nic.stats.drops += unroutable;
        if nic.stats.first_send_ps.is_none() {
            nic.stats.first_send_ps = first_send;
        }
        nic.stats.sent += sends.len() as u64;
        self.max_lag = self.max_lag.max(lag).max(clamp);
        if let Some(d) = node_done {
            nic.stats.done_ps = Some(d);
            self.done += 1;
        }
        let has = next.is_some();
        if has != nic.has_event {
            nic.has_event = has;
            if has {
                self.busy += 1;
            } else {
                self.busy -= 1;
            }
        }
        sends
    }

    /// Everything expected is done, or nothing can happen any more.
    fn finished(&self) -> bool {
        self.done >= self.workload.expected_done()
            || (self.in_flight == 0 && self.busy == 0 && self.hosts_sending == 0)
            || self.fatal.is_some()
    }
}

/// The watched writes node k's host memory saw since the last call.
fn take_touched(e: &mut Engine) -> Vec<(u64, usize)> {
    (e.host_memory() as &mut dyn std::any::Any)
        .downcast_mut::<SparseHost>()
        .map(SparseHost::take_touched)
        .unwrap_or_default()
}

fn put(to: &str, msg: Msg, bytes: u64) {
    extern "C" fn free_msg(p: *mut c_void) {
        // SAFETY: p is a Box<Msg> leaked by put() whose transfer never
        // reached a receiver; SimGrid hands it back once.
        drop(unsafe { Box::from_raw(p as *mut Msg) });
    }
    let name = sg::cstr(to);
    let p = Box::into_raw(Box::new(msg)) as *mut c_void;
    // SAFETY: SimGrid is initialised and we run in an actor; the payload
    // stays valid until the receiver takes it back (or free_msg does).
    unsafe {
        let mb = sg::sg_mailbox_by_name(name.as_ptr());
        let c = sg::sg_mailbox_put_init(mb, p, bytes as std::ffi::c_long);
        sg::sg_comm_detach(c, Some(free_msg));
    }
}

fn nic_mailbox(k: u32) -> String {
    format!("nic{k}")
}

fn arg_rank(argc: c_int, argv: *mut *mut c_char) -> u32 {
    if argc < 2 {
        return 0;
    }
    // SAFETY: SimGrid passes the argv we gave sg_actor_start_: C strings.
    let s = unsafe { CStr::from_ptr(*argv.add(1)) };
    s.to_str().ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn guarded(what: &str, f: impl FnOnce()) {
    // A panic must not unwind into SimGrid's C++ frames.
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        let m = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        with_world(|w| {
            w.fatal
                .get_or_insert(format!("{what}: internal error: {m}"));
        });
    }
}

extern "C" fn nic_actor(argc: c_int, argv: *mut *mut c_char) {
    let k = arg_rank(argc, argv);
    guarded("NIC actor", || nic_loop(k));
}

fn nic_loop(k: u32) {
    let name = sg::cstr(&nic_mailbox(k));
    let mut slot: Box<*mut c_void> = Box::new(std::ptr::null_mut());
    // SAFETY: in an actor; `slot` outlives every receive posted on it.
    let mb = unsafe {
        sg::sg_mailbox_set_receiver(name.as_ptr());
        sg::sg_mailbox_by_name(name.as_ptr())
    };
    // SAFETY: as above.
    let mut recv = unsafe { sg::sg_mailbox_get_async(mb, &mut *slot) };
    // (re-posted after each receive below)
    loop {
        let next = with_world(|w| {
            let nic = &w.nics[k as usize];
            let e = nic.engine.as_ref().and_then(|e| e.next_event_ps());
            let p = nic.pending.front().map(|q| q.0);
            match (e, p) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        let now = sg::now();
        let timeout = next.map_or(-1.0, |t| (t as f64 * 1e-12 - now).max(0.0));
        // SAFETY: recv is a live comm of ours; wait_any_for leaves it alive
        // on timeout (unlike sg_comm_wait_for).
        let got = unsafe { sg::wait_one_for(recv, timeout) };
        let now_ps = ps(sg::now());
        let arrival = if got {
            // SAFETY: the receive completed (ours to release); the sender
            // leaked a Box<Msg> into the slot.
            let msg = unsafe {
                sg::sg_comm_unref(recv);
                Box::from_raw(*slot as *mut Msg)
            };
            *slot = std::ptr::null_mut();
            with_world(|w| w.in_flight -= 1);
            match *msg {
                Msg::Stop => return,
                Msg::Frame(f, credit) => {
                    // SAFETY: as for the first receive.
                    recv = unsafe { sg::sg_mailbox_get_async(mb, &mut *slot) };
                    Some((f, credit))
                }
            }
        } else {
            None
        };
        let t = match (arrival.is_none(), next) {
            // Woken for the event: run to it (the clocks may differ by a
            // rounding).
            (true, Some(t)) => now_ps.max(t),
            _ => now_ps,
        };
        let (sends, finished, spawn) = with_world(|w| {
            let s = w.step(k, t, arrival);
            w.in_flight += s.len() as u64;
            w.transfers += s.len() as u64;
            let i = k as usize;
            let spawn = !w.host_queue[i].is_empty() && !w.host_alive[i];
            if spawn {
                w.host_alive[i] = true;
                w.hosts_sending += 1;
            }
            let f = w.finished() && !w.notified;
            if f {
                w.notified = true;
                w.in_flight += 1;
            }
            (s, f, spawn)
        });
        let resume = with_world(|w| std::mem::take(&mut w.to_resume));
        for a in resume {
            // SAFETY: a host actor suspended in its Wait (it is resumed
            // once: `waiting` was taken).
            unsafe { sg::sg_actor_resume(a) };
        }
        if spawn {
            start_actor(&format!("host{k}"), k, host_actor, k);
        }
        let rate = with_world(|w| w.cfg.line_rate_gbps);
        for (d, frame) in sends {
            let n = frame.len() as u64;
            let credit = wire_time_ps(frame.len(), rate).unwrap_or(0);
            put(&nic_mailbox(d), Msg::Frame(frame, credit), n);
        }
        if finished {
            put("ctl", Msg::Stop, 0);
        }
    }
}

extern "C" fn host_actor(argc: c_int, argv: *mut *mut c_char) {
    let k = arg_rank(argc, argv);
    guarded("host actor", || host_loop(k));
}

/// A host's sends: `o` of CPU per message, and its NIC's port puts one
/// packet out per max(g, frame x G) (LogGOPS's g and G). First the
/// workload's sends at the start, then (while any come) its answers to
/// messages its NIC completed, each from its completion's time on.
fn host_loop(k: u32) {
    let i = k as usize;
    let (first, mut port) = with_world(|w| {
        let first = if w.host_alive[i] {
            Vec::new()
        } else {
            w.host_alive[i] = true;
            w.workload.host_sends(k)
        };
        (first, HostPort::of(&w.spec.params))
    });
    let mut batch = Some((0u64, first));
    while let Some((due_ps, sends)) = batch {
        let due = due_ps as f64 * 1e-12;
        if due > sg::now() {
            // SAFETY: in an actor.
            unsafe { sg::sg_actor_sleep_until(due) };
        }
        port.send(sends);
        batch = with_world(|w| w.host_queue[i].pop_front());
    }
    let finished = with_world(|w| {
        w.host_alive[i] = false;
        w.hosts_sending -= 1;
        let f = w.finished() && !w.notified;
        if f {
            w.notified = true;
            w.in_flight += 1;
        }
        f
    });
    if finished {
        put("ctl", Msg::Stop, 0);
    }
}

/// A host's side of its port: `o` of CPU per message, one packet out per
/// max(g, frame x G) (LogGOPS's g and G).
struct HostPort {
    o: f64,
    g: f64,
    link: f64,
    /// When the port can start the next packet (s).
    free: f64,
}

impl HostPort {
    fn of(p: &NetParams) -> HostPort {
        HostPort {
            o: p.o_ns * 1e-9,
            g: p.g_ns * 1e-9,
            link: FatTree::link_bytes_s(p),
            free: 0.0,
        }
    }

    fn send(&mut self, sends: Vec<HostSend>) {
        for s in sends {
            if s.first_of_message {
                // SAFETY: in an actor.
                unsafe { sg::sg_actor_sleep_for(self.o) };
            }
            let start = sg::now().max(self.free);
            if start > sg::now() {
                // SAFETY: in an actor.
                unsafe { sg::sg_actor_sleep_until(start) };
            }
            self.free = start + self.g.max(s.frame.len() as f64 / self.link);
            let n = s.frame.len() as u64;
            with_world(|w| {
                w.in_flight += 1;
                w.transfers += 1;
            });
            // The host actor starts the transfer at the packet's first byte.
            put(&nic_mailbox(s.to), Msg::Frame(s.frame, 0), n);
        }
    }
}

extern "C" fn prog_actor(argc: c_int, argv: *mut *mut c_char) {
    let k = arg_rank(argc, argv);
    guarded("host program", || prog_loop(k));
}

/// Node k's host program, step by step: compute sleeps, sends pay `o` and
/// the port, a doorbell reaches its own NIC at once (a transfer of no
/// bytes on the host's loopback), and a wait suspends the actor until its
/// NIC's step signals it (no polling). While waiting it does not count as
/// busy, so a run whose hosts all wait on nothing ends "quiet".
fn prog_loop(k: u32) {
    let i = k as usize;
    let mut port = with_world(|w| HostPort::of(&w.spec.params));
    loop {
        let step = with_world(|w| {
            if w.stopping || w.fatal.is_some() {
                return None;
            }
            let now = ps(sg::now());
            let mut prog = w.progs[i].as_mut().and_then(|p| p.prog.take())?;
            let signals = std::mem::take(&mut w.progs[i].as_mut()?.signals);
            let r = w.engine_for(k).and_then(|e| {
                let r = prog.resume(now, signals, e);
                // The host's own writes are no signal to itself.
                take_touched(e);
                r
            });
            if let Some(p) = w.progs[i].as_mut() {
                p.prog = Some(prog);
            }
            match r {
                Ok(s) => Some(s),
                Err(m) => {
                    w.fatal
                        .get_or_insert(format!("node {k}: host program: {m}"));
                    None
                }
            }
        });
        match step {
            Some(HostStep::Compute(secs)) if secs.is_finite() && secs >= 0.0 => {
                // SAFETY: in an actor.
                unsafe { sg::sg_actor_sleep_for(secs) };
            }
            Some(HostStep::Compute(secs)) => {
                with_world(|w| {
                    w.fatal
                        .get_or_insert(format!("node {k}: host program: compute for {secs} s"));
                });
                break;
            }
            Some(HostStep::Send(v)) => port.send(v),
            Some(HostStep::Doorbell(frame)) => {
                with_world(|w| w.in_flight += 1);
                put(&nic_mailbox(k), Msg::Frame(frame, 0), 0);
            }
            Some(HostStep::Wait) => {
                let (suspend, finished) = with_world(|w| {
                    let Some(p) = w.progs[i].as_mut() else {
                        return (false, false);
                    };
                    if !p.signals.is_empty() {
                        return (false, false);
                    }
                    // SAFETY: in an actor.
                    p.waiting = Some(unsafe { sg::sg_actor_self() });
                    w.hosts_sending -= 1;
                    (true, notify(w))
                });
                if finished {
                    put("ctl", Msg::Stop, 0);
                }
                if suspend {
                    // SAFETY: in an actor; a NIC step or the control actor
                    // resumes it (whoever takes `waiting`).
                    unsafe { sg::sg_actor_suspend(sg::sg_actor_self()) };
                }
            }
            Some(HostStep::Finished) => {
                with_world(|w| {
                    let nic = &mut w.nics[i];
                    if nic.stats.done_ps.is_none() {
                        nic.stats.done_ps = Some(ps(sg::now()));
                        w.done += 1;
                    }
                });
                break;
            }
            None => break,
        }
    }
    let finished = with_world(|w| {
        if let Some(p) = w.progs[i].as_mut() {
            p.prog = None;
        }
        w.hosts_sending -= 1;
        notify(w)
    });
    if finished {
        put("ctl", Msg::Stop, 0);
    }
}

/// The run just finished and the control actor is not told yet: the
/// caller tells it (one Stop, counted in flight).
fn notify(w: &mut World) -> bool {
    let f = w.finished() && !w.notified;
    if f {
        w.notified = true;
        w.in_flight += 1;
    }
    f
}

/// Waits for the end (every node done, or quiet, or the limit), then
/// stops every NIC actor so that each returns by itself (a killed actor
/// would unwind C++ through Rust frames).
extern "C" fn ctl_actor(_argc: c_int, _argv: *mut *mut c_char) {
    guarded("control actor", ctl_loop);
}

fn ctl_loop() {
    let name = sg::cstr("ctl");
    let mut slot: Box<*mut c_void> = Box::new(std::ptr::null_mut());
    let limit = with_world(|w| w.spec.limit_s);
    // SAFETY: in an actor; slot outlives the receive.
    unsafe {
        sg::sg_mailbox_set_receiver(name.as_ptr());
        let mb = sg::sg_mailbox_by_name(name.as_ptr());
        let recv = sg::sg_mailbox_get_async(mb, &mut *slot);
        if sg::wait_one_for(recv, limit) {
            sg::sg_comm_unref(recv);
            drop(Box::from_raw(*slot as *mut Msg));
            with_world(|w| w.in_flight -= 1);
        } else {
            with_world(|w| w.hit_limit = true);
        }
    }
    let waiting: Vec<sg::Actor> = with_world(|w| {
        w.stopping = true;
        let v: Vec<_> = w
            .progs
            .iter_mut()
            .filter_map(|p| p.as_mut()?.waiting.take())
            .collect();
        // Busy again until they return (each takes one off).
        w.hosts_sending += v.len() as u32;
        v
    });
    for a in waiting {
        // SAFETY: a host program suspended in its Wait; it sees
        // `stopping` and returns.
        unsafe { sg::sg_actor_resume(a) };
    }
    let n = with_world(|w| w.spec.nodes);
    for k in 0..n {
        with_world(|w| w.in_flight += 1);
        put(&nic_mailbox(k), Msg::Stop, 0);
    }
}

/// Start actor `name` on host `host` running `f` with argv [name, rank].
fn start_actor(name: &str, host: u32, f: sg::MainFn, rank: u32) {
    let hn = sg::cstr(&format!("n{host}"));
    let an = sg::cstr(name);
    let r = sg::cstr(&rank.to_string());
    let argv = [an.as_ptr(), r.as_ptr()];
    // SAFETY: SimGrid is initialised; it copies the name and argv.
    unsafe {
        let h = sg::sg_host_by_name(hn.as_ptr());
        let a = sg::sg_actor_init(an.as_ptr(), h);
        sg::sg_actor_start_(a, f, 2, argv.as_ptr());
    }
}

/// SimGrid's settings (measured by issue 29's prototype): CM02 with
/// factors 1, no cross-traffic, and a precision fine enough for G. Actor
/// stacks of 512 KiB instead of 8 MiB: the kernel backed the large ones
/// with huge pages once touched (about 0.55 MB more RSS per node at 1,024
/// nodes); the engine's deepest path (made, install, run) ran on 64 KiB.
fn simgrid_cfg() -> Vec<String> {
    [
        "network/model:CM02",
        "network/latency-factor:1",
        "network/bandwidth-factor:1",
        "network/crosstraffic:0",
        "surf/precision:1e-12",
        "network/TCP-gamma:0",
        "contexts/stack-size:512",
        // A host's doorbell to its own NIC is a transfer of no bytes on
        // the loopback: it arrives at once.
        "network/loopback-lat:0",
    ]
    .map(String::from)
    .to_vec()
}

/// Run one simulation: once per process (SimGrid's state is global).
pub fn run(spec: RunSpec, workload: Box<dyn Workload>) -> Result<Outcome, String> {
    spec.params.check().map_err(|e| e.to_string())?;
    sg::load()?;
    if !sg::claim() {
        return Err("SimGrid runs one simulation per process; this one already ran".into());
    }
    let wall = Instant::now();
    let n = spec.nodes;
    let p = workload.program();
    if n > softspin_hpu::abi::MAX_NODES {
        return Err(format!(
            "--nodes {n}: a NIC's node table holds at most {} nodes",
            softspin_hpu::abi::MAX_NODES
        ));
    }
    let udp_port = p.udp_port;
    let matcher = parse_rules(&p.rules)
        .and_then(Matcher::new)
        .map_err(|e| format!("the workload's rules: {e}"))?;
    let tree = FatTree::new(n, spec.params.switch_ports);
    let dir = std::env::temp_dir().join(format!("softspin-netsim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let xml = dir.join("platform.xml");
    if let Err(e) = std::fs::write(&xml, tree.xml(&spec.params)) {
        std::fs::remove_dir_all(&dir).ok();
        return Err(format!("{}: {e}", xml.display()));
    }
    let cfg = nic_config(&spec.params, spec.nic);
    let progs: Vec<Option<Prog>> = (0..n)
        .map(|k| {
            workload.host_program(k).map(|p| Prog {
                watch: p.watch(),
                prog: Some(p),
                signals: Vec::new(),
                waiting: None,
            })
        })
        .collect();
    let with_prog: Vec<u32> = (0..n).filter(|&k| progs[k as usize].is_some()).collect();
    let hosts: Vec<u32> = (0..n)
        .filter(|&k| !workload.host_sends(k).is_empty())
        .collect();
    let nics = (0..n)
        .map(|k| Nic {
            engine: None,
            pending: Default::default(),
            ectx: None,
            stats: NodeStats {
                node: k,
                ..Default::default()
            },
            has_event: false,
            seq_msg: 0,
        })
        .collect();
    WORLD.with(|w| {
        *w.borrow_mut() = Some(World {
            spec,
            workload,
            matcher,
            udp_port,
            cfg,
            nics,
            in_flight: 0,
            busy: 0,
            hosts_sending: (hosts.len() + with_prog.len()) as u32,
            done: 0,
            transfers: 0,
            notified: false,
            errors: Vec::new(),
            max_lag: 0,
            fatal: None,
            host_queue: (0..n).map(|_| Default::default()).collect(),
            host_alive: vec![false; n as usize],
            hit_limit: false,
            progs,
            to_resume: Vec::new(),
            stopping: false,
        })
    });
    sg::init(&simgrid_cfg());
    let path = sg::cstr(&xml.display().to_string());
    // SAFETY: SimGrid initialised above; the strings outlive the calls
    // (SimGrid copies names and argv).
    unsafe {
        sg::simgrid_load_platform(path.as_ptr());
        let start = start_actor;
        start("ctl", 0, ctl_actor, 0);
        for k in 0..n {
            start(&format!("nic{k}"), k, nic_actor, k);
        }
        for &k in &hosts {
            start(&format!("host{k}"), k, host_actor, k);
        }
        for &k in &with_prog {
            start(&format!("prog{k}"), k, prog_actor, k);
        }
        sg::simgrid_run();
    }
    std::fs::remove_dir_all(&dir).ok();
    let mut w = WORLD
        .with(|w| w.borrow_mut().take())
        .ok_or("the simulation's state is gone")?;
    if let Some(f) = w.fatal.take() {
        return Err(f);
    }
    let mut per_node = Vec::with_capacity(n as usize);
    let mut verified = true;
    let mut engines = 0;
    for (k, nic) in w.nics.iter_mut().enumerate() {
        let mut s = nic.stats.clone();
        if let Some(e) = nic.engine.as_mut() {
            engines += 1;
            let st = e.stats();
            s.handlers = st.tasks;
            s.first_arrival_ps = st.first_arrival_ps;
            s.errors += st
                .errors_by_ectx
                .values()
                .flat_map(|m| m.values())
                .sum::<u64>();
            s.drops += st.drops + st.unmatched + st.message_timeouts;
            s.hpu_busy_ps = e.hpu_busy().1;
            if let Some(id) = nic.ectx {
                s.counters = e.counters(id).iter().map(|c| c.1).sum();
            }
        }
        s.verified = w.workload.verify(k as u32, nic.engine.as_deref_mut());
        verified &= s.verified;
        per_node.push(s);
    }
    let completed = w.done >= w.workload.expected_done();
    let completion_ps = completed
        .then(|| per_node.iter().filter_map(|s| s.done_ps).max())
        .flatten();
    Ok(Outcome {
        nodes: n,
        completed,
        ended: if completed {
            "done"
        } else if w.hit_limit {
            "limit"
        } else {
            "quiet"
        },
        completion_ps,
        verified: verified && completed,
        engines,
        transfers: w.transfers,
        error_samples: w.errors,
        max_send_lag_ps: w.max_lag,
        wall_s: wall.elapsed().as_secs_f64(),
        per_node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RMA frames fill the slot nic_config makes: sc17's 4 KiB MTU exactly,
    /// and for any profile MTU a frame that fits its slot and an MTU
    /// spin_rma.h builds with.
    #[test]
    fn rma_frames_fit_the_packet_slot() {
        let p = NetParams::sc17();
        let cfg = nic_config(&p, NicKind::Discrete);
        assert_eq!(rma_mtu(&cfg), 4096);
        assert_eq!(softspin_wire::rma::max_payload(4096), 4028);
        for mtu in [1500, 2048, 4000, 4096, 8192, 9000] {
            let cfg = nic_config(
                &NetParams {
                    mtu,
                    ..NetParams::sc17()
                },
                NicKind::Integrated,
            );
            let m = rma_mtu(&cfg);
            assert!(
                m >= mtu && 14 + m <= cfg.pkt_slot_size,
                "mtu {mtu}: RMA {m}"
            );
            assert!(
                softspin_wire::rma::MTU_RANGE.contains(&(m as usize)),
                "mtu {mtu}"
            );
        }
    }
}
