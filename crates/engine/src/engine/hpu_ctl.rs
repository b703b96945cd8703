//! HPU control, the HPU driver's part of the model (seed 001 §3.2.2): running
//! handlers in quanta, handler end and faults, task completion feedback, and
//! resuming HPUs suspended in a service.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum HpuState {
    Idle,
    Running,
    /// Suspended in a service (command wait, command slots full).
    Blocked,
    /// Handler done, waiting for its commands.
    Draining,
    /// Task complete; the runtime's doorbell store is under way.
    Closing,
}

/// What an HPU is doing besides interpreting.
pub(super) struct HpuCtl {
    pub(super) gid: usize,
    pub(super) cluster: usize,
    pub(super) state: HpuState,
    pub(super) task: Option<usize>,
    pub(super) gen: u64,
    /// Task start: local time = t0 + (cycles - c0) * ps_per_cycle.
    pub(super) t0: u64,
    pub(super) c0: u64,
    pub(super) i0: u64,
    pub(super) ld0: u64,
    pub(super) st0: u64,
    pub(super) mem0: [u64; 5],
    pub(super) busy_since: u64,
    pub(super) busy_ps: u64,
    pub(super) cmds: Vec<Cmd>,
    pub(super) next_cmd: u32,
    pub(super) wait: Option<u32>,
    /// Waiting for the host's answer to this notification.
    pub(super) wait_notify: Option<u32>,
    /// A command issued while all slots were busy.
    pub(super) deferred: Option<(Cmd, u64)>,
    /// The ECTX whose windows are mapped (they persist between its tasks).
    pub(super) mapped_ectx: Option<EctxId>,
    pub(super) stdout: Vec<u8>,
}

pub(super) struct Slot {
    pub(super) hpu: Hpu,
    pub(super) ctl: HpuCtl,
}

impl Engine {
    pub(super) fn local_ps(core: &Core, slot: &Slot) -> u64 {
        slot.ctl.t0 + (slot.hpu.cycles - slot.ctl.c0) * core.ppc
    }

    pub(super) fn run_hpu(&mut self, h: usize) {
        let t = self.hpus[h].ctl.task.unwrap();
        let ectx = self.core.tasks[t].as_ref().unwrap().her.ectx;
        let prog = self.core.ectx(ectx).program.clone();
        let quantum = self.core.cfg.quantum_cycles as u64;
        let Slot { hpu, ctl } = &mut self.hpus[h];
        // Don't run ahead of the event being processed.
        let behind = self.core.now.saturating_sub(ctl.t0 + (hpu.cycles - ctl.c0) * self.core.ppc);
        hpu.cycles += behind / self.core.ppc;
        let until = hpu.cycles + quantum;
        let mut svc = CommandUnit { core: &mut self.core, ctl, ectx };
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
    pub(super) fn handler_end(&mut self, h: usize, t: u64, fault: Option<Fault>) {
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
            self.core.record_error(ectx, sym.clone(), crate::stats::ErrorCause::Fault(f.kind), f.pc, f.addr, h as u32);
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
    pub(super) fn task_done(&mut self, h: usize, t: u64) {
        let free_at = t + self.core.cycles(self.core.cfg.doorbell_cycles as u64);
        let ctl = &mut self.hpus[h].ctl;
        ctl.gen += 1;
        ctl.state = HpuState::Closing;
        let gen = ctl.gen;
        self.core.at(free_at, Ev::HpuFree { hpu: h, gen });
    }

    pub(super) fn on_hpu_free(&mut self, h: usize) {
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

    pub(super) fn on_completion(&mut self, tid: usize) {
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
}

/// Wake a suspended HPU at the current time with service results in a0...
pub(super) fn resume(hpu: &mut Hpu, ctl: &mut HpuCtl, core: &mut Core, results: &[u32]) {
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
