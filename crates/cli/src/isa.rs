//! `softspin isa ...`: the bare-metal runner.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use softspin_hpu::baremetal::{BareMetal, BareMetalConfig};
use softspin_hpu::{ElfImage, Stop};

#[derive(Subcommand)]
pub enum IsaCmd {
    /// Run a bare-metal RV32 ELF until it calls exit (ecall a7=93).
    ///
    /// Prints the program's output, then `exit=S instructions=N cycles=C`.
    /// The process exits with the guest's status (low 8 bits; 1 if those are
    /// 0 but the status is not), or 70 with a one-line diagnosis if the guest
    /// faults.
    Run {
        file: PathBuf,
        /// Watchdog: fault after this many instructions.
        #[arg(long, default_value_t = 20_000_000_000)]
        max_instructions: u64,
        /// Discard the program's output.
        #[arg(long)]
        quiet: bool,
        /// Also print host-side speed (wall time, guest MIPS) to stderr.
        #[arg(long)]
        stats: bool,
    },
}

pub fn main(cmd: IsaCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        IsaCmd::Run { file, max_instructions, quiet, stats } => {
            let image = ElfImage::load(&file).with_context(|| format!("{}", file.display()))?;
            let cfg = BareMetalConfig { max_instructions, ..Default::default() };
            let mut bm = BareMetal::load(&image, &cfg).with_context(|| format!("{}", file.display()))?;
            let stdout = std::io::stdout();
            let out = if quiet { Box::new(std::io::sink()) as Box<dyn std::io::Write> } else { Box::new(stdout.lock()) };
            let t0 = std::time::Instant::now();
            let o = bm.run(out);
            let wall = t0.elapsed().as_secs_f64();
            if stats {
                eprintln!("wall_s={wall:.6} mips={:.1}", o.instructions as f64 / wall / 1e6);
            }
            match o.stop {
                Stop::Exit(s) => {
                    println!("exit={s} instructions={} cycles={}", o.instructions, o.cycles);
                    let code = if s == 0 { 0 } else if s & 0xff == 0 { 1 } else { (s & 0xff) as u8 };
                    Ok(ExitCode::from(code))
                }
                Stop::Fault(f) => {
                    eprintln!(
                        "softspin: guest fault: {f} (after {} instructions, {} cycles)",
                        o.instructions, o.cycles
                    );
                    Ok(ExitCode::from(crate::exit::GUEST_FAULT))
                }
                s => anyhow::bail!("unexpected stop {s:?}"),
            }
        }
    }
}
