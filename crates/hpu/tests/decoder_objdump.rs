//! The decoder against an independent reference, LLVM's RISC-V disassembler
//! (`llvm-objdump-14`, from the llvm-14 package scripts/setup.sh --tests installs).
//!
//! Every 16-bit parcel (all 65,536: the compressed ones as instructions, the
//! others as the low half of a 32-bit word), a fixed-seed sweep of random
//! 32-bit words, and structured sweeps of every major opcode x funct3 x
//! funct7, every CSR number and every AMO function are decoded by
//! `isa::decode16`/`decode32` and by objdump in one batch. objdump's text is
//! normalised to our disassembly (`Display for Inst`): compressed forms to
//! their expansions, LUI/AUIPC to the folded `li`, branch offsets to absolute
//! targets. The normalisation only renames syntax; every bit is decoded by
//! LLVM. Where RV32IMAC+Zicsr in user mode deliberately differs from what
//! objdump accepts, `allowed_difference` says so, case by case.

use std::collections::HashMap;
use std::fmt::Write as _;

mod llvm;

use softspin_hpu::isa::{decode16, decode32, REG_NAMES};
use softspin_testkit::Rng;

/// One test item: 4 bytes at pc = 4 * index.
#[derive(Clone, Copy)]
enum Item {
    /// A compressed parcel, padded with a c.nop (0x0001) that is not checked.
    C(u16),
    W(u32),
}

fn items() -> Vec<Item> {
    let mut rng = Rng::new(0x005e_ed0f_5b1b);
    let mut v = Vec::new();
    // All parcels. A parcel with low bits 11 starts a 32-bit instruction:
    // pair it with a random high half.
    for p in 0..=u16::MAX {
        if p & 3 == 3 {
            v.push(Item::W(p as u32 | rng.next_u32() << 16));
        } else {
            v.push(Item::C(p));
        }
    }
    // Random 32-bit instructions (low bits 11, else they would be compressed).
    for _ in 0..200_000 {
        v.push(Item::W(rng.next_u32() | 3));
    }
    // Every major opcode x funct3 x funct7, random registers.
    for op in 0..32u32 {
        for f3 in 0..8u32 {
            for f7 in 0..128u32 {
                let regs = rng.next_u32() & 0x01FF_8F80; // rs2, rs1, rd
                v.push(Item::W(f7 << 25 | f3 << 12 | op << 2 | 3 | regs));
            }
        }
    }
    // SYSTEM: every CSR number x funct3, with rs1/uimm and rd zero and random.
    for csr in 0..4096u32 {
        for f3 in 0..8u32 {
            v.push(Item::W(csr << 20 | f3 << 12 | 0x73));
            v.push(Item::W(
                csr << 20 | (rng.next_u32() & 0xF8F80) | f3 << 12 | 0x73,
            ));
        }
    }
    // AMO: every funct5 x aq/rl x funct3, with rs2 zero and random.
    for f7 in 0..128u32 {
        for f3 in 0..8u32 {
            let regs = rng.next_u32() & 0x000F_8F80;
            v.push(Item::W(f7 << 25 | regs | f3 << 12 | 0x2F));
            v.push(Item::W(
                f7 << 25 | (rng.next_u32() & 0x01F0_0000) | regs | f3 << 12 | 0x2F,
            ));
        }
    }
    v
}

/// objdump's verdict for each address, as printed (mnemonic, operands).
fn objdump(items: &[Item]) -> HashMap<u32, (String, String)> {
    let mut bin = Vec::with_capacity(items.len() * 4);
    for it in items {
        match *it {
            Item::C(p) => {
                bin.extend(p.to_le_bytes());
                bin.extend(0x0001u16.to_le_bytes());
            }
            Item::W(w) => bin.extend(w.to_le_bytes()),
        }
    }
    llvm::objdump("decoder-objdump", &bin, 14, "+m,+a,+c")
}

fn reg_num(name: &str) -> Option<u32> {
    REG_NAMES.iter().position(|r| *r == name).map(|k| k as u32)
}

/// CSR names objdump prints for the user counters (their numbers are the
/// Zicntr spec's), and any other name or number.
fn csr_num(name: &str) -> Option<u32> {
    let fixed = [
        ("cycle", 0xC00),
        ("time", 0xC01),
        ("instret", 0xC02),
        ("cycleh", 0xC80),
        ("timeh", 0xC81),
        ("instreth", 0xC82),
    ];
    if let Some((_, n)) = fixed.iter().find(|(s, _)| *s == name) {
        return Some(*n);
    }
    if let Some(k) = name.strip_prefix("hpmcounter") {
        let (k, hi) = k.strip_suffix('h').map_or((k, 0), |k| (k, 0x80));
        return k
            .parse::<u32>()
            .ok()
            .filter(|k| (3..32).contains(k))
            .map(|k| 0xC00 + hi + k);
    }
    name.strip_prefix("0x")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .or_else(|| name.parse().ok())
}

/// The Zicntr counters (cycle, time, instret, hpmcounter3..31 and the high
/// halves): the only CSRs user mode may read, and read only.
fn is_user_counter(n: u32) -> bool {
    (0xC00..=0xC1F).contains(&n) || (0xC80..=0xC9F).contains(&n)
}

/// Drop objdump's symbolic annotation of a target: "0x14 <sym+0x14>" -> "0x14".
fn target(s: &str) -> String {
    s.split(' ').next().unwrap_or("").to_string()
}

/// objdump's (mnemonic, operands) at `pc` as our disassembly; None for
/// "not an instruction" (`<unknown>`, c.unimp). Err for forms this test does
/// not know (a test bug, reported as a failure).
fn normalise(pc: u32, mn: &str, ops: &str) -> Result<Option<String>, String> {
    let o: Vec<&str> = if ops.is_empty() {
        vec![]
    } else {
        ops.split(", ").collect()
    };
    let arg = |k: usize| {
        o.get(k)
            .copied()
            .ok_or_else(|| format!("{mn} {ops}: missing operand {k}"))
    };
    let int = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| format!("{mn} {ops}: bad number {s:?}"))
    };
    let s = match mn {
        // `unimp` is CSRRW x0, cycle, x0: defined illegal.
        "<unknown>" | "c.unimp" | "unimp" => return Ok(None),
        "lui" => format!("li {}, 0x{:x}", arg(0)?, (int(arg(1)?)? as u32) << 12),
        "auipc" => format!(
            "li {}, 0x{:x}",
            arg(0)?,
            pc.wrapping_add((int(arg(1)?)? as u32) << 12)
        ),
        "jal" => format!("jal {}, {}", arg(0)?, target(arg(1)?)),
        "beq" | "bne" | "blt" | "bge" | "bltu" | "bgeu" => {
            format!("{mn} {}, {}, {}", arg(0)?, arg(1)?, target(arg(2)?))
        }
        "fence" | "fence.tso" | "fence.i" => "fence".into(),
        "csrrs" | "csrrc" | "csrrsi" | "csrrci" | "csrrw" | "csrrwi" => {
            // Reads: set/clear with x0 / zero immediate. Anything else writes.
            let reads =
                !mn.ends_with('w') && !mn.ends_with("wi") && matches!(arg(2)?, "zero" | "0");
            match csr_num(arg(1)?) {
                Some(n) if reads && is_user_counter(n) => format!("csrr {}, 0x{n:03x}", arg(0)?),
                _ => format!("csr-other {mn} {ops}"),
            }
        }
        // aq/rl order this hart's accesses; one in-order HPU per hart
        // satisfies them trivially, so the decoded form does not keep them.
        m if m.starts_with("amo") || m.starts_with("lr.w") || m.starts_with("sc.w") => {
            let base = m
                .trim_end_matches(".aqrl")
                .trim_end_matches(".aq")
                .trim_end_matches(".rl");
            format!("{base} {ops}")
        }
        // F/D instructions (LLVM 14 decodes a few even without +f).
        m if m.starts_with('f') => format!("fp {mn} {ops}"),
        // Compressed forms as their 32-bit expansions (RVC spec table 16.x).
        "c.nop" => format!("addi zero, zero, {}", o.first().map_or(Ok(0), |s| int(s))?),
        "c.addi" => format!("addi {0}, {0}, {1}", arg(0)?, arg(1)?),
        "c.addi4spn" => format!("addi {}, {}, {}", arg(0)?, arg(1)?, arg(2)?),
        "c.addi16sp" => format!("addi {0}, {0}, {1}", arg(0)?, arg(1)?),
        "c.li" => format!("addi {}, zero, {}", arg(0)?, arg(1)?),
        "c.lui" => format!("li {}, 0x{:x}", arg(0)?, (int(arg(1)?)? as u32) << 12),
        "c.lw" | "c.lwsp" => format!("lw {}, {}", arg(0)?, arg(1)?),
        "c.sw" | "c.swsp" => format!("sw {}, {}", arg(0)?, arg(1)?),
        "c.j" => format!("jal zero, {}", target(arg(0)?)),
        "c.jal" => format!("jal ra, {}", target(arg(0)?)),
        "c.jr" => format!("jalr zero, 0({})", arg(0)?),
        "c.jalr" => format!("jalr ra, 0({})", arg(0)?),
        "c.beqz" => format!("beq {}, zero, {}", arg(0)?, target(arg(1)?)),
        "c.bnez" => format!("bne {}, zero, {}", arg(0)?, target(arg(1)?)),
        "c.mv" => format!("add {}, zero, {}", arg(0)?, arg(1)?),
        "c.add" | "c.sub" | "c.xor" | "c.or" | "c.and" => {
            format!("{} {2}, {2}, {}", &mn[2..], arg(1)?, arg(0)?)
        }
        "c.slli" | "c.srli" | "c.srai" | "c.andi" => {
            format!("{} {2}, {2}, {}", &mn[2..], arg(1)?, arg(0)?)
        }
        // RV128's 64-bit shifts; on RV32 these encodings are shifts by 0.
        "c.slli64" | "c.srli64" | "c.srai64" => {
            format!("{} {1}, {1}, 0", &mn[2..mn.len() - 2], arg(0)?)
        }
        "c.ebreak" => "ebreak".into(),
        _ => {
            // Base instructions print as ours already; check the names exist.
            for r in &o {
                let r = r
                    .rsplit_once('(')
                    .map_or(*r, |(_, b)| b.trim_end_matches(')'));
                if reg_num(r).is_none() && r.parse::<i64>().is_err() {
                    return Err(format!("unknown operand {r:?} in `{mn} {ops}`"));
                }
            }
            format!("{mn} {ops}").trim_end().to_string()
        }
    };
    Ok(Some(s))
}

/// Privileged instructions objdump knows; user-mode handlers may not run them.
const PRIVILEGED: &[&str] = &[
    "mret",
    "sret",
    "uret",
    "dret",
    "wfi",
    "sfence.vma",
    "hfence.vvma",
    "hfence.gvma",
];

/// Where our verdict may differ from objdump's, and why. Anything else is a
/// decoder bug.
fn allowed_difference(
    it: Item,
    ours: &Option<String>,
    theirs: &Option<String>,
    their_mn: &str,
) -> Option<&'static str> {
    let ours_illegal = ours.is_none();
    match it {
        Item::W(w) => {
            let (op, f3) = (w & 0x7F, (w >> 12) & 7);
            if matches!(op, 0x0B | 0x2B | 0x5B) && theirs.is_none() {
                // custom-0/1/2 hold the CORE-V extensions, which LLVM 14 does
                // not know; tests/decoder_corev.rs checks them against
                // llvm-objdump-19.
                return Some("CORE-V custom opcode (checked by decoder_corev.rs)");
            }
            if ours_illegal && theirs.as_deref().is_some_and(|t| t.starts_with("fp ")) {
                return Some("F/D instruction: the HPU has no FPU (RV32IMAC)");
            }
            if ours_illegal && PRIVILEGED.contains(&their_mn) {
                return Some("privileged instruction: illegal in user mode");
            }
            if ours_illegal
                && theirs
                    .as_deref()
                    .is_some_and(|t| t.starts_with("csr-other"))
            {
                return Some("CSR access other than reading a user counter: illegal in user mode");
            }
            if ours_illegal && matches!(their_mn, "slli" | "srli" | "srai") && shamt_ge_32(theirs) {
                // RV32I: "SLLI, SRLI and SRAI with imm[5] != 0 are
                // reserved"; LLVM 14 decodes them as RV64 shifts.
                return Some("RV32 shift with shamt[5] = 1");
            }
            if op == 0x0F
                && (f3 == 0 || f3 == 1)
                && theirs.is_none()
                && ours.as_deref() == Some("fence")
            {
                // RISC-V unprivileged spec, FENCE/FENCE.I: the reserved fields
                // (rs1, rd, unused fm/imm bits) "shall be ignored" by base
                // implementations; LLVM rejects non-zero ones.
                return Some("FENCE/FENCE.I with non-zero reserved fields");
            }
            None
        }
        Item::C(p) => {
            // C.LUI with nzimm = 0 is reserved (RVC spec); LLVM 14 decodes it
            // as `c.lui rd, 0`.
            if ours_illegal
                && their_mn == "c.lui"
                && theirs.as_deref().is_some_and(|t| t.ends_with(", 0x0"))
            {
                return Some("reserved C.LUI with zero immediate");
            }
            if ours_illegal
                && matches!(their_mn, "c.slli" | "c.srli" | "c.srai")
                && shamt_ge_32(theirs)
            {
                // RVC: "for RV32C, shamt[5] must be zero; the code points
                // with shamt[5] = 1 are designated for custom extensions".
                let _ = p;
                return Some("RV32C shift with shamt[5] = 1");
            }
            None
        }
    }
}

/// The shift amount (last operand) of a normalised shift is 32 or more.
fn shamt_ge_32(theirs: &Option<String>) -> bool {
    theirs
        .as_deref()
        .and_then(|t| t.rsplit(", ").next())
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n >= 32)
}

#[test]
fn decoder_agrees_with_llvm_objdump() {
    let items = items();
    let reference = objdump(&items);
    let mut failures = String::new();
    let mut nfail = 0;
    let mut allowed: HashMap<&'static str, usize> = HashMap::new();
    let (mut legal, mut illegal) = (0usize, 0usize);
    // (our mnemonic, objdump's): mismatch count, so each kind shows once.
    let mut by_kind: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for (k, it) in items.iter().enumerate() {
        let pc = 4 * k as u32;
        let (inst, raw) = match *it {
            Item::C(p) => (decode16(p, pc), format!("{p:04x}")),
            Item::W(w) => (decode32(w, pc), format!("{w:08x}")),
        };
        let ours = (inst.op != softspin_hpu::isa::Op::Illegal).then(|| inst.to_string());
        let (mn, ops) = reference
            .get(&pc)
            .cloned()
            .unwrap_or_else(|| ("<missing>".into(), String::new()));
        let theirs = match normalise(pc, &mn, &ops) {
            Ok(t) => t,
            Err(e) => {
                nfail += 1;
                if nfail <= 40 {
                    let _ = writeln!(
                        failures,
                        "{raw} @0x{pc:x}: cannot read objdump's `{mn} {ops}`: {e}"
                    );
                }
                continue;
            }
        };
        if ours.is_some() {
            legal += 1;
        } else {
            illegal += 1;
        }
        if ours == theirs {
            continue;
        }
        if let Some(why) = allowed_difference(*it, &ours, &theirs, &mn) {
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
                "{raw} @0x{pc:x}: ours {ours:?}, objdump {theirs:?} (`{mn} {ops}`)"
            );
        }
    }
    eprintln!(
        "{} encodings: {legal} legal, {illegal} illegal for us; allowed differences: {allowed:?}",
        items.len()
    );
    assert!(
        nfail == 0,
        "{nfail} mismatches with llvm-objdump-14 by kind {by_kind:?}, examples:\n{failures}"
    );
    // The sweep must reach both verdicts in quantity, or it checks nothing.
    assert!(
        legal > 50_000 && illegal > 100_000,
        "{legal} legal, {illegal} illegal"
    );
}
