//! A debugger's hold on the HPUs (`softspin sim --gdb`, docs/debugging.md):
//! the engine asks an [`HpuDebugger`] before each quantum (and, while it
//! wants single instructions, before each instruction) whether an HPU must
//! stop; a stop is a call that returns when the debugger resumes. NIC time
//! does not advance during the call, and single steps charge exactly what
//! a quantum would, so a run's results do not depend on the debugger.

use super::*;
use softspin_hpu::mem::AccessError;

/// What the engine asks of a debugger (implemented by the CLI's GDB stub).
pub trait HpuDebugger {
    /// Whether HPU `hpu` must stop before executing the instruction at
    /// `pc` (a breakpoint, or a single step that has just run).
    fn should_stop(&mut self, hpu: usize, pc: u32) -> bool;
    /// Whether HPU `hpu` must run one instruction at a time so that
    /// [`HpuDebugger::should_stop`] sees every pc (breakpoints are set, or
    /// a step is pending). Otherwise it runs whole quanta.
    fn stepping(&self, hpu: usize) -> bool;
    /// HPU `hpu` stopped: inspect and change the HPUs, give them back and
    /// say how to go on. NIC time stands still until this returns. (The
    /// HPUs are lent by value so a debugger may keep them in a protocol
    /// stub's target while it serves requests.)
    fn stopped(&mut self, hpus: DebugHpus, hpu: usize) -> (DebugHpus, Resume);
    /// The run ended with this exit status (called by the embedding on the
    /// debugger it detached at the end).
    fn finished(&mut self, _status: u8) {}
}

/// How a stopped run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Run on, asking the debugger again.
    Go,
    /// Run on without the debugger.
    Detach,
    /// The debugger killed the run: it goes on without the debugger and
    /// [`Engine::debug_killed`] says so, for the embedding to report.
    Kill,
}

/// The HPUs as a debugger sees them while the run is stopped.
pub struct DebugHpus {
    slots: Vec<Slot>,
    now_ps: u64,
}

impl DebugHpus {
    /// Number of HPUs (global ids 0..len).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// NIC time of the stop.
    pub fn now_ps(&self) -> u64 {
        self.now_ps
    }

    /// HPU `h`'s registers x0..x31.
    pub fn regs(&self, h: usize) -> [u32; 32] {
        let mut r = [0; 32];
        r.copy_from_slice(self.slots[h].hpu.regs());
        r
    }

    pub fn pc(&self, h: usize) -> u32 {
        self.slots[h].hpu.pc
    }

    /// Set register `r` (1..32; x0 stays 0).
    pub fn set_reg(&mut self, h: usize, r: usize, v: u32) {
        self.slots[h].hpu.set_reg(r, v);
    }

    /// A pc that is not code faults the handler when it runs on.
    pub fn set_pc(&mut self, h: usize, pc: u32) {
        self.slots[h].hpu.pc = pc;
    }

    /// HPU `h`, its cluster and what it does (for `info threads`).
    pub fn describe(&self, h: usize) -> String {
        let s = &self.slots[h];
        let what = match (s.ctl.state, s.ctl.mapped_ectx) {
            (HpuState::Idle, _) | (_, None) => "idle".to_string(),
            (st, Some(e)) => format!("ECTX {e}, {st:?}"),
        };
        format!("HPU {h} cluster {}: {what}", s.ctl.cluster)
    }

    /// Whether HPU `h` runs a task (its registers belong to a handler).
    pub fn busy(&self, h: usize) -> bool {
        self.slots[h].ctl.state != HpuState::Idle
    }

    /// Read memory as HPU `h` sees it: its task's windows (readable or
    /// code); anything else is an error.
    pub fn read(&self, h: usize, addr: u32, out: &mut [u8]) -> Result<(), AccessError> {
        self.slots[h].hpu.mem.peek(addr, out)
    }

    /// Write memory HPU `h` may write.
    pub fn write(&self, h: usize, addr: u32, data: &[u8]) -> Result<(), AccessError> {
        self.slots[h].hpu.mem.write_bytes(addr, data)
    }
}

/// The attached debugger and what stepping needs.
pub(super) struct Debug {
    hook: Box<dyn HpuDebugger>,
    /// Per program run by some HPU, its copy without superinstructions.
    unfused: Vec<(Arc<Program>, Arc<Program>)>,
}

impl Engine {
    /// Attach a debugger and stop at once (HPU 0), so it can set
    /// breakpoints before anything runs.
    pub fn attach_debugger(&mut self, hook: Box<dyn HpuDebugger>) {
        self.debug = Some(Debug {
            hook,
            unfused: Vec::new(),
        });
        self.debug_stop(0);
    }

    /// Take the debugger off (the run goes on at full speed).
    pub fn detach_debugger(&mut self) -> Option<Box<dyn HpuDebugger>> {
        self.debug.take().map(|d| d.hook)
    }

    /// Whether a debugger killed the run ([`Resume::Kill`]).
    pub fn debug_killed(&self) -> bool {
        self.debug_killed
    }

    /// Call the debugger for a stop of HPU `h`.
    fn debug_stop(&mut self, h: usize) {
        let Some(d) = &mut self.debug else { return };
        let hpus = DebugHpus {
            slots: std::mem::take(&mut self.hpus),
            now_ps: self.core.now,
        };
        let (hpus, resume) = d.hook.stopped(hpus, h);
        self.hpus = hpus.slots;
        match resume {
            Resume::Go => {}
            Resume::Detach => self.debug = None,
            Resume::Kill => {
                self.debug = None;
                self.debug_killed = true;
            }
        }
    }

    /// A quantum of HPU `h` under the debugger: whole when it wants no
    /// single steps, else instruction by instruction, stopping where it
    /// says. After a stop, one instruction runs before the next check, so
    /// a resumed HPU leaves its breakpoint. Steps end the quantum where
    /// `run` would: at the first block entry at or past `until`.
    pub(super) fn run_hpu_debug(&mut self, h: usize, ectx: EctxId, until: u64) -> Stop {
        // A quantum starts as a block does.
        let mut entry = true;
        loop {
            let Some(d) = &mut self.debug else {
                return self.run_hpu_slice(h, ectx, until, None);
            };
            if d.hook.should_stop(h, self.hpus[h].hpu.pc) {
                self.debug_stop(h);
                if self.debug.is_none() {
                    let stop = self.run_hpu_slice(h, ectx, until, None);
                    return self.debug_returned(h, stop);
                }
                let stop = self.run_hpu_slice(h, ectx, until, Some(&mut entry));
                if stop != Stop::SliceEnd {
                    return self.debug_returned(h, stop);
                }
                continue;
            }
            // As in `run`: the watchdog first (the step faults), then the
            // slice.
            let hpu = &self.hpus[h].hpu;
            if entry && hpu.cycles >= until && hpu.instret < hpu.instret_limit {
                return Stop::SliceEnd;
            }
            // Mid-block, steps go on to the block's end before a whole
            // quantum runs: `run` checks the slice and watchdog only there.
            let step = !entry || self.debug.as_ref().is_some_and(|d| d.hook.stepping(h));
            let stop = if step {
                self.run_hpu_slice(h, ectx, until, Some(&mut entry))
            } else {
                self.run_hpu_slice(h, ectx, until, None)
            };
            if !step || stop != Stop::SliceEnd {
                return self.debug_returned(h, stop);
            }
        }
    }

    /// A handler that returned stops at its return address if the debugger
    /// wants (gdb's `finish` breaks there); it ends whatever gdb does.
    fn debug_returned(&mut self, h: usize, stop: Stop) -> Stop {
        if stop == Stop::Returned {
            let pc = self.hpus[h].hpu.pc;
            if let Some(d) = &mut self.debug {
                if d.hook.should_stop(h, pc) {
                    self.debug_stop(h);
                }
            }
        }
        stop
    }

    /// Run HPU `h` to `until` (interpreted), or one instruction (`step`:
    /// whether it starts a block, updated to whether the next one does).
    fn run_hpu_slice(
        &mut self,
        h: usize,
        ectx: EctxId,
        until: u64,
        step: Option<&mut bool>,
    ) -> Stop {
        let Slot { hpu, ctl, program } = &mut self.hpus[h];
        let prog = program.as_ref().expect("start_task set the program");
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
        let Some(entry) = step else {
            return hpu.run(prog, &mut svc, until);
        };
        let d = self.debug.as_mut().expect("stepping under a debugger");
        let unfused = match d.unfused.iter().find(|(p, _)| Arc::ptr_eq(p, prog)) {
            Some((_, u)) => u.clone(),
            None => {
                let u = Arc::new(prog.unfused());
                d.unfused.push((prog.clone(), u.clone()));
                u
            }
        };
        let pc = hpu.pc;
        let stop = hpu.step(&unfused, &mut svc, *entry);
        *entry = unfused.ends_block_at(pc);
        stop
    }
}
