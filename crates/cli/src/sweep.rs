//! `softspin sweep GRID.toml` (issue 29, "Sweeps"): a grid of `softspin sim`
//! or `netsim` runs on Dask. The work is done by the pure-Python runner
//! `softspin.sweep` (crates/host-py/python/softspin/sweep.py, docs/sweep.md),
//! run with the repository's venv and given this binary, so every point runs
//! the same build.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

/// The runner, relative to the repository root.
const RUNNER: &str = "crates/host-py/python/softspin/sweep.py";
/// The venv `scripts/setup.sh` creates, relative to the repository root.
const VENV_PYTHON: &str = ".venv/bin/python";

/// The exit statuses of `softspin sweep` (the runner's EXIT_* constants;
/// crates/host-py/tests/test_sweep.py checks they agree).
pub const SWEEP_HELP: &str = "\
Exit status:
  0    every point ran and exited with an accepted status (accept_exit)
  1    bad grid file or options, no Python with Dask, or a tool failure
  2    usage error
  3    the sweep ran but some points failed: stderr says how many and why,
       results.csv has each one's cause
  130  interrupted (Ctrl-C): finished points are kept, rerun to resume";

#[derive(clap::Args)]
#[command(after_help = SWEEP_HELP)]
pub struct SweepArgs {
    /// The grid file (TOML, docs/sweep.md): the subcommand, its fixed
    /// arguments, the axes of the grid, repetitions, output fields and plots.
    grid: PathBuf,
    /// A running Dask scheduler (tcp://HOST:PORT); its workers must see this
    /// binary and the grid's files at the same paths [default: a local
    /// cluster, one worker per core].
    #[arg(long, value_name = "ADDR")]
    scheduler: Option<String>,
    /// Workers of the local cluster.
    #[arg(long, value_name = "N", conflicts_with = "scheduler",
          value_parser = clap::value_parser!(u32).range(1..))]
    workers: Option<u32>,
    /// Output directory: results.csv, results.json, plots, points/ [default:
    /// the grid's `out`, else GRID.out beside the grid file].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Skip points kept in OUT/points from an earlier run (the default).
    #[arg(long, conflicts_with = "fresh")]
    resume: bool,
    /// Forget kept points and run every point again.
    #[arg(long)]
    fresh: bool,
    /// Print one JSON object summing up the sweep (points, failed, files).
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The repository root this binary belongs to: an ancestor of the executable
/// (a checkout's target/) holding the runner, else the source tree's.
fn repo_root(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .map(Path::to_path_buf)
        .chain(std::iter::once(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        ))
        .find(|d| d.join(RUNNER).is_file())
}

/// The Python to run the runner with: $SOFTSPIN_PYTHON, else the venv.
fn python(root: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("SOFTSPIN_PYTHON") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("SOFTSPIN_PYTHON={} is not a file", p.display());
        }
        return Ok(p);
    }
    match root.map(|r| r.join(VENV_PYTHON)) {
        Some(p) if p.is_file() => Ok(p),
        _ => bail!(
            "no Python with Dask for the sweep runner: run scripts/setup.sh (it creates \
             .venv with Dask and matplotlib), or set SOFTSPIN_PYTHON"
        ),
    }
}

pub fn main(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the softspin executable")?;
    let root = repo_root(&exe);
    let py = python(root.as_deref())?;
    let mut cmd = Command::new(&py);
    match &root {
        // -P: the runner's directory (the package's) is not put on sys.path.
        Some(r) => cmd.arg("-P").arg(r.join(RUNNER)),
        // An installed package (SOFTSPIN_PYTHON's).
        None => cmd.args(["-m", "softspin.sweep"]),
    };
    cmd.arg(&a.grid).arg("--softspin").arg(&exe);
    let opt = |flag: &str, v: Option<OsString>| v.map(|v| vec![OsString::from(flag), v]);
    for pair in [
        opt("--scheduler", a.scheduler.map(Into::into)),
        opt("--workers", a.workers.map(|n| n.to_string().into())),
        opt("--out", a.out.map(Into::into)),
    ]
    .into_iter()
    .flatten()
    {
        cmd.args(pair);
    }
    for (on, flag) in [
        (a.resume, "--resume"),
        (a.fresh, "--fresh"),
        (a.json, "--json"),
        (a.quiet, "--quiet"),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    // The runner's exit status and signals are the command's own.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        Err(e).with_context(|| format!("cannot run {}", py.display()))
    }
    #[cfg(not(unix))]
    {
        let st = cmd
            .status()
            .with_context(|| format!("cannot run {}", py.display()))?;
        Ok(ExitCode::from(st.code().map_or(1, |c| c as u8)))
    }
}
