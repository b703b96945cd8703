//! Where the XDP matcher's system headers are: build.rs uses this, and
//! tests/bpf_include.rs tests it against made-up include trees.
//!
//! match.bpf.c includes two kinds of system header: the kernel's UAPI
//! (linux/bpf.h pulls asm/types.h, which Debian keeps under a multiarch
//! directory, /usr/include/x86_64-linux-gnu/asm/) and libbpf's helpers
//! (bpf/bpf_helpers.h, from libbpf-dev).

use std::path::{Path, PathBuf};

pub const ASM_HEADER: &str = "asm/types.h";
pub const LIBBPF_HEADER: &str = "bpf/bpf_helpers.h";

/// Debian's multiarch triple for a Rust target's `target_arch` and
/// `target_os`, for the architectures whose Linux kernels run XDP.
pub fn multiarch(arch: &str, os: &str) -> Option<&'static str> {
    if os != "linux" {
        return None;
    }
    Some(match arch {
        "x86_64" => "x86_64-linux-gnu",
        "x86" => "i386-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "arm" => "arm-linux-gnueabihf",
        "riscv64" => "riscv64-linux-gnu",
        "powerpc64" => "powerpc64le-linux-gnu",
        "s390x" => "s390x-linux-gnu",
        "loongarch64" => "loongarch64-linux-gnu",
        _ => return None,
    })
}

/// The directory to pass with `-I` so `asm/types.h` is found: the first of
/// `root/TRIPLE` (for each of `triples`) that holds it, or `None` when
/// `root` holds it itself (Fedora, Arch: no `-I` needed). The error names
/// `target`, every place looked at and the package that provides it.
pub fn asm_include_dir(
    root: &Path,
    triples: &[String],
    target: &str,
) -> Result<Option<PathBuf>, String> {
    let mut looked = Vec::new();
    for t in triples {
        let dir = root.join(t);
        if dir.join(ASM_HEADER).is_file() {
            return Ok(Some(dir));
        }
        looked.push(dir.join(ASM_HEADER).display().to_string());
    }
    if root.join(ASM_HEADER).is_file() {
        return Ok(None);
    }
    looked.push(root.join(ASM_HEADER).display().to_string());
    Err(format!(
        "building the XDP matcher for {target} needs the kernel's {ASM_HEADER} (package linux-libc-dev; scripts/setup.sh installs it); looked for {}. Build softspin-host without the live NIC (--no-default-features) to do without it",
        looked.join(", ")
    ))
}

/// An error naming libbpf's header if `root` lacks it.
pub fn check_libbpf(root: &Path) -> Result<(), String> {
    let h = root.join(LIBBPF_HEADER);
    if h.is_file() {
        return Ok(());
    }
    Err(format!(
        "building the XDP matcher needs libbpf's {} (package libbpf-dev; scripts/setup.sh installs it). Build softspin-host without the live NIC (--no-default-features) to do without it",
        h.display()
    ))
}
