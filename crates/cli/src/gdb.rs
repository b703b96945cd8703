//! `softspin sim --gdb [HOST]:PORT`: a GDB remote serial protocol stub for
//! handlers (docs/debugging.md). The packet layer is the `gdbstub` crate
//! (target description: `gdbstub_arch`'s riscv:rv32); this file is the
//! target: the NIC's HPUs, one GDB thread each (thread id = HPU id + 1),
//! behind the engine's `HpuDebugger` hook. The engine calls the hook where
//! an HPU may stop; while gdb holds it, NIC time stands still.
//!
//! `softspin isa run --gdb` (a bare-metal program on one HPU) is the
//! single-thread target [`BareGdb`] at the end, on the same connection
//! handling.

use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};

use anyhow::Context;
use gdbstub::common::{Signal, Tid};
use gdbstub::conn::ConnectionExt;
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::SingleThreadStopReason;
use gdbstub::stub::{DisconnectReason, GdbStub, MultiThreadStopReason};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::singlethread::{
    SingleThreadBase, SingleThreadResume, SingleThreadResumeOps, SingleThreadSingleStep,
    SingleThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::riscv::reg::RiscvCoreRegs;
use gdbstub_arch::riscv::Riscv32;
use softspin_engine::{DebugHpus, HpuDebugger, Resume};
use softspin_hpu::baremetal::DebugAction;
use softspin_hpu::{Hpu, TimingModel};

/// The HPUs as gdb's target. Holds the engine's HPUs only while the run is
/// stopped (`HpuDebugger::stopped` lends them).
struct Hpus {
    hpus: Option<DebugHpus>,
    count: usize,
    /// Set from gdb.
    breakpoints: BTreeSet<u32>,
    /// Handler entries (`--gdb-break`): gdb knows nothing of them, so a
    /// stop there is reported as a SIGTRAP, not as gdb's breakpoint (which
    /// gdb would take for one it removed, and resume).
    entries: BTreeSet<u32>,
    /// The HPU gdb asked to single-step with the last resume.
    step: Option<usize>,
}

fn tid(h: usize) -> Tid {
    Tid::new(h + 1).expect("h + 1 > 0")
}

impl Hpus {
    /// The HPU of thread `t`, if the run is stopped and it exists.
    fn get(&self, t: Tid) -> Result<(&DebugHpus, usize), TargetError<&'static str>> {
        let h = t.get() - 1;
        match &self.hpus {
            Some(hpus) if h < hpus.len() => Ok((hpus, h)),
            Some(_) => Err(TargetError::NonFatal),
            None => Err(TargetError::Fatal("the run is not stopped")),
        }
    }
}

impl Target for Hpus {
    type Arch = Riscv32;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Riscv32, &'static str> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for Hpus {
    fn read_registers(&mut self, regs: &mut RiscvCoreRegs<u32>, t: Tid) -> TargetResult<(), Self> {
        let (hpus, h) = self.get(t)?;
        regs.x = hpus.regs(h);
        regs.pc = hpus.pc(h);
        Ok(())
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u32>, t: Tid) -> TargetResult<(), Self> {
        self.get(t)?;
        let h = t.get() - 1;
        let hpus = self.hpus.as_mut().expect("checked by get");
        for (r, v) in regs.x.iter().enumerate() {
            hpus.set_reg(h, r, *v);
        }
        hpus.set_pc(h, regs.pc);
        Ok(())
    }

    fn read_addrs(&mut self, start: u32, data: &mut [u8], t: Tid) -> TargetResult<usize, Self> {
        let (hpus, h) = self.get(t)?;
        if hpus.read(h, start, data).is_ok() {
            return Ok(data.len());
        }
        // The part before the first byte outside the ECTX's windows.
        let mut n = 0;
        while n < data.len()
            && hpus
                .read(h, start.wrapping_add(n as u32), &mut data[n..n + 1])
                .is_ok()
        {
            n += 1;
        }
        if n == 0 {
            return Err(TargetError::NonFatal);
        }
        Ok(n)
    }

    fn write_addrs(&mut self, start: u32, data: &[u8], t: Tid) -> TargetResult<(), Self> {
        let (hpus, h) = self.get(t)?;
        hpus.write(h, start, data)
            .map_err(|_| TargetError::NonFatal)
    }

    fn list_active_threads(&mut self, active: &mut dyn FnMut(Tid)) -> Result<(), &'static str> {
        for h in 0..self.count {
            active(tid(h));
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadResume for Hpus {
    fn resume(&mut self) -> Result<(), &'static str> {
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), &'static str> {
        self.step = None;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        _: Tid,
        signal: Option<Signal>,
    ) -> Result<(), &'static str> {
        match signal {
            Some(_) => Err("HPUs take no signals"),
            None => Ok(()),
        }
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSchedulerLocking for Hpus {
    /// gdb steps one thread with the others held. A step holds them anyway
    /// (the stepped HPU stops after its instruction, before any other HPU
    /// runs); a continue cannot hold them: NIC time would have to stop for
    /// some HPUs and not others (docs/debugging.md, limits).
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), &'static str> {
        Ok(())
    }
}

impl MultiThreadSingleStep for Hpus {
    fn set_resume_action_step(
        &mut self,
        t: Tid,
        signal: Option<Signal>,
    ) -> Result<(), &'static str> {
        if signal.is_some() {
            return Err("HPUs take no signals");
        }
        self.step = Some(t.get() - 1);
        Ok(())
    }
}

impl Breakpoints for Hpus {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for Hpus {
    fn add_sw_breakpoint(&mut self, addr: u32, _: usize) -> TargetResult<bool, Self> {
        self.breakpoints.insert(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u32, _: usize) -> TargetResult<bool, Self> {
        Ok(self.breakpoints.remove(&addr))
    }
}

impl ThreadExtraInfo for Hpus {
    fn thread_extra_info(&self, t: Tid, buf: &mut [u8]) -> Result<usize, &'static str> {
        let Ok((hpus, h)) = self.get(t) else {
            return Ok(0);
        };
        let s = hpus.describe(h);
        let n = s.len().min(buf.len());
        buf[..n].copy_from_slice(&s.as_bytes()[..n]);
        Ok(n)
    }
}

/// Listen on `addr` (`[HOST]:PORT`, HOST defaults to 127.0.0.1, port 0
/// picks a free one), say where on stderr, and wait for gdb.
fn wait_for_gdb(addr: &str) -> anyhow::Result<TcpStream> {
    let addr = if addr.starts_with(':') {
        format!("127.0.0.1{addr}")
    } else {
        addr.to_string()
    };
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .with_context(|| format!("--gdb {addr}: expected [HOST]:PORT"))?
        .collect();
    let listener =
        TcpListener::bind(&addrs[..]).with_context(|| format!("--gdb {addr}: cannot listen"))?;
    let local = listener.local_addr()?;
    eprintln!("softspin: gdb: waiting for gdb on {local} (target remote {local})");
    let (conn, _) = listener
        .accept()
        .with_context(|| format!("--gdb {local}: accept"))?;
    conn.set_nodelay(true)?;
    Ok(conn)
}

type Machine = GdbStubStateMachine<'static, Hpus, TcpStream>;

/// One gdb connection serving the engine's debug hook.
pub struct GdbServer {
    target: Hpus,
    /// None once gdb is gone (detached, killed, disconnected).
    machine: Option<Machine>,
    /// The HPU whose single step runs (taken when it stops).
    stepping: Option<usize>,
}

impl GdbServer {
    /// Wait for gdb on `addr` ([`wait_for_gdb`]). HPUs stop
    /// at the handler entries `entries` (only checked where a quantum
    /// starts: a handler's first instruction always starts one).
    pub fn accept(addr: &str, hpus: usize, entries: BTreeSet<u32>) -> anyhow::Result<GdbServer> {
        let conn = wait_for_gdb(addr)?;
        let mut target = Hpus {
            hpus: None,
            count: hpus,
            breakpoints: BTreeSet::new(),
            entries,
            step: None,
        };
        let machine = GdbStub::new(conn)
            .run_state_machine(&mut target)
            .map_err(|e| anyhow::anyhow!("--gdb: {e}"))?;
        Ok(GdbServer {
            target,
            machine: Some(machine),
            stepping: None,
        })
    }

    /// Serve gdb until it resumes the run (or goes away: then the run goes
    /// on without it).
    fn serve(&mut self, mut m: Machine) -> Resume {
        loop {
            m = match m {
                GdbStubStateMachine::Idle(mut s) => {
                    // A closed or failed connection ends the session, also
                    // in the middle of a packet.
                    let byte = match s.borrow_conn().read() {
                        Ok(b) => b,
                        Err(e) => {
                            eprintln!("softspin: gdb: connection lost ({e}); running on without the debugger");
                            return Resume::Detach;
                        }
                    };
                    match s.incoming_data(&mut self.target, byte) {
                        Ok(m) => m,
                        Err(e) => return self.failed(e),
                    }
                }
                GdbStubStateMachine::Running(s) => {
                    self.stepping = self.target.step.take();
                    self.machine = Some(GdbStubStateMachine::Running(s));
                    return Resume::Go;
                }
                GdbStubStateMachine::CtrlCInterrupt(s) => {
                    // Already stopped: nothing to interrupt.
                    match s.interrupt_handled(&mut self.target, None::<MultiThreadStopReason<u32>>)
                    {
                        Ok(m) => m,
                        Err(e) => return self.failed(e),
                    }
                }
                GdbStubStateMachine::Disconnected(s) => {
                    return match s.get_reason() {
                        DisconnectReason::Kill => Resume::Kill,
                        _ => Resume::Detach,
                    };
                }
            };
        }
    }

    fn failed(&mut self, e: impl std::fmt::Display) -> Resume {
        eprintln!("softspin: gdb: {e}; running on without the debugger");
        Resume::Detach
    }
}

impl HpuDebugger for GdbServer {
    fn should_stop(&mut self, hpu: usize, pc: u32) -> bool {
        if self.stepping == Some(hpu) {
            self.stepping = None;
            return true;
        }
        self.target.breakpoints.contains(&pc) || self.target.entries.contains(&pc)
    }

    fn stepping(&self, hpu: usize) -> bool {
        self.stepping == Some(hpu) || !self.target.breakpoints.is_empty()
    }

    fn stopped(&mut self, hpus: DebugHpus, hpu: usize) -> (DebugHpus, Resume) {
        let pc = hpus.pc(hpu);
        self.target.hpus = Some(hpus);
        let resume = match self.machine.take() {
            None => Resume::Detach,
            Some(GdbStubStateMachine::Running(s)) => {
                let why = if self.target.breakpoints.contains(&pc) {
                    MultiThreadStopReason::SwBreak(tid(hpu))
                } else {
                    MultiThreadStopReason::SignalWithThread {
                        tid: tid(hpu),
                        signal: Signal::SIGTRAP,
                    }
                };
                match s.report_stop(&mut self.target, why) {
                    Ok(m) => self.serve(m),
                    Err(e) => self.failed(e),
                }
            }
            Some(m) => self.serve(m),
        };
        let hpus = self.target.hpus.take().expect("lent above");
        (hpus, resume)
    }

    fn finished(&mut self, status: u8) {
        if let Some(GdbStubStateMachine::Running(s)) = self.machine.take() {
            // gdb learns the run's exit status, then the connection closes.
            let _ = s.report_stop(&mut self.target, MultiThreadStopReason::Exited(status));
        }
    }
}

// -- `isa run --gdb`: one bare-metal HPU, one thread -------------------------

/// The bare-metal HPU as gdb's target. The run lends its HPU while stopped
/// (swapped with `hpu`, a placeholder otherwise).
struct BareHpu {
    hpu: Hpu,
    breakpoints: BTreeSet<u32>,
    /// gdb asked for a single step with the last resume.
    step: bool,
}

impl Target for BareHpu {
    type Arch = Riscv32;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Riscv32, &'static str> {
        BaseOps::SingleThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadBase for BareHpu {
    fn read_registers(&mut self, regs: &mut RiscvCoreRegs<u32>) -> TargetResult<(), Self> {
        for (r, x) in regs.x.iter_mut().enumerate() {
            *x = self.hpu.reg(r);
        }
        regs.pc = self.hpu.pc;
        Ok(())
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u32>) -> TargetResult<(), Self> {
        for (r, v) in regs.x.iter().enumerate() {
            self.hpu.set_reg(r, *v);
        }
        self.hpu.pc = regs.pc;
        Ok(())
    }

    fn read_addrs(&mut self, start: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        let mem = &self.hpu.mem;
        if mem.peek(start, data).is_ok() {
            return Ok(data.len());
        }
        // The part before the first byte outside the program's windows.
        let mut n = 0;
        while n < data.len()
            && mem
                .peek(start.wrapping_add(n as u32), &mut data[n..n + 1])
                .is_ok()
        {
            n += 1;
        }
        if n == 0 {
            return Err(TargetError::NonFatal);
        }
        Ok(n)
    }

    fn write_addrs(&mut self, start: u32, data: &[u8]) -> TargetResult<(), Self> {
        self.hpu
            .mem
            .write_bytes(start, data)
            .map_err(|_| TargetError::NonFatal)
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadResume for BareHpu {
    fn resume(&mut self, signal: Option<Signal>) -> Result<(), &'static str> {
        match signal {
            Some(_) => Err("HPUs take no signals"),
            None => Ok(()),
        }
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for BareHpu {
    fn step(&mut self, signal: Option<Signal>) -> Result<(), &'static str> {
        if signal.is_some() {
            return Err("HPUs take no signals");
        }
        self.step = true;
        Ok(())
    }
}

impl Breakpoints for BareHpu {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for BareHpu {
    fn add_sw_breakpoint(&mut self, addr: u32, _: usize) -> TargetResult<bool, Self> {
        self.breakpoints.insert(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u32, _: usize) -> TargetResult<bool, Self> {
        Ok(self.breakpoints.remove(&addr))
    }
}

type BareMachine = GdbStubStateMachine<'static, BareHpu, TcpStream>;

/// One gdb connection driving a bare-metal run (`BareMetal::run_debug`):
/// stopped at the program's entry until gdb resumes it.
pub struct BareGdb {
    target: BareHpu,
    /// None once gdb is gone (detached, killed, disconnected).
    machine: Option<BareMachine>,
    /// The running instruction is gdb's single step.
    stepping: bool,
}

impl BareGdb {
    /// Wait for gdb on `addr` ([`wait_for_gdb`]); `timing` is the run's
    /// (for the placeholder HPU).
    pub fn accept(addr: &str, timing: &TimingModel) -> anyhow::Result<BareGdb> {
        let conn = wait_for_gdb(addr)?;
        let mut target = BareHpu {
            hpu: Hpu::new(timing),
            breakpoints: BTreeSet::new(),
            step: false,
        };
        let machine = GdbStub::new(conn)
            .run_state_machine(&mut target)
            .map_err(|e| anyhow::anyhow!("--gdb: {e}"))?;
        Ok(BareGdb {
            target,
            machine: Some(machine),
            stepping: false,
        })
    }

    /// Before each instruction: stop there for gdb or not.
    pub fn at(&mut self, hpu: &mut Hpu) -> DebugAction {
        let m = match self.machine.take() {
            None => return DebugAction::Run,
            Some(GdbStubStateMachine::Running(s)) => {
                let why = if std::mem::take(&mut self.stepping) {
                    SingleThreadStopReason::DoneStep
                } else if self.target.breakpoints.contains(&hpu.pc) {
                    SingleThreadStopReason::SwBreak(())
                } else {
                    self.machine = Some(GdbStubStateMachine::Running(s));
                    return DebugAction::Step;
                };
                std::mem::swap(&mut self.target.hpu, hpu);
                let m = s.report_stop(&mut self.target, why);
                std::mem::swap(&mut self.target.hpu, hpu);
                match m {
                    Ok(m) => m,
                    Err(e) => return self.failed(e),
                }
            }
            // The entry: gdb has not resumed yet.
            Some(m) => m,
        };
        std::mem::swap(&mut self.target.hpu, hpu);
        let action = self.serve(m);
        std::mem::swap(&mut self.target.hpu, hpu);
        action
    }

    /// Serve gdb until it resumes the run (or goes away: then the run goes
    /// on without it).
    fn serve(&mut self, mut m: BareMachine) -> DebugAction {
        loop {
            m = match m {
                GdbStubStateMachine::Idle(mut s) => {
                    let byte = match s.borrow_conn().read() {
                        Ok(b) => b,
                        Err(e) => {
                            eprintln!("softspin: gdb: connection lost ({e}); running on without the debugger");
                            return DebugAction::Run;
                        }
                    };
                    match s.incoming_data(&mut self.target, byte) {
                        Ok(m) => m,
                        Err(e) => return self.failed(e),
                    }
                }
                GdbStubStateMachine::Running(s) => {
                    self.stepping = std::mem::take(&mut self.target.step);
                    self.machine = Some(GdbStubStateMachine::Running(s));
                    // Nothing to stop at: full speed.
                    return if self.stepping || !self.target.breakpoints.is_empty() {
                        DebugAction::Step
                    } else {
                        DebugAction::Run
                    };
                }
                GdbStubStateMachine::CtrlCInterrupt(s) => {
                    match s.interrupt_handled(&mut self.target, None::<SingleThreadStopReason<u32>>)
                    {
                        Ok(m) => m,
                        Err(e) => return self.failed(e),
                    }
                }
                GdbStubStateMachine::Disconnected(s) => {
                    return match s.get_reason() {
                        DisconnectReason::Kill => DebugAction::Kill,
                        _ => DebugAction::Run,
                    };
                }
            };
        }
    }

    fn failed(&mut self, e: impl std::fmt::Display) -> DebugAction {
        eprintln!("softspin: gdb: {e}; running on without the debugger");
        self.machine = None;
        DebugAction::Run
    }

    /// The run ended: gdb learns the exit status (or that the program
    /// faulted), then the connection closes.
    /// `status`: the process's exit status, None for a guest fault.
    pub fn finished(&mut self, status: Option<u8>) {
        if let Some(GdbStubStateMachine::Running(s)) = self.machine.take() {
            let why = match status {
                Some(code) => SingleThreadStopReason::Exited(code),
                None => SingleThreadStopReason::Terminated(Signal::SIGSEGV),
            };
            let _ = s.report_stop(&mut self.target, why);
        }
    }
}
