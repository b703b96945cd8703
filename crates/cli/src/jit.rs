//! How HPUs execute handler code: the block JIT (Cranelift, softspin-hpu's
//! `jit`) or the interpreter alone. One set of flags for `sim`, `nic` and
//! `isa run`. The JIT is on by default in a softspin built with it (the
//! CLI's default feature `jit`); results are the interpreter's either way
//! (docs/perf-interpreter.md).

/// `--jit` / `--no-jit` / `--jit-after N`.
#[derive(clap::Args, Debug, Clone)]
pub struct JitArgs {
    /// Run handlers through the JIT (Cranelift): hot regions compiled to
    /// host code, the same results. The default when this softspin was
    /// built with it (see --version).
    #[arg(long, conflicts_with = "no_jit")]
    pub jit: bool,
    /// Interpret every instruction (no JIT): the same results, slower on
    /// hot loops.
    #[arg(long)]
    pub no_jit: bool,
    /// With the JIT: compile a region at its entry's N-th use (sooner for
    /// an entry block of more than 16 instructions: after as many
    /// instructions as N uses of 16); 1 compiles everything at once (short
    /// runs, tests).
    #[arg(long, value_name = "N", default_value_t = softspin_hpu::JIT_COMPILE_AFTER, value_parser = clap::value_parser!(u32).range(1..))]
    pub jit_after: u32,
}

/// Whether this softspin has the JIT compiled in.
pub const BUILT_IN: bool = cfg!(feature = "jit");

/// What `--version` adds: which engine runs handlers by default.
pub const VERSION: &str = if BUILT_IN {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (HPUs: JIT by default, --no-jit)"
    )
} else {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (HPUs: interpreter; built without the JIT)"
    )
};

impl JitArgs {
    /// The compile threshold when the JIT runs, `None` for the
    /// interpreter; an error when `--jit` asks for a JIT this build lacks
    /// (before anything else happens, e.g. attaching to an interface).
    pub fn resolve(&self) -> anyhow::Result<Option<u32>> {
        if self.no_jit {
            return Ok(None);
        }
        if BUILT_IN {
            return Ok(Some(self.jit_after));
        }
        if self.jit {
            anyhow::bail!("--jit: this softspin was built without the JIT (with --no-default-features): cargo build --release -p softspin-cli [--features jit]");
        }
        Ok(None)
    }
}

/// `sim --json`'s `hpu_engine`: which engine ran the handlers and, for the
/// JIT, its threshold and the regions it compiled (results are the same
/// either way; `bench/sim_bench.py --identical` leaves this key out).
pub fn engine_json(nic: &softspin_host::Nic, jit: Option<u32>) -> serde_json::Value {
    let mut v = serde_json::json!({ "kind": engine_name(jit) });
    if let Some(after) = jit {
        v["compile_after"] = after.into();
        #[cfg(feature = "jit")]
        if let Some(n) = nic.jit_regions_compiled() {
            v["regions_compiled"] = n.into();
        }
    }
    #[cfg(not(feature = "jit"))]
    let _ = nic;
    v
}

/// The name `sim --json` and `isa run --stats` give the engine that ran.
pub fn engine_name(jit: Option<u32>) -> &'static str {
    if jit.is_some() {
        "jit"
    } else {
        "interpreter"
    }
}
