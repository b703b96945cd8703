//! The CORE-V decoder against an independent reference: LLVM 19's RISC-V
//! disassembler (`llvm-objdump-19 --mattr=+xcvmem,+xcvalu,+xcvbi,+xcvmac`,
//! from the llvm-19 package scripts/setup.sh installs).
//!
//! Every word of the custom-0/1/2/3 major opcodes that matters is swept:
//! every funct3 x funct7 with random registers, every funct3 x funct7 x rs2
//! of the R-type space (custom-1 funct3 = 3, where unary ops require rs2 = 0
//! and clip keeps its bound in rs2), every funct3 x funct2 x Is3 of custom-2,
//! and a fixed-seed sweep of random words with each custom opcode. Both
//! sides disassemble to text (ours is `Display for Inst`, which prints
//! objdump's syntax); the only normalisation is dropping objdump's symbolic
//! annotation after branch targets. They must agree exactly; the deliberate
//! differences are listed in `allowed_difference`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

mod llvm;

use softspin_hpu::isa::{decode32, Op};
use softspin_testkit::Rng;

const MATTR: &str = "+xcvmem,+xcvalu,+xcvbi,+xcvmac";
const CUSTOM: [u32; 4] = [0x0B, 0x2B, 0x5B, 0x7B];

fn words() -> Vec<u32> {
    let mut rng = Rng::new(0xc04e_5eed);
    let mut v = Vec::new();
    for &op in &CUSTOM {
        // funct3 x funct7, three random register/immediate fillings each.
        for f3 in 0..8u32 {
            for f7 in 0..128u32 {
                for _ in 0..3 {
                    v.push(f7 << 25 | (rng.next_u32() & 0x01FF_8F80) | f3 << 12 | op);
                }
            }
        }
        // Random words.
        for _ in 0..20_000 {
            v.push((rng.next_u32() & !0x7F) | op);
        }
    }
    // custom-1 funct3 = 3: every funct7 x rs2, random rd/rs1.
    for f7 in 0..128u32 {
        for rs2 in 0..32u32 {
            v.push(f7 << 25 | rs2 << 20 | (rng.next_u32() & 0x000F_8F80) | 3 << 12 | 0x2B);
        }
    }
    // custom-2: every funct3 x funct2 x Is3, random registers.
    for f3 in 0..8u32 {
        for top in 0..128u32 {
            v.push(top << 25 | (rng.next_u32() & 0x01FF_8F80) | f3 << 12 | 0x5B);
        }
    }
    // Registers x0 in every position (x0 sinks, x0 bases, x0 rs3).
    for &op in &CUSTOM {
        for f3 in 0..8u32 {
            for f7 in 0..128u32 {
                v.push(f7 << 25 | f3 << 12 | op);
            }
        }
    }
    v
}

/// objdump's (mnemonic, operands) for each address.
fn objdump(words: &[u32]) -> HashMap<u32, (String, String)> {
    let bin: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    llvm::objdump("decoder-corev", &bin, 19, MATTR)
}

/// objdump's text as ours: None for "not an instruction"; branch targets
/// without their `<symbol>` annotation.
fn normalise(mn: &str, ops: &str) -> Option<String> {
    if mn == "<unknown>" {
        return None;
    }
    let ops = ops.split(" <").next().unwrap_or("");
    Some(format!("{mn} {ops}").trim_end().to_string())
}

/// Where our verdict may differ from objdump's, and why.
fn allowed_difference(
    _w: u32,
    _ours: &Option<String>,
    _theirs: &Option<String>,
) -> Option<&'static str> {
    None
}

#[test]
fn corev_decoder_agrees_with_llvm_objdump_19() {
    let words = words();
    let reference = objdump(&words);
    let mut failures = String::new();
    let mut nfail = 0;
    let mut allowed: HashMap<&'static str, usize> = HashMap::new();
    let mut by_kind: BTreeMap<(String, String), usize> = BTreeMap::new();
    // Every CORE-V mnemonic we decoded at least once, so a sweep that misses
    // a whole instruction fails.
    let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut legal, mut illegal) = (0usize, 0usize);
    for (k, &w) in words.iter().enumerate() {
        let pc = 4 * k as u32;
        let inst = decode32(w, pc);
        let ours = (inst.op != Op::Illegal).then(|| inst.to_string());
        if ours.is_some() {
            legal += 1;
            *seen.entry(inst.op.mnemonic()).or_default() += 1;
        } else {
            illegal += 1;
        }
        let (mn, ops) = reference
            .get(&pc)
            .cloned()
            .unwrap_or_else(|| ("<missing>".into(), String::new()));
        let theirs = normalise(&mn, &ops);
        if ours == theirs {
            continue;
        }
        if let Some(why) = allowed_difference(w, &ours, &theirs) {
            *allowed.entry(why).or_default() += 1;
            continue;
        }
        nfail += 1;
        let kind = by_kind
            .entry((
                ours.as_deref()
                    .map_or("illegal", |s| s.split(' ').next().unwrap())
                    .to_string(),
                mn.clone(),
            ))
            .or_insert(0);
        *kind += 1;
        if *kind <= 3 {
            let _ = writeln!(
                failures,
                "{w:08x} @0x{pc:x}: ours {ours:?}, objdump {theirs:?}"
            );
        }
    }
    eprintln!(
        "{} encodings: {legal} legal, {illegal} illegal; allowed differences: {allowed:?}",
        words.len()
    );
    eprintln!("mnemonics decoded: {seen:?}");
    assert!(
        nfail == 0,
        "{nfail} mismatches with llvm-objdump-19 by kind {by_kind:?}, examples:\n{failures}"
    );
    // 8 load/store mnemonics + 31 ALU + 2 branches + 18 MAC.
    assert_eq!(
        seen.len(),
        59,
        "some CORE-V instruction was never decoded: {seen:?}"
    );
    assert!(
        legal > 20_000 && illegal > 20_000,
        "{legal} legal, {illegal} illegal"
    );
}
