//! `softspin-suite`: run the handler suite on the simulated NIC, verify each
//! example against its reference, and print one table (the main job); or
//! `--json` for the report generator.

use clap::Parser;
use softspin_suite::{Ctx, SUITE};

/// Run the handler suite on the simulated PsPIN NIC: verify every example
/// against its reference and measure it beside the host-thread baseline.
#[derive(Parser)]
#[command(name = "softspin-suite")]
struct Args {
    /// Only these examples (default: all).
    examples: Vec<String>,
    /// Packet sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1024")]
    sizes: Vec<usize>,
    /// Smaller workloads (for tests).
    #[arg(long)]
    quick: bool,
    /// One JSON array of rows (for scripts/benchmarks.py) instead of the table.
    #[arg(long)]
    json: bool,
    /// Build the handlers for this ISA (sdk/toolchain.txt: corev, rv32imac)
    /// [default: toolchain.txt's `isa:`].
    #[arg(long)]
    isa: Option<String>,
    /// Skip the host-thread baselines (their column is then 0): for runs
    /// that only need the simulated figures.
    #[arg(long)]
    no_baseline: bool,
}

fn main() -> anyhow::Result<()> {
    let Args {
        examples: only,
        sizes,
        quick,
        json,
        isa,
        no_baseline,
    } = Args::parse();
    if let Some(bad) = only.iter().find(|o| !SUITE.iter().any(|(n, _, _)| n == o)) {
        let names: Vec<&str> = SUITE.iter().map(|(n, _, _)| *n).collect();
        anyhow::bail!("no example {bad:?}; the suite has {}", names.join(", "));
    }
    let ctx = Ctx::with_isa(quick, isa.as_deref())?;
    let mut rows = Vec::new();
    let mut failed = 0;
    if !json {
        println!(
            "{:<16} {:>8} {:>8} {:>14} {:>10} {:>8} {:>14}",
            "example", "verified", "size B", "NIC Gbit/s", "cyc/pkt", "HPU %", "host Gbit/s"
        );
    }
    for (name, run, base) in SUITE {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        for &size in &sizes {
            let o = run(&ctx, size)?;
            let b = if no_baseline {
                softspin_suite::Baseline {
                    gbps: 0.0,
                    threads: 0,
                }
            } else {
                base(&ctx, size)?
            };
            let r = &o.report;
            let cycles: f64 = r
                .handlers
                .iter()
                .map(|h| h.cycles_mean * h.invocations as f64)
                .sum::<f64>()
                / r.packets.max(1) as f64;
            if o.verified.is_err() {
                failed += 1;
            }
            if json {
                rows.push(serde_json::json!({
                    "example": name, "size": size, "verified": o.verified.is_ok(),
                    "error": o.verified.as_ref().err(), "report": r,
                    "cycles_per_packet": cycles, "baseline_gbps": b.gbps, "baseline_threads": b.threads,
                }));
            } else {
                println!(
                    "{:<16} {:>8} {:>8} {:>14.1} {:>10.0} {:>8.1} {:>14.1}",
                    name,
                    if o.verified.is_ok() { "yes" } else { "NO" },
                    size,
                    r.throughput_gbps,
                    cycles,
                    r.hpu_utilization * 100.0,
                    b.gbps
                );
                if let Err(e) = &o.verified {
                    println!("    {e}");
                }
            }
        }
    }
    if json {
        println!("{}", serde_json::Value::Array(rows));
    }
    if failed > 0 {
        anyhow::bail!("{failed} example run(s) failed verification");
    }
    Ok(())
}
