//! Timing pins: one micro-kernel per entry of the timing table
//! (`TimingModel`, docs/architecture.md "Timing model") and per CORE-V
//! instruction class, each with its cycle count worked out by hand from the
//! RI5CY / CV32E40P documentation and PsPIN's memory latencies. A change to
//! any default (say the taken-branch penalty from 2 to 1) makes a pin fail;
//! `every_table_entry_is_pinned` proves that by perturbing each entry.
//!
//! The kernels are assembled by llvm-mc-19 (an encoder independent of our
//! decoder) without RVC, so every instruction is one 32-bit word. Every
//! kernel ends with `exit`: `li a7, 93` (1 cycle, ALU) + `ecall` (8 cycles,
//! the command hand-off estimate) = 9 cycles.

mod common;
use common::*;

use std::process::Command;

use softspin_hpu::hpu::Stop;
use softspin_hpu::{MemBlock, MemClass, Perm, TimingModel};

/// Base addresses of the extra windows a kernel can reach, one per memory
/// class (`common` maps L1 local at DATA, L2 read-only at RO, program memory
/// at CODE).
const L1_REMOTE: u32 = 0xC000;
const IDEAL: u32 = 0xE000;

/// Cycles of `li a7, 93; ecall`.
const EXIT: u64 = 1 + 8;

/// (name, assembly, cycles under `TimingModel::default()`, with the sum spelt
/// out). Every `li rd, ADDR` below has its low 12 bits zero, so it is one
/// `lui`: 1 cycle; `li rd, SMALL` is one `addi`.
const PINS: &[(&str, &str, u64)] = &[
    // --- RV32IMAC: one pin per table entry ---
    ("exit (ALU + ecall)", "", EXIT),
    ("alu: 4 x add, lui, auipc, fence", "add a1,a1,a2\nadd a1,a1,a2\nadd a1,a1,a2\nadd a1,a1,a2\nlui a2,1\nauipc a3,0\nfence", 7 + EXIT),
    ("load: 2 x lw L1, no use", "li a0,0x8000\nlw a1,0(a0)\nlw a2,4(a0)", 1 + 2 + EXIT),
    ("load-use stall: lw then add of it", "li a0,0x8000\nlw a1,0(a0)\nadd a2,a1,a1", 1 + 1 + 1 + 1 + EXIT),
    ("store: 2 x sw L1", "li a0,0x8000\nsw a1,0(a0)\nsb a1,5(a0)", 1 + 2 + EXIT),
    ("branch not taken", "li a1,1\nbeq a1,zero,1f\n1:", 1 + 1 + EXIT),
    // Taken: 1 + the 2-cycle penalty (RI5CY: 3 cycles taken).
    ("branch taken", "beq zero,zero,1f\n1:", 3 + EXIT),
    ("jal", "jal zero,1f\n1:", 2 + EXIT),
    // auipc at X, jalr to X+8: the instruction after the jalr.
    ("jalr", "auipc a1,0\njalr zero,8(a1)", 1 + 2 + EXIT),
    ("mul", "mul a1,a2,a3", 1 + EXIT),
    ("mulh, mulhsu, mulhu", "mulh a1,a2,a3\nmulhsu a1,a2,a3\nmulhu a1,a2,a3", 3 * 5 + EXIT),
    ("div, rem (upper bound)", "div a1,a2,a3\nremu a1,a2,a3", 2 * 35 + EXIT),
    ("csr: rdcycle, rdinstret", "rdcycle a1\nrdinstret a2", 2 + EXIT),
    // An AMO costs a load plus 0 (seed 001 §4.3: single-cycle AMOs).
    ("atomic: amoadd.w L1", "li a0,0x8000\namoadd.w a1,a2,(a0)", 1 + 1 + EXIT),
    ("misaligned lw (+1)", "li a0,0x8000\nlw a1,1(a0)", 1 + 1 + 1 + EXIT),
    ("remote L1: lw + sw (+8 each)", "li a0,0xC000\nlw a1,0(a0)\nsw a2,4(a0)", 1 + (1 + 8) + (1 + 8) + EXIT),
    ("L2: lw (+24)", "li a0,0xA000\nlw a1,0(a0)", 1 + 1 + 24 + EXIT),
    ("program memory: lw (+24)", "li a0,0x1000\nlw a1,0(a0)", 1 + 1 + 24 + EXIT),
    ("ideal memory: lw", "li a0,0xE000\nlw a1,0(a0)", 1 + 1 + EXIT),
    // 4 iterations of add + addi + bnez; 3 taken: 1 + 4 x 3 + 3 x 2.
    ("counted loop, hardware loops off", "li a0,4\n1: add a2,a2,a1\naddi a0,a0,-1\nbnez a0,1b", 1 + 4 * 3 + 3 * 2 + EXIT),
    // --- CORE-V (CV32E40P manual, "Instruction latencies") ---
    // Post-increment, register-register and post-register loads: one bus
    // transaction (1 cycle); the base update needs no extra cycle and its
    // new value is used at once without a stall.
    ("cv load post-imm, base used next", "li a0,0x8000\ncv.lw a1,(a0),4\nadd a2,a0,a0", 1 + 1 + 1 + EXIT),
    ("cv load post-imm, result used next", "li a0,0x8000\ncv.lw a1,(a0),4\nadd a2,a1,a1", 1 + 1 + 1 + 1 + EXIT),
    ("cv loads reg-reg, post-reg", "li a0,0x8000\nli a2,4\ncv.lw a1,a2(a0)\ncv.lbu a3,(a0),a2\ncv.lh a4,(a0),2", 1 + 1 + 3 + EXIT),
    ("cv load post-imm from L2 (+24)", "li a0,0xA000\ncv.lbu a1,(a0),1", 1 + 1 + 24 + EXIT),
    ("cv stores post-imm, reg-reg, post-reg", "li a0,0x8000\nli a2,4\ncv.sw a1,(a0),4\ncv.sh a1,a2(a0)\ncv.sb a1,(a0),a2", 1 + 1 + 3 + EXIT),
    ("cv alu: abs, slet, min, maxu, clip, extbs, addn, subrn", "cv.abs a1,a2\ncv.slet a1,a2,a3\ncv.min a1,a2,a3\ncv.maxu a1,a2,a3\ncv.clip a1,a2,5\ncv.extbs a1,a2\ncv.addn a1,a2,a3,2\ncv.subrn a1,a2,a3,3", 8 + EXIT),
    ("cv.beqimm / cv.bneimm not taken", "li a1,1\ncv.beqimm a1,5,1f\ncv.bneimm a1,1,1f\n1:", 1 + 2 + EXIT),
    ("cv.beqimm taken", "li a1,5\ncv.beqimm a1,5,1f\n1:", 1 + 3 + EXIT),
    ("cv mac: mac, msu, mulsn, mulhhurn, machhsrn", "cv.mac a1,a2,a3\ncv.msu a1,a2,a3\ncv.mulsn a1,a2,a3,3\ncv.mulhhurn a1,a2,a3,4\ncv.machhsrn a1,a2,a3,4", 5 + EXIT),
];

/// Assemble `body` + exit with llvm-mc-19 into raw RV32 words.
fn assemble(body: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("softspin-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = format!("{:016x}", fnv(body));
    let (s, o, bin) = (
        dir.join(format!("{key}.s")),
        dir.join(format!("{key}.o")),
        dir.join(format!("{key}.bin")),
    );
    std::fs::write(&s, format!("{body}\nli a7,93\necall\n")).unwrap();
    let mc = Command::new("llvm-mc-19")
        .args([
            "-triple=riscv32",
            "-mattr=+m,+a,+zicsr,+zicntr,+xcvmem,+xcvalu,+xcvbi,+xcvmac,-relax,-c",
            "-filetype=obj",
        ])
        .arg(&s)
        .arg("-o")
        .arg(&o)
        .output()
        .expect("run llvm-mc-19 (scripts/setup.sh installs llvm-19)");
    assert!(
        mc.status.success(),
        "llvm-mc-19 on {body:?}: {}",
        String::from_utf8_lossy(&mc.stderr)
    );
    let cp = Command::new("llvm-objcopy-19")
        .args(["-O", "binary", "--only-section=.text"])
        .arg(&o)
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        cp.status.success(),
        "llvm-objcopy-19: {}",
        String::from_utf8_lossy(&cp.stderr)
    );
    std::fs::read(&bin).unwrap()
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Cycles of `code` on one HPU with timing `t` (it must exit cleanly).
fn cycles(code: &[u8], t: &TimingModel) -> u64 {
    let mut m = Machine::from_bytes(code, t.clone());
    let remote = MemBlock::new(0x100);
    m.hpu
        .mem
        .map(L1_REMOTE, 0x100, &remote, 0, Perm::RW, MemClass::L1Remote)
        .unwrap();
    let ideal = MemBlock::new(0x100);
    m.hpu
        .mem
        .map(IDEAL, 0x100, &ideal, 0, Perm::RW, MemClass::Ideal)
        .unwrap();
    let st = m.run();
    assert!(matches!(st, Stop::Exit(_)), "kernel did not exit: {st:?}");
    m.hpu.cycles
}

/// Every pin assembled, once for all tests (they share the scratch files).
fn assembled() -> &'static [(&'static str, Vec<u8>, u64)] {
    static K: std::sync::OnceLock<Vec<(&str, Vec<u8>, u64)>> = std::sync::OnceLock::new();
    K.get_or_init(|| {
        PINS.iter()
            .map(|&(name, body, want)| (name, assemble(body), want))
            .collect()
    })
}

#[test]
fn every_pin_costs_what_the_documentation_says() {
    let t = TimingModel::default();
    let bad: Vec<String> = assembled()
        .iter()
        .filter_map(|(name, code, want)| {
            let got = cycles(code, &t);
            (got != *want).then(|| format!("{name}: {got} cycles, documented {want}"))
        })
        .collect();
    assert!(bad.is_empty(), "timing pins moved:\n{}", bad.join("\n"));
}

/// Each timing-table entry, perturbed alone, moves at least one pin: no
/// entry can change unnoticed. (The clock is pinned through ns below.)
#[test]
fn every_table_entry_is_pinned() {
    type Poke = fn(&mut TimingModel);
    let pokes: &[(&str, Poke)] = &[
        ("alu", |t| t.alu += 1),
        ("load", |t| t.load += 1),
        ("store", |t| t.store += 1),
        ("load_use_stall", |t| t.load_use_stall += 1),
        ("branch", |t| t.branch += 1),
        ("branch_taken_penalty", |t| t.branch_taken_penalty -= 1),
        ("jal", |t| t.jal += 1),
        ("jalr", |t| t.jalr += 1),
        ("mul", |t| t.mul += 1),
        ("mulh", |t| t.mulh += 1),
        ("div", |t| t.div -= 1),
        ("csr", |t| t.csr += 1),
        ("ecall", |t| t.ecall += 1),
        ("atomic", |t| t.atomic += 1),
        ("misaligned_penalty", |t| t.misaligned_penalty += 1),
        ("mem_latency[l1]", |t| {
            t.mem_latency[MemClass::L1Local as usize] += 1
        }),
        ("mem_latency[l1_remote]", |t| {
            t.mem_latency[MemClass::L1Remote as usize] += 1
        }),
        ("mem_latency[l2]", |t| {
            t.mem_latency[MemClass::L2 as usize] += 1
        }),
        ("mem_latency[prog_mem]", |t| {
            t.mem_latency[MemClass::ProgMem as usize] += 1
        }),
        ("mem_latency[ideal]", |t| {
            t.mem_latency[MemClass::Ideal as usize] += 1
        }),
        ("hw_loops", |t| t.hw_loops = !t.hw_loops),
    ];
    let kernels = assembled();
    let base = TimingModel::default();
    let unpinned: Vec<&str> = pokes
        .iter()
        .filter(|(_, poke)| {
            let mut t = base.clone();
            poke(&mut t);
            assert_ne!(t, base);
            kernels
                .iter()
                .all(|(_, code, _)| cycles(code, &t) == cycles(code, &base))
        })
        .map(|(name, _)| *name)
        .collect();
    assert!(
        unpinned.is_empty(),
        "no pin notices a change of {unpinned:?}"
    );
}

#[test]
fn clocks_convert_cycles_as_documented() {
    // PsPIN at 1 GHz (seed 001 §4.1): 1 cycle = 1 ns.
    assert_eq!(TimingModel::default().clock_mhz, 1000);
    assert_eq!(TimingModel::default().cycles_to_ns(1234), 1234);
    // FPsPIN at 40 MHz (seed 000 Table 6.2): 1 cycle = 25 ns.
    let f = TimingModel {
        clock_mhz: softspin_hpu::timing::FPSPIN_CLOCK_MHZ,
        ..TimingModel::default()
    };
    assert_eq!(f.cycles_to_ns(1234), 1234 * 25);
    // Around the 64-bit fast path's limit (cycles * 1000 overflowing), the
    // same quotient as in 128 bits, and saturation where that overflows.
    let slow = |m: &TimingModel, c: u64| {
        u64::try_from(c as u128 * 1000 / m.clock_mhz.max(1) as u128).unwrap_or(u64::MAX)
    };
    let three = TimingModel {
        clock_mhz: 3,
        ..TimingModel::default()
    };
    for m in [&TimingModel::default(), &f, &three] {
        for c in [
            0,
            1,
            999,
            u64::MAX / 1000 - 1,
            u64::MAX / 1000,
            u64::MAX / 1000 + 1,
            u64::MAX / 7,
            u64::MAX,
        ] {
            assert_eq!(
                m.cycles_to_ns(c),
                slow(m, c),
                "{c} cycles at {} MHz",
                m.clock_mhz
            );
        }
    }
    assert_eq!(TimingModel::default().cycles_to_ns(u64::MAX), u64::MAX);
}
