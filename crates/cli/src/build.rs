//! `softspin build`: compile handler sources into an RV32 image with the SDK.
//!
//! The flags come from `sdk/toolchain.txt`, the one file the make fragment
//! reads too. Compiler and linker diagnostics reach the user unchanged.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

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
    /// Build for this NIC profile's constants (NB_CLUSTERS, NB_CORES).
    #[arg(long, value_name = "pspin|fpspin", conflicts_with = "config")]
    profile: Option<String>,
    /// Build for the NIC described by this TOML configuration.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Link the code at this program-memory address (handler images).
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    code_base: Option<u32>,
    /// Link the data at this L2 handler-memory address (handler images).
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    data_base: Option<u32>,
    /// Extra flags for clang (repeatable), e.g. --cflag=-O2.
    #[arg(long = "cflag", value_name = "FLAG", allow_hyphen_values = true)]
    cflags: Vec<String>,
    /// Print the commands as they run.
    #[arg(short, long)]
    verbose: bool,
}

/// The SDK directory: $SOFTSPIN_SDK, else an `sdk/` next to an ancestor of
/// the executable (a checkout's target/), else the source tree's.
pub fn sdk_dir() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("SOFTSPIN_SDK") {
        let d = PathBuf::from(d);
        if d.join("toolchain.txt").is_file() {
            return Ok(d);
        }
        bail!("SOFTSPIN_SDK={} holds no toolchain.txt", d.display());
    }
    let mut cands = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        cands.extend(exe.ancestors().skip(1).map(|a| a.join("sdk")));
    }
    cands.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk"));
    for c in cands {
        if c.join("toolchain.txt").is_file() {
            return Ok(c.canonicalize().unwrap_or(c));
        }
    }
    bail!("cannot find the softspin SDK (sdk/toolchain.txt); set SOFTSPIN_SDK")
}

/// Parsed `sdk/toolchain.txt`.
pub struct Toolchain {
    pub cc: String,
    pub ld: String,
    pub cflags: Vec<String>,
    pub ldflags_handler: Vec<String>,
    pub ldflags_bare: Vec<String>,
    pub runtime_handler: Vec<PathBuf>,
    pub runtime_bare: Vec<PathBuf>,
}

impl Toolchain {
    pub fn load(sdk: &Path) -> anyhow::Result<Toolchain> {
        let path = sdk.join("toolchain.txt");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let sdk_s = sdk.display().to_string();
        let get = |key: &str| -> anyhow::Result<Vec<String>> {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
                .with_context(|| format!("{}: missing `{key}:` line", path.display()))?;
            Ok(line.split_whitespace().map(|w| w.replace("{sdk}", &sdk_s)).collect())
        };
        let one = |v: Vec<String>| v.into_iter().next().unwrap_or_default();
        let rel = |v: Vec<String>| v.into_iter().map(|f| sdk.join(f)).collect::<Vec<_>>();
        Ok(Toolchain {
            cc: one(get("cc")?),
            ld: one(get("ld")?),
            cflags: get("cflags")?,
            ldflags_handler: get("ldflags-handler")?,
            ldflags_bare: get("ldflags-bare")?,
            runtime_handler: rel(get("runtime-handler")?),
            runtime_bare: rel(get("runtime-bare")?),
        })
    }
}

fn require_tool(name: &str) -> anyhow::Result<()> {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!(
            "{name} not found: install it with `apt-get install clang-14 lld-14` \
             (or run scripts/setup.sh, which does)"
        ),
    }
}

fn run(cmd: &mut Command, verbose: bool, what: &str) -> anyhow::Result<()> {
    if verbose {
        eprintln!("+ {cmd:?}");
    }
    let st = cmd.status().with_context(|| format!("running {what}"))?;
    if !st.success() {
        bail!("{what} failed");
    }
    Ok(())
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
    let sdk = sdk_dir()?;
    let tc = Toolchain::load(&sdk)?;
    require_tool(&tc.cc)?;
    require_tool(&tc.ld)?;
    for s in &a.sources {
        if !s.is_file() {
            bail!("{}: no such source file", s.display());
        }
    }
    let tmp = std::env::temp_dir().join(format!("softspin-build-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let result = build(&a, &tc, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    result?;
    Ok(ExitCode::SUCCESS)
}

fn build(a: &BuildArgs, tc: &Toolchain, tmp: &Path) -> anyhow::Result<()> {
    let runtime = if a.bare { &tc.runtime_bare } else { &tc.runtime_handler };
    let mut objs = Vec::new();
    for (k, src) in a.sources.iter().chain(runtime.iter()).enumerate() {
        let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("src");
        let obj = tmp.join(format!("{k}-{stem}.o"));
        let mut cmd = Command::new(&tc.cc);
        cmd.args(&tc.cflags);
        for i in &a.include {
            cmd.arg("-I").arg(i);
        }
        for d in &a.define {
            cmd.arg(format!("-D{d}"));
        }
        cmd.args(&a.cflags).arg("-c").arg(src).arg("-o").arg(&obj);
        run(&mut cmd, a.verbose, &format!("compiling {}", src.display()))?;
        objs.push(obj);
    }
    let mut cmd = Command::new(&tc.ld);
    cmd.args(if a.bare { &tc.ldflags_bare } else { &tc.ldflags_handler });
    if let Some(b) = a.code_base {
        cmd.arg(format!("--defsym=SOFTSPIN_CODE_BASE=0x{b:x}"));
    }
    if let Some(b) = a.data_base {
        cmd.arg(format!("--defsym=SOFTSPIN_L2_HANDLER_BASE=0x{b:x}"));
    }
    cmd.args(&objs).arg("-o").arg(&a.output);
    run(&mut cmd, a.verbose, "linking")
}
