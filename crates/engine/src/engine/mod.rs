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
//!
//! The model is split along PsPIN's blocks, each a type that owns its state
//! (and is unit-tested alone): [`inbound`] (`PacketBuffer`: the NIC inbound
//! engine and L2 packet buffer), [`mpq`] (`MpqEngine`: HERs and MPQs),
//! [`scheduler`] (`Scheduler`: task dispatcher and cluster schedulers),
//! [`hpu_ctl`] (`HpuCtl`: HPU control), [`command_unit`] (`CommandUnit`,
//! `Links`), [`notify`] (`Notifier`: host notifications) and [`host_mem`]
//! (host memory). They share a small context (`Core`) holding what several
//! need, and push events into its one queue; [`Engine`]'s methods route
//! events to blocks and pass what one returns to the next.

mod command_unit;
mod debug;
mod events;
mod host_mem;
mod hpu_ctl;
mod inbound;
mod mpq;
mod notify;
mod scheduler;
mod transport;

pub use self::transport::{RmaReport, RmaTransportConfig, RMA_COST_PS};

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use softspin_hpu::abi::{self, err, sys};
use softspin_hpu::elf::Region;
use softspin_hpu::hpu::{Ecall, Fault, Hpu, Runtime, Stop};
use softspin_hpu::{ElfImage, MemBlock, MemClass, Perm, Program};

use crate::config::{BufferFull, NicConfig};
use crate::ectx::{extents, Ectx, EctxError, EctxSpec, HandlerKind, MatchRule, Scratch};
use crate::stats::{self, HandlerError, Report, Stats, MAX_ERRORS_KEPT};
use crate::traffic::{Arrival, Packet, PacketInfo, Source, TrafficError};

use crate::units::{Ns, Ps};

use self::command_unit::*;
use self::events::{Event, EventQueue};
use self::hpu_ctl::*;
use self::inbound::*;
use self::mpq::*;
use self::scheduler::*;

pub use self::command_unit::{command_cost, Command, OutputRecord, BYTES_PER_INSTRUCTION};
pub use self::debug::{DebugHpus, HpuDebugger, Resume};
pub use self::host_mem::{HostBuffer, HostMemory, HostRegions};
pub use self::mpq::{MessageRecord, MAX_RECORD_ITEMS};
use self::notify::Notifier;
pub use crate::outputs::{HostWrite, MessageDone, Notification, OutPacket};

pub type EctxId = usize;

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

/// A node table `Engine::set_node_entries` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeTableError {
    #[error("{0} nodes: a node table holds at most {max} (SOFTSPIN_MAX_NODES)", max = abi::MAX_NODES)]
    TooManyNodes(u32),
    #[error("{what} rank {rank} is not in the table of {num_nodes} nodes")]
    NoSuchRank {
        what: &'static str,
        rank: u32,
        num_nodes: u32,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    #[error("{origin}: packet of {len} bytes exceeds the {slot}-byte packet buffer slot (pkt_slot_size)")]
    PacketTooLarge {
        origin: String,
        len: usize,
        slot: u32,
    },
    #[error("{origin}: packet of {len} bytes is too short to match (needs IPv4/UDP headers)")]
    PacketTooShort { origin: String, len: usize },
}

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

// HPU and task indices are u32 here (an event is 32 bytes, not 40: the
// event queue's buckets are its working set).
#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrival,
    Schedule,
    TaskReady {
        task: u32,
    },
    HpuRun {
        hpu: u32,
        gen: u64,
    },
    CmdDone {
        hpu: u32,
        id: u32,
    },
    Completion {
        task: u32,
    },
    /// The earliest message deadline is due.
    TimeoutCheck,
    Inject,
    Unblock,
    HpuFree {
        hpu: u32,
        gen: u64,
    },
    /// A notification reached host memory (only advances time).
    NotifyVisible,
    NotifyResponse {
        id: u32,
    },
    /// An HPU's wait limit (`HpuCtl::wait_deadline`); one armed per HPU.
    WaitLimit {
        hpu: u32,
    },
    /// The RMA transport block's timer (`transport`).
    RmaTimer,
}

/// The context every block shares, passed by reference: configuration,
/// the clock and event queue (each block pushes its events here, so the
/// (time, seq) order is one), the NIC memories (several blocks read and
/// write them, as the hardware's blocks share L1/L2), the installed ECTXs,
/// statistics, the timed outputs (three blocks produce them, the embedder
/// takes them in one place) and the timeline. Block state lives in the
/// blocks ([`inbound`], [`mpq`], [`scheduler`], [`hpu_ctl`],
/// [`command_unit`], [`notify`]).
struct Core {
    cfg: NicConfig,
    ppc: u64,
    now: u64,
    seq: u64,
    events: EventQueue,
    immediate: VecDeque<Ev>,
    mem: NicMemory,
    ectxs: Vec<Option<Ectx>>,
    host: Box<dyn HostMemory>,
    stats: Stats,
    /// HPUs busy now and at most (the report's `hpus_busy_max`).
    busy_now: u32,
    busy_max: u32,
    outputs: Outputs,
    /// `run(None)` returns before a host wait's limit (`Engine::pause_for_host`).
    pause_for_host: bool,
    timeline: Option<Vec<TimelineEvent>>,
    /// The errors since the embedder's last `drain_errors`
    /// (`Engine::hand_over_errors`), beyond the report's first
    /// MAX_ERRORS_KEPT; bounded (`PendingErrors`).
    new_errors: Option<stats::PendingErrors<HandlerError>>,
    /// The RMA transport block, when enabled (`Engine::enable_rma_transport`).
    rma: Option<Box<transport::RmaBlock>>,
}

/// The NIC's memories: each cluster's L1, L2 handler and packet memory,
/// program memory.
struct NicMemory {
    l1: Vec<Arc<MemBlock>>,
    l2_handler: Arc<MemBlock>,
    l2_pkt: Arc<MemBlock>,
    prog_mem: Arc<MemBlock>,
    /// The cluster's node table (`abi::NODE_TABLE_BASE`, read-only for
    /// handlers); its header says "no table" until one is set.
    node_table: Arc<MemBlock>,
}

impl NicMemory {
    fn new(cfg: &NicConfig) -> NicMemory {
        NicMemory {
            l1: (0..cfg.clusters)
                .map(|_| MemBlock::new(cfg.l1_size as usize))
                .collect(),
            l2_handler: MemBlock::new(cfg.l2_handler_size as usize),
            l2_pkt: MemBlock::new(cfg.l2_pkt_size as usize),
            prog_mem: MemBlock::new(cfg.prog_mem_size as usize),
            node_table: {
                let b = MemBlock::new(abi::node_table::SIZE as usize);
                b.write(0, &abi::empty_node_table());
                b
            },
        }
    }

    /// Block and offset of a NIC address range, for engine-side accesses.
    /// (Each region is as large as its block: the configuration's size.)
    fn block(&self, addr: u32, len: u32) -> Option<(Arc<MemBlock>, usize)> {
        let inside = |base: u32, b: &Arc<MemBlock>| {
            let size = b.len() as u32;
            let off = addr.wrapping_sub(base);
            (off < size && size - off >= len).then(|| (b.clone(), off as usize))
        };
        for (k, l1) in self.l1.iter().enumerate() {
            if let Some(r) = inside(abi::L1_BASE + k as u32 * abi::L1_CLUSTER_STRIDE, l1) {
                return Some(r);
            }
        }
        inside(abi::L2_HANDLER_BASE, &self.l2_handler)
            .or_else(|| inside(abi::L2_PKT_BASE, &self.l2_pkt))
            .or_else(|| inside(abi::PROG_MEM_BASE, &self.prog_mem))
    }
}

/// What handlers produced for the embedder, each stamped with its NIC
/// time: frames sent, host-direct writes, completed messages (kept while
/// `keep` is on; `Engine::drain_outputs` takes them).
struct Outputs {
    keep: bool,
    sent: Vec<OutPacket>,
    host_writes: Vec<HostWrite>,
    completions: Vec<MessageDone>,
}

impl Outputs {
    fn new() -> Outputs {
        Outputs {
            keep: true,
            sent: Vec::new(),
            host_writes: Vec::new(),
            completions: Vec::new(),
        }
    }

    fn sent(&mut self, p: OutPacket) {
        if self.keep {
            self.sent.push(p);
        }
    }

    fn host_write(&mut self, w: HostWrite) {
        if self.keep {
            self.host_writes.push(w);
        }
    }

    fn completion(&mut self, d: MessageDone) {
        if self.keep {
            self.completions.push(d);
        }
    }
}

/// Where a handler error happened.
struct Site {
    handler: String,
    pc: u32,
    hpu: u32,
}

/// The JIT of one ECTX and the program it compiles.
#[cfg(feature = "jit")]
type EctxJit = (Arc<Program>, softspin_hpu::jit::Jit);

/// The NIC model: the shared context and one value per PsPIN block.
///
/// # Embedding
///
/// What drives an engine from outside (the CLI's `sim` through a
/// [`Source`], the live NIC, a network of NICs, a network simulator) is
/// this small API; virtual time is in picoseconds and only moves when the
/// caller runs the engine:
///
/// - [`Engine::inject`] feeds an arrival: a frame, its message, and
///   optionally the ECTX a matching engine in front of the NIC chose, at a
///   given time (not before now, and after the packets injected before it);
/// - [`Engine::run_until`] processes every event due up to a time, and the
///   clock is then at that time; [`Engine::now_ps`] tells where it is;
/// - [`Engine::next_event_ps`] says when the next event is due (`None`: the
///   NIC waits for input), so a caller can sleep or advance other
///   components until then; [`Engine::is_idle`] (nothing to do until new
///   input) and [`Engine::packets_held`] (packets not finished) tell a
///   caller stopping whether work is left;
/// - [`Engine::drain_outputs`] takes what handlers produced, each stamped
///   with its NIC time: sent frames ([`OutPacket`]), host-direct writes,
///   completed messages ([`Engine::outbound`] reads the sent frames without
///   taking them); [`Engine::drain_errors`] takes handler errors (after
///   [`Engine::hand_over_errors`]); [`Engine::take_spare_frame`] returns an
///   injected frame's emptied vector for reuse.
///
/// Outputs produced by `run_until(t)` are stamped at most `t`, so a caller
/// that advances several engines in step can hand one's frames to another
/// at their time. Two NICs wired back to back, the first echoing every
/// packet, the second consuming it:
///
/// ```
/// use softspin_engine::traffic::{build_frame, Arrival, FrameKind};
/// use softspin_engine::{EctxSpec, Engine, NicConfig};
/// use softspin_hpu::ElfImage;
///
/// // A handler image with an echo and a sink (built as `softspin build` does).
/// let dir = std::env::temp_dir().join(format!("softspin-embed-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let (src, elf) = (dir.join("h.c"), dir.join("h.elf"));
/// std::fs::write(&src, "#include <spin.h>\n\
///     __handler__ void echo_ph(handler_args_t *a) {\n\
///         spin_send_packet(a->task->pkt_mem, a->task->pkt_mem_size, NULL);\n\
///     }\n\
///     __handler__ void sink_ph(handler_args_t *a) { (void)a; }\n")?;
/// softspin_sdk::build(&softspin_sdk::BuildOptions::handler(&[&src], &elf))?;
/// let image = ElfImage::load(&elf)?;
/// let nic = |name: &str, ph: &str| -> Result<Engine, Box<dyn std::error::Error>> {
///     let mut e = Engine::new(NicConfig::default())?;
///     let mut spec = EctxSpec::new(name, image.clone());
///     spec.ph = Some(ph.into());
///     let id = e.install(spec)?;
///     e.activate(id)?;
///     Ok(e)
/// };
/// let (mut a, mut b) = (nic("echo", "echo_ph")?, nic("sink", "sink_ph")?);
///
/// let frame = build_frame(FrameKind::Ip, 256, [10, 0, 0, 1], [10, 0, 0, 2], 1, 9000, |i| i as u8)?;
/// let arrival = |time_ps, frame| Arrival {
///     time_ps, frame, msg_id: 7, eom: true, origin: "example".into(), ectx: None,
/// };
/// a.inject(arrival(1_000, frame.clone()));
/// // Step both to the earlier of their next events; what `a` sent by then
/// // reaches `b` at its NIC time (no wire delay here).
/// let mut sent_at = None;
/// while let Some(t) = [a.next_event_ps(), b.next_event_ps()].into_iter().flatten().min() {
///     a.run_until(t)?;
///     for p in a.drain_outputs().0 {
///         sent_at = Some(p.time_ps);
///         b.inject(arrival(p.time_ps, p.frame));
///     }
///     b.run_until(t)?;
/// }
/// let sent_at = sent_at.expect("the echo handler sent the packet");
/// let (_, _, done) = b.drain_outputs();
/// assert_eq!(done.len(), 1, "b completed the message");
/// assert!(sent_at > 1_000 && done[0].time_ps > sent_at);
/// assert_eq!(b.stats().bytes_done, frame.len() as u64);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Engine {
    core: Core,
    /// Inbound engine and L2 packet buffer.
    pkt: PacketBuffer,
    /// MPQ engine.
    mpq: MpqEngine,
    /// Task dispatcher and cluster schedulers.
    sched: Scheduler,
    /// Command unit (links, counters, output rings).
    cu: CommandUnit,
    /// Host notifications.
    notify: Notifier,
    /// The HPUs with their control state, apart from the blocks so a
    /// running HPU's services can borrow the blocks.
    hpus: Vec<Slot>,
    /// An attached debugger (`attach_debugger`).
    debug: Option<self::debug::Debug>,
    /// A debugger killed the run.
    debug_killed: bool,
    /// With `enable_jit`: per ECTX, the JIT for the program its HPUs run
    /// (replaced when the ECTX's program changes).
    #[cfg(feature = "jit")]
    jits: Option<Vec<Option<EctxJit>>>,
    /// Their compile threshold (`Jit::compile_after`).
    #[cfg(feature = "jit")]
    jit_after: u32,
}

impl Core {
    /// Time 0, no event, no ECTX, memories zeroed.
    fn new(cfg: NicConfig) -> Core {
        Core {
            ppc: cfg.ps_per_cycle(),
            now: 0,
            seq: 0,
            events: EventQueue::new(),
            immediate: VecDeque::new(),
            mem: NicMemory::new(&cfg),
            ectxs: Vec::new(),
            host: Box::new(HostRegions::default()),
            stats: Stats::default(),
            busy_now: 0,
            busy_max: 0,
            outputs: Outputs::new(),
            pause_for_host: false,
            timeline: None,
            new_errors: None,
            rma: None,
            cfg,
        }
    }

    fn at(&mut self, time: u64, ev: Ev) {
        // Events for the current instant skip the heap: they come after
        // every queued event of this instant (those have smaller sequence
        // numbers), which is exactly FIFO order behind them.
        if time == self.now {
            self.immediate.push_back(ev);
            return;
        }
        self.seq += 1;
        self.events.push(Event {
            time,
            seq: self.seq,
            ev,
        });
    }

    /// ns -> ps, checked. Every delay that reaches the engine passed
    /// `units::delay_ns` (`NicConfig::validate`, ECTX install), so the
    /// saturation never happens; it only keeps a bug from wrapping time.
    fn ns(&self, ns: u64) -> u64 {
        Ns(ns).to_ps_saturating().0
    }

    fn cycles(&self, c: u64) -> u64 {
        c.saturating_mul(self.ppc)
    }

    fn ectx(&self, id: EctxId) -> &Ectx {
        self.ectxs[id].as_ref().expect("live ECTX")
    }

    /// Serialisation time of `bytes` at `gbps` (the rate is validated with
    /// the configuration; the one pacing rule, `traffic::wire_time_ps`).
    fn wire_ps(bytes: u64, gbps: f64) -> u64 {
        crate::traffic::wire_time_ps(bytes as usize, gbps).unwrap_or(u64::MAX)
    }

    fn timeline(&mut self, e: TimelineEvent) {
        if let Some(t) = &mut self.timeline {
            t.push(e);
        }
    }

    /// Count an error by cause and keep its details (the first
    /// MAX_ERRORS_KEPT). `site` is the handler, pc and HPU where it
    /// happened; message-level errors have none.
    #[allow(clippy::too_many_arguments)]
    fn record_error(
        &mut self,
        mpq: &mut MpqEngine,
        time_ps: u64,
        ectx: EctxId,
        msg_id: u32,
        kind: stats::ErrorCause,
        site: Option<Site>,
        addr: Option<u64>,
        detail: Option<String>,
    ) {
        let cause = kind.text();
        let name = self.ectx(ectx).name().to_string();
        *self
            .stats
            .errors_by_ectx
            .entry(ectx)
            .or_default()
            .entry(cause.to_string())
            .or_default() += 1;
        // Kept in detail up to MAX_ERRORS_KEPT, in the message's record
        // when the message log is on, and for the embedder's next drain.
        if self.stats.errors.len() < MAX_ERRORS_KEPT || mpq.logging() || self.new_errors.is_some() {
            let time_ns = Ps(time_ps).to_ns().0;
            let (handler, pc, hpu) = match site {
                Some(s) => (Some(s.handler), Some(s.pc), Some(s.hpu)),
                None => (None, None, None),
            };
            let e = HandlerError {
                ectx,
                ectx_name: name,
                msg_id,
                handler,
                kind,
                cause: cause.to_string(),
                detail,
                pc,
                addr,
                time_ns,
                hpu,
            };
            mpq.record_error(&e);
            if let Some(q) = &mut self.new_errors {
                q.push(e.clone());
            }
            if self.stats.errors.len() < MAX_ERRORS_KEPT {
                self.stats.errors.push(e);
            }
        }
    }
}

impl Engine {
    pub fn new(cfg: NicConfig) -> Result<Engine, crate::config::ConfigError> {
        cfg.validate()?;
        let timing = Arc::new(cfg.hpu.clone());
        let hpus = (0..cfg.hpus())
            .map(|gid| Slot::new(timing.clone(), gid, gid / cfg.hpus_per_cluster as usize))
            .collect();
        let core = Core::new(cfg);
        let cfg = &core.cfg;
        Ok(Engine {
            pkt: PacketBuffer::new(cfg),
            mpq: MpqEngine::new(cfg.mpqs),
            sched: Scheduler::new(cfg),
            cu: CommandUnit::new(cfg),
            notify: Notifier::new(),
            core,
            hpus,
            #[cfg(feature = "jit")]
            jits: None,
            debug: None,
            debug_killed: false,
            #[cfg(feature = "jit")]
            jit_after: softspin_hpu::JIT_COMPILE_AFTER,
        })
    }

    pub fn config(&self) -> &NicConfig {
        &self.core.cfg
    }

    /// Current virtual time in picoseconds.
    pub fn now_ps(&self) -> u64 {
        self.core.now
    }

    /// Run handlers through the Cranelift JIT (feature `jit`): hot code of
    /// each ECTX's program is compiled, a region at its entry's
    /// `compile_after`-th use (`softspin_hpu::JIT_COMPILE_AFTER` by
    /// default); every result is the interpreter's.
    #[cfg(feature = "jit")]
    pub fn enable_jit(&mut self, compile_after: u32) {
        self.jits.get_or_insert_with(Vec::new);
        self.jit_after = compile_after;
    }

    /// With `enable_jit`: regions the ECTXs' JITs have compiled (the
    /// current ones: a JIT replaced with its ECTX's program takes its count
    /// along); `None` when handlers are interpreted.
    #[cfg(feature = "jit")]
    pub fn jit_regions_compiled(&self) -> Option<u64> {
        let jits = self.jits.as_ref()?;
        Some(jits.iter().flatten().map(|(_, j)| j.compiled).sum())
    }

    /// Record a Chrome trace-event timeline while running.
    pub fn enable_timeline(&mut self) {
        self.core.timeline = Some(Vec::new());
    }

    pub fn timeline(&self) -> &[TimelineEvent] {
        self.core.timeline.as_deref().unwrap_or(&[])
    }

    /// The timeline events recorded since the last call, leaving the
    /// recording on: a live NIC takes them after each step and keeps what
    /// it wants, so the engine holds one step's worth at most.
    pub fn take_timeline(&mut self) -> Vec<TimelineEvent> {
        self.core
            .timeline
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// For host programs that answer notifications: `run(None)` then also
    /// returns when a handler waits for the host's answer and only timers
    /// (wait limits, message deadlines) are next, so the host can answer
    /// before time jumps. Off (the CLI: nobody answers), such waits run out
    /// (`wait_limit_ns`) within the run.
    pub fn pause_for_host(&mut self, on: bool) {
        self.core.pause_for_host = on;
    }

    /// Keep outbound packets and host writes in memory (default on).
    pub fn keep_outputs(&mut self, keep: bool) {
        self.core.outputs.keep = keep;
    }

    pub fn outbound(&self) -> &[OutPacket] {
        &self.core.outputs.sent
    }

    pub fn host_writes(&self) -> &[HostWrite] {
        &self.core.outputs.host_writes
    }

    /// Messages completed so far (kept with `keep_outputs(true)`).
    pub fn completions(&self) -> &[MessageDone] {
        &self.core.outputs.completions
    }

    /// Put the RMA transport block (docs/rma.md, "Reliability") between the
    /// wire and `ectx` for frames on RMA's UDP port, this node being
    /// `cfg.transport.rank`. Its frames are `ectx`'s outputs.
    pub fn enable_rma_transport(
        &mut self,
        ectx: EctxId,
        cfg: RmaTransportConfig,
    ) -> Result<(), String> {
        self.ectx(ectx)
            .ok_or_else(|| format!("RMA transport: no ECTX {ectx}"))?;
        self.core.rma = Some(Box::new(transport::RmaBlock::new(ectx, cfg)?));
        Ok(())
    }

    /// The ECTX the RMA transport block is in front of, if it is enabled.
    pub fn rma_ectx(&self) -> Option<EctxId> {
        self.core.rma.as_ref().map(|b| b.ectx())
    }

    /// Destinations the RMA transport declared failed, in order.
    pub fn rma_failed(&self) -> &[softspin_rma::PeerFailed] {
        self.core.rma.as_ref().map_or(&[], |b| b.failed())
    }

    /// The RMA transport's counters, when enabled.
    pub fn rma_stats(&self) -> Option<&softspin_rma::Stats> {
        self.core.rma.as_ref().map(|b| b.stats())
    }

    /// Take (and forget) the recorded outputs: outbound packets, host
    /// writes, completed messages. The host API drains them this way.
    pub fn drain_outputs(&mut self) -> (Vec<OutPacket>, Vec<HostWrite>, Vec<MessageDone>) {
        let c = &mut self.core.outputs;
        // Each comes back as large as it was: the next batch is likely as
        // big (the live NIC drains at every step), and one allocation beats
        // growing from empty, copying at every doubling.
        fn take<T>(v: &mut Vec<T>) -> Vec<T> {
            if v.is_empty() {
                return Vec::new();
            }
            let n = v.len();
            std::mem::replace(v, Vec::with_capacity(n))
        }
        (
            take(&mut c.sent),
            take(&mut c.host_writes),
            take(&mut c.completions),
        )
    }

    /// An emptied frame vector from a packet that was injected and is now
    /// in the packet buffer (or lost), for the host's next frame.
    pub fn take_spare_frame(&mut self) -> Option<Vec<u8>> {
        self.pkt.take_spare_frame()
    }

    /// Packets admitted and messages completed per ECTX.
    pub fn ectx_counts(&self, id: EctxId) -> (u64, u64) {
        self.core
            .stats
            .ectx_packets
            .get(id)
            .copied()
            .unwrap_or_default()
    }

    /// printf output of one HPU (global id), as far as the ECTXs' output
    /// rings still hold it.
    pub fn hpu_stdout(&self, gid: usize) -> Vec<u8> {
        self.output()
            .filter(|r| r.hpu as usize == gid)
            .flat_map(|r| r.bytes.iter().copied())
            .collect()
    }

    /// Handler output still held (each ECTX keeps its newest
    /// `output_buffer` bytes), in NIC-time order: one record per `write`.
    pub fn output(&self) -> impl Iterator<Item = &OutputRecord> {
        self.cu.output().into_iter()
    }

    /// Take (and forget) the handler output held so far, in NIC-time order.
    /// Only output written before now is complete: HPUs run ahead in
    /// quanta, so call it after `run` returns.
    pub fn drain_output(&mut self) -> Vec<OutputRecord> {
        self.cu.drain_output()
    }

    /// Bytes of handler output an ECTX lost to its full ring.
    pub fn output_dropped(&self, id: EctxId) -> u64 {
        self.core
            .stats
            .output_dropped
            .get(&id)
            .copied()
            .unwrap_or(0)
    }

    pub fn hpu_count(&self) -> usize {
        self.hpus.len()
    }

    /// FPsPIN-style performance counters pushed by an ECTX's handlers:
    /// (index, sum, count).
    pub fn counters(&self, ectx: EctxId) -> Vec<(u32, u64, u64)> {
        self.cu.counters(ectx)
    }

    /// The first MAX_ERRORS_KEPT handler errors (the report's details;
    /// counts by cause are complete in the report). An embedder that runs
    /// for long takes every error with [`Engine::drain_errors`].
    pub fn errors(&self) -> &[HandlerError] {
        &self.core.stats.errors
    }

    /// Hand every error over to the embedder as it happens: from now on
    /// each one is queued until [`Engine::drain_errors`] takes it (off:
    /// only the first MAX_ERRORS_KEPT are kept, for the report).
    pub fn hand_over_errors(&mut self, on: bool) {
        self.core.new_errors = on.then(Default::default);
    }

    /// The errors since the last call, in the order they happened, with
    /// [`Engine::hand_over_errors`] on (empty otherwise). All of them when
    /// taken at least every [`stats::PENDING_ERRORS_FIRST`] errors; past
    /// that, the first and the latest, and how many between were dropped.
    pub fn drain_errors(&mut self) -> Vec<stats::Pending<HandlerError>> {
        self.core
            .new_errors
            .as_mut()
            .map(stats::PendingErrors::take)
            .unwrap_or_default()
    }

    /// Install an ECTX: place its code and data, check its handlers and its
    /// memory. It receives no packet until [`Engine::activate`].
    pub fn install(&mut self, spec: EctxSpec) -> Result<EctxId, EctxError> {
        let c = &self.core;
        let cfg = &c.cfg;
        spec.validate(cfg)?;
        let name = spec.name.clone();
        // Errors, statistics and records name ECTXs: a name must say which.
        if c.ectxs.iter().flatten().any(|e| e.name() == name) {
            return Err(EctxError::Invalid {
                ectx: name,
                field: "name",
                reason: "is already used by an installed ECTX; every ECTX needs its own name"
                    .into(),
            });
        }
        let mut entries = [None; 3];
        let handlers = [
            (&spec.hh, "header", "hh"),
            (&spec.ph, "payload", "ph"),
            (&spec.th, "completion", "th"),
        ];
        for (k, (sym, which, field)) in handlers.into_iter().enumerate() {
            if let Some(s) = sym {
                // A handler must start at code: an odd address or one outside
                // the executable segments would run garbage, not fault.
                let a = spec.image.code_symbol(s).map_err(|e| match e {
                    softspin_hpu::elf::ElfError::NoSymbol(_) => EctxError::NoHandler {
                        ectx: name.clone(),
                        sym: s.clone(),
                        which,
                    },
                    e => EctxError::Invalid {
                        ectx: name.clone(),
                        field,
                        reason: format!("(the {which} handler): {e}"),
                    },
                })?;
                entries[k] = Some(a);
            }
        }
        if entries.iter().all(|e| e.is_none()) {
            return Err(EctxError::NoHandlers { ectx: name });
        }
        if let Some(addr) = spec.image.symbols.get("__softspin_nb_clusters") {
            let v = spec.image.segments.iter().find_map(|s| {
                let off = addr.checked_sub(s.vaddr)? as usize;
                s.data
                    .get(off..off + 4)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            });
            if let Some(v) = v {
                if v != cfg.clusters {
                    return Err(EctxError::Clusters {
                        ectx: name,
                        image: v,
                        nic: cfg.clusters,
                    });
                }
            }
        }
        let (code, data) = extents(&spec.image);
        let within = |what, base: u32, size: u32, region, rbase: u32, rsize: u32| {
            if base < rbase || base as u64 + size as u64 > rbase as u64 + rsize as u64 {
                Err(EctxError::OutOfRegion {
                    ectx: name.clone(),
                    what,
                    base,
                    size,
                    region,
                    rbase,
                    rsize,
                })
            } else {
                Ok(())
            }
        };
        // Code segments are checked by the loader rule below.
        let hm = match (spec.handler_mem, data) {
            (Some(h), _) => h,
            (None, Some((d0, d1))) => (d0, (d1 - d0).next_multiple_of(64)),
            (None, None) => (abi::L2_HANDLER_BASE, 64),
        };
        within(
            "handler memory",
            hm.0,
            hm.1,
            "L2 handler memory",
            abi::L2_HANDLER_BASE,
            cfg.l2_handler_size,
        )?;
        // PsPIN's layout: the image's data is a region of its own.
        let image_data = match (spec.separate_handler_mem, data) {
            (true, Some((d0, d1))) => {
                if spec.handler_mem.is_none() {
                    return Err(EctxError::Invalid {
                        ectx: name,
                        field: "handler_mem",
                        reason:
                            "must be given when handler memory is separate from the image's data"
                                .into(),
                    });
                }
                let d = (d0, (d1 - d0).next_multiple_of(64));
                within(
                    "image data",
                    d.0,
                    d.1,
                    "L2 handler memory",
                    abi::L2_HANDLER_BASE,
                    cfg.l2_handler_size,
                )?;
                if hm.0 < d.0 + d.1 && d.0 < hm.0 + hm.1 {
                    return Err(EctxError::Invalid {
                        ectx: name,
                        field: "handler_mem",
                        reason: format!("0x{:08x}+0x{:x} overlaps the image's own data 0x{:08x}+0x{:x} (separate handler memory must lie apart from it)", hm.0, hm.1, d.0, d.1),
                    });
                }
                Some(d)
            }
            _ => None,
        };
        let data_region = image_data.unwrap_or(hm);
        let prog = Region {
            name: "program memory",
            base: abi::PROG_MEM_BASE,
            size: cfg.prog_mem_size,
        };
        let data_mem = Region {
            name: "the ECTX's handler memory",
            base: data_region.0,
            size: data_region.1,
        };
        spec.image
            .check_fits(|s| if s.perm.has(Perm::X) { prog } else { data_mem })
            .map_err(|source| EctxError::Segment {
                ectx: name.clone(),
                source,
            })?;
        if spec.host_window.0.checked_add(spec.host_window.1).is_none() {
            return Err(EctxError::HostWindow {
                ectx: name,
                base: spec.host_window.0,
                size: spec.host_window.1,
            });
        }
        let overlaps = |a: (u32, u32), b: (u32, u32)| a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
        let mut data_shared = false;
        for other in c.ectxs.iter().flatten() {
            if overlaps(hm, other.handler_mem) {
                return Err(EctxError::Overlap {
                    ectx: name,
                    what: "handler memory",
                    base: hm.0,
                    size: hm.1,
                    other: other.name().into(),
                });
            }
            if let Some(od) = other.image_data {
                if overlaps(hm, od) {
                    return Err(EctxError::Overlap {
                        ectx: name,
                        what: "handler memory (on the other's image data)",
                        base: hm.0,
                        size: hm.1,
                        other: other.name().into(),
                    });
                }
            }
            if let Some(d) = image_data {
                if overlaps(d, other.handler_mem) {
                    return Err(EctxError::Overlap {
                        ectx: name,
                        what: "image data",
                        base: d.0,
                        size: d.1,
                        other: other.name().into(),
                    });
                }
                // Shared data is fine only if it is the very same image data.
                if let Some(od) = other.image_data {
                    if overlaps(d, od) {
                        if d != od || !same_data(&spec.image, &other.spec.image) {
                            return Err(EctxError::Overlap {
                                ectx: name,
                                what: "image data",
                                base: d.0,
                                size: d.1,
                                other: other.name().into(),
                            });
                        }
                        data_shared = true;
                    }
                }
            }
            // Shared code is fine only if it is the very same code.
            if overlaps(code, other.code)
                && (code != other.code || !same_code(&spec.image, &other.spec.image))
            {
                return Err(EctxError::Overlap {
                    ectx: name,
                    what: "code",
                    base: code.0,
                    size: code.1,
                    other: other.name().into(),
                });
            }
        }
        // Scratchpads: first fit in each cluster's scratchpad area.
        let mut scratch = Vec::new();
        for cl in 0..cfg.clusters as usize {
            let want = spec
                .scratchpad
                .get(cl)
                .copied()
                .unwrap_or(0)
                .next_multiple_of(64);
            let lo = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE + cfg.l1_scratch_base();
            let hi = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE + cfg.l1_size;
            let mut taken: Vec<(u32, u32)> = c
                .ectxs
                .iter()
                .flatten()
                .map(|e| e.scratch[cl])
                .filter(|s| s.size > 0)
                .map(|s| (s.addr, s.size))
                .collect();
            taken.sort();
            let mut at = lo;
            for (a, s) in taken {
                if at + want <= a {
                    break;
                }
                at = at.max(a + s);
            }
            if want > 0 && at + want > hi {
                return Err(EctxError::Scratchpad {
                    ectx: name,
                    cluster: cl,
                    want,
                    free: hi.saturating_sub(at),
                });
            }
            scratch.push(Scratch {
                addr: if want > 0 { at } else { 0 },
                size: want,
            });
        }
        let program = Program::decode_shared(&spec.image.code_ranges(), &cfg.hpu).map_err(|e| {
            EctxError::Decode {
                ectx: name.clone(),
                msg: e.to_string(),
            }
        })?;
        // Load: code into program memory, data into handler memory (zeroed
        // first, so .bss and the rest of the region start at 0).
        let c = &mut self.core;
        c.mem
            .l2_handler
            .zero((hm.0 - abi::L2_HANDLER_BASE) as usize, hm.1 as usize);
        if let (Some(d), false) = (image_data, data_shared) {
            c.mem
                .l2_handler
                .zero((d.0 - abi::L2_HANDLER_BASE) as usize, d.1 as usize);
        }
        for s in &spec.image.segments {
            if s.perm.has(Perm::X) {
                c.mem
                    .prog_mem
                    .write((s.vaddr - abi::PROG_MEM_BASE) as usize, &s.data);
            } else if data_shared {
                // Installed once: the other ECTXs' data state is kept.
            } else {
                c.mem
                    .l2_handler
                    .write((s.vaddr - abi::L2_HANDLER_BASE) as usize, &s.data);
            }
        }
        for (cl, s) in scratch.iter().enumerate() {
            if s.size > 0 {
                c.mem.l1[cl].zero(
                    (s.addr - abi::L1_BASE - cl as u32 * abi::L1_CLUSTER_STRIDE) as usize,
                    s.size as usize,
                );
            }
        }
        // Install rejects windows task_t cannot describe (EctxSpec::validate).
        let (hb, hs) = spec.host_window;
        debug_assert!(
            hs <= crate::ectx::MAX_HOST_WINDOW,
            "host window of {hs} bytes passed validation"
        );
        let mut desc = abi::TaskDescriptor {
            handler_mem: hm.0,
            handler_mem_size: hm.1,
            host_mem: hb,
            host_mem_size: u32::try_from(hs).unwrap_or(u32::MAX),
            ..Default::default()
        };
        for (d, s) in desc.scratchpad.iter_mut().zip(&scratch) {
            *d = (s.addr, s.size);
        }
        let mut task_t = vec![0; abi::TaskLayout::new(c.cfg.clusters).size() as usize];
        desc.encode_ectx_fields(c.cfg.clusters, &mut task_t);
        let e = Ectx {
            spec,
            program,
            entries,
            handler_mem: hm,
            image_data,
            code,
            scratch,
            task_t,
            active: false,
            open_messages: 0,
            tasks: 0,
        };
        let id = match c.ectxs.iter().position(|e| e.is_none()) {
            Some(i) => i,
            None => {
                c.ectxs.push(None);
                c.ectxs.len() - 1
            }
        };
        c.ectxs[id] = Some(e);
        // A reused slot starts with fresh per-ECTX statistics.
        c.stats.ectx_packets.remove(id);
        c.stats.errors_by_ectx.remove(&id);
        self.cu.forget_ectx(id);
        c.stats.output_dropped.remove(&id);
        Ok(id)
    }

    fn ectx_mut(&mut self, id: EctxId) -> Result<&mut Ectx, EctxError> {
        self.core
            .ectxs
            .get_mut(id)
            .and_then(|e| e.as_mut())
            .ok_or(EctxError::NoSuchEctx(id))
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

    /// Put a node table in NIC memory (bytes from `abi::encode_node_table`):
    /// what `spin_node.h` reads. Handlers see it from their next access.
    /// `false` (and nothing changed) if it does not fit the region.
    pub fn set_node_table(&mut self, bytes: &[u8]) -> bool {
        let t = &self.core.mem.node_table;
        if bytes.len() > t.len() {
            return false;
        }
        t.write(0, bytes);
        t.zero(bytes.len(), t.len() - bytes.len());
        true
    }

    /// Put part of a node table in NIC memory (issue 29: a node of a
    /// large simulated network needs its own entry and its peers'): the
    /// header (this NIC's rank, `num_nodes`) and the given entries, rank
    /// and node. Entries not given keep what they held (zeros at first),
    /// and only the memory pages of written entries are touched, so a
    /// node's table costs what it holds, not `MAX_NODES` entries.
    pub fn set_node_entries(
        &mut self,
        my_rank: u32,
        num_nodes: u32,
        entries: &[(u32, abi::NodeEntry)],
    ) -> Result<(), NodeTableError> {
        if num_nodes > abi::MAX_NODES {
            return Err(NodeTableError::TooManyNodes(num_nodes));
        }
        if my_rank >= num_nodes {
            return Err(NodeTableError::NoSuchRank {
                what: "my_rank",
                rank: my_rank,
                num_nodes,
            });
        }
        if let Some(&(rank, _)) = entries.iter().find(|(r, _)| *r >= num_nodes) {
            return Err(NodeTableError::NoSuchRank {
                what: "entry",
                rank,
                num_nodes,
            });
        }
        let t = &self.core.mem.node_table;
        t.write(0, &abi::node_table_header(my_rank, num_nodes));
        for (rank, n) in entries {
            t.write(
                abi::node_entry_offset(*rank) as usize,
                &abi::encode_node_entry(*rank, n),
            );
        }
        Ok(())
    }

    /// The node-table region's first `len` bytes (what handlers read).
    pub fn node_table_bytes(&self, len: usize) -> Vec<u8> {
        let t = &self.core.mem.node_table;
        t.to_vec(0, len.min(t.len()))
    }

    /// Read NIC memory (any region) by NIC address.
    pub fn read_nic(&self, addr: u32, len: usize) -> Option<Vec<u8>> {
        let (b, o) = self.core.mem.block(addr, len as u32)?;
        Some(b.to_vec(o, len))
    }

    /// Write NIC memory by NIC address (host-side initialisation).
    pub fn write_nic(&mut self, addr: u32, data: &[u8]) -> bool {
        match self.core.mem.block(addr, data.len() as u32) {
            Some((b, o)) => {
                b.write(o, data);
                true
            }
            None => false,
        }
    }

    /// Process every event due up to `until_ps`; the clock is then at
    /// `until_ps` (embedding API, see [`Engine`]).
    pub fn run_until(&mut self, until_ps: u64) -> Result<(), SimError> {
        self.run_with(Some(until_ps), |_| {})
    }

    /// Run until no event is left (all traffic processed, the NIC idle) or
    /// virtual time reaches `until_ps`. `progress` is called now and then
    /// with the packets processed so far.
    pub fn run(
        &mut self,
        until_ps: Option<u64>,
        mut progress: impl FnMut(u64),
    ) -> Result<(), SimError> {
        self.run_with(until_ps, |e| progress(e.core.stats.packets_done))
    }

    /// [`Engine::run`], calling `every` with the engine now and then (every
    /// 65536 events) and at the end, so a caller can drain outputs while
    /// the run goes on and keep memory bounded.
    pub fn run_with(
        &mut self,
        until_ps: Option<u64>,
        mut every: impl FnMut(&mut Engine),
    ) -> Result<(), SimError> {
        let mut n = 0u64;
        let mut progressed = false;
        loop {
            // This instant's queued events first, then its immediate FIFO.
            let next = self.core.events.peek().copied();
            if next.is_none_or(|e| e.time != self.core.now) {
                if let Some(ev) = self.core.immediate.pop_front() {
                    self.step(ev)?;
                    progressed = true;
                    continue;
                }
            }
            let Some(e) = next else { break };
            // A deadline check with nothing due (its message ended) does not
            // advance time.
            if let Ev::TimeoutCheck = e.ev {
                let t = e.time;
                if self.mpq.nothing_due(t) {
                    self.core.events.pop();
                    self.mpq.check_dropped(&mut self.core, t);
                    continue;
                }
            }
            // A wait limit whose wait ended does not advance time; one whose
            // HPU waits again moves to that wait's deadline.
            if let Ev::WaitLimit { hpu } = e.ev {
                let t = e.time;
                let ctl = &mut self.hpus[hpu as usize].ctl;
                if ctl.state != HpuState::Blocked || ctl.wait_deadline > t {
                    self.core.events.pop();
                    ctl.limit_armed = ctl.state == HpuState::Blocked;
                    if ctl.limit_armed {
                        let d = ctl.wait_deadline;
                        self.core.at(d, Ev::WaitLimit { hpu });
                    }
                    continue;
                }
            }
            if until_ps.is_some_and(|u| e.time > u) {
                self.core.now = until_ps.unwrap();
                every(self);
                return Ok(());
            }
            // Only timers are next (a wait limit, a message deadline) while a
            // handler waits for the host's answer: a host program gets its
            // turn first (`pause_for_host`); run again without answering
            // and time goes on.
            if until_ps.is_none()
                && progressed
                && self.core.pause_for_host
                && matches!(e.ev, Ev::WaitLimit { .. } | Ev::TimeoutCheck)
                && self.waits_for_host()
            {
                every(self);
                return Ok(());
            }
            progressed = true;
            let e = self.core.events.pop().unwrap();
            self.core.now = e.time;
            self.step(e.ev)?;
            n += 1;
            if n.is_multiple_of(65536) {
                every(self);
            }
        }
        // Idle before `until`: the clock still moves there.
        if let Some(u) = until_ps {
            self.core.now = self.core.now.max(u);
        }
        every(self);
        Ok(())
    }

    fn step(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Arrival => self.on_arrival()?,
            Ev::Schedule => self.schedule(),
            Ev::TaskReady { task } => self.on_task_ready(task as usize),
            Ev::HpuRun { hpu, gen } => self.on_hpu_run(hpu as usize, gen),
            Ev::CmdDone { hpu, id } => self.on_cmd_done(hpu as usize, id),
            Ev::Completion { task } => self.on_completion(task as usize),
            Ev::TimeoutCheck => self.on_timeout_check(),
            Ev::Inject => self.on_inject()?,
            Ev::HpuFree { hpu, gen } => self.on_hpu_free(hpu as usize, gen),
            Ev::NotifyVisible => {}
            Ev::NotifyResponse { id } => self.on_notify_response(id),
            Ev::WaitLimit { hpu } => self.on_wait_limit(hpu as usize),
            Ev::Unblock => self.on_unblock()?,
            Ev::RmaTimer => transport::on_timer(&mut self.core, &mut self.cu.links),
        }
        Ok(())
    }

    /// A handler waits for the host's answer to a notification (its wait
    /// is limited in NIC time, which follows the wall clock live).
    pub fn waits_for_host(&self) -> bool {
        self.hpus
            .iter()
            .any(|s| s.ctl.state == HpuState::Blocked && s.ctl.wait_notify.is_some())
    }

    /// Nothing left to do: no event scheduled, no packet or notification on
    /// its way (a notification's arrival at the host is an event). Only the
    /// host (a new packet, a response) can wake the NIC.
    pub fn is_idle(&self) -> bool {
        // Limits of waits that ended are left in the queue; they do not count.
        self.core.immediate.is_empty()
            && self.core.events.iter().all(|e| matches!(e.ev, Ev::WaitLimit { hpu } if self.hpus[hpu as usize].ctl.state != HpuState::Blocked))
    }

    /// When the next event is due (now if one is queued for this instant);
    /// `None`: none is scheduled. A live NIC sleeps until then.
    pub fn next_event_ps(&self) -> Option<u64> {
        if !self.core.immediate.is_empty() {
            return Some(self.core.now);
        }
        self.core.events.next_time()
    }

    /// Packets the NIC holds and has not finished: injected but not yet
    /// arrived, waiting for a packet-buffer slot, or in the packet buffer.
    /// A live NIC stopped at its deadline counts these as unprocessed.
    pub fn packets_held(&self) -> u64 {
        self.pkt.held()
    }

    /// HPU occupancy so far: the HPUs running a task now, and the busy
    /// time of all HPUs in ps (running tasks counted up to now). Cheap: a
    /// live NIC's status line takes it every second.
    pub fn hpu_busy(&self) -> (u32, u64) {
        let now = self.core.now;
        let busy = self
            .hpus
            .iter()
            .map(|h| match h.ctl.state {
                HpuState::Idle => h.ctl.busy_ps,
                _ => h.ctl.busy_ps + now.saturating_sub(h.ctl.busy_since),
            })
            .sum();
        (self.core.busy_now, busy)
    }

    /// Raw statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// The statistics report (PsPIN-style figures).
    pub fn report(&self) -> Report {
        let c = &self.core;
        let s = &c.stats;
        let first = s.first_arrival_ps.unwrap_or(0);
        let span = s.last_done_ps.saturating_sub(first);
        let sim_ps = c.now.max(s.last_done_ps);
        let busy: u64 = self.hpus.iter().map(|h| h.ctl.busy_ps).sum();
        const KINDS: [HandlerKind; 3] = [
            HandlerKind::Header,
            HandlerKind::Payload,
            HandlerKind::Completion,
        ];
        let handlers = s
            .handlers
            .iter()
            .flat_map(|(e, by_kind)| {
                KINDS
                    .iter()
                    .zip(by_kind)
                    .filter(|(_, a)| a.invocations > 0)
                    .map(move |(k, a)| (e, k, a))
            })
            .map(|(e, k, a)| {
                let n = a.invocations.max(1) as f64;
                let ectx = self
                    .ectx(e)
                    .map(|x| x.name().to_string())
                    .unwrap_or_default();
                let sym = self.ectx(e).map(|x| x.spec_symbol(*k)).unwrap_or_default();
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
                ectx: self
                    .ectx(*e)
                    .map(|x| x.name().to_string())
                    .unwrap_or_default(),
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
            good_packets: s.good_packets,
            goodput_gbps: if span > 0 { s.good_bytes as f64 * 8.0 / secs / 1e9 } else { 0.0 },
            offered_gbps: match s.last_arrival_ps.saturating_sub(first) {
                0 => 0.0,
                a => (s.bytes_in - s.last_arrival_len) as f64 * 8.0 / (a as f64 / 1e12) / 1e9,
            },
            latency_ns: s.latency.summary_ns(),
            drops: s.drops,
            too_large: s.too_large,
            backpressure_ns: Ps(s.backpressure_ps).as_ns_f64(),
            mpq_stall_ns: Ps(s.mpq_stall_ps).as_ns_f64(),
            // Over the window from the first arrival to the last completion.
            hpu_utilization: if span > 0 { (busy as f64 / (span as f64 * self.hpus.len() as f64)).min(1.0) } else { 0.0 },
            hpus_busy_max: c.busy_max,
            handlers,
            errors,
            error_details: s.errors.clone(),
            message_timeouts: s.message_timeouts,
            output_dropped: s
                .output_dropped
                .iter()
                .map(|(e, &bytes)| stats::OutputDrop {
                    ectx: self.ectx(*e).map(|x| x.name().to_string()).unwrap_or_default(),
                    bytes,
                    cause: format!("output ring full: output_buffer = {} bytes per ECTX, oldest output dropped", c.cfg.output_buffer),
                })
                .collect(),
            outbound_packets: s.outbound_packets,
            outbound_bytes: s.outbound_bytes,
            host_writes: s.host_writes,
            dma_to_host_bytes: s.dma_to_host_bytes,
            dma_from_host_bytes: s.dma_from_host_bytes,
            commands: s.commands,
            tasks: s.tasks,
            sim_time_ns: Ps(sim_ps).as_ns_f64(),
            rma: c.rma.as_ref().map(|b| b.report()),
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

/// Same data segments (address and initial bytes): the same image's data.
fn same_data(a: &ElfImage, b: &ElfImage) -> bool {
    let data = |i: &ElfImage| -> Vec<(u32, u32, Vec<u8>)> {
        i.segments
            .iter()
            .filter(|s| !s.perm.has(Perm::X))
            .map(|s| (s.vaddr, s.memsz, s.data.clone()))
            .collect()
    };
    data(a) == data(b)
}

fn same_code(a: &ElfImage, b: &ElfImage) -> bool {
    let code = |i: &ElfImage| -> Vec<(u32, Vec<u8>)> {
        i.segments
            .iter()
            .filter(|s| s.perm.has(Perm::X))
            .map(|s| (s.vaddr, s.data.clone()))
            .collect()
    };
    code(a) == code(b)
}

/// Helpers for the blocks' unit tests: a shared context, ECTXs without an
/// image, and the events the blocks pushed.
/// Free ids `0..cap` handed out lowest first, the most recently released
/// first after that (a stack that starts as `cap-1, ..., 0`), without a
/// list of all of them up front: ids never used cost nothing, so the
/// per-id state behind them (packet slots, MPQs) can grow on first use
/// (an engine per simulated NIC, issue 29).
pub(super) struct FreeIds {
    released: Vec<u32>,
    /// Ids from here to `cap` were never handed out.
    fresh: u32,
    cap: u32,
}

impl FreeIds {
    pub(super) fn new(cap: u32) -> FreeIds {
        FreeIds {
            released: Vec::new(),
            fresh: 0,
            cap,
        }
    }

    pub(super) fn pop(&mut self) -> Option<u32> {
        self.released.pop().or_else(|| {
            (self.fresh < self.cap).then(|| {
                self.fresh += 1;
                self.fresh - 1
            })
        })
    }

    /// The id `pop` would hand out next.
    pub(super) fn peek(&self) -> Option<u32> {
        match self.released.last() {
            Some(&id) => Some(id),
            None => (self.fresh < self.cap).then_some(self.fresh),
        }
    }

    pub(super) fn push(&mut self, id: u32) {
        debug_assert!(id < self.fresh, "id {id} was never handed out");
        self.released.push(id);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.released.is_empty() && self.fresh == self.cap
    }

    /// Ids handed out and not released.
    pub(super) fn in_use(&self) -> u32 {
        self.fresh - self.released.len() as u32
    }
}

#[cfg(test)]
mod test_util {
    use super::*;

    pub(super) fn core(cfg: NicConfig) -> Core {
        cfg.validate().expect("test configuration");
        Core::new(cfg)
    }

    /// An active ECTX with the handlers `kinds` says (header, payload,
    /// completion), matching every packet; it runs nothing (the blocks'
    /// tests do not start HPUs).
    pub(super) fn ectx(kinds: [bool; 3], msg_timeout_ns: u64) -> Ectx {
        let image = ElfImage {
            entry: 0,
            segments: Vec::new(),
            symbols: Default::default(),
        };
        let mut spec = EctxSpec::new("test", image);
        spec.msg_timeout_ns = msg_timeout_ns;
        // One `ret` (jalr x0, 0(ra)): a program must have code.
        let ret = 0x0000_8067u32.to_le_bytes();
        let program = Program::decode(&[(abi::PROG_MEM_BASE, &ret[..])], &Default::default())
            .expect("a one-instruction program");
        Ectx {
            spec,
            program: Arc::new(program),
            entries: kinds.map(|k| k.then_some(abi::PROG_MEM_BASE)),
            handler_mem: (abi::L2_HANDLER_BASE, 64),
            image_data: None,
            code: (abi::PROG_MEM_BASE, 4),
            scratch: Vec::new(),
            task_t: Vec::new(),
            active: true,
            open_messages: 0,
            tasks: 0,
        }
    }

    /// The events pushed so far, in the order the engine would handle
    /// them, as (time, event name); the clock moves to each.
    pub(super) fn drain_events(c: &mut Core) -> Vec<(u64, String)> {
        let mut v = Vec::new();
        loop {
            let next = c.events.peek().copied();
            if next.is_none_or(|e| e.time != c.now) {
                if let Some(ev) = c.immediate.pop_front() {
                    v.push((c.now, format!("{ev:?}")));
                    continue;
                }
            }
            let Some(e) = c.events.pop() else { break };
            c.now = e.time;
            v.push((e.time, format!("{:?}", e.ev)));
        }
        v
    }
}

#[cfg(test)]
mod free_ids_tests {
    use super::FreeIds;

    /// The same ids in the same order as the full stack it replaces
    /// (`cap-1, ..., 0`, released ids pushed on top).
    #[test]
    fn hands_out_ids_as_the_full_stack_did() {
        let cap = 5;
        let mut lazy = FreeIds::new(cap);
        let mut stack: Vec<u32> = (0..cap).rev().collect();
        let mut held = Vec::new();
        // A fixed mix of takes and releases, past exhaustion.
        for (k, take) in [1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1]
            .into_iter()
            .enumerate()
        {
            if take == 1 {
                let (a, b) = (lazy.pop(), stack.pop());
                assert_eq!(a, b, "step {k}");
                held.extend(a);
            } else if let Some(id) = held.pop() {
                lazy.push(id);
                stack.push(id);
            }
            assert_eq!(lazy.is_empty(), stack.is_empty(), "step {k}");
            assert_eq!(lazy.in_use() as usize, held.len(), "step {k}");
        }
    }
}
