//! `softspin build`: compile handler sources into an RV32 image with the SDK
//! (the work is done by the `softspin-sdk` crate), for the memory map and
//! cluster count of the chosen profile or configuration.

use std::path::PathBuf;
use std::process::ExitCode;

use softspin_sdk::{self as sdk, BuildOptions};

#[derive(clap::Args)]
pub struct BuildArgs {
    /// C or assembly sources (.c, .S, .s).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// Output ELF image.
    #[arg(short, long)]
    output: PathBuf,
    /// Add an include directory (passed to clang).
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Define a macro, NAME or NAME=VALUE (passed to clang).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    define: Vec<String>,
    /// Build a bare-metal program (crt0 + main, exit via ecall 93) for
    /// `softspin isa run` instead of a handler image.
    #[arg(long)]
    bare: bool,
    /// Build for this NIC profile: its memory map (region bases and sizes,
    /// passed to the linker) and constants (NB_CLUSTERS, NB_CORES).
    /// Default: pspin.
    #[arg(long, value_name = "pspin|fpspin", conflicts_with = "config")]
    profile: Option<String>,
    /// Build for the NIC described by this TOML configuration (memory map
    /// and constants, as --profile).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Link the code at this program-memory address (handler images).
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    code_base: Option<u32>,
    /// Link the data at this L2 handler-memory address (handler images).
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    data_base: Option<u32>,
    /// Debug information (DWARF) for gdb (docs/debugging.md). The code is
    /// still built with -O3, the code that is measured; add --cflag=-O0
    /// to keep every local in memory.
    #[arg(short = 'g')]
    debug: bool,
    /// Extra flags for clang (repeatable), e.g. --cflag=-O2.
    #[arg(long = "cflag", value_name = "FLAG", allow_hyphen_values = true)]
    cflags: Vec<String>,
    /// Instruction set to compile for (sdk/toolchain.txt's `isa-NAME`
    /// lines): corev (CV32E40P's xcvmem/xcvalu/xcvbi/xcvmac, docs/corev.md;
    /// the default, toolchain.txt's `isa:` line) or plain rv32imac. Both
    /// build with clang-19.
    #[arg(long, value_name = "rv32imac|corev")]
    isa: Option<String>,
    /// Print the commands as they run.
    #[arg(short, long)]
    verbose: bool,
}

impl BuildArgs {
    /// What `softspin build --profile PROFILE SOURCES -o OUTPUT` does, for
    /// commands that build handlers they carry (`cluster up --rma`).
    pub fn handler(sources: Vec<PathBuf>, output: PathBuf, profile: &str) -> BuildArgs {
        BuildArgs {
            sources,
            output,
            include: Vec::new(),
            define: Vec::new(),
            bare: false,
            profile: Some(profile.into()),
            config: None,
            code_base: None,
            data_base: None,
            debug: false,
            cflags: Vec::new(),
            isa: None,
            verbose: false,
        }
    }
}

pub fn sdk_dir() -> anyhow::Result<PathBuf> {
    Ok(sdk::sdk_dir()?)
}

fn parse_addr(s: &str) -> Result<u32, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("`{s}` is not an address: {e}"))
}

pub fn main(mut a: BuildArgs) -> anyhow::Result<ExitCode> {
    let nic = crate::sim::nic_config(a.profile.as_deref(), a.config.as_deref())?;
    if a.profile.is_some() || a.config.is_some() {
        a.define.extend(nic.sdk_defines());
    }
    if a.profile.as_deref() == Some("fpspin") && !a.bare {
        // FPsPIN's handler environment (docs/fpspin.md): its packets.h,
        // spin_host.h and host data block, searched before the SDK's headers.
        let fp = sdk_dir()?.join("fpspin/runtime");
        a.include.insert(0, fp.join("include"));
        a.sources.push(fp.join("src/fpspin_rt.c"));
    }
    if a.debug {
        a.cflags.insert(0, "-g".into());
    }
    sdk::build_isa(
        &BuildOptions {
            sources: a.sources,
            output: a.output,
            include: a.include,
            define: a.define,
            bare: a.bare,
            cflags: a.cflags,
            code_base: a.code_base,
            data_base: a.data_base,
            link_symbols: nic.memory_map().link_symbols(),
            verbose: a.verbose,
        },
        a.isa.as_deref(),
    )?;
    Ok(ExitCode::SUCCESS)
}
