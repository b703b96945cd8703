//! `softspin isa ...`: the bare-metal runner and the one-packet handler run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;
use softspin_engine::ectx::DEFAULT_HOST_BASE;
use softspin_engine::stats::{ErrorCause, HandlerError};
use softspin_engine::traffic::Arrival;
use softspin_engine::{EctxSpec, Engine, NicConfig};
use softspin_hpu::baremetal::{BareMetal, BareMetalConfig};
use softspin_hpu::{ElfImage, Stop};

use crate::exit::Status;

#[derive(Subcommand)]
pub enum IsaCmd {
    /// Run a bare-metal RV32 ELF until it calls exit (ecall a7=93).
    ///
    /// Prints the program's output, then `exit=S instructions=N cycles=C`.
    /// The process exits with the guest's status (low 8 bits; 1 if those are
    /// 0 but the status is not), or 70 with a one-line diagnosis if the guest
    /// faults.
    Run {
        /// Bare-metal RV32 ELF (built with `softspin build --bare` or any RV32IMAC toolchain).
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
        #[command(flatten)]
        jit: crate::jit::JitArgs,
        /// Serve the GDB remote protocol on [HOST]:PORT (docs/debugging.md):
        /// the program waits at its entry for gdb. Port 0 picks a free
        /// port; stderr says which.
        #[arg(long, value_name = "[HOST]:PORT", conflicts_with = "jit")]
        gdb: Option<String>,
    },
    /// Run one handler of a handler image on ONE packet through the NIC
    /// model (the engine, with the profile's memory map, stack size and
    /// timed commands), as a one-packet message; print what it did.
    ///
    /// Prints the handler's output, the packets it sent, its host-direct
    /// writes and counters, then `handler=SYM returned instructions=N
    /// cycles=C loads=L stores=S` (or the error in place of `returned`).
    #[command(after_help = crate::exit::HANDLER_HELP)]
    Handler {
        /// Handler image (from `softspin build`).
        image: PathBuf,
        /// Handler symbol to call.
        #[arg(long)]
        handler: String,
        /// Which handler of the ECTX the symbol is (header, payload or
        /// completion) [default: from its name: `*_hh` header, `*_th`
        /// completion, else payload].
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Packet contents (raw bytes, at most the profile's packet slot);
        /// default: --packet-size bytes 0,1,2,...
        #[arg(long, conflicts_with = "packet_size")]
        packet: Option<PathBuf>,
        /// Bytes of the default packet (when --packet is not given).
        #[arg(long, default_value_t = 1024)]
        packet_size: usize,
        /// NIC profile [default: pspin].
        #[arg(long, value_name = "pspin|fpspin", conflicts_with = "config")]
        profile: Option<String>,
        /// NIC configuration file (TOML; `profile = ...` picks the base).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Scratchpad bytes on each cluster.
        #[arg(long, default_value_t = 0)]
        scratchpad: u32,
        /// Size of the host-memory window, in bytes.
        #[arg(long, default_value_t = 1 << 20)]
        host_size: u64,
        /// Watchdog: instruction budget of the invocation (commands are
        /// charged 1 instruction per 4 bytes they move).
        #[arg(long, default_value_t = 100_000_000)]
        watchdog: u64,
        /// HPU stack size in bytes (overrides the profile's hpu_stack_size).
        #[arg(long)]
        stack_size: Option<u32>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    Hh,
    Ph,
    Th,
}

pub fn main(cmd: IsaCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        IsaCmd::Run {
            file,
            max_instructions,
            quiet,
            stats,
            jit,
            gdb,
        } => {
            // Under gdb the program is stepped by the interpreter.
            let jit = jit.resolve()?.filter(|_| gdb.is_none());
            let image = crate::sim::load_image(&file)?;
            let cfg = BareMetalConfig {
                max_instructions,
                ..Default::default()
            };
            let mut bm =
                BareMetal::load(&image, &cfg).with_context(|| format!("{}", file.display()))?;
            let stdout = std::io::stdout();
            let out = if quiet {
                Box::new(std::io::sink()) as Box<dyn std::io::Write>
            } else {
                Box::new(stdout.lock())
            };
            // Before the clock starts: the wait for gdb is not the run's.
            let mut debugger = match &gdb {
                Some(addr) => Some(crate::gdb::BareGdb::accept(addr, bm.hpu.timing())?),
                None => None,
            };
            let t0 = std::time::Instant::now();
            #[cfg(feature = "jit")]
            let o = if let Some(d) = &mut debugger {
                bm.run_debug(out, |hpu| d.at(hpu))
            } else if let Some(after) = jit {
                let mut j =
                    softspin_hpu::jit::Jit::new(&bm.program, bm.hpu.timing()).compile_after(after);
                Some(bm.run_jit(out, &mut j))
            } else {
                Some(bm.run(out))
            };
            #[cfg(not(feature = "jit"))]
            let o = match &mut debugger {
                // `jit` is None: resolve refused --jit.
                Some(d) => bm.run_debug(out, |hpu| d.at(hpu)),
                None => Some(bm.run(out)),
            };
            let Some(o) = o else {
                bail!("the run was killed from gdb");
            };
            let wall = t0.elapsed().as_secs_f64();
            if stats {
                eprintln!(
                    "wall_s={wall:.6} mips={:.1} engine={}",
                    o.instructions as f64 / wall / 1e6,
                    crate::jit::engine_name(jit)
                );
            }
            match o.stop {
                Stop::Exit(s) => {
                    println!(
                        "exit={s} instructions={} cycles={}",
                        o.instructions, o.cycles
                    );
                    let code = if s == 0 {
                        0
                    } else if s & 0xff == 0 {
                        1
                    } else {
                        (s & 0xff) as u8
                    };
                    if let Some(d) = &mut debugger {
                        d.finished(Some(code));
                    }
                    Ok(ExitCode::from(code))
                }
                Stop::Fault(f) => {
                    if let Some(d) = &mut debugger {
                        d.finished(None);
                    }
                    eprintln!(
                        "softspin: guest fault: {f} (after {} instructions, {} cycles)",
                        o.instructions, o.cycles
                    );
                    Ok(ExitCode::from(crate::exit::GUEST_FAULT))
                }
                s => anyhow::bail!("unexpected stop {s:?}"),
            }
        }
        IsaCmd::Handler {
            image,
            handler,
            kind,
            packet,
            packet_size,
            profile,
            config,
            scratchpad,
            host_size,
            watchdog,
            stack_size,
        } => {
            let img = crate::sim::load_image(&image)?;
            let mut cfg = crate::sim::nic_config(profile.as_deref(), config.as_deref())?;
            // A packet file holds one packet: at most a packet buffer slot.
            let pkt = match packet {
                Some(p) => {
                    let what = format!("packet of profile `{}` (pkt_slot_size)", cfg.profile);
                    softspin_input::read(&p, cfg.pkt_slot_size as u64, &what)?
                }
                None => (0..packet_size).map(|i| i as u8).collect(),
            };
            if let Some(n) = stack_size {
                cfg.hpu_stack_size = n;
            }
            let kind = kind.unwrap_or(if handler.ends_with("_hh") {
                KindArg::Hh
            } else if handler.ends_with("_th") {
                KindArg::Th
            } else {
                KindArg::Ph
            });
            run_handler(
                cfg, img, &handler, kind, pkt, scratchpad, host_size, watchdog,
            )
        }
    }
}

/// `isa handler`: one packet, one message, one ECTX with `sym` as its only
/// handler, through the engine.
#[allow(clippy::too_many_arguments)]
fn run_handler(
    cfg: NicConfig,
    img: ElfImage,
    sym: &str,
    kind: KindArg,
    pkt: Vec<u8>,
    scratchpad: u32,
    host_size: u64,
    watchdog: u64,
) -> anyhow::Result<ExitCode> {
    if pkt.len() > cfg.pkt_slot_size as usize {
        bail!(
            "packet of {} bytes exceeds the {}-byte packet buffer slot of profile `{}` (pkt_slot_size)",
            pkt.len(),
            cfg.pkt_slot_size,
            cfg.profile
        );
    }
    let clusters = cfg.clusters as usize;
    let mut engine = Engine::new(cfg)?;
    let mut spec = EctxSpec::new("isa-handler", img);
    match kind {
        KindArg::Hh => spec.hh = Some(sym.to_string()),
        KindArg::Ph => spec.ph = Some(sym.to_string()),
        KindArg::Th => spec.th = Some(sym.to_string()),
    }
    spec.scratchpad = vec![scratchpad; clusters];
    spec.host_window = (DEFAULT_HOST_BASE, host_size);
    spec.watchdog = watchdog;
    // One packet: the message cannot time out in between.
    spec.msg_timeout_ns = 0;
    let id = engine.install(spec)?;
    engine
        .add_host_buffer(DEFAULT_HOST_BASE, Box::new(crate::sim::zeroed(host_size)?))
        .map_err(anyhow::Error::msg)?;
    engine.activate(id)?;
    engine.inject(Arrival {
        time_ps: 0,
        frame: pkt,
        msg_id: 0,
        eom: true,
        origin: "--packet".into(),
        ectx: None,
    });
    engine.run(None, |_| {})?;

    let out: Vec<u8> = engine
        .drain_output()
        .into_iter()
        .flat_map(|r| r.bytes)
        .collect();
    print!("{}", String::from_utf8_lossy(&out));
    for o in engine.outbound() {
        println!("outbound packet: dest={} len={}", o.dest, o.frame.len());
    }
    for w in engine.host_writes() {
        println!("host write: 0x{:x} <- 0x{:016x}", w.addr, w.value);
    }
    for (i, sum, count) in engine.counters(id) {
        println!("counter {i}: sum={sum} count={count}");
    }
    let report = engine.report();
    // One invocation: its means are its counts.
    let (ins, cyc, ld, st) = report
        .handlers
        .iter()
        .find(|h| h.ectx == "isa-handler")
        .map(|h| {
            (
                h.instructions_mean as u64,
                h.cycles_max,
                h.loads_mean as u64,
                h.stores_mean as u64,
            )
        })
        .unwrap_or_default();
    let errors = engine.errors();
    let what = match errors.first() {
        None => "returned".to_string(),
        Some(e) => format!("error: {}", handler_error_text(e)),
    };
    println!("handler={sym} {what} instructions={ins} cycles={cyc} loads={ld} stores={st}");
    let status = match errors.first() {
        None if report.packets == 1 => Status::Ok,
        None => {
            eprintln!("softspin: handler {sym} did not finish the packet");
            Status::HandlerError
        }
        Some(e) => {
            eprintln!("softspin: handler {sym}: {}", handler_error_text(e));
            match e.kind {
                ErrorCause::Fault(_) => Status::GuestFault,
                _ => Status::HandlerError,
            }
        }
    };
    Ok(status.into())
}

/// One handler error in words: cause, where, and what to do about it.
pub(crate) fn handler_error_text(e: &HandlerError) -> String {
    let mut s = e.cause.clone();
    if let Some(pc) = e.pc {
        s += &format!(" at pc=0x{pc:08x}");
    }
    if let Some(a) = e.addr {
        s += &format!(" addr=0x{a:08x}");
    }
    if let Some(d) = &e.detail {
        s += &format!(": {d}");
    }
    s
}
