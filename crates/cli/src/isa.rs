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
        /// Print the decoded timing table in use and exit.
        #[arg(long)]
        quiet: bool,
    },
}

pub fn main(cmd: IsaCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        IsaCmd::Run { file, max_instructions, quiet } => {
            let image = ElfImage::load(&file).with_context(|| format!("{}", file.display()))?;
            let cfg = BareMetalConfig { max_instructions, ..Default::default() };
            let mut bm = BareMetal::load(&image, &cfg).with_context(|| format!("{}", file.display()))?;
            let stdout = std::io::stdout();
            let out = if quiet { Box::new(std::io::sink()) as Box<dyn std::io::Write> } else { Box::new(stdout.lock()) };
            let o = bm.run(out);
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
