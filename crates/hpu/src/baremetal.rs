//! The bare-metal runner: one HPU running a whole RV32 program.
//!
//! This is the conformance harness behind `softspin isa run`: it loads every
//! PT_LOAD segment at its address with its permissions, maps a stack, and runs
//! from the entry point until the program calls the `exit` service (a7 = 93).
//! `write` (a7 = 64) to fd 1 or 2 is the program's output; the sPIN
//! services answer SPIN_ERR_NOSYS (there is no NIC around a bare program).

use std::io::Write;
use std::sync::Arc;

use crate::abi::{err, sys, A0, A1, A2, A7};
use crate::elf::{ElfError, ElfImage, Region};
use crate::hpu::{Ecall, Hpu, Runtime, Stop};
use crate::mem::{MapError, MemBlock, Perm};
use crate::program::{Program, ProgramError};
use crate::timing::{MemClass, TimingModel};

/// The bare-metal memory map: a program's segments load into RAM at
/// 0x8000_0000 (`sdk/link/baremetal.ld`, `tests/isa/link.ld`), the stack
/// lies apart below `BareMetalConfig::stack_top`.
pub const RAM_BASE: u32 = 0x8000_0000;
/// Far more than the ISA tests and Embench need, and small enough that a
/// loaded program stays well inside a 1 GB address-space limit.
pub const RAM_SIZE: u32 = 128 << 20;
pub const RAM: Region = Region {
    name: "bare-metal RAM",
    base: RAM_BASE,
    size: RAM_SIZE,
};

/// Settings of a bare-metal run.
#[derive(Clone, Debug)]
pub struct BareMetalConfig {
    pub timing: TimingModel,
    /// The stack occupies `[stack_top - stack_size, stack_top)`; sp starts at
    /// `stack_top`.
    pub stack_top: u32,
    pub stack_size: u32,
    /// Watchdog: the run faults after this many instructions.
    pub max_instructions: u64,
}

impl Default for BareMetalConfig {
    fn default() -> Self {
        BareMetalConfig {
            timing: TimingModel::default(),
            stack_top: 0xC000_0000,
            stack_size: 1 << 20,
            max_instructions: 20_000_000_000,
        }
    }
}

/// How a bare-metal run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// [`Stop::Exit`] on a normal end, [`Stop::Fault`] otherwise.
    pub stop: Stop,
    pub instructions: u64,
    pub cycles: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Image(#[from] ElfError),
    #[error("cannot map segment: {0}")]
    Map(#[from] MapError),
    #[error("cannot decode code: {0}")]
    Program(#[from] ProgramError),
}

/// How a run under a debugger goes on ([`BareMetal::run_debug`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugAction {
    /// Execute one instruction, then ask again.
    Step,
    /// Run on without asking.
    Run,
    /// End the run now.
    Kill,
}

/// A program loaded into one HPU, ready to run.
pub struct BareMetal {
    pub hpu: Hpu,
    pub program: Arc<Program>,
    /// Backing blocks, one per segment plus the stack (for inspection).
    pub blocks: Vec<(u32, Arc<MemBlock>)>,
}

impl BareMetal {
    pub fn load(image: &ElfImage, cfg: &BareMetalConfig) -> Result<BareMetal, LoadError> {
        // Before any allocation: a segment's memsz is the file's say-so.
        image.check_fits(|_| RAM)?;
        let mut hpu = Hpu::new(&cfg.timing);
        let mut blocks = Vec::new();
        for s in &image.segments {
            let b = MemBlock::new(s.memsz as usize);
            b.write(0, &s.data);
            hpu.mem
                .map(s.vaddr, s.memsz, &b, 0, s.perm, MemClass::Ideal)?;
            blocks.push((s.vaddr, b));
        }
        let stack = MemBlock::new(cfg.stack_size as usize);
        hpu.mem.map(
            cfg.stack_top.wrapping_sub(cfg.stack_size),
            cfg.stack_size,
            &stack,
            0,
            Perm::RW,
            MemClass::Ideal,
        )?;
        blocks.push((cfg.stack_top.wrapping_sub(cfg.stack_size), stack));
        let program = Arc::new(Program::decode(&image.code_ranges(), &cfg.timing)?);
        hpu.start_call(image.entry, cfg.stack_top, &[]);
        hpu.instret_limit = cfg.max_instructions;
        Ok(BareMetal {
            hpu,
            program,
            blocks,
        })
    }

    /// Run to the end, sending the program's output to `out`.
    pub fn run<W: Write>(&mut self, out: W) -> Outcome {
        let program = self.program.clone();
        self.run_by(out, |hpu, rt| hpu.run(&program, rt, u64::MAX))
    }

    /// [`BareMetal::run`] with the block JIT (the same outcome and counts).
    #[cfg(feature = "jit")]
    pub fn run_jit<W: Write>(&mut self, out: W, jit: &mut crate::jit::Jit) -> Outcome {
        let program = self.program.clone();
        self.run_by(out, |hpu, rt| hpu.run_jit(&program, jit, rt, u64::MAX))
    }

    /// [`BareMetal::run`] under a debugger: `at` is called with the HPU
    /// before each instruction and says how the run goes on. Stepping is
    /// one instruction at a time ([`Hpu::step`]: the counts `run` gives);
    /// after [`DebugAction::Run`] the rest runs at full speed. `None` if
    /// the debugger killed the run.
    pub fn run_debug<W: Write>(
        &mut self,
        out: W,
        mut at: impl FnMut(&mut Hpu) -> DebugAction,
    ) -> Option<Outcome> {
        let program = self.program.clone();
        let unfused = program.unfused();
        // Whether the next instruction starts a block (where `run` checks
        // the watchdog); the entry does.
        let mut entry = true;
        let mut free = false;
        let mut killed = false;
        let o = self.run_by(out, |hpu, rt| {
            if free {
                return hpu.run(&program, rt, u64::MAX);
            }
            match at(hpu) {
                DebugAction::Step => {
                    let pc = hpu.pc;
                    let stop = hpu.step(&unfused, rt, entry);
                    entry = unfused.ends_block_at(pc);
                    stop
                }
                DebugAction::Run => {
                    free = true;
                    hpu.run(&program, rt, u64::MAX)
                }
                DebugAction::Kill => {
                    killed = true;
                    Stop::Exit(0)
                }
            }
        });
        (!killed).then_some(o)
    }

    fn run_by<W: Write>(
        &mut self,
        out: W,
        mut slice: impl FnMut(&mut Hpu, &mut BareRuntime<W>) -> Stop,
    ) -> Outcome {
        let mut rt = BareRuntime { out };
        let stop = loop {
            match slice(&mut self.hpu, &mut rt) {
                Stop::SliceEnd | Stop::Suspended => continue,
                // A bare-metal program has nowhere to return to.
                Stop::Returned => {
                    break Stop::Fault(crate::hpu::Fault {
                        kind: crate::hpu::FaultKind::FetchAccess,
                        pc: self.hpu.pc,
                        addr: self.hpu.pc,
                    })
                }
                s => break s,
            }
        };
        let _ = rt.out.flush();
        Outcome {
            stop,
            instructions: self.hpu.instret,
            cycles: self.hpu.cycles,
        }
    }
}

/// `write` and `exit`, nothing else.
struct BareRuntime<W: Write> {
    out: W,
}

impl<W: Write> Runtime for BareRuntime<W> {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        match hpu.reg(A7) {
            sys::EXIT => Ecall::Exit(hpu.reg(A0) as i32),
            sys::WRITE => {
                let (fd, buf, len) = (hpu.reg(A0), hpu.reg(A1), hpu.reg(A2));
                let mut data = vec![0u8; len.min(1 << 20) as usize];
                let r = if fd != 1 && fd != 2 {
                    err::INVAL
                } else if hpu.mem.read_bytes(buf, &mut data).is_err() {
                    err::ACCESS
                } else {
                    let _ = self.out.write_all(&data);
                    data.len() as i32
                };
                hpu.set_reg(A0, r as u32);
                Ecall::Continue
            }
            // sPIN services exist in the ABI but there is no NIC here.
            0x100..=0x1FF => {
                hpu.set_reg(A0, err::NOSYS as u32);
                Ecall::Continue
            }
            _ => Ecall::Unknown,
        }
    }
}
