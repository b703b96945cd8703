//! A tiny RV32 encoder and a one-HPU machine for interpreter tests that need
//! no toolchain. Expected values in the tests are computed independently in
//! Rust, never read back from the interpreter's own decoder.
#![allow(dead_code)]

pub mod random;

use std::sync::Arc;

use softspin_hpu::hpu::{Ecall, Hpu, Runtime, Stop};
use softspin_hpu::{MemBlock, MemClass, Perm, Program, TimingModel};

pub const CODE: u32 = 0x1000;
pub const DATA: u32 = 0x8000;
pub const DATA_SIZE: u32 = 0x1000;
pub const STACK_TOP: u32 = 0x20000;

pub fn r(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op
}
pub fn i(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    ((imm as u32) & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op
}
pub fn s(imm: i32, rs2: u32, rs1: u32, f3: u32, op: u32) -> u32 {
    let m = imm as u32;
    (m >> 5 & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (m & 0x1f) << 7 | op
}
pub fn b(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let m = imm as u32;
    (m >> 12 & 1) << 31
        | (m >> 5 & 0x3f) << 25
        | rs2 << 20
        | rs1 << 15
        | f3 << 12
        | (m >> 1 & 0xf) << 8
        | (m >> 11 & 1) << 7
        | 0x63
}
pub fn u(imm: u32, rd: u32, op: u32) -> u32 {
    imm & 0xffff_f000 | rd << 7 | op
}
pub fn j(imm: i32, rd: u32) -> u32 {
    let m = imm as u32;
    (m >> 20 & 1) << 31
        | (m >> 1 & 0x3ff) << 21
        | (m >> 11 & 1) << 20
        | (m >> 12 & 0xff) << 12
        | rd << 7
        | 0x6f
}

pub fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 0, rd, 0x13)
}
/// Load a full 32-bit constant (LUI + ADDI).
pub fn li(rd: u32, v: u32) -> Vec<u32> {
    let lo = ((v & 0xfff) as i32) << 20 >> 20;
    let hi = v.wrapping_sub(lo as u32);
    vec![u(hi, rd, 0x37), addi(rd, rd, lo)]
}
pub fn ecall() -> u32 {
    0x0000_0073
}
pub fn ebreak() -> u32 {
    0x0010_0073
}
pub fn exit() -> Vec<u32> {
    vec![addi(17, 0, 93), ecall()]
}

/// Runtime with just `exit` (a7=93) and a "suspend" service (a7=7).
pub struct TestRt;
impl Runtime for TestRt {
    fn ecall(&mut self, hpu: &mut Hpu) -> Ecall {
        match hpu.reg(17) {
            93 => Ecall::Exit(hpu.reg(10) as i32),
            7 => Ecall::Suspend,
            _ => Ecall::Unknown,
        }
    }
}

pub struct Machine {
    pub hpu: Hpu,
    pub prog: Arc<Program>,
    pub data: Arc<MemBlock>,
    pub ro: Arc<MemBlock>,
}

pub const RO: u32 = 0xA000;

impl Machine {
    pub fn new(words: &[u32]) -> Machine {
        Self::with_timing(words, TimingModel::default())
    }

    pub fn with_timing(words: &[u32], t: TimingModel) -> Machine {
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Self::from_bytes(&code, t)
    }

    pub fn from_bytes(code: &[u8], t: TimingModel) -> Machine {
        let prog = Arc::new(Program::decode(&[(CODE, code)], &t).unwrap());
        let mut hpu = Hpu::new(&t);
        let cb = MemBlock::new(code.len());
        cb.write(0, code);
        hpu.mem
            .map(CODE, code.len() as u32, &cb, 0, Perm::RX, MemClass::ProgMem)
            .unwrap();
        let data = MemBlock::new(DATA_SIZE as usize);
        hpu.mem
            .map(DATA, DATA_SIZE, &data, 0, Perm::RW, MemClass::L1Local)
            .unwrap();
        let ro = MemBlock::new(0x100);
        hpu.mem
            .map(RO, 0x100, &ro, 0, Perm::R, MemClass::L2)
            .unwrap();
        let stack = MemBlock::new(0x1000);
        hpu.mem
            .map(
                STACK_TOP - 0x1000,
                0x1000,
                &stack,
                0,
                Perm::RW,
                MemClass::L1Local,
            )
            .unwrap();
        hpu.start_call(CODE, STACK_TOP, &[]);
        Machine {
            hpu,
            prog,
            data,
            ro,
        }
    }

    pub fn run(&mut self) -> Stop {
        self.hpu.run(&self.prog, &mut TestRt, u64::MAX)
    }

    pub fn x(&self, r: usize) -> u32 {
        self.hpu.reg(r)
    }
}

/// Assemble `body` followed by exit, run it, return the machine.
pub fn run(body: &[u32]) -> Machine {
    let mut w = body.to_vec();
    w.extend(exit());
    let mut m = Machine::new(&w);
    let st = m.run();
    assert!(matches!(st, Stop::Exit(_)), "program did not exit: {st:?}");
    m
}
