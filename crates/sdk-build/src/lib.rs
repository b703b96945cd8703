//! Building handler images with the SDK (clang-19, ld.lld-19), from Rust:
//! what `softspin build` runs, what host programs use to compile their
//! handlers (re-exported as `softspin_host::sdk`), and what the engine and
//! HPU crates use in their own tests (a dev-dependency without the engine).
//!
//! The flags come from `sdk/toolchain.txt`, the one file the make fragment
//! reads too. Compiler and linker diagnostics reach the user unchanged
//! (stderr is inherited).
//!
//! The NIC memory map (region bases and sizes) is not in the linker script:
//! it comes from the NIC configuration as `--defsym` symbols
//! ([`BuildOptions::link_symbols`], e.g. from
//! `softspin_hpu::abi::MemoryMap::link_symbols`). Without them the image is
//! linked against `sdk/link/pspin.ld`, the PsPIN profile's map (generated
//! from the configuration and checked by a test).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A build failure; compiler and linker diagnostics went to stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The memory map used when a handler build names none.
pub const DEFAULT_MEMORY_MAP: &str = "link/pspin.ld";

/// The SDK directory: $SOFTSPIN_SDK, else an `sdk/` beside an ancestor of
/// the running executable (a checkout's target/), else the source tree's.
pub fn sdk_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("SOFTSPIN_SDK") {
        let d = PathBuf::from(d);
        if d.join("toolchain.txt").is_file() {
            return Ok(d);
        }
        return Err(Error(format!(
            "SOFTSPIN_SDK={} holds no toolchain.txt",
            d.display()
        )));
    }
    let mut cands = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        cands.extend(exe.ancestors().skip(1).map(|a| a.join("sdk")));
    }
    cands.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk"));
    cands
        .into_iter()
        .find(|c| c.join("toolchain.txt").is_file())
        .map(|c| c.canonicalize().unwrap_or(c))
        .ok_or_else(|| {
            Error("cannot find the softspin SDK (sdk/toolchain.txt); set SOFTSPIN_SDK".into())
        })
}

/// Parsed `sdk/toolchain.txt`, for one ISA choice.
pub struct Toolchain {
    /// The ISA (an `isa-NAME` line of toolchain.txt) these tools build for.
    pub isa: String,
    pub cc: String,
    pub ld: String,
    /// Includes the ISA's `-march`.
    pub cflags: Vec<String>,
    pub ldflags_handler: Vec<String>,
    pub ldflags_bare: Vec<String>,
    pub runtime_handler: Vec<PathBuf>,
    pub runtime_bare: Vec<PathBuf>,
}

impl Toolchain {
    /// The default ISA's toolchain (toolchain.txt's `isa:` line).
    pub fn load(sdk: &Path) -> Result<Toolchain> {
        Self::load_isa(sdk, None)
    }

    /// The toolchain for ISA `isa` (an `isa-NAME: CC LD -march=...` line), or
    /// the default one.
    pub fn load_isa(sdk: &Path, isa: Option<&str>) -> Result<Toolchain> {
        let path = sdk.join("toolchain.txt");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error(format!("{}: {e}", path.display())))?;
        let sdk_s = sdk.display().to_string();
        let get = |key: &str| -> Result<Vec<String>> {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
                .ok_or_else(|| Error(format!("{}: missing `{key}:` line", path.display())))?;
            Ok(line
                .split_whitespace()
                .map(|w| w.replace("{sdk}", &sdk_s))
                .collect())
        };
        let one = |v: Vec<String>| v.into_iter().next().unwrap_or_default();
        let rel = |v: Vec<String>| v.into_iter().map(|f| sdk.join(f)).collect::<Vec<_>>();
        let known: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix("isa-")?
                    .split_once(':')
                    .map(|(n, _)| n.trim())
            })
            .collect();
        let name = match isa {
            Some(n) => n.to_string(),
            None => one(get("isa")?),
        };
        if !known.contains(&name.as_str()) {
            return Err(Error(format!(
                "isa `{name}`: not defined in {} (choices: {})",
                path.display(),
                known.join(", ")
            )));
        }
        let spec = get(&format!("isa-{name}"))?;
        let [cc, ld, march] = <[String; 3]>::try_from(spec).map_err(|v| {
            Error(format!(
                "{}: `isa-{name}:` needs CC LD -march=..., got {v:?}",
                path.display()
            ))
        })?;
        let mut cflags = get("cflags")?;
        cflags.push(march);
        Ok(Toolchain {
            isa: name,
            cc,
            ld,
            cflags,
            ldflags_handler: get("ldflags-handler")?,
            ldflags_bare: get("ldflags-bare")?,
            runtime_handler: rel(get("runtime-handler")?),
            runtime_bare: rel(get("runtime-bare")?),
        })
    }
}

/// What to build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    pub sources: Vec<PathBuf>,
    pub output: PathBuf,
    pub include: Vec<PathBuf>,
    /// `NAME` or `NAME=VALUE`.
    pub define: Vec<String>,
    /// A bare-metal program (crt0 + main) instead of a handler image.
    pub bare: bool,
    /// Extra clang flags.
    pub cflags: Vec<String>,
    /// Link code / data at these addresses (handler images).
    pub code_base: Option<u32>,
    pub data_base: Option<u32>,
    /// The NIC memory map as linker symbols (`SOFTSPIN_PROG_MEM_SIZE`, ...),
    /// passed as `--defsym`; empty: `sdk/link/pspin.ld`.
    pub link_symbols: Vec<(String, u32)>,
    /// Print the commands as they run.
    pub verbose: bool,
}

impl BuildOptions {
    /// A handler image from `sources`.
    pub fn handler(sources: &[impl AsRef<Path>], output: impl AsRef<Path>) -> BuildOptions {
        BuildOptions {
            sources: sources.iter().map(|s| s.as_ref().to_path_buf()).collect(),
            output: output.as_ref().to_path_buf(),
            ..Default::default()
        }
    }
}

fn require_tool(name: &str) -> Result<()> {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(Error(format!(
            "{name} not found: install it with `apt-get install clang-19 lld-19` (or run scripts/setup.sh, which does)"
        ))),
    }
}

fn run(cmd: &mut Command, verbose: bool, what: &str) -> Result<()> {
    if verbose {
        eprintln!("+ {cmd:?}");
    }
    let st = cmd
        .status()
        .map_err(|e| Error(format!("running {what}: {e}")))?;
    if !st.success() {
        return Err(Error(format!("{what} failed")));
    }
    Ok(())
}

/// Compile and link for the default ISA. Diagnostics go to stderr unchanged.
pub fn build(o: &BuildOptions) -> Result<()> {
    build_isa(o, None)
}

/// Compile and link for ISA `isa` (toolchain.txt's `isa-NAME` lines, e.g.
/// `rv32imac` or `corev`), or the default one.
pub fn build_isa(o: &BuildOptions, isa: Option<&str>) -> Result<()> {
    let sdk = sdk_dir()?;
    let tc = Toolchain::load_isa(&sdk, isa)?;
    require_tool(&tc.cc)?;
    require_tool(&tc.ld)?;
    for s in &o.sources {
        if !s.is_file() {
            return Err(Error(format!("{}: no such source file", s.display())));
        }
    }
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("softspin-build-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| Error(format!("{}: {e}", tmp.display())))?;
    let r = build_in(o, &sdk, &tc, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

fn build_in(o: &BuildOptions, sdk: &Path, tc: &Toolchain, tmp: &Path) -> Result<()> {
    let runtime = if o.bare {
        &tc.runtime_bare
    } else {
        &tc.runtime_handler
    };
    let mut objs = Vec::new();
    for (k, src) in o.sources.iter().chain(runtime.iter()).enumerate() {
        let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("src");
        let obj = tmp.join(format!("{k}-{stem}.o"));
        let mut cmd = Command::new(&tc.cc);
        // The caller's directories come before the SDK's, so a profile's
        // headers (sdk/fpspin/runtime/include) can stand in for the SDK's.
        for i in &o.include {
            cmd.arg("-I").arg(i);
        }
        cmd.args(&tc.cflags);
        for d in &o.define {
            cmd.arg(format!("-D{d}"));
        }
        cmd.args(&o.cflags).arg("-c").arg(src).arg("-o").arg(&obj);
        run(&mut cmd, o.verbose, &format!("compiling {}", src.display()))?;
        objs.push(obj);
    }
    let mut cmd = Command::new(&tc.ld);
    if !o.bare && o.link_symbols.is_empty() {
        // An input file that is not an object is read as a linker script.
        // Before handler.ld: ld.lld-19 evaluates its DEFINED() checks
        // against the symbols of scripts read so far (lld-14 took any order).
        cmd.arg(sdk.join(DEFAULT_MEMORY_MAP));
    }
    cmd.args(if o.bare {
        &tc.ldflags_bare
    } else {
        &tc.ldflags_handler
    });
    if !o.bare {
        for (name, v) in &o.link_symbols {
            cmd.arg(format!("--defsym={name}=0x{v:x}"));
        }
        if let Some(b) = o.code_base {
            cmd.arg(format!("--defsym=SOFTSPIN_CODE_BASE=0x{b:x}"));
        }
        if let Some(b) = o.data_base {
            cmd.arg(format!("--defsym=SOFTSPIN_DATA_BASE=0x{b:x}"));
        }
    }
    cmd.args(&objs).arg("-o").arg(&o.output);
    run(&mut cmd, o.verbose, "linking")
}
