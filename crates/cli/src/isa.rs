//! `softspin isa ...`: the bare-metal runner.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use softspin_hpu::baremetal::{BareMetal, BareMetalConfig};
use softspin_hpu::harness::{describe, Harness};
use softspin_hpu::{ElfImage, Stop, TimingModel};

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
    /// Call one handler of a handler image once on a single HPU, with a
    /// PsPIN-like memory map and synchronous commands; print what it did.
    Handler {
        image: PathBuf,
        /// Handler symbol to call.
        #[arg(long)]
        handler: String,
        /// Packet contents (raw bytes); default: --packet-size bytes 0,1,2,...
        #[arg(long, conflicts_with = "packet_size")]
        packet: Option<PathBuf>,
        #[arg(long, default_value_t = 1024)]
        packet_size: usize,
        /// Size of the host-memory window, in bytes.
        #[arg(long, default_value_t = 1 << 20)]
        host_size: usize,
        /// Watchdog: instruction budget of the invocation.
        #[arg(long, default_value_t = 100_000_000)]
        watchdog: u64,
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
        IsaCmd::Handler { image, handler, packet, packet_size, host_size, watchdog } => {
            let img = ElfImage::load(&image).with_context(|| format!("{}", image.display()))?;
            let pkt = match packet {
                Some(p) => std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?,
                None => (0..packet_size).map(|i| i as u8).collect(),
            };
            let mut h = Harness::new(img, &TimingModel::default(), host_size)
                .with_context(|| format!("{}", image.display()))?;
            h.set_packet(&pkt)?;
            let inv = h.invoke(&handler, watchdog).with_context(|| format!("{}", image.display()))?;
            print!("{}", String::from_utf8_lossy(&h.effects.stdout));
            for o in &h.effects.outbound {
                println!("outbound packet: dest={} len={}", o.dest, o.data.len());
            }
            for (a, v) in &h.effects.host_writes {
                println!("host write: 0x{a:x} <- 0x{v:016x}");
            }
            for (i, (sum, count)) in h.effects.counters.iter().enumerate().filter(|c| c.1 .1 > 0) {
                println!("counter {i}: sum={sum} count={count}");
            }
            println!(
                "handler={handler} {} instructions={} cycles={} loads={} stores={}",
                describe(&inv.stop),
                inv.instructions,
                inv.cycles,
                inv.loads,
                inv.stores
            );
            Ok(match inv.stop {
                Stop::Fault(_) => ExitCode::from(crate::exit::GUEST_FAULT),
                _ => ExitCode::SUCCESS,
            })
        }
    }
}
