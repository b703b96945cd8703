//! The command unit (seed 001 §3.2.1 "Handler execution and completion
//! notification", §3.3): handler ecalls become commands (NIC send, host DMA,
//! host-direct writes, cluster DMA) whose effects apply when they complete.

use super::*;
use crate::stats::{ErrorCause, Rejected};
use crate::units::Ns;

pub(super) enum Effect {
    None,
    Nic {
        addr: u32,
        data: Vec<u8>,
    },
    /// `direct`: a host-direct write's (value, message id), for the
    /// HostWrite event and the message's record.
    HostWrite {
        addr: u64,
        data: Vec<u8>,
        direct: Option<(u64, u32)>,
    },
    FromHost {
        host: u64,
        nic: u32,
        len: u32,
    },
    Send {
        dest: u32,
        data: Vec<u8>,
    },
}

pub(super) struct Cmd {
    pub(super) id: u32,
    pub(super) done_ps: u64,
    pub(super) effect: Effect,
    pub(super) kind: &'static str,
    pub(super) issue_ps: u64,
}

impl Engine {
    // Rare next to the per-packet events: kept out of `Engine::step`.
    #[inline(never)]
    pub(super) fn on_cmd_done(&mut self, h: usize, id: u32) {
        let now = self.core.now;
        let Slot { hpu, ctl, .. } = &mut self.hpus[h];
        let Some(k) = ctl.cmds.iter().position(|c| c.id == id) else {
            return;
        };
        let cmd = ctl.cmds.remove(k);
        let ectx = self.sched.task(ctl.task.unwrap()).her.ectx;
        apply_effect(
            &mut self.core,
            &mut self.mpq,
            &mut self.cu.links,
            ectx,
            cmd.effect,
            now,
        );
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
        let resume = |hpu: &mut Hpu, ctl: &mut HpuCtl, core: &mut Core, a0: u32| {
            resume(hpu, ctl, core, &[a0])
        };
        if let Some((mut deferred, _)) = ctl.deferred.take() {
            // A command that waited for a free slot is issued now.
            let d = deferred.done_ps.saturating_sub(deferred.issue_ps);
            deferred.issue_ps = now;
            deferred.done_ps = now + d;
            let id = deferred.id;
            self.core
                .at(deferred.done_ps, Ev::CmdDone { hpu: h as u32, id });
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
}

/// A command's effect when it completes: NIC memory written, host memory
/// written or read, a frame sent (and the timed outputs the embedder takes).
pub(super) fn apply_effect(
    c: &mut Core,
    mpq: &mut MpqEngine,
    links: &mut Links,
    ectx: EctxId,
    effect: Effect,
    now: u64,
) {
    match effect {
        Effect::None => {}
        Effect::Nic { addr, data } => {
            if let Some((b, o)) = c.mem.block(addr, data.len() as u32) {
                b.write(o, &data);
            }
        }
        Effect::HostWrite { addr, data, direct } => {
            c.host.write(addr, &data);
            if let Some((v, msg)) = direct {
                c.stats.host_writes += 1;
                mpq.record_host_write(ectx, msg, addr, v);
                c.outputs.host_write(HostWrite {
                    time_ps: now,
                    ectx,
                    addr,
                    value: v,
                });
            }
        }
        Effect::FromHost { host, nic, len } => {
            let mut buf = vec![0; len as usize];
            c.host.read(host, &mut buf);
            if let Some((b, o)) = c.mem.block(nic, len) {
                b.write(o, &buf);
            }
        }
        Effect::Send { dest, data } => {
            let mut data = Some(data);
            if super::transport::from_handler(c, links, ectx, now, &mut data) {
                return;
            }
            let data = data.expect("not taken");
            c.stats.outbound_packets += 1;
            c.stats.outbound_bytes += data.len() as u64;
            c.outputs.sent(OutPacket {
                time_ps: now,
                ectx,
                dest,
                frame: data,
            });
        }
    }
}

/// One `write` by a handler: its printf output with when, where and for
/// which message it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputRecord {
    /// The HPU's local NIC time at the `write`.
    pub time_ps: u64,
    pub ectx: EctxId,
    pub msg_id: u32,
    /// Global HPU index.
    pub hpu: u32,
    pub bytes: Vec<u8>,
}

/// An ECTX's handler output: a ring of records holding at most
/// `output_buffer` bytes; the oldest output goes first when it is full.
#[derive(Default)]
pub(super) struct OutputRing {
    pub(super) records: VecDeque<OutputRecord>,
    bytes: usize,
}

impl OutputRing {
    /// Add a record; returns the bytes dropped to stay within `cap`.
    fn push(&mut self, mut r: OutputRecord, cap: usize) -> u64 {
        let mut dropped = 0;
        if r.bytes.len() > cap {
            // Keep the end of an oversized write (its newest bytes).
            let cut = r.bytes.len() - cap;
            r.bytes.drain(..cut);
            dropped += cut as u64;
        }
        self.bytes += r.bytes.len();
        self.records.push_back(r);
        while self.bytes > cap {
            let over = self.bytes - cap;
            let front = self.records.front_mut().expect("bytes > 0 means records");
            if front.bytes.len() <= over {
                self.bytes -= front.bytes.len();
                dropped += front.bytes.len() as u64;
                self.records.pop_front();
            } else {
                front.bytes.drain(..over);
                self.bytes -= over;
                dropped += over as u64;
            }
        }
        dropped
    }

    pub(super) fn take(&mut self) -> VecDeque<OutputRecord> {
        self.bytes = 0;
        std::mem::take(&mut self.records)
    }
}

/// When the command unit's shared paths are free: the NIC's outbound link,
/// PCIe to the host, the L2<->L1 interconnect and each cluster's DMA
/// engine. A transfer starts when its path is free and holds it for its
/// serialisation time, so back-to-back commands queue behind each other.
pub(super) struct Links {
    out_free_at: u64,
    pcie_free_at: u64,
    /// The L2<->L1 interconnect shared by all clusters.
    ic_free_at: u64,
    /// Per cluster: its DMA engine (L2 -> L1 copies and handlers' cluster DMA).
    dma_free_at: Vec<u64>,
}

impl Links {
    pub(super) fn new(cfg: &NicConfig) -> Links {
        Links {
            out_free_at: 0,
            pcie_free_at: 0,
            ic_free_at: 0,
            dma_free_at: vec![0; cfg.clusters as usize],
        }
    }

    /// A frame of `len` bytes leaves at line rate: when its last byte is out.
    pub(super) fn nic_send(&mut self, cfg: &NicConfig, now: u64, len: u32) -> u64 {
        let start = now.max(self.out_free_at);
        self.out_free_at = start + Core::wire_ps(len as u64, cfg.line_rate_gbps);
        self.out_free_at
    }

    /// `len` bytes cross PCIe to the host: when they are there (their
    /// serialisation at the host bandwidth, then the host latency).
    pub(super) fn pcie(&mut self, cfg: &NicConfig, now: u64, len: u32) -> u64 {
        let start = now.max(self.pcie_free_at);
        self.pcie_free_at = start + Core::wire_ps(len as u64, cfg.host.bandwidth_gbps);
        self.pcie_free_at + Ns(cfg.host.latency_ns).to_ps_saturating().0
    }

    /// A cluster DMA of `len` bytes for cluster `cl`, asked for at `from`:
    /// pipelined, `dma_width_bits` per cycle after `dma_latency_cycles`,
    /// sharing the interconnect. Returns (start, done).
    pub(super) fn cluster_dma(
        &mut self,
        cfg: &NicConfig,
        ppc: u64,
        cl: usize,
        from: u64,
        len: u32,
    ) -> (u64, u64) {
        let beats = (len as u64).div_ceil(cfg.dma_width_bits as u64 / 8);
        let start = from.max(self.dma_free_at[cl]).max(self.ic_free_at);
        self.dma_free_at[cl] = start + beats * ppc;
        self.ic_free_at = start + (len as u64).div_ceil(cfg.interconnect_bits as u64 / 8) * ppc;
        (start, start + (beats + cfg.dma_latency_cycles as u64) * ppc)
    }
}

/// The command unit's state: link availability, FPsPIN-style counters
/// and each ECTX's handler-output ring.
pub(super) struct CommandUnit {
    pub(super) links: Links,
    counters: HashMap<(EctxId, u32), (u64, u64)>,
    /// Handler output per ECTX, each a bounded ring (`output_buffer`).
    outputs: HashMap<EctxId, OutputRing>,
}

impl CommandUnit {
    pub(super) fn new(cfg: &NicConfig) -> CommandUnit {
        CommandUnit {
            links: Links::new(cfg),
            counters: HashMap::new(),
            outputs: HashMap::new(),
        }
    }

    /// A reused ECTX slot starts with no counters and no output.
    pub(super) fn forget_ectx(&mut self, id: EctxId) {
        self.counters.retain(|k, _| k.0 != id);
        self.outputs.remove(&id);
    }

    /// Add `value` to counter `index` of `ectx`.
    pub(super) fn push_counter(&mut self, ectx: EctxId, index: u32, value: u32) {
        let e = self.counters.entry((ectx, index)).or_default();
        e.0 += value as u64;
        e.1 += 1;
    }

    /// (index, sum, count) of an ECTX's counters, by index.
    pub(super) fn counters(&self, ectx: EctxId) -> Vec<(u32, u64, u64)> {
        let mut v: Vec<_> = self
            .counters
            .iter()
            .filter(|(k, _)| k.0 == ectx)
            .map(|(k, v)| (k.1, v.0, v.1))
            .collect();
        v.sort();
        v
    }

    /// Keep a handler's output in its ECTX's ring of `cap` bytes; returns
    /// the bytes dropped.
    pub(super) fn write_output(&mut self, r: OutputRecord, cap: usize) -> u64 {
        self.outputs.entry(r.ectx).or_default().push(r, cap)
    }

    /// Output still held, in NIC-time order.
    pub(super) fn output(&self) -> Vec<&OutputRecord> {
        let mut v: Vec<&OutputRecord> = self
            .outputs
            .values()
            .flat_map(|r| r.records.iter())
            .collect();
        // Stable: writes of one instant keep their order.
        v.sort_by_key(|r| (r.time_ps, r.ectx));
        v
    }

    pub(super) fn drain_output(&mut self) -> Vec<OutputRecord> {
        let mut v: Vec<OutputRecord> = self.outputs.values_mut().flat_map(|r| r.take()).collect();
        v.sort_by_key(|r| (r.time_ps, r.ectx));
        v
    }
}

/// Runtime services for one HPU while it runs: the command unit, with
/// the blocks a command reaches (notifications, message records, the
/// packet's slot, the task table).
pub(super) struct Services<'a> {
    pub(super) core: &'a mut Core,
    pub(super) cu: &'a mut CommandUnit,
    pub(super) notify: &'a mut Notifier,
    pub(super) sched: &'a Scheduler,
    pub(super) pkt: &'a mut PacketBuffer,
    pub(super) mpq: &'a mut MpqEngine,
    pub(super) ctl: &'a mut HpuCtl,
    pub(super) ectx: EctxId,
}

impl Services<'_> {
    pub(super) fn now(&self, hpu: &Hpu) -> u64 {
        self.ctl.local_ps(hpu, self.core.ppc)
    }

    pub(super) fn host_ok(&self, addr: u64, len: u32) -> bool {
        let (b, s) = self.core.ectx(self.ectx).spec.host_window;
        addr >= b && addr.checked_add(len as u64).is_some_and(|e| e <= b + s)
    }

    /// Issue a command; returns its id, or suspends if all slots are busy.
    pub(super) fn issue(
        &mut self,
        hpu: &mut Hpu,
        kind: &'static str,
        done_ps: u64,
        effect: Effect,
    ) -> Ecall {
        let now = self.now(hpu);
        let id = self.ctl.next_cmd;
        self.ctl.next_cmd = self.ctl.next_cmd.wrapping_add(1).max(1);
        self.core.stats.commands += 1;
        let cmd = Cmd {
            id,
            done_ps,
            effect,
            kind,
            issue_ps: now,
        };
        if self.ctl.cmds.len() >= self.core.cfg.max_outstanding_cmds as usize {
            self.ctl.deferred = Some((cmd, now));
            return Ecall::Suspend;
        }
        self.core.at(
            done_ps,
            Ev::CmdDone {
                hpu: self.ctl.gid as u32,
                id,
            },
        );
        self.ctl.cmds.push(cmd);
        hpu.set_reg(abi::A0, id);
        Ecall::Continue
    }

    /// Apply effects of commands that are complete by the HPU's local time,
    /// so a handler never sees a finished command's data missing.
    pub(super) fn settle(&mut self, hpu: &Hpu, id: u32) -> bool {
        let now = self.now(hpu);
        match self.ctl.cmds.iter_mut().find(|c| c.id == id) {
            None => true,
            Some(c) if c.done_ps <= now => {
                let e = std::mem::replace(&mut c.effect, Effect::None);
                let t = c.done_ps;
                apply_effect(self.core, self.mpq, &mut self.cu.links, self.ectx, e, t);
                true
            }
            Some(_) => false,
        }
    }

    /// Charge a command's bytes against the handler's watchdog budget: the
    /// HPU checks its limit after the ecall, so an exhausted budget ends
    /// the handler with a watchdog fault before its next block.
    fn charge(&mut self, hpu: &mut Hpu, bytes: u64) {
        let cost = command_cost(bytes);
        self.ctl.charged = self.ctl.charged.saturating_add(cost);
        hpu.instret_limit = hpu.instret_limit.saturating_sub(cost);
    }

    pub(super) fn pcie(&mut self, now: u64, len: u32) -> u64 {
        self.cu.links.pcie(&self.core.cfg, now, len)
    }
}

/// One runtime service request, decoded once from a7 and a0..a5 (the ABI
/// in `softspin_abi.h`): every argument has its name and type here, so
/// execution never reads raw registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `write(fd, buf, len)`: printf output.
    Write {
        fd: u32,
        buf: u32,
        len: u32,
    },
    /// `exit(status)`; `reason` points at a NUL-terminated text (0: none),
    /// which the SDK's `assert` passes.
    Exit {
        status: i32,
        reason: u32,
    },
    /// Cluster DMA between L1 and L2.
    ClusterDma {
        src: u32,
        dst: u32,
        len: u32,
    },
    Send {
        data: u32,
        len: u32,
    },
    RdmaPut {
        dest: u32,
        data: u32,
        len: u32,
    },
    DmaToHost {
        host: u64,
        nic: u32,
        len: u32,
        event: bool,
    },
    DmaFromHost {
        host: u64,
        nic: u32,
        len: u32,
    },
    WriteToHost {
        host: u64,
        value: u64,
    },
    CmdWait {
        id: u32,
    },
    CmdTest {
        id: u32,
    },
    PushCounter {
        index: u32,
        value: u32,
    },
    NotifyPost {
        data: u32,
        len: u32,
        host_ref: u64,
    },
    NotifyWait {
        id: u32,
    },
    NotifyTest {
        id: u32,
    },
}

impl Command {
    /// Decode the HPU's request; `None` for an unknown service number.
    pub fn decode(hpu: &Hpu) -> Option<Command> {
        let a = |k: usize| hpu.reg(abi::A0 + k);
        let wide = |lo: usize| (a(lo + 1) as u64) << 32 | a(lo) as u64;
        Some(match hpu.reg(abi::A7) {
            sys::WRITE => Command::Write {
                fd: a(0),
                buf: a(1),
                len: a(2),
            },
            sys::EXIT => Command::Exit {
                status: a(0) as i32,
                reason: a(1),
            },
            sys::DMA => Command::ClusterDma {
                src: a(0),
                dst: a(1),
                len: a(2),
            },
            sys::SEND_PACKET => Command::Send {
                data: a(0),
                len: a(1),
            },
            sys::RDMA_PUT => Command::RdmaPut {
                dest: a(0),
                data: a(1),
                len: a(2),
            },
            sys::DMA_TO_HOST => Command::DmaToHost {
                host: wide(0),
                nic: a(2),
                len: a(3),
                event: a(4) != 0,
            },
            sys::DMA_FROM_HOST => Command::DmaFromHost {
                host: wide(0),
                nic: a(2),
                len: a(3),
            },
            sys::WRITE_TO_HOST => Command::WriteToHost {
                host: wide(0),
                value: wide(2),
            },
            sys::CMD_WAIT => Command::CmdWait { id: a(0) },
            sys::CMD_TEST => Command::CmdTest { id: a(0) },
            sys::PUSH_COUNTER => Command::PushCounter {
                index: a(0),
                value: a(1),
            },
            sys::NOTIFY_POST => Command::NotifyPost {
                data: a(0),
                len: a(1),
                host_ref: wide(2),
            },
            sys::NOTIFY_WAIT => Command::NotifyWait { id: a(0) },
            sys::NOTIFY_TEST => Command::NotifyTest { id: a(0) },
            _ => return None,
        })
    }
}

/// The service result in a0 (and the handler goes on).
fn ret(hpu: &mut Hpu, v: i32) -> Ecall {
    hpu.set_reg(abi::A0, v as u32);
    Ecall::Continue
}

/// The NUL-terminated text at `addr` (at most 200 bytes, lossy UTF-8).
fn c_string(hpu: &Hpu, addr: u32) -> String {
    let mut v = Vec::new();
    let mut b = [0u8];
    while v.len() < 200
        && hpu
            .mem
            .read_bytes(addr.wrapping_add(v.len() as u32), &mut b)
            .is_ok()
        && b[0] != 0
    {
        v.push(b[0]);
    }
    String::from_utf8_lossy(&v).trim_end().to_string()
}

/// `len` bytes of guest memory at `addr`, if the task may read them. The
/// range is checked before anything is allocated: `len` is the guest's, and
/// 4 GiB asked for must be an error, not an out-of-memory abort.
fn read(hpu: &Hpu, addr: u32, len: u32) -> Option<Vec<u8>> {
    hpu.mem.check(addr, len, Perm::R).ok()?;
    let mut v = vec![0; len as usize];
    hpu.mem.read_bytes(addr, &mut v).ok().map(|_| v)
}

/// "what 0xADDR+LEN" (a NIC range), for a rejected command's detail.
fn nic_range(what: &str, addr: u32, len: u32) -> String {
    format!("{what} 0x{addr:08x}+{len} bytes")
}

/// Bytes a command may move per instruction of the watchdog budget: a
/// handler copying them itself would need at least one word store per 4
/// bytes. Commands are charged this way so that a handler looping on big
/// commands runs out of budget after bounded host work (docs/sdk.md,
/// "Limits").
pub const BYTES_PER_INSTRUCTION: u64 = 4;

/// The watchdog charge of a command moving `bytes`.
pub fn command_cost(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_INSTRUCTION)
}

impl Runtime for Services<'_> {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        match Command::decode(hpu) {
            Some(cmd) => self.execute(hpu, cmd),
            None => Ecall::Unknown,
        }
    }
}

impl Services<'_> {
    /// Carry out one decoded command for the handler on `hpu`.
    pub(super) fn execute(&mut self, hpu: &mut Hpu, cmd: Command) -> Ecall {
        let now = self.now(hpu);
        match cmd {
            Command::Exit { status, reason } => {
                if status != 0 && reason != 0 {
                    self.ctl.exit_reason = Some(c_string(hpu, reason));
                }
                Ecall::Exit(status)
            }
            Command::Write { fd, buf, len } => {
                if fd != 1 && fd != 2 {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::BadFd,
                        err::INVAL,
                        None,
                        format!("fd {fd}"),
                    );
                }
                // One write holds at most one ring's worth; the ring keeps
                // the newest `output_buffer` bytes of the ECTX.
                let cap = self.core.cfg.output_buffer;
                let keep = len.min(cap);
                let Some(bytes) = read(hpu, buf.wrapping_add(len - keep), keep) else {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(buf as u64),
                        nic_range("write buffer", buf, len),
                    );
                };
                self.charge(hpu, keep as u64);
                let (ectx, msg_id) = (self.ectx, self.msg_id());
                let rec = OutputRecord {
                    time_ps: now,
                    ectx,
                    msg_id,
                    hpu: self.ctl.gid as u32,
                    bytes,
                };
                let dropped = (len - keep) as u64 + self.cu.write_output(rec, cap as usize);
                if dropped > 0 {
                    *self.core.stats.output_dropped.entry(ectx).or_default() += dropped;
                }
                ret(hpu, len as i32)
            }
            Command::ClusterDma { src, dst, len } => {
                if len == 0 {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::EmptyDma,
                        err::INVAL,
                        Some(src as u64),
                        "length 0".into(),
                    );
                }
                let Some(data) = read(hpu, src, len) else {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(src as u64),
                        nic_range("cluster DMA source", src, len),
                    );
                };
                if hpu.mem.check(dst, len, Perm::W).is_err() {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(dst as u64),
                        nic_range("cluster DMA destination", dst, len),
                    );
                }
                self.charge(hpu, len as u64);
                let c = &*self.core;
                let (_, done) =
                    self.cu
                        .links
                        .cluster_dma(&c.cfg, c.ppc, self.ctl.cluster, now, len);
                self.issue(hpu, "cluster dma", done, Effect::Nic { addr: dst, data })
            }
            Command::Send { data, len } => self.send(hpu, now, 0, data, len),
            Command::RdmaPut { dest, data, len } => self.send(hpu, now, dest, data, len),
            Command::DmaToHost {
                host,
                nic,
                len,
                event: _,
            } => {
                // generate_event: host notifications are the notify commands.
                if !self.host_ok(host, len) {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::HostDmaWindow,
                        err::ACCESS,
                        Some(host),
                        self.window_text(host, len),
                    );
                }
                let Some(data) = read(hpu, nic, len) else {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(nic as u64),
                        nic_range("host DMA source", nic, len),
                    );
                };
                self.charge(hpu, len as u64);
                self.core.stats.dma_to_host_bytes += len as u64;
                let done = self.pcie(now, len);
                self.issue(
                    hpu,
                    "dma to host",
                    done,
                    Effect::HostWrite {
                        addr: host,
                        data,
                        direct: None,
                    },
                )
            }
            Command::DmaFromHost { host, nic, len } => {
                if !self.host_ok(host, len) {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::HostDmaWindow,
                        err::ACCESS,
                        Some(host),
                        self.window_text(host, len),
                    );
                }
                if hpu.mem.check(nic, len, Perm::W).is_err() {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(nic as u64),
                        nic_range("host DMA destination", nic, len),
                    );
                }
                self.charge(hpu, len as u64);
                self.core.stats.dma_from_host_bytes += len as u64;
                // A read: the request crosses PCIe, then the data comes back.
                let done = self.pcie(now, len) + self.core.ns(self.core.cfg.host.latency_ns);
                self.issue(
                    hpu,
                    "dma from host",
                    done,
                    Effect::FromHost { host, nic, len },
                )
            }
            Command::WriteToHost { host, value } => {
                if !self.host_ok(host, 8) {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::HostWriteWindow,
                        err::ACCESS,
                        Some(host),
                        self.window_text(host, 8),
                    );
                }
                self.charge(hpu, 8);
                let done = self.pcie(now, 8);
                self.issue(
                    hpu,
                    "host write",
                    done,
                    Effect::HostWrite {
                        addr: host,
                        data: value.to_le_bytes().to_vec(),
                        direct: Some((value, self.msg_id())),
                    },
                )
            }
            Command::CmdWait { id } => {
                if self.settle(hpu, id) {
                    return ret(hpu, 0);
                }
                self.ctl.wait = Some(id);
                Ecall::Suspend
            }
            Command::CmdTest { id } => {
                let done = self.settle(hpu, id);
                ret(hpu, done as i32)
            }
            Command::NotifyPost {
                data,
                len,
                host_ref,
            } => {
                if len > 64 {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NotifyTooLong,
                        err::INVAL,
                        None,
                        format!("{len} bytes"),
                    );
                }
                let Some(bytes) = read(hpu, data, len) else {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::NicAccess,
                        err::ACCESS,
                        Some(data as u64),
                        nic_range("notification", data, len),
                    );
                };
                self.charge(hpu, len as u64);
                let ectx = self.ectx;
                let ring = self.core.cfg.notify_ring;
                let Some(id) = self.notify.post(ectx, self.ctl.gid, self.ctl.gen, ring) else {
                    return ret(hpu, err::BUSY);
                };
                self.ctl.notifies += 1;
                // The request is a DMA write into the host's ring.
                let t = self.pcie(now, len + 16);
                self.notify.publish(Notification {
                    id,
                    ectx,
                    hpu: self.ctl.gid as u32,
                    time_ps: t,
                    data: bytes,
                    host_ref,
                });
                self.core.at(t, Ev::NotifyVisible);
                ret(hpu, id as i32)
            }
            // Both give the answer in a1 (low) and a2 (high); a0 is the
            // status. Ids belong to the task that posted them (ECTX, HPU and
            // task generation), so no other handler can see or consume them.
            Command::NotifyWait { id } | Command::NotifyTest { id } => {
                let wait = matches!(cmd, Command::NotifyWait { .. });
                let (ectx, gid, gen) = (self.ectx, self.ctl.gid, self.ctl.gen);
                match self.notify.owned_by(id, ectx, gid, gen) {
                    Some(response) => match response {
                        Some(v) => {
                            self.notify.remove(id);
                            self.ctl.notifies = self.ctl.notifies.saturating_sub(1);
                            hpu.set_reg(abi::A1, v as u32);
                            hpu.set_reg(abi::A2, (v >> 32) as u32);
                            ret(hpu, if wait { 0 } else { 1 })
                        }
                        None if wait => {
                            self.ctl.wait_notify = Some(id);
                            Ecall::Suspend
                        }
                        None => ret(hpu, 0),
                    },
                    None => self.reject(
                        hpu,
                        now,
                        Rejected::NotifyId,
                        err::NOENT,
                        None,
                        format!("id {id}"),
                    ),
                }
            }
            Command::PushCounter { index, value } => {
                let limit = self.core.cfg.counters_per_ectx;
                if index >= limit {
                    return self.reject(
                        hpu,
                        now,
                        Rejected::CounterIndex,
                        err::INVAL,
                        None,
                        format!("index {index}, counters_per_ectx = {limit}"),
                    );
                }
                self.cu.push_counter(self.ectx, index, value);
                ret(hpu, 0)
            }
        }
    }

    /// The message of the task on this HPU.
    fn msg_id(&self) -> u32 {
        self.sched
            .task_of(self.ctl.task)
            .map_or(0, |t| t.her.msg_id)
    }

    /// Refuse a command: the handler gets `code` in a0 and goes on; the
    /// refusal is an error with its cause, the handler, pc and message.
    #[allow(clippy::too_many_arguments)]
    fn reject(
        &mut self,
        hpu: &mut Hpu,
        now: u64,
        why: Rejected,
        code: i32,
        addr: Option<u64>,
        detail: String,
    ) -> Ecall {
        let (ectx, msg_id) = (self.ectx, self.msg_id());
        let kind = self
            .sched
            .task_of(self.ctl.task)
            .map_or(HandlerKind::Payload, |t| t.kind);
        let handler = self.core.ectx(ectx).spec_symbol(kind);
        let site = Site {
            handler,
            pc: hpu.pc,
            hpu: self.ctl.gid as u32,
        };
        self.core.record_error(
            self.mpq,
            now,
            ectx,
            msg_id,
            ErrorCause::Rejected(why),
            Some(site),
            addr,
            Some(detail),
        );
        if let Some(t) = self.sched.task_of(self.ctl.task) {
            self.pkt.mark_failed(t.her.slot);
        }
        ret(hpu, code)
    }

    /// "host range A+N bytes; host window B+S" for a rejected host access.
    fn window_text(&self, host: u64, len: u32) -> String {
        let (b, s) = self.core.ectx(self.ectx).spec.host_window;
        format!("host range 0x{host:x}+{len} bytes; host window 0x{b:x}+0x{s:x}")
    }

    /// NIC send (`spin_send_packet`, dest 0) or RDMA put: out at line rate.
    /// A packet is at most one packet slot (`pkt_slot_size`), the largest
    /// the NIC receives.
    fn send(&mut self, hpu: &mut Hpu, now: u64, dest: u32, data: u32, len: u32) -> Ecall {
        let slot = self.core.cfg.pkt_slot_size;
        if len > slot {
            return self.reject(
                hpu,
                now,
                Rejected::SendTooLarge,
                err::INVAL,
                Some(data as u64),
                format!("{len} bytes, pkt_slot_size = {slot}"),
            );
        }
        let Some(bytes) = read(hpu, data, len) else {
            return self.reject(
                hpu,
                now,
                Rejected::NicAccess,
                err::ACCESS,
                Some(data as u64),
                nic_range("send buffer", data, len),
            );
        };
        self.charge(hpu, len as u64);
        let done = self.cu.links.nic_send(&self.core.cfg, now, len);
        self.issue(hpu, "nic send", done, Effect::Send { dest, data: bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostLink;

    /// 1 GHz, 400 Gbit/s line, PCIe at 100 Gbit/s and 250 ns, 64-byte DMA
    /// beats, a 32-byte interconnect, 10 cycles of DMA latency.
    fn cfg() -> NicConfig {
        NicConfig {
            line_rate_gbps: 400.0,
            host: HostLink {
                latency_ns: 250,
                bandwidth_gbps: 100.0,
            },
            dma_width_bits: 512,
            interconnect_bits: 256,
            dma_latency_cycles: 10,
            ..NicConfig::default()
        }
    }

    #[test]
    fn nic_sends_serialise_at_line_rate_and_queue_back_to_back() {
        let cfg = cfg();
        let mut l = Links::new(&cfg);
        // 1000 bytes = 8000 bits at 400 Gbit/s: 20 ns.
        assert_eq!(l.nic_send(&cfg, 0, 1000), 20_000);
        // Issued at the same time: it starts when the first is out.
        assert_eq!(l.nic_send(&cfg, 0, 1000), 40_000);
        // Issued after the link went idle: from its own issue time.
        assert_eq!(l.nic_send(&cfg, 100_000, 500), 110_000);
    }

    #[test]
    fn pcie_adds_serialisation_and_latency() {
        let cfg = cfg();
        let mut l = Links::new(&cfg);
        // 1000 bytes at 100 Gbit/s: 80 ns on the link, then 250 ns.
        assert_eq!(l.pcie(&cfg, 0, 1000), 80_000 + 250_000);
        // The second waits for the link, not for the first's latency.
        assert_eq!(l.pcie(&cfg, 0, 1000), 160_000 + 250_000);
        // NIC sends do not share PCIe.
        assert_eq!(l.nic_send(&cfg, 0, 1000), 20_000);
    }

    #[test]
    fn cluster_dma_is_pipelined_and_shares_the_interconnect() {
        let cfg = cfg();
        let ppc = cfg.ps_per_cycle();
        assert_eq!(ppc, 1000);
        let mut l = Links::new(&cfg);
        // 640 bytes: 10 beats of 64 bytes, done after 10 + 10 cycles; it
        // holds its DMA engine 10 cycles and the interconnect 640 / 32 = 20.
        assert_eq!(l.cluster_dma(&cfg, ppc, 0, 0, 640), (0, 20_000));
        // Same cluster, same time: behind the interconnect (20 cycles).
        assert_eq!(l.cluster_dma(&cfg, ppc, 0, 0, 640), (20_000, 40_000));
        // Another cluster too: the interconnect is shared.
        assert_eq!(
            l.cluster_dma(&cfg, ppc, 1, 0, 64),
            (40_000, 40_000 + 11_000)
        );
        // Later than every path is free: no wait.
        assert_eq!(l.cluster_dma(&cfg, ppc, 2, 100_000, 1), (100_000, 111_000));
    }

    #[test]
    fn output_rings_keep_the_newest_bytes_per_ectx() {
        let mut cu = CommandUnit::new(&cfg());
        let rec = |ectx, t, n: usize| OutputRecord {
            time_ps: t,
            ectx,
            msg_id: 0,
            hpu: 0,
            bytes: vec![t as u8; n],
        };
        assert_eq!(cu.write_output(rec(0, 1, 6), 10), 0);
        assert_eq!(cu.write_output(rec(1, 2, 6), 10), 0, "rings are per ECTX");
        // 6 + 6 > 10: the oldest 2 bytes of ECTX 0 go.
        assert_eq!(cu.write_output(rec(0, 3, 6), 10), 2);
        let got: Vec<(u64, usize)> = cu
            .output()
            .iter()
            .map(|r| (r.time_ps, r.bytes.len()))
            .collect();
        assert_eq!(got, [(1, 4), (2, 6), (3, 6)]);
        cu.push_counter(0, 3, 5);
        cu.push_counter(0, 3, 7);
        cu.push_counter(1, 0, 1);
        assert_eq!(cu.counters(0), [(3, 12, 2)]);
        cu.forget_ectx(0);
        assert!(cu.counters(0).is_empty());
        assert_eq!(cu.drain_output().len(), 1);
    }
}
