//! The reference disassembler of the decoder tests: raw RV32 code through
//! llvm-objcopy and llvm-objdump of one LLVM version (scripts/setup.sh
//! installs 14 and 19).

use std::collections::HashMap;
use std::process::Command;

/// objdump's (mnemonic, operands) for each address of `code`, disassembled
/// with `llvm-objdump-VERSION --mattr=MATTR -M no-aliases`.
pub fn objdump(
    tag: &str,
    code: &[u8],
    version: u32,
    mattr: &str,
) -> HashMap<u32, (String, String)> {
    let dir = softspin_testkit::scratch(tag);
    let (raw, elf) = (dir.join("code.bin"), dir.join("code.elf"));
    std::fs::write(&raw, code).unwrap();
    let run = |cmd: &mut Command| {
        let o = cmd.output().unwrap_or_else(|e| {
            panic!("{cmd:?}: {e} (scripts/setup.sh --tests installs llvm-{version})")
        });
        assert!(
            o.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    // Wrap the raw bytes in an ELF whose only section is executable code.
    run(Command::new(format!("llvm-objcopy-{version}"))
        .args([
            "-I",
            "binary",
            "-O",
            "elf32-littleriscv",
            "--rename-section=.data=.text,code,alloc",
        ])
        .arg(&raw)
        .arg(&elf));
    let out = run(Command::new(format!("llvm-objdump-{version}"))
        .args(["-d", &format!("--mattr={mattr}"), "-M", "no-aliases"])
        .arg(&elf));
    let _ = std::fs::remove_dir_all(&dir);
    let mut m = HashMap::new();
    for line in String::from_utf8(out).unwrap().lines() {
        // "      54: 2e 85        \tc.mv\ta0, a1"
        let Some((addr, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(addr) = u32::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let mut f = rest.split('\t').skip(1);
        let mn = f.next().unwrap_or("").trim().to_string();
        let ops = f.next().unwrap_or("").trim().to_string();
        m.insert(addr, (mn, ops));
    }
    m
}
