//! Trace replay on simulated nodes (seed 004 §5.1, Table 5c; docs/scale.md
//! "Trace replay"): one host program per rank steps its program
//! (`trace::driver::Cursor`) and matches its messages either
//! - on the NIC (`Matching::Nic`): every NIC runs examples/cluster/matching's
//!   handlers; a host posts a receive through the ring in its memory and
//!   rings its NIC (`trace::mt`), sends eager data or a rendezvous header
//!   in one packet, and wakes on the completion and FIN words (watched);
//! - on the host (`Matching::Host`): the packets go to the host's network
//!   stack, and the host matches them as `trace::timing` models it: o and a
//!   copy per message, a rendezvous by a clear-to-send from the receiver's
//!   CPU and the data from the sender's.
//!
//! Every receive is checked when it completes: its bytes are those
//! `trace::reference` gives its matched send, and (NIC) its completion
//! names that send's source, tag and length.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ops::{Deref, Range};
use std::rc::Rc;

use softspin_engine::{EctxId, Engine, NicConfig};

use super::{
    seeded_bytes, setup_rma, uc, uc_rma_rules, udp_frame, HostProgram, HostSend, HostSignal,
    HostStep, NicProgram, Workload, HOST_BASE,
};
use crate::params::NetParams;
use crate::trace::driver::{Cursor, Next};
use crate::trace::mt::{check_limits, Mt};
use crate::trace::program::Step;
use crate::trace::reference::Matched;
use crate::trace::timing::copy_ns;
use crate::trace::{completion, Matching, Model, Program, Reference, Timing, TraceError};

/// Host speed for `compute` actions (flop/s), as the timing model's tables.
pub const HOST_FLOPS: f64 = 1e9;

/// The host MPI library's UDP port under host matching: not UC_PORT (whose
/// datagrams the rules give the NIC) nor RMA's, so the host stack takes
/// them.
pub const MPI_PORT: u16 = 49153;

/// Host matching's packet header (big-endian): kind, source rank, tag, the
/// sender's message number, the message's size, this packet's offset.
const HDR: usize = 1 + 4 * 5;
const EAGER: u8 = 1;
const RTS: u8 = 2;
const CTS: u8 = 3;
const DATA: u8 = 4;

/// One host-matching packet, parsed (hostile input: `None` if malformed).
struct HostPkt<'a> {
    kind: u8,
    src: u32,
    tag: u32,
    seq: u32,
    total: u32,
    off: u32,
    data: &'a [u8],
}

impl HostPkt<'_> {
    fn emit(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HDR + self.data.len());
        v.push(self.kind);
        for w in [self.src, self.tag, self.seq, self.total, self.off] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        v.extend_from_slice(self.data);
        v
    }
    /// From a whole frame (UDP to `MPI_PORT`).
    fn parse(frame: &[u8]) -> Option<HostPkt<'_>> {
        let p = frame.get(42..)?;
        if frame.get(36..38)? != MPI_PORT.to_be_bytes() || p.len() < HDR {
            return None;
        }
        let w = |i: usize| u32::from_be_bytes(p[1 + 4 * i..5 + 4 * i].try_into().unwrap_or([0; 4]));
        Some(HostPkt {
            kind: p[0],
            src: w(0),
            tag: w(1),
            seq: w(2),
            total: w(3),
            off: w(4),
            data: &p[HDR..],
        })
    }
}

/// What the replay counted, per rank.
#[derive(Clone, Debug, Default)]
pub struct RankResult {
    pub finished: bool,
    /// Receives completed and checked good.
    pub received: u64,
    /// Receives matched on arrival (Fig. 5b I/II) and from the unexpected
    /// slots or queue (III).
    pub posted: u64,
    pub unexpected: u64,
    /// The first few failed checks, in words.
    pub errors: Vec<String>,
}

struct Shared {
    progs: Vec<Program>,
    refr: Reference,
    mt: Mt,
    matching: Matching,
    params: NetParams,
    seed: u64,
    /// The message whose expected bytes are flipped (`--sabotage`).
    sabotage: Option<usize>,
    results: RefCell<Vec<RankResult>>,
}

impl Shared {
    /// What message `m` carries on the wire: its bytes, at least one (the
    /// matching handler takes 1 B to UC_MT_MAX; MPI's empty messages, the
    /// barrier's, travel as one byte).
    fn wire(&self, m: &Matched) -> Vec<u8> {
        seeded_bytes(m.seed(self.seed), m.bytes.max(1) as usize)
    }
    /// What the receiver of message `m` must hold.
    fn expected(&self, m: &Matched) -> Vec<u8> {
        let mut v = seeded_bytes(m.seed(self.seed), m.bytes as usize);
        let i = self.refr.messages.iter().position(|x| x == m);
        if i.is_some() && i == self.sabotage && !v.is_empty() {
            let mid = v.len() / 2;
            v[mid] ^= 1;
        }
        v
    }
    fn fail(&self, r: u32, msg: String) {
        let mut res = self.results.borrow_mut();
        let e = &mut res[r as usize].errors;
        if e.len() < 4 {
            e.push(msg);
        }
    }
    /// Check a completed receive: `got` is its buffer (`len` bytes came).
    fn check_recv(&self, r: u32, m: &Matched, got: &[u8], unexpected: bool) {
        let want = self.expected(m);
        if got.get(..want.len()) != Some(&want[..]) {
            self.fail(
                r,
                format!(
                    "rank {r}: the receive of message {} from rank {} (tag {}, {} B) holds other bytes",
                    m.seq, m.src, m.tag, m.bytes
                ),
            );
            return;
        }
        let mut res = self.results.borrow_mut();
        let x = &mut res[r as usize];
        x.received += 1;
        if unexpected {
            x.unexpected += 1;
        } else {
            x.posted += 1;
        }
    }
}

/// One rank's program, owned through the shared state.
#[derive(Clone)]
struct RankProg(Rc<Shared>, usize);

impl Deref for RankProg {
    type Target = Program;
    fn deref(&self) -> &Program {
        &self.0.progs[self.1]
    }
}

/// First-fit allocator over an area of the window (64-byte aligned).
#[derive(Default)]
struct Area {
    span: Range<u64>,
    used: BTreeMap<u64, u64>,
}

impl Area {
    fn new(span: Range<u64>) -> Area {
        Area {
            span,
            used: BTreeMap::new(),
        }
    }
    fn alloc(&mut self, n: u64) -> Option<u64> {
        let n = n.max(1).div_ceil(64) * 64;
        let mut at = self.span.start;
        for (&s, &len) in &self.used {
            if s >= at + n {
                break;
            }
            at = at.max(s + len);
        }
        (at + n <= self.span.end).then(|| {
            self.used.insert(at, n);
            at
        })
    }
    fn free(&mut self, at: u64) {
        self.used.remove(&at);
    }
}

/// A posted receive (NIC matching): its post id's buffer.
struct NicRecv {
    req: usize,
    buf: u64,
}

/// A posted receive (host matching).
struct HostRecv {
    req: usize,
    from: u32,
    tag: u32,
    buf: Vec<u8>,
    /// A rendezvous it matched: the sender's message number; bytes landed.
    rndv: Option<u32>,
    got: u64,
}

/// A message the host took before its receive was posted.
struct Unexpected {
    kind: u8,
    src: u32,
    tag: u32,
    seq: u32,
    data: Vec<u8>,
}

enum Todo {
    Step(HostStep),
    /// Write post `id`'s ring entry and the count, then ring the NIC.
    RingPost(u32, Vec<u8>),
}

struct Rank {
    r: u32,
    sh: Rc<Shared>,
    cur: Cursor<RankProg>,
    todo: VecDeque<Todo>,
    seq: u32,
    // NIC matching
    next_post: u32,
    recvs: BTreeMap<u32, NicRecv>,
    cookie: u32,
    sends: BTreeMap<u32, (usize, u64)>,
    recv_area: Area,
    send_area: Area,
    doorbell: Vec<u8>,
    // host matching
    arriving: Vec<(u64, Vec<u8>)>,
    posted: Vec<HostRecv>,
    unexp: VecDeque<Unexpected>,
    rndv_out: BTreeMap<u32, (usize, u32, u32, Vec<u8>)>,
}

fn host_err(e: &str) -> impl Fn() -> String + '_ {
    move || e.to_string()
}

impl Rank {
    fn at(&self) -> String {
        self.cur
            .at()
            .map_or_else(|| "end".into(), |l| l.to_string())
    }
    fn write(e: &mut Engine, off: u64, data: &[u8]) -> Result<(), String> {
        e.host_memory()
            .write(HOST_BASE + off, data)
            .then_some(())
            .ok_or_else(|| format!("host write at window offset 0x{off:x} refused"))
    }
    fn read(e: &mut Engine, off: u64, n: usize) -> Result<Vec<u8>, String> {
        let mut v = vec![0; n];
        e.host_memory()
            .read(HOST_BASE + off, &mut v)
            .then_some(v)
            .ok_or_else(|| format!("host read at window offset 0x{off:x} refused"))
    }
    fn o_secs(&self) -> f64 {
        self.sh.params.o_ns * 1e-9
    }

    /// NIC matching: take the completions and FINs the NIC wrote.
    fn nic_progress(&mut self, e: &mut Engine) -> Result<f64, String> {
        let sh = self.sh.clone();
        let mt = &sh.mt;
        let mut copy = 0.0;
        let ids: Vec<u32> = self.recvs.keys().copied().collect();
        for id in ids {
            let rec = Self::read(e, mt.completion_at(id), mt.compl_len as usize)?;
            let Some(c) = mt.completion(id, &rec) else {
                continue;
            };
            let pr = self.recvs.remove(&id).ok_or_else(host_err("gone"))?;
            self.recv_area.free(pr.buf);
            let m = sh
                .refr
                .of_recv(self.r, pr.req)
                .ok_or_else(|| format!("rank {}: receive {} has no send", self.r, pr.req))?;
            let wire = m.bytes.max(1);
            if c.status != mt.ok || c.len as u64 != wire || c.src != m.src || c.tag != m.tag {
                sh.fail(
                    self.r,
                    format!(
                        "rank {}: receive {id} completed with status {}, {} B from rank {} tag {}; the reference says {wire} B from rank {} tag {}",
                        self.r, c.status, c.len, c.src, c.tag, m.src, m.tag
                    ),
                );
            }
            let n = (c.len as u64).min(wire) as usize;
            if let Some(slot) = c.slot {
                // Case III: the CPU copies it out of the unexpected slot.
                let d = Self::read(e, mt.unexp_at(slot), n)?;
                Self::write(e, pr.buf, &d)?;
                Self::write(e, mt.ack_at(slot), &c.gen.to_le_bytes())?;
                copy += copy_ns(&sh.params, n as u64) * 1e-9;
            }
            let got = Self::read(e, pr.buf, m.bytes as usize)?;
            sh.check_recv(self.r, m, &got, c.how == mt.how_unexpected);
            self.cur.complete(pr.req);
        }
        let cookies: Vec<u32> = self.sends.keys().copied().collect();
        for ck in cookies {
            let w = Self::read(e, mt.fin_at(ck), 8)?;
            if u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) == ck as u64 {
                let (req, soff) = self.sends.remove(&ck).ok_or_else(host_err("gone"))?;
                self.send_area.free(soff);
                self.cur.complete(req);
            }
        }
        Ok(copy)
    }

    fn nic_send(&mut self, e: &mut Engine, req: usize, to: u32) -> Result<HostStep, String> {
        let sh = self.sh.clone();
        let mt = &sh.mt;
        let m = sh
            .refr
            .of_send(self.r, req)
            .ok_or_else(|| format!("rank {}: send {req} has no receive", self.r))?;
        let data = sh.wire(m);
        self.seq += 1;
        let pkt = if m.rendezvous(mt.eager_max) {
            self.cookie += 1;
            let ck = self.cookie;
            if self
                .sends
                .keys()
                .any(|&c| c % mt.sends as u32 == ck % mt.sends as u32)
            {
                return Err(format!(
                    "rank {} at {}: FIN slot {} still belongs to a rendezvous send in flight",
                    self.r,
                    self.at(),
                    ck % mt.sends as u32
                ));
            }
            let soff = self.send_area.alloc(data.len() as u64).ok_or_else(|| {
                format!("rank {} at {}: the send area is full", self.r, self.at())
            })?;
            Self::write(e, soff, &data)?;
            self.sends.insert(ck, (req, soff));
            mt.packet(
                self.r,
                self.seq,
                m.tag,
                true,
                data.len() as u32,
                &mt.rts(soff as u32, ck),
            )
        } else {
            self.cur.complete(req);
            mt.packet(self.r, self.seq, m.tag, false, data.len() as u32, &data)
        };
        let frame = udp_frame(self.r, to, mt.port, mt.port, &pkt)?;
        Ok(HostStep::Send(vec![HostSend {
            to,
            frame,
            first_of_message: true,
        }]))
    }

    fn nic_recv(&mut self, req: usize, from: u32, tag: u32, cap: u64) -> Result<HostStep, String> {
        let mt = &self.sh.mt;
        let id = self.next_post;
        if self
            .recvs
            .keys()
            .any(|&i| i % mt.posts as u32 == id % mt.posts as u32)
        {
            return Err(format!(
                "rank {} at {}: post ring entry {} still belongs to a receive outstanding",
                self.r,
                self.at(),
                id % mt.posts as u32
            ));
        }
        let cap = cap.max(1);
        let buf = self
            .recv_area
            .alloc(cap)
            .ok_or_else(|| format!("rank {} at {}: the receive area is full", self.r, self.at()))?;
        self.next_post += 1;
        self.recvs.insert(id, NicRecv { req, buf });
        let entry = mt.post_entry(id, Some(from), Some(tag), buf as u32, cap as u32);
        // The CPU writes the entry (o), then the count and the doorbell.
        self.todo.push_back(Todo::RingPost(id, entry));
        Ok(HostStep::Compute(self.o_secs()))
    }

    fn host_frame(&self, to: u32, p: HostPkt) -> Result<Vec<u8>, String> {
        udp_frame(self.r, to, MPI_PORT, MPI_PORT, &p.emit())
    }

    /// Host matching: the messages whose DMA into host memory is over by
    /// `now`, matched by this CPU. Returns the CPU time it spent (o and a
    /// copy per message matched here) and what it sends in answer.
    fn host_progress(&mut self, now: u64) -> Result<f64, String> {
        let mut cpu = 0.0;
        let mut i = 0;
        while i < self.arriving.len() {
            if self.arriving[i].0 > now {
                i += 1;
                continue;
            }
            let (_, frame) = self.arriving.remove(i);
            let Some(p) = HostPkt::parse(&frame) else {
                return Err(format!("rank {}: a malformed host-matching packet", self.r));
            };
            match p.kind {
                EAGER | RTS => {
                    let u = Unexpected {
                        kind: p.kind,
                        src: p.src,
                        tag: p.tag,
                        seq: p.seq,
                        data: p.data.to_vec(),
                    };
                    let at = self
                        .posted
                        .iter()
                        .position(|q| q.rndv.is_none() && q.from == u.src && q.tag == u.tag);
                    match at {
                        Some(at) => cpu += self.host_match(at, u, false)?,
                        None => self.unexp.push_back(u),
                    }
                }
                CTS => {
                    let Some((req, to, tag, data)) = self.rndv_out.remove(&p.seq) else {
                        return Err(format!(
                            "rank {}: a clear-to-send for no rendezvous send ({})",
                            self.r, p.seq
                        ));
                    };
                    let chunk = (self.sh.params.mtu as usize)
                        .saturating_sub(42 + HDR)
                        .max(64);
                    let mut sends = Vec::new();
                    for (k, piece) in data.chunks(chunk).enumerate() {
                        let frame = self.host_frame(
                            to,
                            HostPkt {
                                kind: DATA,
                                src: self.r,
                                tag,
                                seq: p.seq,
                                total: data.len() as u32,
                                off: (k * chunk) as u32,
                                data: piece,
                            },
                        )?;
                        sends.push(HostSend {
                            to,
                            frame,
                            first_of_message: k == 0,
                        });
                    }
                    self.todo.push_back(Todo::Step(HostStep::Send(sends)));
                    self.cur.complete(req);
                }
                DATA => {
                    let Some(at) = self
                        .posted
                        .iter()
                        .position(|q| q.rndv == Some(p.seq) && q.from == p.src)
                    else {
                        return Err(format!(
                            "rank {}: rendezvous data from rank {} for no receive",
                            self.r, p.src
                        ));
                    };
                    let q = &mut self.posted[at];
                    let off = p.off as usize;
                    let end = off + p.data.len();
                    if end > q.buf.len() {
                        return Err(format!(
                            "rank {}: rendezvous data beyond its buffer",
                            self.r
                        ));
                    }
                    q.buf[off..end].copy_from_slice(p.data);
                    q.got += p.data.len() as u64;
                    if q.got >= p.total as u64 {
                        let q = self.posted.remove(at);
                        self.host_done(&q, false)?;
                    }
                }
                k => return Err(format!("rank {}: host-matching packet kind {k}", self.r)),
            }
        }
        Ok(cpu)
    }

    /// Posted receive `at` meets message `u`: an eager one is matched and
    /// copied (o + copy); a rendezvous gets a clear-to-send (o, paid by
    /// the send).
    fn host_match(&mut self, at: usize, u: Unexpected, from_queue: bool) -> Result<f64, String> {
        let sh = self.sh.clone();
        let p = &sh.params;
        if u.kind == EAGER {
            let mut q = self.posted.remove(at);
            let n = u.data.len().min(q.buf.len());
            q.buf[..n].copy_from_slice(&u.data[..n]);
            self.host_done(&q, from_queue)?;
            return Ok((p.o_ns + copy_ns(p, u.data.len() as u64)) * 1e-9);
        }
        self.posted[at].rndv = Some(u.seq);
        let frame = self.host_frame(
            u.src,
            HostPkt {
                kind: CTS,
                src: self.r,
                tag: u.tag,
                seq: u.seq,
                total: 0,
                off: 0,
                data: &[],
            },
        )?;
        self.todo
            .push_back(Todo::Step(HostStep::Send(vec![HostSend {
                to: u.src,
                frame,
                first_of_message: true,
            }])));
        Ok(0.0)
    }

    fn host_done(&mut self, q: &HostRecv, unexpected: bool) -> Result<(), String> {
        let sh = self.sh.clone();
        let m = sh
            .refr
            .of_recv(self.r, q.req)
            .ok_or_else(|| format!("rank {}: receive {} has no send", self.r, q.req))?;
        sh.check_recv(self.r, m, &q.buf, unexpected);
        self.cur.complete(q.req);
        Ok(())
    }

    fn host_send(&mut self, req: usize, to: u32) -> Result<HostStep, String> {
        let sh = self.sh.clone();
        let m = sh
            .refr
            .of_send(self.r, req)
            .ok_or_else(|| format!("rank {}: send {req} has no receive", self.r))?;
        let data = sh.wire(m);
        self.seq += 1;
        let rndv = m.rendezvous(sh.mt.eager_max);
        let frame = self.host_frame(
            to,
            HostPkt {
                kind: if rndv { RTS } else { EAGER },
                src: self.r,
                tag: m.tag,
                seq: self.seq,
                total: data.len() as u32,
                off: 0,
                data: if rndv { &[] } else { &data },
            },
        )?;
        if rndv {
            self.rndv_out.insert(self.seq, (req, to, m.tag, data));
        } else {
            self.cur.complete(req);
        }
        Ok(HostStep::Send(vec![HostSend {
            to,
            frame,
            first_of_message: true,
        }]))
    }

    fn host_recv(&mut self, req: usize, from: u32, tag: u32, cap: u64) -> Result<HostStep, String> {
        self.posted.push(HostRecv {
            req,
            from,
            tag,
            buf: vec![0; cap.max(1) as usize],
            rndv: None,
            got: 0,
        });
        // Posting costs o; the unexpected queue is searched then.
        let mut cpu = self.o_secs();
        if let Some(u) = self
            .unexp
            .iter()
            .position(|u| u.src == from && u.tag == tag)
            .and_then(|i| self.unexp.remove(i))
        {
            let at = self.posted.len() - 1;
            cpu += self.host_match(at, u, true)?;
        }
        Ok(HostStep::Compute(cpu))
    }
}

impl HostProgram for Rank {
    fn watch(&self) -> Vec<Range<u64>> {
        if self.sh.matching == Matching::Host {
            return Vec::new();
        }
        let mt = &self.sh.mt;
        vec![
            HOST_BASE + mt.compl..HOST_BASE + mt.compl + mt.posts * mt.compl_len,
            HOST_BASE + mt.fins..HOST_BASE + mt.fins + mt.sends * 8,
        ]
    }

    fn resume(
        &mut self,
        now: u64,
        signals: Vec<HostSignal>,
        e: &mut Engine,
    ) -> Result<HostStep, String> {
        for s in signals {
            if let HostSignal::Received { frame, time_ps } = s {
                self.arriving.push((time_ps, frame));
            }
        }
        let cpu = match self.sh.matching {
            Matching::Nic => self.nic_progress(e)?,
            Matching::Host => self.host_progress(now)?,
        };
        if cpu > 0.0 {
            self.todo.push_front(Todo::Step(HostStep::Compute(cpu)));
        }
        if let Some(t) = self.todo.pop_front() {
            return match t {
                Todo::Step(s) => Ok(s),
                Todo::RingPost(id, entry) => {
                    let mt = &self.sh.mt;
                    Self::write(e, mt.post_at(id), &entry)?;
                    Self::write(e, mt.posted, &(id + 1).to_le_bytes())?;
                    Ok(HostStep::Doorbell(self.doorbell.clone()))
                }
            };
        }
        let nic = self.sh.matching == Matching::Nic;
        Ok(match self.cur.step() {
            Next::Compute { flops } => HostStep::Compute(flops / HOST_FLOPS),
            Next::Sleep { secs } => HostStep::Compute(secs),
            Next::Send { req, to, .. } if nic => self.nic_send(e, req, to)?,
            Next::Send { req, to, .. } => self.host_send(req, to)?,
            Next::Recv {
                req,
                from,
                tag,
                bytes,
            } if nic => self.nic_recv(req, from, tag, bytes)?,
            Next::Recv {
                req,
                from,
                tag,
                bytes,
            } => self.host_recv(req, from, tag, bytes)?,
            Next::Blocked => match self.arriving.iter().map(|a| a.0).min() {
                // A message still in its DMA: the waiting CPU takes it then.
                Some(t) if t > now => HostStep::Compute((t - now) as f64 * 1e-12),
                _ => HostStep::Wait,
            },
            Next::Finished => {
                self.sh.results.borrow_mut()[self.r as usize].finished = true;
                HostStep::Finished
            }
        })
    }
}

/// Message counts of a replay (the trace's, from the reference).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Counts {
    pub ranks: u32,
    pub messages: usize,
    pub eager: usize,
    pub rendezvous: usize,
    pub bytes: u64,
}

/// The trace workload.
pub struct Replay {
    sh: Rc<Shared>,
    program: NicProgram,
    key: u32,
    window: u64,
}

impl Replay {
    /// `progs` and `refr` from `trace::programs` / `trace::reference`;
    /// NIC matching refuses (with the line) what the handlers cannot hold.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        progs: Vec<Program>,
        refr: Reference,
        matching: Matching,
        params: &NetParams,
        cfg: &NicConfig,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<Replay, String> {
        let mt = Mt::new()?;
        match matching {
            Matching::Nic => check_limits(&progs, &mt).map_err(|e: TraceError| e.to_string())?,
            // Both modes replay the same traces: messages up to the
            // handlers' largest (which also bounds the host's buffers).
            Matching::Host => {
                for (r, p) in progs.iter().enumerate() {
                    for s in &p.steps {
                        if let Step::Send { bytes, .. } | Step::Recv { bytes, .. } = s.step {
                            if bytes > mt.max {
                                return Err(format!(
                                    "{}: rank {r}: a message of {bytes} bytes: the replay takes at most {} (the matching handler's largest)",
                                    s.at, mt.max
                                ));
                            }
                        }
                    }
                }
            }
        }
        let window = uc("UC_WINDOW")?;
        let rules = format!(
            "{}\n[[ruleset]]\nname = \"doorbell\"\nunit = [{{ index = 3, mask = 0xffff0000, start = {d}, end = {d} }}]\neom = \"true\"\nmsg_id = \"sequence\"\n",
            uc_rma_rules()?,
            d = (softspin_wire::rma::txn::DOORBELL_ETHERTYPE as u32) << 16
        );
        let program = NicProgram::usecase("matching", cfg, build_dir, rules, mt.port, window)?;
        let n = progs.len();
        let sabotage = match sabotage {
            false => None,
            true => Some(
                refr.messages
                    .iter()
                    .position(|m| m.bytes > 0)
                    .ok_or("--sabotage: the trace's messages carry no byte to flip")?,
            ),
        };
        Ok(Replay {
            sh: Rc::new(Shared {
                progs,
                refr,
                mt,
                matching,
                params: params.clone(),
                seed,
                sabotage,
                results: RefCell::new(vec![RankResult::default(); n]),
            }),
            program,
            key: uc("UC_KEY")? as u32,
            window,
        })
    }

    pub fn ranks(&self) -> u32 {
        self.sh.progs.len() as u32
    }

    pub fn counts(&self) -> Counts {
        let r = &self.sh.refr;
        let eager = r
            .messages
            .iter()
            .filter(|m| !m.rendezvous(self.sh.mt.eager_max))
            .count();
        Counts {
            ranks: self.ranks(),
            messages: r.messages.len(),
            eager,
            rendezvous: r.messages.len() - eager,
            bytes: r.total_bytes(),
        }
    }

    /// The LogGP model's completion for the same trace and parameters.
    pub fn model(&self, nic: crate::params::NicKind) -> Result<Timing, String> {
        completion(
            &self.sh.progs,
            &self.sh.refr,
            &Model {
                params: &self.sh.params,
                nic,
                matching: self.sh.matching,
                eager_max: self.sh.mt.eager_max,
                host_flops: HOST_FLOPS,
            },
        )
        .map_err(|e| e.to_string())
    }

    /// What each rank's checks found (after the run).
    pub fn results(&self) -> Vec<RankResult> {
        self.sh.results.borrow().clone()
    }
}

impl Workload for Replay {
    fn name(&self) -> &str {
        "matching"
    }
    fn program(&self) -> &NicProgram {
        &self.program
    }
    fn host_sends(&self, _k: u32) -> Vec<HostSend> {
        Vec::new()
    }
    fn setup_engine(&self, k: u32, e: &mut Engine, ectx: EctxId) -> Result<(), String> {
        setup_rma(k, e, ectx, &self.program.image, self.key, self.window)
    }
    fn host_receives(&self, _k: u32, frame: &[u8]) -> Option<bool> {
        (self.sh.matching == Matching::Host && HostPkt::parse(frame).is_some()).then_some(false)
    }
    fn host_program(&self, k: u32) -> Option<Box<dyn HostProgram>> {
        let mt = &self.sh.mt;
        ((k as usize) < self.sh.progs.len()).then(|| {
            let mut doorbell = vec![0u8; softspin_wire::rma::txn::DOORBELL_LEN];
            doorbell[0..6].copy_from_slice(&crate::node::mac(k));
            doorbell[6..12].copy_from_slice(&crate::node::mac(k));
            // The doorbell's EtherType without RMA's magic: rma_target
            // leaves it alone, the matching payload handler ingests the
            // ring (live, the RMA fetch-and-add's doorbell frame does).
            doorbell[12..14]
                .copy_from_slice(&softspin_wire::rma::txn::DOORBELL_ETHERTYPE.to_be_bytes());
            Box::new(Rank {
                r: k,
                sh: self.sh.clone(),
                cur: Cursor::new(RankProg(self.sh.clone(), k as usize)),
                todo: VecDeque::new(),
                seq: 0,
                next_post: 0,
                recvs: BTreeMap::new(),
                cookie: 0,
                sends: BTreeMap::new(),
                recv_area: Area::new(mt.recv..mt.send),
                send_area: Area::new(mt.send..mt.end),
                doorbell,
                arriving: Vec::new(),
                posted: Vec::new(),
                unexp: VecDeque::new(),
                rndv_out: BTreeMap::new(),
            }) as Box<dyn HostProgram>
        })
    }
    fn expected_done(&self) -> u32 {
        self.ranks()
    }
    fn node_done(&self, _k: u32, _e: &mut Engine) -> bool {
        false
    }
    fn verify(&self, k: u32, _e: Option<&mut Engine>) -> bool {
        let res = self.sh.results.borrow();
        let Some(x) = res.get(k as usize) else {
            return true; // a node beyond the trace's ranks: nothing to hold
        };
        let want = self.sh.refr.messages.iter().filter(|m| m.dst == k).count() as u64;
        x.finished && x.errors.is_empty() && x.received == want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_packets_round_trip_and_hostile_ones_are_refused() {
        let data = [7u8, 8, 9];
        let p = HostPkt {
            kind: DATA,
            src: 3,
            tag: 0x40_0001,
            seq: 9,
            total: 4000,
            off: 1400,
            data: &data,
        };
        let frame = udp_frame(3, 1, MPI_PORT, MPI_PORT, &p.emit()).unwrap();
        let q = HostPkt::parse(&frame).unwrap();
        assert_eq!(
            (q.kind, q.src, q.tag, q.seq, q.total, q.off, q.data),
            (DATA, 3, 0x40_0001, 9, 4000, 1400, &data[..])
        );
        // Too short for the header, another port, no UDP at all.
        assert!(HostPkt::parse(&frame[..42 + HDR - 1]).is_none());
        let other = udp_frame(3, 1, MPI_PORT, MPI_PORT + 1, &p.emit()).unwrap();
        assert!(HostPkt::parse(&other).is_none());
        assert!(HostPkt::parse(&[0u8; 20]).is_none());
    }

    #[test]
    fn areas_reuse_freed_space_and_refuse_when_full() {
        let mut a = Area::new(0x1000..0x1000 + 256);
        let x = a.alloc(100).unwrap();
        let y = a.alloc(1).unwrap();
        assert_eq!((x, y), (0x1000, 0x1080));
        assert_eq!(a.alloc(128), None, "64 bytes left");
        a.free(x);
        assert_eq!(a.alloc(128), Some(0x1000));
        assert_eq!(a.alloc(64), Some(0x10c0));
        assert_eq!(a.alloc(1), None);
    }
}
