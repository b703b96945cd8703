//! The single-HPU handler harness: one handler invocation on one HPU, with a
//! PsPIN-like memory map and synchronous runtime services.
//!
//! This is what `softspin isa handler` runs and what the SDK's tests use to
//! exercise handler-side calls before the full engine exists. The engine
//! generalises it (many HPUs, timed commands, scheduling); the memory layout
//! and the task structures here follow the same ABI.
//!
//! Layout (cluster 0):
//! - L1 `0x10000000`: packet copy (32 KiB), then the runtime area (`task_t`,
//!   `handler_args_t`), then the HPU stack, then the scratchpad;
//! - L2 handler memory `0x1C000000`: the image's data segments;
//! - L2 packet buffer `0x1C400000`: the packet;
//! - program memory `0x1D000000`: code, readable.

use std::sync::Arc;

use crate::abi::{self, err, sys, A0, A1, A7};
use crate::elf::{ElfError, ElfImage};
use crate::hpu::{Ecall, Fault, Hpu, Runtime, Stop};
use crate::mem::{MapError, MemBlock, Perm};
use crate::program::{Program, ProgramError};
use crate::timing::{MemClass, TimingModel};

/// `task_t` as the SDK declares it (packed, NB_CLUSTERS = 4): 72 bytes.
pub const TASK_SIZE: u32 = 72;
pub const NB_CLUSTERS: usize = 4;

const L1_PKT_SIZE: u32 = 32 << 10;
const RUNTIME_OFF: u32 = L1_PKT_SIZE;
const STACK_OFF: u32 = RUNTIME_OFF + 0x400;
const STACK_SIZE: u32 = 8 << 10;
const SCRATCH_OFF: u32 = 64 << 10;
const L1_SIZE: u32 = 1 << 20;
const L2_HANDLER_SIZE: u32 = 4 << 20;
const L2_PKT_SIZE: u32 = 4 << 20;
const PROG_MEM_SIZE: u32 = 1 << 20;

/// Guest-visible host address of the host-memory window's first byte (above
/// 4 GiB, so handlers must carry the high word).
pub const HOST_BASE: u64 = 0x7F00_0000_0000;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Map(#[from] MapError),
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error("segment at 0x{0:08x} lies outside program memory and L2 handler memory")]
    Placement(u32),
    #[error("packet of {0} bytes exceeds the {L1_PKT_SIZE}-byte L1 packet buffer")]
    PacketTooLarge(usize),
}

/// One outbound packet (NIC send or RDMA put).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    pub dest: u32,
    pub data: Vec<u8>,
}

/// Everything the handler did besides computing.
#[derive(Debug, Default)]
pub struct Effects {
    pub stdout: Vec<u8>,
    pub outbound: Vec<Outbound>,
    /// Host writes (8-byte host-direct) as (host address, value).
    pub host_writes: Vec<(u64, u64)>,
    pub dma_to_host_bytes: u64,
    pub commands: u32,
    /// FPsPIN-style counters: index -> (sum, count).
    pub counters: Vec<(u64, u64)>,
}

/// A loaded handler image plus the NIC-side memories it runs in.
pub struct Harness {
    pub hpu: Hpu,
    pub program: Arc<Program>,
    pub image: ElfImage,
    pub l1: Arc<MemBlock>,
    pub l2_handler: Arc<MemBlock>,
    pub l2_pkt: Arc<MemBlock>,
    /// The host-memory window handlers reach with DMA.
    pub host: Vec<u8>,
    pub effects: Effects,
    prog_mem: Arc<MemBlock>,
    pkt_len: u32,
}

/// Result of one handler invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invocation {
    pub stop: Stop,
    pub instructions: u64,
    pub cycles: u64,
    pub loads: u64,
    pub stores: u64,
}

impl Harness {
    pub fn new(image: ElfImage, timing: &TimingModel, host_size: usize) -> Result<Harness, HarnessError> {
        let l1 = MemBlock::new(L1_SIZE as usize);
        let l2_handler = MemBlock::new(L2_HANDLER_SIZE as usize);
        let l2_pkt = MemBlock::new(L2_PKT_SIZE as usize);
        let prog_mem = MemBlock::new(PROG_MEM_SIZE as usize);
        for s in &image.segments {
            let (block, base, size) = if s.perm.has(Perm::X) {
                (&prog_mem, abi::PROG_MEM_BASE, PROG_MEM_SIZE)
            } else {
                (&l2_handler, abi::L2_HANDLER_BASE, L2_HANDLER_SIZE)
            };
            let off = s.vaddr.wrapping_sub(base);
            if off as u64 + s.memsz as u64 > size as u64 {
                return Err(HarnessError::Placement(s.vaddr));
            }
            block.write(off as usize, &s.data);
        }
        let program = Arc::new(Program::decode(&image.code_ranges(), timing)?);
        Ok(Harness {
            hpu: Hpu::new(timing),
            program,
            image,
            l1,
            l2_handler,
            l2_pkt,
            host: vec![0; host_size],
            effects: Effects::default(),
            prog_mem,
            pkt_len: 0,
        })
    }

    /// Place a packet in the L2 packet buffer and its L1 copy.
    pub fn set_packet(&mut self, pkt: &[u8]) -> Result<(), HarnessError> {
        if pkt.len() > L1_PKT_SIZE as usize {
            return Err(HarnessError::PacketTooLarge(pkt.len()));
        }
        self.l1.write(0, pkt);
        self.l2_pkt.write(0, pkt);
        self.pkt_len = pkt.len() as u32;
        Ok(())
    }

    /// Call handler `sym` once with PsPIN's `handler_args_t *` argument.
    pub fn invoke(&mut self, sym: &str, watchdog: u64) -> Result<Invocation, HarnessError> {
        let entry = self.image.symbol(sym)?;
        let l1b = abi::L1_BASE;
        let pkt_mem = l1b;
        let task = l1b + RUNTIME_OFF;
        let args = task + TASK_SIZE;
        let scratch = l1b + SCRATCH_OFF;
        let scratch_size = L1_SIZE - SCRATCH_OFF;
        let mut t = Vec::with_capacity(TASK_SIZE as usize);
        let mut put = |v: u32| t.extend_from_slice(&v.to_le_bytes());
        put(abi::L2_HANDLER_BASE);
        put(L2_HANDLER_SIZE);
        put(pkt_mem);
        put(self.pkt_len);
        for c in 0..NB_CLUSTERS {
            put(if c == 0 { scratch } else { 0 });
        }
        for c in 0..NB_CLUSTERS {
            put(if c == 0 { scratch_size } else { 0 });
        }
        put((HOST_BASE >> 32) as u32);
        put(HOST_BASE as u32);
        put(self.host.len() as u32);
        put(abi::L2_PKT_BASE);
        put(0); // home cluster
        put(0); // flow id
        debug_assert_eq!(t.len() as u32, TASK_SIZE);
        for v in [task, 0, 0, 0] {
            t.extend_from_slice(&v.to_le_bytes());
        }
        self.l1.write(RUNTIME_OFF as usize, &t);

        // The task's view of memory (PsPIN configures the PMP the same way).
        let m = &mut self.hpu.mem;
        m.clear();
        m.map(pkt_mem, L1_PKT_SIZE, &self.l1, 0, Perm::RW, MemClass::L1Local)?;
        m.map(task, STACK_OFF - RUNTIME_OFF, &self.l1, RUNTIME_OFF as usize, Perm::R, MemClass::L1Local)?;
        m.map(l1b + STACK_OFF, STACK_SIZE, &self.l1, STACK_OFF as usize, Perm::RW, MemClass::L1Local)?;
        m.map(scratch, scratch_size, &self.l1, SCRATCH_OFF as usize, Perm::RW, MemClass::L1Local)?;
        m.map(abi::L2_HANDLER_BASE, L2_HANDLER_SIZE, &self.l2_handler, 0, Perm::RW, MemClass::L2)?;
        m.map(abi::L2_PKT_BASE, L2_PKT_SIZE, &self.l2_pkt, 0, Perm::RW, MemClass::L2)?;
        m.map(abi::PROG_MEM_BASE, PROG_MEM_SIZE, &self.prog_mem, 0, Perm::R, MemClass::ProgMem)?;

        let (c0, i0, l0, s0) = (self.hpu.cycles, self.hpu.instret, self.hpu.loads, self.hpu.stores);
        self.hpu.start_call(entry, l1b + STACK_OFF + STACK_SIZE, &[args]);
        self.hpu.instret_limit = i0.saturating_add(watchdog);
        let mut rt = HarnessRuntime { host: &mut self.host, fx: &mut self.effects };
        let stop = loop {
            match self.hpu.run(&self.program, &mut rt, u64::MAX) {
                Stop::SliceEnd | Stop::Suspended => continue,
                s => break s,
            }
        };
        Ok(Invocation {
            stop,
            instructions: self.hpu.instret - i0,
            cycles: self.hpu.cycles - c0,
            loads: self.hpu.loads - l0,
            stores: self.hpu.stores - s0,
        })
    }

    /// Read `len` bytes of L2 handler memory at guest address `addr`.
    pub fn read_handler_mem(&self, addr: u32, len: usize) -> Vec<u8> {
        self.l2_handler.to_vec((addr - abi::L2_HANDLER_BASE) as usize, len)
    }
}

/// Fault helper for display.
pub fn describe(stop: &Stop) -> String {
    match stop {
        Stop::Returned => "returned".into(),
        Stop::Exit(c) => format!("terminated with status {c}"),
        Stop::Fault(f @ Fault { .. }) => format!("fault: {f}"),
        s => format!("{s:?}"),
    }
}

/// Synchronous services: every command completes when issued.
struct HarnessRuntime<'a> {
    host: &'a mut Vec<u8>,
    fx: &'a mut Effects,
}

impl HarnessRuntime<'_> {
    fn host_range(&self, addr: u64, len: u32) -> Option<std::ops::Range<usize>> {
        let off = addr.checked_sub(HOST_BASE)?;
        let end = off.checked_add(len as u64)?;
        (end <= self.host.len() as u64).then(|| off as usize..end as usize)
    }

    fn command(&mut self) -> i32 {
        self.fx.commands += 1;
        self.fx.commands as i32
    }

    fn service(&mut self, hpu: &mut Hpu) -> Option<i32> {
        let a = |r: usize| hpu.reg(r);
        let read = |addr: u32, len: u32| -> Result<Vec<u8>, i32> {
            let mut v = vec![0; len as usize];
            hpu.mem.read_bytes(addr, &mut v).map_err(|_| err::ACCESS)?;
            Ok(v)
        };
        let r = match a(A7) {
            sys::WRITE => match read(a(A1), a(A0 + 2).min(1 << 16)) {
                Ok(v) if a(A0) == 1 || a(A0) == 2 => {
                    self.fx.stdout.extend_from_slice(&v);
                    v.len() as i32
                }
                Ok(_) => err::INVAL,
                Err(e) => e,
            },
            sys::DMA => {
                let (src, dst, len) = (a(A0), a(A1), a(A0 + 2));
                match read(src, len) {
                    Ok(v) if hpu.mem.write_bytes(dst, &v).is_ok() => self.command(),
                    _ => err::ACCESS,
                }
            }
            sys::SEND_PACKET | sys::RDMA_PUT => {
                let (dest, data, len) = if a(A7) == sys::SEND_PACKET {
                    (0, a(A0), a(A1))
                } else {
                    (a(A0), a(A1), a(A0 + 2))
                };
                match read(data, len) {
                    Ok(v) => {
                        self.fx.outbound.push(Outbound { dest, data: v });
                        self.command()
                    }
                    Err(e) => e,
                }
            }
            sys::DMA_TO_HOST | sys::DMA_FROM_HOST => {
                let host = (a(A1) as u64) << 32 | a(A0) as u64;
                let (nic, len) = (a(A0 + 2), a(A0 + 3));
                match self.host_range(host, len) {
                    None => err::ACCESS,
                    Some(r) if a(A7) == sys::DMA_TO_HOST => match read(nic, len) {
                        Ok(v) => {
                            self.host[r].copy_from_slice(&v);
                            self.fx.dma_to_host_bytes += len as u64;
                            self.command()
                        }
                        Err(e) => e,
                    },
                    Some(r) => match hpu.mem.write_bytes(nic, &self.host[r]) {
                        Ok(()) => self.command(),
                        Err(_) => err::ACCESS,
                    },
                }
            }
            sys::WRITE_TO_HOST => {
                let host = (a(A1) as u64) << 32 | a(A0) as u64;
                let val = (a(A0 + 3) as u64) << 32 | a(A0 + 2) as u64;
                match self.host_range(host, 8) {
                    Some(r) => {
                        self.host[r].copy_from_slice(&val.to_le_bytes());
                        self.fx.host_writes.push((host, val));
                        self.command()
                    }
                    None => err::ACCESS,
                }
            }
            sys::CMD_WAIT => 0,
            sys::CMD_TEST => 1,
            sys::PUSH_COUNTER => {
                let i = a(A0) as usize;
                if i >= 64 {
                    err::INVAL
                } else {
                    if self.fx.counters.len() <= i {
                        self.fx.counters.resize(i + 1, (0, 0));
                    }
                    self.fx.counters[i].0 += a(A1) as u64;
                    self.fx.counters[i].1 += 1;
                    0
                }
            }
            _ => return None,
        };
        Some(r)
    }
}

impl Runtime for HarnessRuntime<'_> {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        if hpu.reg(A7) == sys::EXIT {
            return Ecall::Exit(hpu.reg(A0) as i32);
        }
        match self.service(hpu) {
            Some(r) => {
                hpu.set_reg(A0, r as u32);
                Ecall::Continue
            }
            None => Ecall::Unknown,
        }
    }
}
