//! The discrete-event model of a PsPIN NIC.
//!
//! Packets arrive (inbound engine), get an L2 packet-buffer slot, and become
//! handler execution requests (HERs). The MPQ engine keeps sPIN's ordering
//! per message (header handler alone and first, payload handlers in
//! parallel, completion handler last) and issues one task per cycle,
//! round-robin among ready messages. The task dispatcher sends a task to its
//! message's home cluster (or the least loaded one), whose scheduler copies
//! the packet head L2 -> L1 and starts the handler on a free HPU. Handlers
//! run on the interpreter in quanta, issue commands (NIC send, host DMA,
//! host-direct writes, cluster DMA) to the command unit, and complete when
//! they returned and all their commands finished (seed 001 §3.2).
//!
//! Virtual time is in picoseconds. Everything is deterministic: events are
//! ordered by (time, sequence number).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;

use softspin_hpu::abi::{self, err, sys};
use softspin_hpu::hpu::{Ecall, Fault, Hpu, Runtime, Stop};
use softspin_hpu::{ElfImage, MemBlock, MemClass, Perm, Program};

use crate::config::{BufferFull, NicConfig};
use crate::ectx::{extents, Ectx, EctxError, EctxSpec, HandlerKind, MatchRule, Scratch};
use crate::stats::{self, HandlerError, Report, Stats, MAX_ERRORS_KEPT};
use crate::traffic::{Arrival, Source, TrafficError};

pub type EctxId = usize;

/// Host memory behind the NIC's DMA engine. The simulator keeps plain
/// buffers; the live NIC and the host API plug their own in.
pub trait HostMemory: std::any::Any {
    /// Copy out `out.len()` bytes at host address `addr`; false if unmapped.
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool;
    fn write(&mut self, addr: u64, data: &[u8]) -> bool;
}

/// Memory the host lends the NIC: a `Vec<u8>`, or (through the host API's
/// bindings) an application's own array, used in place.
pub trait HostBuffer: Send {
    fn bytes(&mut self) -> &mut [u8];
}

impl HostBuffer for Vec<u8> {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

/// Host memory as a set of buffers at host addresses.
#[derive(Default)]
pub struct HostRegions {
    regions: Vec<(u64, Box<dyn HostBuffer>)>,
}

impl HostRegions {
    fn find(&mut self, addr: u64, len: usize) -> Option<(&mut [u8], usize)> {
        self.regions.iter_mut().find_map(|(base, buf)| {
            let off = addr.checked_sub(*base)? as usize;
            let b = buf.bytes();
            (off.checked_add(len)? <= b.len()).then_some((b, off))
        })
    }
}

impl HostMemory for HostRegions {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        match self.find(addr, out.len()) {
            Some((b, o)) => {
                out.copy_from_slice(&b[o..o + out.len()]);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        match self.find(addr, data.len()) {
            Some((b, o)) => {
                b[o..o + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

/// A packet a handler sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutPacket {
    pub time_ps: u64,
    pub ectx: EctxId,
    /// RDMA put destination (0 for spin_send_packet).
    pub dest: u32,
    pub frame: Vec<u8>,
}

/// An 8-byte host-direct write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostWrite {
    pub time_ps: u64,
    pub ectx: EctxId,
    pub addr: u64,
    pub value: u64,
}

/// A message whose handlers all finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageDone {
    pub time_ps: u64,
    pub ectx: EctxId,
    pub msg_id: u32,
}

/// One entry of the Chrome trace-event timeline.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TimelineEvent {
    pub name: String,
    pub cat: &'static str,
    pub ph: &'static str,
    /// Microseconds (Chrome trace units).
    pub ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u32,
    pub tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    #[error("{origin}: packet of {len} bytes exceeds the {slot}-byte packet buffer slot (pkt_slot_size)")]
    PacketTooLarge { origin: String, len: usize, slot: u32 },
    #[error("{origin}: packet of {len} bytes is too short to match (needs IPv4/UDP headers)")]
    PacketTooShort { origin: String, len: usize },
}

// ---------------------------------------------------------------------------
// Internal state
// ---------------------------------------------------------------------------

/// A multiplicative hasher for small integer keys (message ids): the
/// default SipHash showed up in profiles, and keys are not attacker-chosen
/// in a way that matters for a simulator.
#[derive(Default, Clone, Copy)]
struct MulHasher(u64);

impl std::hash::Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type FastHash = std::hash::BuildHasherDefault<MulHasher>;

#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrival,
    Schedule,
    TaskReady { task: usize },
    HpuRun { hpu: usize, gen: u64 },
    CmdDone { hpu: usize, id: u32 },
    Completion { task: usize },
    /// The earliest message deadline is due.
    TimeoutCheck,
    Inject,
    Unblock,
    HpuFree { hpu: usize, gen: u64 },
    /// A notification reached host memory (only advances time).
    NotifyVisible,
    NotifyResponse { id: u32 },
}

struct Event {
    time: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// A handler execution request: one packet in the L2 packet buffer.
#[derive(Clone, Copy, Debug)]
struct Her {
    slot: u32,
    len: u32,
    msg_id: u32,
    ectx: EctxId,
    eom: bool,
}

/// References to a packet slot still outstanding (tasks yet to complete).
struct SlotState {
    refs: u32,
    arrival_ps: u64,
    len: u32,
    /// Its message was reset: freeing the slot does not count as processed.
    aborted: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HhState {
    Pending,
    Running,
    Done,
}

/// A message processing queue (seed 001 §3.2.1).
struct Mpq {
    active: bool,
    gen: u64,
    ectx: EctxId,
    msg_id: u32,
    hh: HhState,
    /// HERs waiting for their payload handler.
    queue: VecDeque<Her>,
    /// The first packet, held for the header handler.
    first: Option<Her>,
    ph_inflight: u32,
    eom: Option<Her>,
    th_started: bool,
    in_ready: bool,
    last_activity: u64,
    /// This MPQ's entry in `Core::timers`.
    timer: Option<u64>,
}

struct Task {
    kind: HandlerKind,
    her: Her,
    mpq: usize,
    mpq_gen: u64,
    cluster: usize,
    l1: (u32, u32),
}

struct Cluster {
    dma_free_at: u64,
    /// Tasks in L1 waiting for an HPU.
    queue: VecDeque<usize>,
    /// Tasks accepted and not yet on an HPU (in DMA or queued).
    pending: u32,
    l1_alloc: Granules,
    free_hpus: VecDeque<usize>,
    fb_free_at: u64,
}

/// A bitmap allocator of 64-byte granules (the L1 packet buffer).
struct Granules {
    used: Vec<bool>,
}

impl Granules {
    fn new(bytes: u32) -> Granules {
        Granules { used: vec![false; (bytes / 64) as usize] }
    }
    fn alloc(&mut self, bytes: u32) -> Option<u32> {
        let n = bytes.div_ceil(64).max(1) as usize;
        let mut run = 0;
        for i in 0..self.used.len() {
            run = if self.used[i] { 0 } else { run + 1 };
            if run == n {
                let first = i + 1 - n;
                self.used[first..=i].fill(true);
                return Some(first as u32 * 64);
            }
        }
        None
    }
    fn free(&mut self, off: u32, bytes: u32) {
        let first = (off / 64) as usize;
        let n = bytes.div_ceil(64).max(1) as usize;
        self.used[first..first + n].fill(false);
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HpuState {
    Idle,
    Running,
    /// Suspended in a service (command wait, command slots full).
    Blocked,
    /// Handler done, waiting for its commands.
    Draining,
    /// Task complete; the runtime's doorbell store is under way.
    Closing,
}

enum Effect {
    None,
    Nic { addr: u32, data: Vec<u8> },
    HostWrite { addr: u64, data: Vec<u8>, direct: Option<u64> },
    FromHost { host: u64, nic: u32, len: u32 },
    Send { dest: u32, data: Vec<u8> },
}

struct Cmd {
    id: u32,
    done_ps: u64,
    effect: Effect,
    kind: &'static str,
    issue_ps: u64,
}

/// What an HPU is doing besides interpreting.
struct HpuCtl {
    gid: usize,
    cluster: usize,
    state: HpuState,
    task: Option<usize>,
    gen: u64,
    /// Task start: local time = t0 + (cycles - c0) * ps_per_cycle.
    t0: u64,
    c0: u64,
    i0: u64,
    ld0: u64,
    st0: u64,
    mem0: [u64; 5],
    busy_since: u64,
    busy_ps: u64,
    cmds: Vec<Cmd>,
    next_cmd: u32,
    wait: Option<u32>,
    /// Waiting for the host's answer to this notification.
    wait_notify: Option<u32>,
    /// A command issued while all slots were busy.
    deferred: Option<(Cmd, u64)>,
    /// The ECTX whose windows are mapped (they persist between its tasks).
    mapped_ectx: Option<EctxId>,
    stdout: Vec<u8>,
}

struct Slot {
    hpu: Hpu,
    ctl: HpuCtl,
}

/// Everything but the HPUs (so services can borrow it while an HPU runs).
struct Core {
    cfg: NicConfig,
    ppc: u64,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<Event>>,
    immediate: VecDeque<Ev>,
    l1: Vec<Arc<MemBlock>>,
    l2_handler: Arc<MemBlock>,
    l2_pkt: Arc<MemBlock>,
    prog_mem: Arc<MemBlock>,
    ectxs: Vec<Option<Ectx>>,
    mpqs: Vec<Mpq>,
    free_mpqs: Vec<usize>,
    msg_map: HashMap<(EctxId, u32), usize, FastHash>,
    mpq_wait: VecDeque<Her>,
    mpq_wait_since: Option<u64>,
    /// Message deadlines (deadline, MPQ), checked lazily: an entry is only
    /// re-examined when due, so packets do not touch the set.
    timers: BTreeSet<(u64, usize)>,
    timer_at: Option<u64>,
    ready: VecDeque<usize>,
    sched_free_at: u64,
    sched_queued: bool,
    /// The dispatcher found no cluster with room; a task leaving a cluster
    /// unblocks it.
    sched_blocked: bool,
    clusters: Vec<Cluster>,
    free_slots: Vec<u32>,
    slots: Vec<SlotState>,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<usize>,
    host: Box<dyn HostMemory>,
    out_free_at: u64,
    pcie_free_at: u64,
    /// The L2<->L1 interconnect shared by all clusters.
    ic_free_at: u64,
    source: Option<Box<dyn Source>>,
    /// Arrival waiting in the event queue or for a packet slot.
    pending: Option<Arrival>,
    /// Host-injected packets, each with an `Ev::Inject` queued.
    injected: VecDeque<Arrival>,
    last_inject_ps: u64,
    unblock_queued: bool,
    /// Packets waiting for a packet-buffer slot (back-pressure).
    blocked: VecDeque<Arrival>,
    blocked_since: Option<u64>,
    delay_ps: u64,
    stats: Stats,
    busy_now: u32,
    busy_max: u32,
    counters: HashMap<(EctxId, u32), (u64, u64)>,
    outbound: Vec<OutPacket>,
    host_writes: Vec<HostWrite>,
    completions: Vec<MessageDone>,
    notify_q: VecDeque<Notification>,
    notify: HashMap<u32, NotifyState, FastHash>,
    pending_responses: HashMap<u32, u64, FastHash>,
    next_notify: u32,
    keep_outbound: bool,
    timeline: Option<Vec<TimelineEvent>>,
}

/// The NIC model.
pub struct Engine {
    core: Core,
    hpus: Vec<Slot>,
}

impl Core {
    fn at(&mut self, time: u64, ev: Ev) {
        // Events for the current instant skip the heap: they come after
        // every queued event of this instant (those have smaller sequence
        // numbers), which is exactly FIFO order behind them.
        if time == self.now {
            self.immediate.push_back(ev);
            return;
        }
        self.seq += 1;
        self.events.push(Reverse(Event { time, seq: self.seq, ev }));
    }

    fn ns(&self, ns: u64) -> u64 {
        ns * 1000
    }

    fn cycles(&self, c: u64) -> u64 {
        c * self.ppc
    }

    fn ectx(&self, id: EctxId) -> &Ectx {
        self.ectxs[id].as_ref().expect("live ECTX")
    }

    /// Serialisation time of `bytes` at `gbps`.
    fn wire_ps(bytes: u64, gbps: f64) -> u64 {
        ((bytes * 8) as f64 * 1000.0 / gbps).round() as u64
    }

    /// Block and offset of a NIC address range, for engine-side accesses.
    fn nic_block(&self, addr: u32, len: u32) -> Option<(Arc<MemBlock>, usize)> {
        let c = &self.cfg;
        let inside = |base: u32, size: u32| {
            let off = addr.wrapping_sub(base);
            (off < size && size - off >= len).then_some(off as usize)
        };
        for (k, l1) in self.l1.iter().enumerate() {
            if let Some(o) = inside(abi::L1_BASE + k as u32 * abi::L1_CLUSTER_STRIDE, c.l1_size) {
                return Some((l1.clone(), o));
            }
        }
        if let Some(o) = inside(abi::L2_HANDLER_BASE, c.l2_handler_size) {
            return Some((self.l2_handler.clone(), o));
        }
        if let Some(o) = inside(abi::L2_PKT_BASE, c.l2_pkt_size) {
            return Some((self.l2_pkt.clone(), o));
        }
        inside(abi::PROG_MEM_BASE, c.prog_mem_size).map(|o| (self.prog_mem.clone(), o))
    }

    /// Make sure a TimeoutCheck event is queued for the earliest deadline.
    fn arm_timer(&mut self) {
        if let Some(&(d, _)) = self.timers.first() {
            if self.timer_at.is_none_or(|t| d < t) {
                self.timer_at = Some(d);
                self.at(d, Ev::TimeoutCheck);
            }
        }
    }

    fn timeline(&mut self, e: TimelineEvent) {
        if let Some(t) = &mut self.timeline {
            t.push(e);
        }
    }

    fn record_error(&mut self, ectx: EctxId, handler: String, cause: &str, pc: u32, addr: u32, hpu: u32) {
        let name = self.ectx(ectx).name().to_string();
        *self.stats.errors_by_ectx.entry(ectx).or_default().entry(cause.to_string()).or_default() += 1;
        if self.stats.errors.len() < MAX_ERRORS_KEPT {
            let time_ns = self.now / 1000;
            self.stats.errors.push(HandlerError { ectx: name, handler, cause: cause.to_string(), pc, addr, time_ns, hpu });
        }
    }
}

impl Engine {
    pub fn new(cfg: NicConfig) -> Result<Engine, crate::config::ConfigError> {
        cfg.validate()?;
        let ppc = cfg.ps_per_cycle();
        let mut hpus = Vec::new();
        let mut clusters = Vec::new();
        for c in 0..cfg.clusters as usize {
            let mut free = VecDeque::new();
            for h in 0..cfg.hpus_per_cluster as usize {
                let gid = c * cfg.hpus_per_cluster as usize + h;
                free.push_back(gid);
                let mut hpu = Hpu::new(&cfg.hpu);
                hpu.return_addr = softspin_hpu::hpu::DEFAULT_RETURN_ADDR;
                hpus.push(Slot {
                    hpu,
                    ctl: HpuCtl {
                        gid,
                        cluster: c,
                        state: HpuState::Idle,
                        task: None,
                        gen: 0,
                        t0: 0,
                        c0: 0,
                        i0: 0,
                        ld0: 0,
                        st0: 0,
                        mem0: [0; 5],
                        busy_since: 0,
                        busy_ps: 0,
                        cmds: Vec::new(),
                        next_cmd: 1,
                        wait: None,
                        wait_notify: None,
                        deferred: None,
                        mapped_ectx: None,
                        stdout: Vec::new(),
                    },
                });
            }
            clusters.push(Cluster {
                dma_free_at: 0,
                queue: VecDeque::new(),
                pending: 0,
                l1_alloc: Granules::new(cfg.l1_pkt_buffer),
                free_hpus: free,
                fb_free_at: 0,
            });
        }
        let nslots = cfg.l2_pkt_size / cfg.pkt_slot_size;
        let core = Core {
            ppc,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            immediate: VecDeque::new(),
            l1: (0..cfg.clusters).map(|_| MemBlock::new(cfg.l1_size as usize)).collect(),
            l2_handler: MemBlock::new(cfg.l2_handler_size as usize),
            l2_pkt: MemBlock::new(cfg.l2_pkt_size as usize),
            prog_mem: MemBlock::new(cfg.prog_mem_size as usize),
            ectxs: Vec::new(),
            mpqs: (0..cfg.mpqs)
                .map(|_| Mpq {
                    active: false,
                    gen: 0,
                    ectx: 0,
                    msg_id: 0,
                    hh: HhState::Done,
                    queue: VecDeque::new(),
                    first: None,
                    ph_inflight: 0,
                    eom: None,
                    th_started: false,
                    in_ready: false,
                    last_activity: 0,
                    timer: None,
                })
                .collect(),
            free_mpqs: (0..cfg.mpqs as usize).rev().collect(),
            msg_map: HashMap::default(),
            mpq_wait: VecDeque::new(),
            mpq_wait_since: None,
            timers: BTreeSet::new(),
            timer_at: None,
            ready: VecDeque::new(),
            sched_free_at: 0,
            sched_queued: false,
            sched_blocked: false,
            clusters,
            free_slots: (0..nslots).rev().collect(),
            slots: (0..nslots).map(|_| SlotState { refs: 0, arrival_ps: 0, len: 0, aborted: false }).collect(),
            tasks: Vec::new(),
            free_tasks: Vec::new(),
            host: Box::new(HostRegions::default()),
            out_free_at: 0,
            pcie_free_at: 0,
            ic_free_at: 0,
            source: None,
            pending: None,
            injected: VecDeque::new(),
            last_inject_ps: 0,
            unblock_queued: false,
            blocked: VecDeque::new(),
            blocked_since: None,
            delay_ps: 0,
            stats: Stats::default(),
            busy_now: 0,
            busy_max: 0,
            counters: HashMap::new(),
            outbound: Vec::new(),
            host_writes: Vec::new(),
            completions: Vec::new(),
            notify_q: VecDeque::new(),
            notify: HashMap::default(),
            pending_responses: HashMap::default(),
            next_notify: 1,
            keep_outbound: true,
            timeline: None,
            cfg,
        };
        Ok(Engine { core, hpus })
    }

    pub fn config(&self) -> &NicConfig {
        &self.core.cfg
    }

    /// Current virtual time in picoseconds.
    pub fn now_ps(&self) -> u64 {
        self.core.now
    }

    /// Replace the host memory (the simulator's default is `HostRegions`).
    pub fn set_host_memory(&mut self, host: Box<dyn HostMemory>) {
        self.core.host = host;
    }

    /// Register a zeroed host buffer at `base` (with the default host memory).
    pub fn add_host_region(&mut self, base: u64, size: usize) -> Result<(), String> {
        self.add_host_buffer(base, Box::new(vec![0u8; size]))
    }

    /// Lend the NIC `buf` as host memory at host address `base`.
    pub fn add_host_buffer(&mut self, base: u64, mut buf: Box<dyn HostBuffer>) -> Result<(), String> {
        let size = buf.bytes().len() as u64;
        let regions = (&mut *self.core.host as &mut dyn std::any::Any)
            .downcast_mut::<HostRegions>()
            .ok_or("the engine's host memory is not HostRegions")?;
        let end = base.checked_add(size).ok_or_else(|| format!("host region at 0x{base:x} wraps around"))?;
        for (b, r) in regions.regions.iter_mut() {
            let e = *b + r.bytes().len() as u64;
            if base < e && *b < end {
                return Err(format!("host region 0x{base:x}+0x{size:x} overlaps the one at 0x{b:x}"));
            }
        }
        regions.regions.push((base, buf));
        Ok(())
    }

    /// Take back the host buffer registered at `base`.
    pub fn remove_host_buffer(&mut self, base: u64) -> Option<Box<dyn HostBuffer>> {
        let regions = (&mut *self.core.host as &mut dyn std::any::Any).downcast_mut::<HostRegions>()?;
        let k = regions.regions.iter().position(|r| r.0 == base)?;
        Some(regions.regions.remove(k).1)
    }

    pub fn host_memory(&mut self) -> &mut dyn HostMemory {
        &mut *self.core.host
    }

    /// Record a Chrome trace-event timeline while running.
    pub fn enable_timeline(&mut self) {
        self.core.timeline = Some(Vec::new());
    }

    pub fn timeline(&self) -> &[TimelineEvent] {
        self.core.timeline.as_deref().unwrap_or(&[])
    }

    /// Keep outbound packets and host writes in memory (default on).
    pub fn keep_outputs(&mut self, keep: bool) {
        self.core.keep_outbound = keep;
    }

    pub fn outbound(&self) -> &[OutPacket] {
        &self.core.outbound
    }

    pub fn host_writes(&self) -> &[HostWrite] {
        &self.core.host_writes
    }

    /// Messages completed so far (kept with `keep_outputs(true)`).
    pub fn completions(&self) -> &[MessageDone] {
        &self.core.completions
    }

    /// Take (and forget) the recorded outputs: outbound packets, host
    /// writes, completed messages. The host API drains them this way.
    pub fn drain_outputs(&mut self) -> (Vec<OutPacket>, Vec<HostWrite>, Vec<MessageDone>) {
        let c = &mut self.core;
        (std::mem::take(&mut c.outbound), std::mem::take(&mut c.host_writes), std::mem::take(&mut c.completions))
    }

    /// Notifications that reached the host by now, oldest first.
    pub fn poll_notifications(&mut self) -> Vec<Notification> {
        let c = &mut self.core;
        let n = c.notify_q.iter().take_while(|x| x.time_ps <= c.now).count();
        c.notify_q.drain(..n).collect()
    }

    /// Answer a notification; the handler sees `value` one PCIe latency
    /// later. Frees its ring slot.
    pub fn respond(&mut self, id: u32, value: u64) -> Result<(), String> {
        let c = &mut self.core;
        match c.notify.get_mut(&id) {
            Some(st) if !st.answered => {
                st.answered = true;
                let t = c.now + c.cfg.host.latency_ns * 1000;
                c.pending_responses.insert(id, value);
                c.at(t, Ev::NotifyResponse { id });
                Ok(())
            }
            Some(_) => Err(format!("notification {id} was already answered")),
            None => Err(format!("no notification {id}")),
        }
    }

    fn on_notify_response(&mut self, id: u32) {
        let c = &mut self.core;
        let Some(value) = c.pending_responses.remove(&id) else { return };
        let Some(st) = c.notify.get_mut(&id) else { return };
        st.response = Some(value);
        let (h, gen) = (st.hpu, st.gen);
        let Slot { hpu, ctl } = &mut self.hpus[h];
        if ctl.gen == gen && ctl.state == HpuState::Blocked && ctl.wait_notify == Some(id) {
            ctl.wait_notify = None;
            c.notify.remove(&id);
            resume(hpu, ctl, c, &[value as u32, (value >> 32) as u32]);
        } else if ctl.gen != gen {
            c.notify.remove(&id); // its task is gone
        }
    }

    /// Packets admitted and messages completed per ECTX.
    pub fn ectx_counts(&self, id: EctxId) -> (u64, u64) {
        self.core.stats.ectx_packets.get(&id).copied().unwrap_or_default()
    }

    /// printf output of one HPU (global id).
    pub fn hpu_stdout(&self, gid: usize) -> &[u8] {
        &self.hpus[gid].ctl.stdout
    }

    pub fn hpu_count(&self) -> usize {
        self.hpus.len()
    }

    /// FPsPIN-style performance counters pushed by an ECTX's handlers:
    /// (index, sum, count).
    pub fn counters(&self, ectx: EctxId) -> Vec<(u32, u64, u64)> {
        let mut v: Vec<_> = self.core.counters.iter().filter(|(k, _)| k.0 == ectx).map(|(k, v)| (k.1, v.0, v.1)).collect();
        v.sort();
        v
    }

    /// Handler errors recorded so far.
    pub fn errors(&self) -> &[HandlerError] {
        &self.core.stats.errors
    }

    // -- ECTX management ---------------------------------------------------

    /// Install an ECTX: place its code and data, check its handlers and its
    /// memory. It receives no packet until [`Engine::activate`].
    pub fn install(&mut self, spec: EctxSpec) -> Result<EctxId, EctxError> {
        let c = &self.core;
        let cfg = &c.cfg;
        let name = spec.name.clone();
        let mut entries = [None; 3];
        for (k, (sym, which)) in [(&spec.hh, "header"), (&spec.ph, "payload"), (&spec.th, "completion")].into_iter().enumerate() {
            if let Some(s) = sym {
                let a = spec.image.symbol(s).map_err(|_| EctxError::NoHandler { ectx: name.clone(), sym: s.clone(), which })?;
                entries[k] = Some(a);
            }
        }
        if entries.iter().all(|e| e.is_none()) {
            return Err(EctxError::NoHandlers { ectx: name });
        }
        if let Some(addr) = spec.image.symbols.get("__softspin_nb_clusters") {
            let v = spec.image.segments.iter().find_map(|s| {
                let off = addr.checked_sub(s.vaddr)? as usize;
                s.data.get(off..off + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            });
            if let Some(v) = v {
                if v != cfg.clusters {
                    return Err(EctxError::Clusters { ectx: name, image: v, nic: cfg.clusters });
                }
            }
        }
        let (code, data) = extents(&spec.image);
        let within = |what, base: u32, size: u32, region, rbase: u32, rsize: u32| {
            if base < rbase || base as u64 + size as u64 > rbase as u64 + rsize as u64 {
                Err(EctxError::OutOfRegion { ectx: name.clone(), what, base, size, region, rbase, rsize })
            } else {
                Ok(())
            }
        };
        within("code", code.0, code.1, "program memory", abi::PROG_MEM_BASE, cfg.prog_mem_size)?;
        let hm = match (spec.handler_mem, data) {
            (Some(h), _) => h,
            (None, Some((d0, d1))) => (d0, (d1 - d0).next_multiple_of(64)),
            (None, None) => (abi::L2_HANDLER_BASE, 64),
        };
        within("handler memory", hm.0, hm.1, "L2 handler memory", abi::L2_HANDLER_BASE, cfg.l2_handler_size)?;
        for s in &spec.image.segments {
            let ok = if s.perm.has(Perm::X) {
                true
            } else {
                s.vaddr >= hm.0 && s.end() <= hm.0 as u64 + hm.1 as u64
            };
            if !ok {
                return Err(EctxError::Segment { ectx: name, addr: s.vaddr });
            }
        }
        if spec.host_window.0.checked_add(spec.host_window.1).is_none() {
            return Err(EctxError::HostWindow { ectx: name, base: spec.host_window.0, size: spec.host_window.1 });
        }
        let overlaps = |a: (u32, u32), b: (u32, u32)| a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
        for other in c.ectxs.iter().flatten() {
            if overlaps(hm, other.handler_mem) {
                return Err(EctxError::Overlap { ectx: name, what: "handler memory", base: hm.0, size: hm.1, other: other.name().into() });
            }
            // Shared code is fine only if it is the very same code.
            if overlaps(code, other.code) && (code != other.code || !same_code(&spec.image, &other.spec.image)) {
                return Err(EctxError::Overlap { ectx: name, what: "code", base: code.0, size: code.1, other: other.name().into() });
            }
        }
        // Scratchpads: first fit in each cluster's scratchpad area.
        let mut scratch = Vec::new();
        for cl in 0..cfg.clusters as usize {
            let want = spec.scratchpad.get(cl).copied().unwrap_or(0).next_multiple_of(64);
            let lo = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE + cfg.l1_scratch_base();
            let hi = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE + cfg.l1_size;
            let mut taken: Vec<(u32, u32)> =
                c.ectxs.iter().flatten().map(|e| e.scratch[cl]).filter(|s| s.size > 0).map(|s| (s.addr, s.size)).collect();
            taken.sort();
            let mut at = lo;
            for (a, s) in taken {
                if at + want <= a {
                    break;
                }
                at = at.max(a + s);
            }
            if want > 0 && at + want > hi {
                return Err(EctxError::Scratchpad { ectx: name, cluster: cl, want, free: hi.saturating_sub(at) });
            }
            scratch.push(Scratch { addr: if want > 0 { at } else { 0 }, size: want });
        }
        let program = Program::decode(&spec.image.code_ranges(), &cfg.hpu)
            .map_err(|e| EctxError::Decode { ectx: name.clone(), msg: e.to_string() })?;
        // Load: code into program memory, data into handler memory (zeroed
        // first, so .bss and the rest of the region start at 0).
        let c = &mut self.core;
        c.l2_handler.fill((hm.0 - abi::L2_HANDLER_BASE) as usize, hm.1 as usize, 0);
        for s in &spec.image.segments {
            if s.perm.has(Perm::X) {
                c.prog_mem.write((s.vaddr - abi::PROG_MEM_BASE) as usize, &s.data);
            } else {
                c.l2_handler.write((s.vaddr - abi::L2_HANDLER_BASE) as usize, &s.data);
            }
        }
        for (cl, s) in scratch.iter().enumerate() {
            if s.size > 0 {
                c.l1[cl].fill((s.addr - abi::L1_BASE - cl as u32 * abi::L1_CLUSTER_STRIDE) as usize, s.size as usize, 0);
            }
        }
        let e = Ectx { spec, program: Arc::new(program), entries, handler_mem: hm, code, scratch, active: false, open_messages: 0, tasks: 0 };
        let id = match c.ectxs.iter().position(|e| e.is_none()) {
            Some(i) => i,
            None => {
                c.ectxs.push(None);
                c.ectxs.len() - 1
            }
        };
        c.ectxs[id] = Some(e);
        // A reused slot starts with fresh per-ECTX statistics.
        c.stats.ectx_packets.remove(&id);
        c.stats.errors_by_ectx.remove(&id);
        c.counters.retain(|k, _| k.0 != id);
        Ok(id)
    }

    fn ectx_mut(&mut self, id: EctxId) -> Result<&mut Ectx, EctxError> {
        self.core.ectxs.get_mut(id).and_then(|e| e.as_mut()).ok_or(EctxError::NoSuchEctx(id))
    }

    pub fn activate(&mut self, id: EctxId) -> Result<(), EctxError> {
        let e = self.ectx_mut(id)?;
        if e.active {
            return Err(EctxError::AlreadyActive(e.name().into()));
        }
        e.active = true;
        Ok(())
    }

    pub fn deactivate(&mut self, id: EctxId) -> Result<(), EctxError> {
        let e = self.ectx_mut(id)?;
        if !e.active {
            return Err(EctxError::NotActive(e.name().into()));
        }
        e.active = false;
        Ok(())
    }

    pub fn uninstall(&mut self, id: EctxId) -> Result<(), EctxError> {
        let e = self.ectx_mut(id)?;
        if e.active || e.open_messages > 0 || e.tasks > 0 {
            return Err(EctxError::Busy(e.name().into()));
        }
        self.core.ectxs[id] = None;
        for h in &mut self.hpus {
            if h.ctl.mapped_ectx == Some(id) {
                h.ctl.mapped_ectx = None;
            }
        }
        Ok(())
    }

    pub fn ectx(&self, id: EctxId) -> Option<&Ectx> {
        self.core.ectxs.get(id).and_then(|e| e.as_ref())
    }

    /// Read NIC memory (any region) by NIC address.
    pub fn read_nic(&self, addr: u32, len: usize) -> Option<Vec<u8>> {
        let (b, o) = self.core.nic_block(addr, len as u32)?;
        Some(b.to_vec(o, len))
    }

    /// Write NIC memory by NIC address (host-side initialisation).
    pub fn write_nic(&mut self, addr: u32, data: &[u8]) -> bool {
        match self.core.nic_block(addr, data.len() as u32) {
            Some((b, o)) => {
                b.write(o, data);
                true
            }
            None => false,
        }
    }

    // -- traffic and running -------------------------------------------------

    /// Feed packets from `source` (replacing any previous source).
    pub fn set_source(&mut self, source: Box<dyn Source>) -> Result<(), SimError> {
        self.core.source = Some(source);
        self.core.pending = None;
        self.pull_arrival()
    }

    fn pull_arrival(&mut self) -> Result<(), SimError> {
        let c = &mut self.core;
        if c.pending.is_some() {
            return Ok(());
        }
        let Some(src) = c.source.as_mut() else { return Ok(()) };
        match src.next_arrival()? {
            Some(a) => {
                let t = (a.time_ps + c.delay_ps).max(c.now);
                c.pending = Some(a);
                c.at(t, Ev::Arrival);
            }
            None => c.source = None,
        }
        Ok(())
    }

    /// Run until no event is left (all traffic processed, the NIC idle) or
    /// virtual time reaches `until_ps`. `progress` is called now and then
    /// with the packets processed so far.
    pub fn run(&mut self, until_ps: Option<u64>, mut progress: impl FnMut(u64)) -> Result<(), SimError> {
        let mut n = 0u64;
        loop {
            // This instant's heap events first, then its immediate FIFO.
            let heap_now = self.core.events.peek().is_some_and(|Reverse(e)| e.time == self.core.now);
            if !heap_now {
                if let Some(ev) = self.core.immediate.pop_front() {
                    self.step(ev)?;
                    continue;
                }
            }
            let Some(Reverse(e)) = self.core.events.peek() else { break };
            // A deadline check with nothing due (its message ended) does not
            // advance time.
            if let Ev::TimeoutCheck = e.ev {
                let t = e.time;
                if self.core.timers.first().is_none_or(|f| f.0 > t) {
                    self.core.events.pop();
                    if self.core.timer_at == Some(t) {
                        self.core.timer_at = None;
                        self.core.arm_timer();
                    }
                    continue;
                }
            }
            if until_ps.is_some_and(|u| e.time > u) {
                self.core.now = until_ps.unwrap();
                return Ok(());
            }
            let Reverse(e) = self.core.events.pop().unwrap();
            self.core.now = e.time;
            self.step(e.ev)?;
            n += 1;
            if n % 65536 == 0 {
                progress(self.core.stats.packets_done);
            }
        }
        // Idle before `until`: the clock still moves there.
        if let Some(u) = until_ps {
            self.core.now = self.core.now.max(u);
        }
        progress(self.core.stats.packets_done);
        Ok(())
    }

    fn step(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Arrival => self.on_arrival()?,
            Ev::Schedule => {
                self.core.sched_queued = false;
                self.schedule();
            }
            Ev::TaskReady { task } => self.on_task_ready(task),
            Ev::HpuRun { hpu, gen } => {
                if self.hpus[hpu].ctl.gen == gen && self.hpus[hpu].ctl.state == HpuState::Running {
                    self.run_hpu(hpu);
                }
            }
            Ev::CmdDone { hpu, id } => self.on_cmd_done(hpu, id),
            Ev::Completion { task } => self.on_completion(task),
            Ev::TimeoutCheck => self.on_timeout_check(),
            Ev::Inject => self.on_inject()?,
            Ev::HpuFree { hpu, gen } => {
                if self.hpus[hpu].ctl.gen == gen && self.hpus[hpu].ctl.state == HpuState::Closing {
                    self.on_hpu_free(hpu);
                }
            }
            Ev::NotifyVisible => {}
            Ev::NotifyResponse { id } => self.on_notify_response(id),
            Ev::Unblock => {
                self.core.unblock_queued = false;
                self.on_unblock()?
            }
        }
        Ok(())
    }

    // -- inbound ---------------------------------------------------------------

    fn match_ectx(&self, a: &Arrival) -> Option<EctxId> {
        let mut port: Option<Option<u16>> = None;
        for (id, e) in self.core.ectxs.iter().enumerate() {
            let Some(e) = e else { continue };
            if !e.active {
                continue;
            }
            let hit = match e.spec.matching {
                MatchRule::All => true,
                MatchRule::UdpDstPort(p) => {
                    let dport = *port.get_or_insert_with(|| udp_dst_port(&a.frame));
                    dport == Some(p)
                }
            };
            if hit {
                return Some(id);
            }
        }
        None
    }

    fn on_arrival(&mut self) -> Result<(), SimError> {
        let Some(a) = self.core.pending.take() else { return Ok(()) };
        self.accept(a)?;
        // With back-pressure on, the source waits until the buffer drains.
        if self.core.blocked.is_empty() {
            self.pull_arrival()?;
        }
        Ok(())
    }

    fn accept(&mut self, a: Arrival) -> Result<(), SimError> {
        let c = &mut self.core;
        let len = a.frame.len();
        if len > c.cfg.pkt_slot_size as usize {
            return Err(SimError::PacketTooLarge { origin: a.origin, len, slot: c.cfg.pkt_slot_size });
        }
        c.stats.packets_in += 1;
        c.stats.bytes_in += len as u64;
        c.stats.first_arrival_ps.get_or_insert(c.now);
        if !c.blocked.is_empty() {
            c.blocked.push_back(a); // behind the packets already waiting
            return Ok(());
        }
        self.admit(a, false);
        Ok(())
    }

    /// Match a packet and give it a packet-buffer slot. Returns false if it
    /// had to wait for a slot (back-pressure); it is then queued.
    fn admit(&mut self, a: Arrival, front: bool) -> bool {
        let Some(ectx) = self.match_ectx(&a) else {
            self.core.stats.unmatched += 1;
            return true;
        };
        let c = &mut self.core;
        let now = c.now;
        let Some(slot) = c.free_slots.pop() else {
            match c.cfg.buffer_full {
                BufferFull::Drop => c.stats.drops += 1,
                BufferFull::Backpressure => {
                    c.blocked_since.get_or_insert(now);
                    if front {
                        c.blocked.push_front(a);
                    } else {
                        c.blocked.push_back(a);
                    }
                    return false;
                }
            }
            return true;
        };
        let len = a.frame.len();
        let off = slot * c.cfg.pkt_slot_size;
        c.l2_pkt.write(off as usize, &a.frame);
        let her = Her { slot, len: len as u32, msg_id: a.msg_id, ectx, eom: a.eom };
        c.slots[slot as usize] = SlotState { refs: 0, arrival_ps: now, len: len as u32, aborted: false };
        c.stats.ectx_packets.entry(ectx).or_default().0 += 1;
        self.enqueue_her(her);
        true
    }

    /// Slots freed: let waiting packets in, in order.
    fn on_unblock(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.core.blocked.pop_front() {
            if !self.admit(a, true) {
                return Ok(());
            }
        }
        let c = &mut self.core;
        if let Some(since) = c.blocked_since.take() {
            c.stats.backpressure_ps += c.now - since;
            c.delay_ps += c.now - since;
        }
        self.pull_arrival()
    }

    fn on_inject(&mut self) -> Result<(), SimError> {
        match self.core.injected.pop_front() {
            Some(a) => self.accept(a),
            None => Ok(()),
        }
    }

    /// Nothing left to do: no event scheduled, no packet or notification on
    /// its way (a notification's arrival at the host is an event). Only the
    /// host (a new packet, a response) can wake the NIC.
    pub fn is_idle(&self) -> bool {
        self.core.events.is_empty() && self.core.immediate.is_empty()
    }

    /// The earliest time a packet injected now would arrive: now, or after
    /// the last packet injected, whichever is later.
    pub fn next_inject_ps(&self) -> u64 {
        self.core.now.max(self.core.last_inject_ps)
    }

    /// Hand a packet to the NIC from the host side (single packets and
    /// messages of the host API). It arrives at `a.time_ps` or now,
    /// whichever is later, and after every packet injected before it.
    pub fn inject(&mut self, mut a: Arrival) {
        let c = &mut self.core;
        a.time_ps = a.time_ps.max(c.now).max(c.last_inject_ps);
        c.last_inject_ps = a.time_ps;
        let t = a.time_ps;
        c.injected.push_back(a);
        c.at(t, Ev::Inject);
    }

    /// Give a HER to its message's MPQ (allocating one for a new message);
    /// without a free MPQ it waits, behind earlier waiting messages.
    fn enqueue_her(&mut self, her: Her) {
        let c = &mut self.core;
        if !c.msg_map.contains_key(&(her.ectx, her.msg_id)) && (!c.mpq_wait.is_empty() || c.free_mpqs.is_empty()) {
            c.mpq_wait_since.get_or_insert(c.now);
            c.mpq_wait.push_back(her);
            return;
        }
        self.enqueue_her_now(her);
    }

    fn enqueue_her_now(&mut self, her: Her) {
        let c = &mut self.core;
        let key = (her.ectx, her.msg_id);
        let m = match c.msg_map.get(&key) {
            Some(&m) => m,
            None => {
                let m = c.free_mpqs.pop().expect("caller checked for a free MPQ");
                let e = c.ectxs[her.ectx].as_mut().unwrap();
                e.open_messages += 1;
                let has_hh = e.entries[0].is_some();
                let q = &mut c.mpqs[m];
                q.active = true;
                q.gen += 1;
                q.ectx = her.ectx;
                q.msg_id = her.msg_id;
                q.hh = if has_hh { HhState::Pending } else { HhState::Done };
                q.queue.clear();
                q.first = None;
                q.ph_inflight = 0;
                q.eom = None;
                q.th_started = false;
                q.timer = None;
                c.msg_map.insert(key, m);
                m
            }
        };
        let e = c.ectx(her.ectx);
        let (has_hh, has_ph, has_th) = (e.entries[0].is_some(), e.entries[1].is_some(), e.entries[2].is_some());
        let timeout = e.spec.msg_timeout_ns;
        let q = &mut c.mpqs[m];
        let first = q.hh == HhState::Pending && q.first.is_none();
        let refs = (first && has_hh) as u32 + has_ph as u32 + (her.eom && has_th) as u32;
        c.slots[her.slot as usize].refs = refs;
        if first {
            q.first = Some(her);
        }
        if has_ph {
            q.queue.push_back(her);
        }
        if her.eom {
            q.eom = Some(her);
        }
        q.last_activity = c.now;
        if timeout > 0 && q.timer.is_none() {
            let d = c.now + timeout * 1000;
            q.timer = Some(d);
            c.timers.insert((d, m));
            c.arm_timer();
        }
        if refs == 0 {
            self.release_ref(her.slot, self.core.now);
        }
        self.mark_ready(m);
        self.maybe_finish_message(m);
    }

    fn runnable(&self, m: usize) -> bool {
        let c = &self.core;
        let q = &c.mpqs[m];
        if !q.active {
            return false;
        }
        match q.hh {
            HhState::Pending => q.first.is_some(),
            HhState::Running => false,
            HhState::Done => !q.queue.is_empty() || self.th_ready(m),
        }
    }

    fn th_ready(&self, m: usize) -> bool {
        let c = &self.core;
        let q = &c.mpqs[m];
        q.hh == HhState::Done
            && q.eom.is_some()
            && q.queue.is_empty()
            && q.ph_inflight == 0
            && !q.th_started
            && c.ectx(q.ectx).entries[2].is_some()
    }

    fn mark_ready(&mut self, m: usize) {
        if !self.core.mpqs[m].in_ready && self.runnable(m) {
            self.core.mpqs[m].in_ready = true;
            self.core.ready.push_back(m);
        }
        self.kick_scheduler();
    }

    fn kick_scheduler(&mut self) {
        let c = &mut self.core;
        if !c.sched_queued && !c.sched_blocked && !c.ready.is_empty() {
            c.sched_queued = true;
            let t = c.now.max(c.sched_free_at);
            c.at(t, Ev::Schedule);
        }
    }

    /// A message without a completion handler is done when its last packet
    /// was seen and every handler of it finished: free its MPQ. (With a
    /// completion handler, that handler's completion frees it.)
    fn maybe_finish_message(&mut self, m: usize) {
        let c = &self.core;
        let q = &c.mpqs[m];
        if !q.active || q.eom.is_none() || q.hh != HhState::Done || !q.queue.is_empty() || q.ph_inflight > 0 {
            return;
        }
        if c.ectx(q.ectx).entries[2].is_some() {
            return;
        }
        self.free_mpq(m, true);
    }

    fn free_mpq(&mut self, m: usize, completed: bool) {
        let c = &mut self.core;
        let q = &mut c.mpqs[m];
        if let Some(d) = q.timer.take() {
            c.timers.remove(&(d, m));
        }
        q.active = false;
        q.gen += 1;
        let key = (q.ectx, q.msg_id);
        let ectx = q.ectx;
        c.msg_map.remove(&key);
        if completed {
            c.stats.ectx_packets.entry(ectx).or_default().1 += 1;
            if c.keep_outbound {
                c.completions.push(MessageDone { time_ps: c.now, ectx, msg_id: key.1 });
            }
        }
        if let Some(e) = c.ectxs[ectx].as_mut() {
            e.open_messages -= 1;
        }
        c.free_mpqs.push(m);
        // The oldest waiting message gets the queue, with all its packets.
        if let Some(h) = c.mpq_wait.pop_front() {
            let key = (h.ectx, h.msg_id);
            let (same, rest): (VecDeque<Her>, VecDeque<Her>) =
                std::mem::take(&mut c.mpq_wait).into_iter().partition(|x| (x.ectx, x.msg_id) == key);
            c.mpq_wait = rest;
            if c.mpq_wait.is_empty() {
                if let Some(s) = c.mpq_wait_since.take() {
                    c.stats.mpq_stall_ps += c.now - s;
                }
            }
            self.enqueue_her_now(h);
            for x in same {
                self.enqueue_her_now(x);
            }
        }
    }

    fn on_timeout_check(&mut self) {
        let now = self.core.now;
        self.core.timer_at = None;
        while let Some(&(d, m)) = self.core.timers.first() {
            if d > now {
                break;
            }
            let c = &mut self.core;
            c.timers.pop_first();
            let timeout = c.ectx(c.mpqs[m].ectx).spec.msg_timeout_ns * 1000;
            let q = &mut c.mpqs[m];
            q.timer = None;
            if q.eom.is_some() {
                continue; // complete, just still being processed
            }
            if q.last_activity + timeout > now {
                let d = q.last_activity + timeout;
                q.timer = Some(d);
                c.timers.insert((d, m));
                continue;
            }
            // The end of the message never came: reset the MPQ (seed 001
            // §3.2.3). Tasks not yet issued give up their packet references;
            // tasks in flight finish normally.
            let held: Vec<Her> = q.queue.drain(..).chain(q.first.take()).collect();
            let (ectx, msg) = (q.ectx, q.msg_id);
            c.stats.message_timeouts += 1;
            for h in held {
                self.core.slots[h.slot as usize].aborted = true;
                self.release_ref(h.slot, now);
            }
            self.core.record_error(ectx, format!("message {msg}"), "message timeout", 0, 0, u32::MAX);
            self.free_mpq(m, false);
        }
        self.core.arm_timer();
    }

    // -- scheduling ------------------------------------------------------------

    fn schedule(&mut self) {
        let now = self.core.now;
        if now < self.core.sched_free_at {
            self.kick_scheduler();
            return;
        }
        let n = self.core.ready.len();
        for _ in 0..n {
            let Some(m) = self.core.ready.pop_front() else { break };
            self.core.mpqs[m].in_ready = false;
            if !self.runnable(m) {
                continue;
            }
            let q = &self.core.mpqs[m];
            let (kind, her) = match q.hh {
                HhState::Pending => (HandlerKind::Header, q.first.unwrap()),
                _ if !q.queue.is_empty() => (HandlerKind::Payload, *q.queue.front().unwrap()),
                _ => (HandlerKind::Completion, q.eom.unwrap()),
            };
            if !self.dispatch(kind, her, m) {
                // No cluster can take it: the dispatcher blocks until a task
                // leaves a cluster.
                self.core.mpqs[m].in_ready = true;
                self.core.ready.push_front(m);
                self.core.sched_blocked = true;
                return;
            }
            let q = &mut self.core.mpqs[m];
            match kind {
                HandlerKind::Header => {
                    q.hh = HhState::Running;
                    q.first = None;
                }
                HandlerKind::Payload => {
                    q.queue.pop_front();
                    q.ph_inflight += 1;
                }
                HandlerKind::Completion => q.th_started = true,
            }
            if self.runnable(m) {
                self.core.mpqs[m].in_ready = true;
                self.core.ready.push_back(m);
            }
            // One task per cycle.
            self.core.sched_free_at = now + self.core.ppc;
            break;
        }
        self.kick_scheduler();
    }

    /// Send a task to a cluster: the home cluster (message id mod clusters)
    /// if it has room, else the least loaded one with room.
    fn dispatch(&mut self, kind: HandlerKind, her: Her, mpq: usize) -> bool {
        let c = &mut self.core;
        let copy = her.len.min(c.ectx(her.ectx).spec.l1_copy);
        let n = c.clusters.len();
        let home = her.msg_id as usize % n;
        let cap = c.cfg.cluster_task_queue;
        let mut order: Vec<usize> = (0..n).filter(|&k| k != home).collect();
        order.sort_by_key(|&k| (c.clusters[k].pending, k));
        order.insert(0, home);
        for k in order {
            if c.clusters[k].pending >= cap {
                continue;
            }
            let Some(off) = c.clusters[k].l1_alloc.alloc(copy.max(1)) else { continue };
            c.clusters[k].pending += 1;
            // HER -> cluster, then the cluster DMA copies the packet head
            // to L1 (pipelined: width bytes per cycle after a fixed latency).
            let arrive = c.now + c.ns(c.cfg.to_cluster_ns);
            let beats = (copy as u64).div_ceil(c.cfg.dma_width_bits as u64 / 8);
            let start = arrive.max(c.clusters[k].dma_free_at).max(c.ic_free_at);
            c.clusters[k].dma_free_at = start + beats * c.ppc;
            c.ic_free_at = start + (copy as u64).div_ceil(c.cfg.interconnect_bits as u64 / 8) * c.ppc;
            let ready = if copy == 0 { arrive } else { start + (beats + c.cfg.dma_latency_cycles as u64) * c.ppc };
            let task = Task { kind, her, mpq, mpq_gen: c.mpqs[mpq].gen, cluster: k, l1: (off, copy) };
            let id = match c.free_tasks.pop() {
                Some(i) => {
                    c.tasks[i] = Some(task);
                    i
                }
                None => {
                    c.tasks.push(Some(task));
                    c.tasks.len() - 1
                }
            };
            c.stats.tasks += 1;
            c.ectxs[her.ectx].as_mut().unwrap().tasks += 1;
            c.at(ready, Ev::TaskReady { task: id });
            return true;
        }
        false
    }

    fn on_task_ready(&mut self, t: usize) {
        let c = &mut self.core;
        let task = c.tasks[t].as_ref().unwrap();
        let (cl, (off, len), slot) = (task.cluster, task.l1, task.her.slot);
        // The copy lands in L1 now.
        let data = c.l2_pkt.to_vec((slot * c.cfg.pkt_slot_size) as usize, len as usize);
        c.l1[cl].write(off as usize, &data);
        c.clusters[cl].queue.push_back(t);
        self.assign(cl);
    }

    /// Start queued tasks of cluster `cl` on its free HPUs.
    fn assign(&mut self, cl: usize) {
        loop {
            let c = &mut self.core;
            let cluster = &mut c.clusters[cl];
            if cluster.queue.is_empty() || cluster.free_hpus.is_empty() {
                return;
            }
            let t = cluster.queue.pop_front().unwrap();
            let h = cluster.free_hpus.pop_front().unwrap();
            cluster.pending -= 1;
            c.sched_blocked = false;
            self.start_task(h, t);
            self.kick_scheduler();
        }
    }

    /// Prepare HPU `h` for task `t`: task descriptor, memory windows, call.
    fn start_task(&mut self, h: usize, t: usize) {
        let c = &mut self.core;
        let cfg = &c.cfg;
        let task = c.tasks[t].as_ref().unwrap();
        let e = c.ectxs[task.her.ectx].as_ref().unwrap();
        let cl = task.cluster;
        let hid = h % cfg.hpus_per_cluster as usize;
        let l1base = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE;
        let rt_off = cfg.l1_pkt_buffer + hid as u32 * cfg.runtime_area();
        let stack_off = cfg.l1_pkt_buffer + cfg.hpus_per_cluster * cfg.runtime_area() + hid as u32 * cfg.hpu_stack_size;
        let pkt_l1 = l1base + task.l1.0;
        let l2_pkt = abi::L2_PKT_BASE + task.her.slot * cfg.pkt_slot_size;
        // task_t, packed, as the SDK declares it, then handler_args_t.
        let mut d = [0u8; 256];
        let mut n = 0;
        let mut put = |v: u32| {
            d[n..n + 4].copy_from_slice(&v.to_le_bytes());
            n += 4;
        };
        put(e.handler_mem.0);
        put(e.handler_mem.1);
        put(pkt_l1);
        put(task.her.len);
        for s in &e.scratch {
            put(s.addr);
        }
        for s in &e.scratch {
            put(s.size);
        }
        let (hb, hs) = e.spec.host_window;
        put((hb >> 32) as u32);
        put(hb as u32);
        put(hs.min(u32::MAX as u64) as u32);
        put(l2_pkt);
        put(task.her.msg_id % cfg.clusters);
        put(task.her.msg_id);
        let args_off = cfg.task_t_size().next_multiple_of(16);
        let task_addr = l1base + rt_off;
        for (k, v) in [task_addr, h as u32, cl as u32, hid as u32].into_iter().enumerate() {
            let at = args_off as usize + 4 * k;
            d[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        c.l1[cl].write(rt_off as usize, &d[..args_off as usize + 16]);

        // The task's view of memory (PsPIN sets the PMP the same way). The
        // ECTX's windows stay from the HPU's previous task when it ran the
        // same ECTX; windows 0 and 1 (the packet in L1 and L2) change.
        let slot = &mut self.hpus[h];
        let m = &mut slot.hpu.mem;
        let l1 = &c.l1[cl];
        let copy = task.l1.1.max(1);
        let l1_off = task.l1.0 as usize;
        let l2_off = (l2_pkt - abi::L2_PKT_BASE) as usize;
        let plen = task.her.len.max(1);
        let ok = if slot.ctl.mapped_ectx == Some(task.her.ectx) {
            m.remap(0, pkt_l1, copy, l1, l1_off, Perm::RW, MemClass::L1Local).is_ok()
                && m.remap(1, l2_pkt, plen, &c.l2_pkt, l2_off, Perm::RW, MemClass::L2).is_ok()
        } else {
            m.clear();
            slot.ctl.mapped_ectx = Some(task.her.ectx);
            m.map(pkt_l1, copy, l1, l1_off, Perm::RW, MemClass::L1Local).is_ok()
                && m.map(l2_pkt, plen, &c.l2_pkt, l2_off, Perm::RW, MemClass::L2).is_ok()
                && m.map(l1base + stack_off, cfg.hpu_stack_size, l1, stack_off as usize, Perm::RW, MemClass::L1Local).is_ok()
                && m.map(task_addr, cfg.runtime_area(), l1, rt_off as usize, Perm::R, MemClass::L1Local).is_ok()
                && m.map(
                    e.handler_mem.0,
                    e.handler_mem.1,
                    &c.l2_handler,
                    (e.handler_mem.0 - abi::L2_HANDLER_BASE) as usize,
                    Perm::RW,
                    MemClass::L2,
                )
                .is_ok()
                && m.map(e.code.0, e.code.1.max(2), &c.prog_mem, (e.code.0 - abi::PROG_MEM_BASE) as usize, Perm::R, MemClass::ProgMem).is_ok()
                && e.scratch.iter().enumerate().filter(|(_, s)| s.size > 0).all(|(k, s)| {
                    let class = if k == cl { MemClass::L1Local } else { MemClass::L1Remote };
                    let off = (s.addr - abi::L1_BASE - k as u32 * abi::L1_CLUSTER_STRIDE) as usize;
                    m.map(s.addr, s.size, &c.l1[k], off, Perm::RW, class).is_ok()
                })
        };
        debug_assert!(ok, "task windows are disjoint by construction");

        let entry = e.entries[task.kind as usize].expect("scheduled handler exists");
        let now = c.now;
        let start = now + c.cycles(c.cfg.assign_cycles as u64) + c.ns(c.cfg.invoke_ns);
        let hpu = &mut slot.hpu;
        hpu.start_call(entry, l1base + stack_off + cfg.hpu_stack_size, &[task_addr + args_off]);
        hpu.instret_limit = hpu.instret.saturating_add(e.spec.watchdog);
        let counts = hpu.mem.counts();
        let ctl = &mut slot.ctl;
        ctl.state = HpuState::Running;
        ctl.task = Some(t);
        ctl.gen += 1;
        ctl.t0 = start;
        ctl.c0 = hpu.cycles;
        ctl.i0 = hpu.instret;
        ctl.ld0 = hpu.loads;
        ctl.st0 = hpu.stores;
        ctl.mem0 = counts.by_class;
        ctl.busy_since = now;
        ctl.wait = None;
        ctl.wait_notify = None;
        hpu.time_base_ns = (start / 1000).saturating_sub(c.cfg.hpu.cycles_to_ns(hpu.cycles));
        c.busy_now += 1;
        c.busy_max = c.busy_max.max(c.busy_now);
        let gen = ctl.gen;
        c.at(start, Ev::HpuRun { hpu: h, gen });
    }

    fn local_ps(core: &Core, slot: &Slot) -> u64 {
        slot.ctl.t0 + (slot.hpu.cycles - slot.ctl.c0) * core.ppc
    }

    fn run_hpu(&mut self, h: usize) {
        let t = self.hpus[h].ctl.task.unwrap();
        let ectx = self.core.tasks[t].as_ref().unwrap().her.ectx;
        let prog = self.core.ectx(ectx).program.clone();
        let quantum = self.core.cfg.quantum_cycles as u64;
        let Slot { hpu, ctl } = &mut self.hpus[h];
        // Don't run ahead of the event being processed.
        let behind = self.core.now.saturating_sub(ctl.t0 + (hpu.cycles - ctl.c0) * self.core.ppc);
        hpu.cycles += behind / self.core.ppc;
        let until = hpu.cycles + quantum;
        let mut svc = Services { core: &mut self.core, ctl, ectx };
        let stop = hpu.run(&prog, &mut svc, until);
        let local = Self::local_ps(&self.core, &self.hpus[h]);
        match stop {
            Stop::SliceEnd => {
                let gen = self.hpus[h].ctl.gen;
                self.core.at(local, Ev::HpuRun { hpu: h, gen });
            }
            Stop::Suspended => self.hpus[h].ctl.state = HpuState::Blocked,
            Stop::Returned | Stop::Exit(_) => self.handler_end(h, local, None),
            Stop::Fault(f) => self.handler_end(h, local, Some(f)),
        }
    }

    /// The handler stopped (returned or faulted) at local time `t`.
    fn handler_end(&mut self, h: usize, t: u64, fault: Option<Fault>) {
        let tid = self.hpus[h].ctl.task.unwrap();
        let task = self.core.tasks[tid].as_ref().unwrap();
        let (ectx, kind, msg_id) = (task.her.ectx, task.kind, task.her.msg_id);
        let slot = &self.hpus[h];
        let counts = slot.hpu.mem.counts().by_class;
        let cyc = slot.hpu.cycles - slot.ctl.c0;
        let mem = [
            counts[0] - slot.ctl.mem0[0],
            counts[1] - slot.ctl.mem0[1],
            counts[2] - slot.ctl.mem0[2] + counts[3] - slot.ctl.mem0[3],
        ];
        let acc = self.core.stats.handlers.entry((ectx, kind)).or_default();
        acc.add(cyc, slot.hpu.instret - slot.ctl.i0, slot.hpu.loads - slot.ctl.ld0, slot.hpu.stores - slot.ctl.st0, mem);
        let sym = self.core.ectx(ectx).spec_symbol(kind);
        if let Some(f) = fault {
            self.core.stats.handlers.get_mut(&(ectx, kind)).unwrap().faults += 1;
            let saved = self.core.now;
            self.core.now = t;
            self.core.record_error(ectx, sym.clone(), f.kind.name(), f.pc, f.addr, h as u32);
            self.core.now = saved;
        }
        if self.core.timeline.is_some() {
            let start = self.hpus[h].ctl.t0;
            let name = format!("{sym} msg {msg_id}");
            let args = serde_json::json!({"ectx": self.core.ectx(ectx).name(), "cycles": cyc, "fault": fault.map(|f| f.to_string())});
            self.core.timeline(TimelineEvent {
                name,
                cat: "handler",
                ph: "X",
                ts: start as f64 / 1e6,
                dur: Some((t - start) as f64 / 1e6),
                pid: self.hpus[h].ctl.cluster as u32,
                tid: h as u32,
                args: Some(args),
            });
        }
        if self.hpus[h].ctl.cmds.is_empty() {
            self.task_done(h, t);
        } else {
            self.hpus[h].ctl.state = HpuState::Draining;
        }
    }

    /// The task on HPU `h` is complete at `t` (handler ended, commands
    /// done): after the runtime's doorbell store the HPU is free. `t` may
    /// lie ahead of the event being processed (HPUs run in quanta), so the
    /// rest happens in an event at that time.
    fn task_done(&mut self, h: usize, t: u64) {
        let free_at = t + self.core.cycles(self.core.cfg.doorbell_cycles as u64);
        let ctl = &mut self.hpus[h].ctl;
        ctl.gen += 1;
        ctl.state = HpuState::Closing;
        let gen = ctl.gen;
        self.core.at(free_at, Ev::HpuFree { hpu: h, gen });
    }

    fn on_hpu_free(&mut self, h: usize) {
        let c = &mut self.core;
        let now = c.now;
        let ctl = &mut self.hpus[h].ctl;
        let tid = ctl.task.take().unwrap();
        ctl.state = HpuState::Idle;
        ctl.busy_ps += now - ctl.busy_since;
        c.busy_now -= 1;
        let cl = ctl.cluster;
        // Completion notification: one per cycle per cluster, then one per
        // cycle across clusters (round-robin arbiters, seed 001 §3.2.2).
        let cluster = &mut c.clusters[cl];
        let t_cl = now.max(cluster.fb_free_at);
        cluster.fb_free_at = t_cl + c.ppc;
        let task = c.tasks[tid].as_ref().unwrap();
        cluster.l1_alloc.free(task.l1.0, task.l1.1.max(1));
        c.sched_blocked = false;
        let done = t_cl + c.ns(c.cfg.completion_ns);
        c.at(done, Ev::Completion { task: tid });
        // The freed HPU takes the next queued task of its cluster.
        c.clusters[cl].free_hpus.push_back(h);
        self.assign(cl);
        self.kick_scheduler();
    }

    fn on_completion(&mut self, tid: usize) {
        let task = self.core.tasks[tid].take().unwrap();
        self.core.free_tasks.push(tid);
        if let Some(e) = self.core.ectxs[task.her.ectx].as_mut() {
            e.tasks -= 1;
        }
        let now = self.core.now;
        let m = task.mpq;
        let live = self.core.mpqs[m].active && self.core.mpqs[m].gen == task.mpq_gen;
        self.release_ref(task.her.slot, now);
        if live {
            let q = &mut self.core.mpqs[m];
            match task.kind {
                HandlerKind::Header => q.hh = HhState::Done,
                HandlerKind::Payload => q.ph_inflight -= 1,
                HandlerKind::Completion => {
                    self.free_mpq(m, true);
                    self.kick_scheduler();
                    return;
                }
            }
            self.mark_ready(m);
            self.maybe_finish_message(m);
        }
        self.kick_scheduler();
    }

    /// Drop one task's reference to a packet slot; the last one frees it.
    fn release_ref(&mut self, slot: u32, now: u64) {
        self.drop_refs(slot, 1, now);
    }

    fn drop_refs(&mut self, slot: u32, n: u32, now: u64) {
        let c = &mut self.core;
        let s = &mut c.slots[slot as usize];
        debug_assert!(s.refs >= n || (s.refs == 0 && n == 1), "slot {slot}: refs {} - {n}", s.refs);
        s.refs = s.refs.saturating_sub(n);
        if s.refs > 0 {
            return;
        }
        if !s.aborted {
            c.stats.packets_done += 1;
            c.stats.bytes_done += s.len as u64;
            c.stats.latencies_ps.push(now - s.arrival_ps);
            c.stats.last_done_ps = c.stats.last_done_ps.max(now);
        }
        c.free_slots.push(slot);
        // A packet held by back-pressure can come in now.
        if !c.blocked.is_empty() && !c.unblock_queued {
            c.unblock_queued = true;
            c.at(now, Ev::Unblock);
        }
    }

    // -- commands -------------------------------------------------------------

    fn on_cmd_done(&mut self, h: usize, id: u32) {
        let now = self.core.now;
        let Slot { hpu, ctl } = &mut self.hpus[h];
        let Some(k) = ctl.cmds.iter().position(|c| c.id == id) else { return };
        let cmd = ctl.cmds.remove(k);
        let ectx = self.core.tasks[ctl.task.unwrap()].as_ref().unwrap().her.ectx;
        apply_effect(&mut self.core, ectx, cmd.effect, now);
        if self.core.timeline.is_some() {
            self.core.timeline(TimelineEvent {
                name: cmd.kind.to_string(),
                cat: "command",
                ph: "X",
                ts: cmd.issue_ps as f64 / 1e6,
                dur: Some((now - cmd.issue_ps) as f64 / 1e6),
                pid: 1000,
                tid: h as u32,
                args: None,
            });
        }
        let resume = |hpu: &mut Hpu, ctl: &mut HpuCtl, core: &mut Core, a0: u32| resume(hpu, ctl, core, &[a0]);
        if let Some((mut deferred, _)) = ctl.deferred.take() {
            // A command that waited for a free slot is issued now.
            let d = deferred.done_ps.saturating_sub(deferred.issue_ps);
            deferred.issue_ps = now;
            deferred.done_ps = now + d;
            let id = deferred.id;
            self.core.at(deferred.done_ps, Ev::CmdDone { hpu: h, id });
            ctl.cmds.push(deferred);
            resume(hpu, ctl, &mut self.core, id);
        } else if ctl.wait == Some(id) {
            ctl.wait = None;
            resume(hpu, ctl, &mut self.core, 0);
        }
        if ctl.state == HpuState::Draining && ctl.cmds.is_empty() {
            self.task_done(h, now);
        }
    }

    // -- reporting --------------------------------------------------------------

    /// Raw statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// The statistics report (PsPIN-style figures).
    pub fn report(&self) -> Report {
        let c = &self.core;
        let s = &c.stats;
        let mut lat = s.latencies_ps.clone();
        let first = s.first_arrival_ps.unwrap_or(0);
        let span = s.last_done_ps.saturating_sub(first);
        let sim_ps = c.now.max(s.last_done_ps);
        let busy: u64 = self.hpus.iter().map(|h| h.ctl.busy_ps).sum();
        let handlers = s
            .handlers
            .iter()
            .map(|((e, k), a)| {
                let n = a.invocations.max(1) as f64;
                let ectx = self.ectx(*e).map(|x| x.name().to_string()).unwrap_or_default();
                let sym = self.ectx(*e).map(|x| x.spec_symbol(*k)).unwrap_or_default();
                stats::HandlerReport {
                    name: format!("{ectx}:{sym}"),
                    ectx,
                    kind: *k,
                    invocations: a.invocations,
                    cycles_min: a.cycles_min,
                    cycles_mean: a.cycles_sum as f64 / n,
                    cycles_max: a.cycles_max,
                    instructions_mean: a.instructions as f64 / n,
                    loads_mean: a.loads as f64 / n,
                    stores_mean: a.stores as f64 / n,
                    l1_accesses_mean: a.l1_accesses as f64 / n,
                    l1_remote_accesses_mean: a.l1_remote_accesses as f64 / n,
                    l2_accesses_mean: a.l2_accesses as f64 / n,
                    faults: a.faults,
                }
            })
            .collect();
        let errors = s
            .errors_by_ectx
            .iter()
            .map(|(e, m)| stats::EctxErrors {
                ectx: self.ectx(*e).map(|x| x.name().to_string()).unwrap_or_default(),
                total: m.values().sum(),
                by_cause: m.clone(),
            })
            .collect();
        let secs = span as f64 / 1e12;
        Report {
            profile: c.cfg.profile.clone(),
            packets: s.packets_done,
            bytes: s.bytes_done,
            packets_in: s.packets_in,
            unmatched: s.unmatched,
            throughput_gbps: if span > 0 { s.bytes_done as f64 * 8.0 / secs / 1e9 } else { 0.0 },
            mpps: if span > 0 { s.packets_done as f64 / secs / 1e6 } else { 0.0 },
            latency_ns: stats::latency(&mut lat),
            drops: s.drops,
            backpressure_ns: s.backpressure_ps as f64 / 1000.0,
            mpq_stall_ns: s.mpq_stall_ps as f64 / 1000.0,
            // Over the window from the first arrival to the last completion.
            hpu_utilization: if span > 0 { (busy as f64 / (span as f64 * self.hpus.len() as f64)).min(1.0) } else { 0.0 },
            hpus_busy_max: c.busy_max,
            handlers,
            errors,
            error_details: s.errors.clone(),
            message_timeouts: s.message_timeouts,
            outbound_packets: s.outbound_packets,
            outbound_bytes: s.outbound_bytes,
            host_writes: s.host_writes,
            dma_to_host_bytes: s.dma_to_host_bytes,
            dma_from_host_bytes: s.dma_from_host_bytes,
            commands: s.commands,
            tasks: s.tasks,
            sim_time_ns: sim_ps as f64 / 1000.0,
        }
    }
}

impl Ectx {
    fn spec_symbol(&self, k: HandlerKind) -> String {
        let s = match k {
            HandlerKind::Header => &self.spec.hh,
            HandlerKind::Payload => &self.spec.ph,
            HandlerKind::Completion => &self.spec.th,
        };
        s.clone().unwrap_or_else(|| k.name().to_string())
    }
}

fn same_code(a: &ElfImage, b: &ElfImage) -> bool {
    let code = |i: &ElfImage| -> Vec<(u32, Vec<u8>)> {
        i.segments.iter().filter(|s| s.perm.has(Perm::X)).map(|s| (s.vaddr, s.data.clone())).collect()
    };
    code(a) == code(b)
}

/// UDP destination port of an Ethernet or PsPIN-style IP-first frame.
fn udp_dst_port(f: &[u8]) -> Option<u16> {
    if f.len() >= 14 + 28 && f[12] == 0x08 && f[13] == 0x00 && f[14] >> 4 == 4 {
        let ihl = (f[14] & 0xf) as usize * 4;
        let u = 14 + ihl;
        return (f[14 + 9] == 17 && f.len() >= u + 4).then(|| u16::from_be_bytes([f[u + 2], f[u + 3]]));
    }
    // PsPIN-style: version in the low nibble, fields in host order.
    if f.len() >= 28 && f[0] & 0xf == 4 && f[9] == 17 {
        let u = (f[0] >> 4) as usize * 4;
        return (f.len() >= u + 4).then(|| u16::from_le_bytes([f[u + 2], f[u + 3]]));
    }
    None
}

fn apply_effect(c: &mut Core, ectx: EctxId, effect: Effect, now: u64) {
    match effect {
        Effect::None => {}
        Effect::Nic { addr, data } => {
            if let Some((b, o)) = c.nic_block(addr, data.len() as u32) {
                b.write(o, &data);
            }
        }
        Effect::HostWrite { addr, data, direct } => {
            c.host.write(addr, &data);
            if let Some(v) = direct {
                c.stats.host_writes += 1;
                if c.keep_outbound {
                    c.host_writes.push(HostWrite { time_ps: now, ectx, addr, value: v });
                }
            }
        }
        Effect::FromHost { host, nic, len } => {
            let mut buf = vec![0; len as usize];
            c.host.read(host, &mut buf);
            if let Some((b, o)) = c.nic_block(nic, len) {
                b.write(o, &buf);
            }
        }
        Effect::Send { dest, data } => {
            c.stats.outbound_packets += 1;
            c.stats.outbound_bytes += data.len() as u64;
            if c.keep_outbound {
                c.outbound.push(OutPacket { time_ps: now, ectx, dest, frame: data });
            }
        }
    }
}

/// Wake a suspended HPU at the current time with service results in a0...
fn resume(hpu: &mut Hpu, ctl: &mut HpuCtl, core: &mut Core, results: &[u32]) {
    let now = core.now;
    let local = ctl.t0 + (hpu.cycles - ctl.c0) * core.ppc;
    if now > local {
        // The HPU stalled until now.
        hpu.cycles += (now - local).div_ceil(core.ppc);
    }
    for (k, v) in results.iter().enumerate() {
        hpu.set_reg(abi::A0 + k, *v);
    }
    ctl.state = HpuState::Running;
    let t = ctl.t0 + (hpu.cycles - ctl.c0) * core.ppc;
    core.at(t, Ev::HpuRun { hpu: ctl.gid, gen: ctl.gen });
}

/// A request a handler posted to the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub id: u32,
    pub ectx: EctxId,
    pub hpu: u32,
    /// When it became visible to the host.
    pub time_ps: u64,
    /// Inline payload (up to 64 bytes).
    pub data: Vec<u8>,
    /// A reference the handler passed (e.g. a host address it wrote to).
    pub host_ref: u64,
}

struct NotifyState {
    ectx: EctxId,
    hpu: usize,
    gen: u64,
    answered: bool,
    response: Option<u64>,
}

/// Runtime services for one HPU while it runs (the command unit).
struct Services<'a> {
    core: &'a mut Core,
    ctl: &'a mut HpuCtl,
    ectx: EctxId,
}

impl Services<'_> {
    fn now(&self, hpu: &Hpu) -> u64 {
        self.ctl.t0 + (hpu.cycles - self.ctl.c0) * self.core.ppc
    }

    fn host_ok(&self, addr: u64, len: u32) -> bool {
        let (b, s) = self.core.ectx(self.ectx).spec.host_window;
        addr >= b && addr.checked_add(len as u64).is_some_and(|e| e <= b + s)
    }

    /// Issue a command; returns its id, or suspends if all slots are busy.
    fn issue(&mut self, hpu: &mut Hpu, kind: &'static str, done_ps: u64, effect: Effect) -> Ecall {
        let now = self.now(hpu);
        let id = self.ctl.next_cmd;
        self.ctl.next_cmd = self.ctl.next_cmd.wrapping_add(1).max(1);
        self.core.stats.commands += 1;
        let cmd = Cmd { id, done_ps, effect, kind, issue_ps: now };
        if self.ctl.cmds.len() >= self.core.cfg.max_outstanding_cmds as usize {
            self.ctl.deferred = Some((cmd, now));
            return Ecall::Suspend;
        }
        self.core.at(done_ps, Ev::CmdDone { hpu: self.ctl.gid, id });
        self.ctl.cmds.push(cmd);
        hpu.set_reg(abi::A0, id);
        Ecall::Continue
    }

    /// Apply effects of commands that are complete by the HPU's local time,
    /// so a handler never sees a finished command's data missing.
    fn settle(&mut self, hpu: &Hpu, id: u32) -> bool {
        let now = self.now(hpu);
        match self.ctl.cmds.iter_mut().find(|c| c.id == id) {
            None => true,
            Some(c) if c.done_ps <= now => {
                let e = std::mem::replace(&mut c.effect, Effect::None);
                let t = c.done_ps;
                apply_effect(self.core, self.ectx, e, t);
                true
            }
            Some(_) => false,
        }
    }

    fn pcie(&mut self, now: u64, len: u32) -> u64 {
        let c = &mut *self.core;
        let start = now.max(c.pcie_free_at);
        c.pcie_free_at = start + Core::wire_ps(len as u64, c.cfg.host.bandwidth_gbps);
        c.pcie_free_at + c.cfg.host.latency_ns * 1000
    }
}

impl Runtime for Services<'_> {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        let a = |r: usize| hpu.reg(r);
        let (a0, a1, a2, a3, a4) = (a(abi::A0), a(abi::A1), a(abi::A2), a(abi::A0 + 3), a(abi::A0 + 4));
        let now = self.now(hpu);
        let fail = |hpu: &mut Hpu, e: i32| {
            hpu.set_reg(abi::A0, e as u32);
            Ecall::Continue
        };
        let read = |hpu: &Hpu, addr: u32, len: u32| -> Option<Vec<u8>> {
            let mut v = vec![0; len as usize];
            hpu.mem.read_bytes(addr, &mut v).ok().map(|_| v)
        };
        match a(abi::A7) {
            sys::EXIT => Ecall::Exit(a0 as i32),
            sys::WRITE => {
                let len = a2.min(1 << 16);
                match read(hpu, a1, len) {
                    Some(v) if a0 == 1 || a0 == 2 => {
                        self.ctl.stdout.extend_from_slice(&v);
                        fail(hpu, len as i32)
                    }
                    Some(_) => fail(hpu, err::INVAL),
                    None => fail(hpu, err::ACCESS),
                }
            }
            sys::DMA => {
                // Cluster DMA between L1 and L2: the cluster's DMA engine.
                let (src, dst, len) = (a0, a1, a2);
                if len == 0 {
                    return fail(hpu, err::INVAL);
                }
                let Some(data) = read(hpu, src, len) else { return fail(hpu, err::ACCESS) };
                if hpu.mem.check(dst, len, Perm::W).is_err() {
                    return fail(hpu, err::ACCESS);
                }
                let c = &mut *self.core;
                let cl = self.ctl.cluster;
                let beats = (len as u64).div_ceil(c.cfg.dma_width_bits as u64 / 8);
                let start = now.max(c.clusters[cl].dma_free_at).max(c.ic_free_at);
                c.clusters[cl].dma_free_at = start + beats * c.ppc;
                c.ic_free_at = start + (len as u64).div_ceil(c.cfg.interconnect_bits as u64 / 8) * c.ppc;
                let done = start + (beats + c.cfg.dma_latency_cycles as u64) * c.ppc;
                self.issue(hpu, "cluster dma", done, Effect::Nic { addr: dst, data })
            }
            sys::SEND_PACKET | sys::RDMA_PUT => {
                let (dest, data, len) = if a(abi::A7) == sys::SEND_PACKET { (0, a0, a1) } else { (a0, a1, a2) };
                let Some(bytes) = read(hpu, data, len) else { return fail(hpu, err::ACCESS) };
                let c = &mut *self.core;
                let start = now.max(c.out_free_at);
                c.out_free_at = start + Core::wire_ps(len as u64, c.cfg.line_rate_gbps);
                let done = c.out_free_at;
                self.issue(hpu, "nic send", done, Effect::Send { dest, data: bytes })
            }
            sys::DMA_TO_HOST => {
                let host = (a1 as u64) << 32 | a0 as u64;
                let (nic, len) = (a2, a3);
                if !self.host_ok(host, len) {
                    return fail(hpu, err::ACCESS);
                }
                let Some(data) = read(hpu, nic, len) else { return fail(hpu, err::ACCESS) };
                self.core.stats.dma_to_host_bytes += len as u64;
                let done = self.pcie(now, len);
                let _ = a4; // generate_event: host notifications come with the host API
                self.issue(hpu, "dma to host", done, Effect::HostWrite { addr: host, data, direct: None })
            }
            sys::DMA_FROM_HOST => {
                let host = (a1 as u64) << 32 | a0 as u64;
                let (nic, len) = (a2, a3);
                if !self.host_ok(host, len) || hpu.mem.check(nic, len, Perm::W).is_err() {
                    return fail(hpu, err::ACCESS);
                }
                self.core.stats.dma_from_host_bytes += len as u64;
                // A read: the request crosses PCIe, then the data comes back.
                let done = self.pcie(now, len) + self.core.cfg.host.latency_ns * 1000;
                self.issue(hpu, "dma from host", done, Effect::FromHost { host, nic, len })
            }
            sys::WRITE_TO_HOST => {
                let host = (a1 as u64) << 32 | a0 as u64;
                let value = (a3 as u64) << 32 | a2 as u64;
                if !self.host_ok(host, 8) {
                    return fail(hpu, err::ACCESS);
                }
                let done = self.pcie(now, 8);
                self.issue(hpu, "host write", done, Effect::HostWrite { addr: host, data: value.to_le_bytes().to_vec(), direct: Some(value) })
            }
            sys::CMD_WAIT => {
                if self.settle(hpu, a0) {
                    return fail(hpu, 0);
                }
                self.ctl.wait = Some(a0);
                Ecall::Suspend
            }
            sys::CMD_TEST => {
                let done = self.settle(hpu, a0);
                fail(hpu, done as i32)
            }
            sys::NOTIFY_POST => {
                let (data, len, host_ref) = (a0, a1, (a3 as u64) << 32 | a2 as u64);
                if len > 64 {
                    return fail(hpu, err::INVAL);
                }
                let Some(bytes) = read(hpu, data, len) else { return fail(hpu, err::ACCESS) };
                let c = &mut *self.core;
                let ectx = self.ectx;
                let open = c.notify.values().filter(|n| n.ectx == ectx && !n.answered).count();
                if open >= c.cfg.notify_ring as usize {
                    return fail(hpu, err::BUSY);
                }
                let id = c.next_notify;
                c.next_notify = c.next_notify.wrapping_add(1).max(1);
                c.notify.insert(id, NotifyState { ectx, hpu: self.ctl.gid, gen: self.ctl.gen, answered: false, response: None });
                // The request is a DMA write into the host's ring.
                let t = self.pcie(now, len + 16);
                let c = &mut *self.core;
                c.notify_q.push_back(Notification { id, ectx, hpu: self.ctl.gid as u32, time_ps: t, data: bytes, host_ref });
                c.at(t, Ev::NotifyVisible);
                fail(hpu, id as i32)
            }
            sys::NOTIFY_WAIT | sys::NOTIFY_TEST => {
                let answered = self.core.notify.get(&a0).and_then(|n| n.response);
                let wait = a(abi::A7) == sys::NOTIFY_WAIT;
                match (answered, wait) {
                    (Some(v), true) => {
                        self.core.notify.remove(&a0);
                        hpu.set_reg(abi::A1, (v >> 32) as u32);
                        fail(hpu, v as u32 as i32)
                    }
                    (Some(v), false) => {
                        self.core.notify.remove(&a0);
                        hpu.set_reg(abi::A1, v as u32);
                        hpu.set_reg(abi::A2, (v >> 32) as u32);
                        fail(hpu, 1)
                    }
                    (None, true) if self.core.notify.contains_key(&a0) => {
                        self.ctl.wait_notify = Some(a0);
                        Ecall::Suspend
                    }
                    (None, true) => fail(hpu, err::INVAL),
                    (None, false) => fail(hpu, 0),
                }
            }
            sys::PUSH_COUNTER => {
                let e = self.core.counters.entry((self.ectx, a0)).or_default();
                e.0 += a1 as u64;
                e.1 += 1;
                fail(hpu, 0)
            }
            _ => Ecall::Unknown,
        }
    }
}
