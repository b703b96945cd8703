//! HPU control, the HPU driver's part of the model (seed 001 §3.2.2): running
//! handlers in quanta, handler end and faults, task completion feedback, and
//! resuming HPUs suspended in a service.

use super::*;
use crate::stats::ErrorCause;
use softspin_hpu::TimingModel;

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
    /// Watchdog instructions the task's commands were charged
    /// (`command_cost`), taken off `Hpu::instret_limit`.
    pub(super) charged: u64,
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
    /// While Blocked: when the wait's limit (`wait_limit_ns`) passes.
    pub(super) wait_deadline: u64,
    /// A `WaitLimit` event for this HPU is queued (at most one: a stale
    /// one moves to the current deadline, so the queue stays small).
    pub(super) limit_armed: bool,
    /// Notifications this task posted that are not collected yet (purged
    /// when the task ends, so they cannot fill the ECTX's ring).
    pub(super) notifies: u32,
    /// The text an `exit` passed (the SDK's assert message).
    pub(super) exit_reason: Option<String>,
}

impl HpuCtl {
    /// HPU `gid` of cluster `cluster`, idle, before its first task.
    pub(super) fn new(gid: usize, cluster: usize) -> HpuCtl {
        HpuCtl {
            gid,
            cluster,
            state: HpuState::Idle,
            task: None,
            gen: 0,
            t0: 0,
            c0: 0,
            i0: 0,
            charged: 0,
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
            wait_deadline: 0,
            limit_armed: false,
            notifies: 0,
            exit_reason: None,
        }
    }

    /// The HPU's local NIC time: task start plus the cycles run since.
    pub(super) fn local_ps(&self, hpu: &Hpu, ppc: u64) -> u64 {
        self.t0 + (hpu.cycles - self.c0) * ppc
    }
}

/// How a handler ended.
pub(super) enum End {
    Returned,
    Fault(Fault),
    /// `exit(status != 0)`, `abort()` or a failed `assert` at `pc`.
    Aborted {
        status: i32,
        pc: u32,
    },
    /// A wait outlasted `wait_limit_ns` (the `ecall` at `pc`).
    WaitTimeout {
        pc: u32,
    },
}

/// An HPU's core state (registers, address space: 3.4 KB), made when
/// first used: an engine per simulated NIC (issue 29) whose traffic keeps
/// a few HPUs busy pays for those only. Reads and writes go through
/// `Deref`, so the engine uses it as the `Hpu` it holds.
pub(super) struct LazyHpu {
    hpu: std::cell::OnceCell<Box<Hpu>>,
    timing: Arc<TimingModel>,
}

impl LazyHpu {
    pub(super) fn new(timing: Arc<TimingModel>) -> LazyHpu {
        LazyHpu {
            hpu: std::cell::OnceCell::new(),
            timing,
        }
    }

    fn make(&self) -> Box<Hpu> {
        let mut hpu = Hpu::new(&self.timing);
        hpu.return_addr = softspin_hpu::hpu::DEFAULT_RETURN_ADDR;
        Box::new(hpu)
    }
}

impl std::ops::Deref for LazyHpu {
    type Target = Hpu;
    fn deref(&self) -> &Hpu {
        self.hpu.get_or_init(|| self.make())
    }
}

impl std::ops::DerefMut for LazyHpu {
    fn deref_mut(&mut self) -> &mut Hpu {
        if self.hpu.get().is_none() {
            let h = self.make();
            let _ = self.hpu.set(h);
        }
        self.hpu.get_mut().expect("set above")
    }
}

pub(super) struct Slot {
    pub(super) hpu: LazyHpu,
    pub(super) ctl: HpuCtl,
    /// The program of the ECTX whose windows are mapped (`mapped_ectx`),
    /// held here so a quantum borrows it instead of counting a reference
    /// up and down (two atomic operations per quantum).
    pub(super) program: Option<Arc<Program>>,
}

impl Slot {
    /// HPU `gid` of cluster `cluster`, its core made on first use.
    pub(super) fn new(timing: Arc<TimingModel>, gid: usize, cluster: usize) -> Slot {
        Slot {
            hpu: LazyHpu::new(timing),
            ctl: HpuCtl::new(gid, cluster),
            program: None,
        }
    }
}

impl Engine {
    pub(super) fn local_ps(core: &Core, slot: &Slot) -> u64 {
        slot.ctl.local_ps(&slot.hpu, core.ppc)
    }

    /// `Ev::HpuRun`: run the HPU's next quantum, unless its task moved on
    /// (another generation) or it stopped running (a wait, its end).
    pub(super) fn on_hpu_run(&mut self, h: usize, gen: u64) {
        let ctl = &self.hpus[h].ctl;
        if ctl.gen == gen && ctl.state == HpuState::Running {
            self.run_hpu(h);
        }
    }

    pub(super) fn run_hpu(&mut self, h: usize) {
        let t = self.hpus[h].ctl.task.unwrap();
        let ectx = self.sched.task(t).her.ectx;
        let quantum = self.core.cfg.quantum_cycles as u64;
        let Slot { hpu, ctl, program } = &mut self.hpus[h];
        let prog = program.as_deref().expect("start_task set the program");
        // Don't run ahead of the event being processed.
        let behind = self
            .core
            .now
            .saturating_sub(ctl.t0 + (hpu.cycles - ctl.c0) * self.core.ppc);
        hpu.cycles += behind / self.core.ppc;
        let until = hpu.cycles + quantum;
        if self.debug.is_some() {
            let stop = self.run_hpu_debug(h, ectx, until);
            return self.hpu_stopped(h, stop);
        }
        let mut svc = Services {
            core: &mut self.core,
            cu: &mut self.cu,
            notify: &mut self.notify,
            sched: &self.sched,
            pkt: &mut self.pkt,
            mpq: &mut self.mpq,
            ctl,
            ectx,
        };
        #[cfg(feature = "jit")]
        let stop = match &mut self.jits {
            Some(jits) => {
                if jits.len() <= ectx {
                    jits.resize_with(ectx + 1, || None);
                }
                let arc = program.as_ref().expect("start_task set the program");
                // A new JIT when the ECTX's program is not the one compiled.
                if !jits[ectx]
                    .as_ref()
                    .is_some_and(|(p, _)| Arc::ptr_eq(p, arc))
                {
                    let jit = softspin_hpu::jit::Jit::new(prog, hpu.timing())
                        .compile_after(self.jit_after);
                    jits[ectx] = Some((arc.clone(), jit));
                }
                let (_, jit) = jits[ectx].as_mut().unwrap();
                hpu.run_jit(prog, jit, &mut svc, until)
            }
            None => hpu.run(prog, &mut svc, until),
        };
        #[cfg(not(feature = "jit"))]
        let stop = hpu.run(prog, &mut svc, until);
        self.hpu_stopped(h, stop);
    }

    /// What follows a quantum that ended with `stop`.
    fn hpu_stopped(&mut self, h: usize, stop: Stop) {
        let local = Self::local_ps(&self.core, &self.hpus[h]);
        match stop {
            Stop::SliceEnd => {
                let gen = self.hpus[h].ctl.gen;
                self.core.at(local, Ev::HpuRun { hpu: h as u32, gen });
            }
            Stop::Suspended => {
                // Every wait is bounded in NIC time (`wait_limit_ns`).
                let ctl = &mut self.hpus[h].ctl;
                ctl.state = HpuState::Blocked;
                ctl.wait_deadline = local.saturating_add(self.core.ns(self.core.cfg.wait_limit_ns));
                if !ctl.limit_armed {
                    ctl.limit_armed = true;
                    let t = ctl.wait_deadline;
                    self.core.at(t, Ev::WaitLimit { hpu: h as u32 });
                }
            }
            Stop::Returned | Stop::Exit(0) => self.handler_end(h, local, End::Returned),
            // The pc after the exit `ecall` (4 bytes: there is no compressed ecall).
            Stop::Exit(status) => self.handler_end(
                h,
                local,
                End::Aborted {
                    status,
                    pc: self.hpus[h].hpu.pc.wrapping_sub(4),
                },
            ),
            Stop::Fault(f) => self.handler_end(h, local, End::Fault(f)),
        }
    }

    /// A wait's limit passed: if the HPU still waits in that same wait, the
    /// handler is ended ("wait timeout"); its commands drain, then its HPU
    /// and packet slot are freed as for any task.
    // Rare next to the per-packet events: kept out of `Engine::step`.
    #[inline(never)]
    pub(super) fn on_wait_limit(&mut self, h: usize) {
        let now = self.core.now;
        let Slot { hpu, ctl, .. } = &mut self.hpus[h];
        ctl.limit_armed = false;
        // `run` dropped or moved the event unless this wait is due.
        if ctl.state != HpuState::Blocked || ctl.wait_deadline > now {
            return;
        }
        let local = ctl.t0 + (hpu.cycles - ctl.c0) * self.core.ppc;
        if now > local {
            hpu.cycles += (now - local).div_ceil(self.core.ppc);
        }
        ctl.wait = None;
        ctl.wait_notify = None;
        ctl.deferred = None;
        ctl.state = HpuState::Running;
        let pc = hpu.pc.wrapping_sub(4);
        let t = Self::local_ps(&self.core, &self.hpus[h]);
        self.handler_end(h, t, End::WaitTimeout { pc });
    }

    /// What a watchdog fault spent its budget on, and the settings that
    /// raise it (`HandlerError::detail`).
    fn watchdog_detail(&self, h: usize, ectx: EctxId) -> String {
        let budget = self.core.ectx(ectx).spec.watchdog;
        let charged = self.hpus[h].ctl.charged;
        format!(
            "budget of {budget} instructions, {charged} of them charged for commands (1 per {BYTES_PER_INSTRUCTION} bytes moved); \
             raise it with --watchdog (scenario key `watchdog`, host API EctxOptions::watchdog)"
        )
    }

    /// The handler stopped (returned, faulted, aborted or timed out in a
    /// wait) at local time `t`.
    pub(super) fn handler_end(&mut self, h: usize, t: u64, end: End) {
        let tid = self.hpus[h].ctl.task.unwrap();
        let task = self.sched.task(tid);
        let (ectx, kind, msg_id) = (task.her.ectx, task.kind, task.her.msg_id);
        let slot = &self.hpus[h];
        let counts = slot.hpu.mem.counts().by_class;
        let cyc = slot.hpu.cycles - slot.ctl.c0;
        let mem = [
            counts[0] - slot.ctl.mem0[0],
            counts[1] - slot.ctl.mem0[1],
            counts[2] - slot.ctl.mem0[2] + counts[3] - slot.ctl.mem0[3],
        ];
        let acc = &mut self.core.stats.handlers.entry(ectx)[kind as usize];
        acc.add(
            cyc,
            slot.hpu.instret - slot.ctl.i0,
            slot.hpu.loads - slot.ctl.ld0,
            slot.hpu.stores - slot.ctl.st0,
            mem,
        );
        // The handler's name only where an error or the timeline needs it
        // (not a string per task).
        let site = |core: &Core, pc: u32| {
            Some(Site {
                handler: core.ectx(ectx).spec_symbol(kind),
                pc,
                hpu: h as u32,
            })
        };
        let fault = match end {
            End::Returned => None,
            End::Fault(f) => {
                self.core.stats.handlers.entry(ectx)[kind as usize].faults += 1;
                // Stack overflow / missing scratchpad hints (scheduler.rs).
                let detail = if f.kind == softspin_hpu::FaultKind::Watchdog {
                    Some(self.watchdog_detail(h, ectx))
                } else {
                    self.fault_detail(h, ectx, &f)
                };
                let site = site(&self.core, f.pc);
                self.core.record_error(
                    &mut self.mpq,
                    t,
                    ectx,
                    msg_id,
                    ErrorCause::Fault(f.kind),
                    site,
                    Some(f.addr as u64),
                    detail,
                );
                Some(f.to_string())
            }
            End::Aborted { status, pc } => {
                let detail = match self.hpus[h].ctl.exit_reason.take() {
                    Some(r) => format!("status {status}: {r}"),
                    None => format!("status {status}"),
                };
                let site = site(&self.core, pc);
                self.core.record_error(
                    &mut self.mpq,
                    t,
                    ectx,
                    msg_id,
                    ErrorCause::Aborted { status },
                    site,
                    None,
                    Some(detail.clone()),
                );
                Some(format!("aborted, {detail}"))
            }
            End::WaitTimeout { pc } => {
                let limit = self.core.cfg.wait_limit_ns;
                let site = site(&self.core, pc);
                self.core.record_error(
                    &mut self.mpq,
                    t,
                    ectx,
                    msg_id,
                    ErrorCause::WaitTimeout,
                    site,
                    None,
                    Some(format!("waited {limit} ns (wait_limit_ns)")),
                );
                Some("wait timeout".to_string())
            }
        };
        if fault.is_some() {
            let slot = self.sched.task(tid).her.slot;
            self.pkt.mark_failed(slot);
        }
        if self.core.timeline.is_some() {
            let start = self.hpus[h].ctl.t0;
            let sym = self.core.ectx(ectx).spec_symbol(kind);
            let name = format!("{sym} msg {msg_id}");
            let args = serde_json::json!({"ectx": self.core.ectx(ectx).name(), "cycles": cyc, "fault": fault});
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
        if ctl.notifies > 0 {
            // Requests the task never collected die with it.
            self.notify.purge(h, ctl.gen);
            ctl.notifies = 0;
        }
        ctl.gen += 1;
        ctl.state = HpuState::Closing;
        let gen = ctl.gen;
        self.core.at(free_at, Ev::HpuFree { hpu: h as u32, gen });
    }

    /// `Ev::HpuFree`: the doorbell store of task generation `gen` is done.
    pub(super) fn on_hpu_free(&mut self, h: usize, gen: u64) {
        let ctl = &self.hpus[h].ctl;
        if ctl.gen != gen || ctl.state != HpuState::Closing {
            return;
        }
        let c = &mut self.core;
        let now = c.now;
        let ctl = &mut self.hpus[h].ctl;
        let tid = ctl.task.take().unwrap();
        ctl.state = HpuState::Idle;
        ctl.busy_ps += now - ctl.busy_since;
        c.busy_now -= 1;
        let cl = ctl.cluster;
        // Completion notification: through the cluster's arbiter, then on
        // to the MPQ engine.
        let t_cl = self.sched.hpu_free(cl, h, tid, now, c.ppc);
        let done = t_cl + c.ns(c.cfg.completion_ns);
        c.at(done, Ev::Completion { task: tid as u32 });
        // The freed HPU takes the next queued task of its cluster.
        self.assign(cl);
        if self.core.ectxs.len() > 1 {
            // The HPU share may have held tasks back in other clusters
            // while this task's ECTX had work; they may start now.
            for k in (0..self.sched.clusters()).filter(|&k| k != cl) {
                self.assign(k);
            }
        }
        self.kick_scheduler();
    }

    pub(super) fn on_completion(&mut self, tid: usize) {
        let task = self.sched.complete(tid);
        if let Some(e) = self.core.ectxs[task.her.ectx].as_mut() {
            e.tasks -= 1;
        }
        let m = task.mpq;
        let live = self.mpq.task_done(m, task.mpq_gen, task.kind);
        self.release_ref(task.her.slot);
        if live {
            if task.kind == HandlerKind::Completion {
                self.free_mpq(m, true);
                self.kick_scheduler();
                return;
            }
            self.mark_ready(m);
            self.maybe_finish_message(m);
        }
        self.kick_scheduler();
    }
}

/// HPU share (`max_hpu_share`): may ECTX `e` take one more task (at the
/// dispatcher) or HPU (in cluster `cl`)? Limited while another ECTX is
/// active or has messages in progress, so a lone tenant uses the whole
/// NIC. Handlers are not preempted, so the reserve must exist before
/// the other tenant's packets come. The dispatcher limit keeps one
/// tenant's queued tasks from filling the clusters' queues; the
/// per-cluster limit keeps HPUs free in every cluster, since a task
/// waits for an HPU of its own cluster.
pub(super) fn share_allows(
    c: &Core,
    sched: &Scheduler,
    hpus: &[Slot],
    e: EctxId,
    cl: Option<usize>,
) -> bool {
    let others_busy = c
        .ectxs
        .iter()
        .enumerate()
        .any(|(k, x)| k != e && x.as_ref().is_some_and(|x| x.active || x.open_messages > 0));
    if !others_busy {
        return true;
    }
    let share = c.cfg.max_hpu_share;
    match cl {
        None => {
            let limit = ((c.cfg.hpus() as f64 * share) as u64).max(1);
            (c.ectx(e).tasks as u64) < limit
        }
        Some(cl) => {
            let per = c.cfg.hpus_per_cluster as usize;
            let limit = ((per as f64 * share) as usize).max(1);
            let held = hpus[cl * per..(cl + 1) * per]
                .iter()
                .filter(|s| {
                    s.ctl
                        .task
                        .and_then(|t| sched.task_of(Some(t)))
                        .is_some_and(|t| t.her.ectx == e)
                })
                .count();
            held < limit
        }
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
    core.at(
        t,
        Ev::HpuRun {
            hpu: ctl.gid as u32,
            gen: ctl.gen,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{core, drain_events};
    use super::*;

    #[test]
    fn local_time_and_resume_after_a_stall() {
        let mut c = core(NicConfig::default());
        let ppc = c.ppc;
        assert_eq!(ppc, 1000, "PsPIN's 1 GHz");
        let mut hpu = Hpu::new(&c.cfg.hpu);
        let mut ctl = HpuCtl::new(9, 1);
        // Started at 1 us with the HPU's cycle counter at 40; 5 cycles run.
        ctl.t0 = 1_000_000;
        ctl.c0 = 40;
        hpu.cycles = 45;
        ctl.state = HpuState::Blocked;
        ctl.gen = 3;
        assert_eq!(ctl.local_ps(&hpu, ppc), 1_005_000);
        // The service answers at 1.0105 us: the HPU stalled until then,
        // rounded up to whole cycles (6), and runs on from there.
        c.now = 1_010_500;
        resume(&mut hpu, &mut ctl, &mut c, &[7, 8]);
        assert_eq!(hpu.cycles, 51);
        assert_eq!((hpu.reg(abi::A0), hpu.reg(abi::A0 + 1)), (7, 8));
        assert_eq!(ctl.state, HpuState::Running);
        assert_eq!(
            drain_events(&mut c),
            [(1_011_000, "HpuRun { hpu: 9, gen: 3 }".to_string())]
        );
        // Answered before its local time: no stall.
        c.now = 0;
        resume(&mut hpu, &mut ctl, &mut c, &[]);
        assert_eq!(hpu.cycles, 51);
    }
}
