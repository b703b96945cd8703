//! `softspin slmp`: SLMP from the host (seed 000 §5.1). `send` moves a file
//! as one message with the softspin-slmp sender (retransmission, adaptive
//! window) and prints its statistics.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use softspin_slmp::{
    Error as SlmpError, Sender, SenderConfig, Stats, SyncMode, WindowMode, DEFAULT_SEGMENT,
};

#[derive(clap::Subcommand)]
pub enum SlmpCmd {
    /// Send FILE as one SLMP message to ADDR[:PORT] (exit 0 only when every
    /// segment was acknowledged, i.e. with --sync all).
    Send(SendArgs),
    /// Run the NIC on IFACE with SLMP's receive handlers (examples/slmp_recv)
    /// and write each message received to PATH (exit after --count).
    Recv(crate::slmp_recv::RecvArgs),
}

#[derive(clap::Args)]
pub struct SendArgs {
    /// The file to send (at most 4 GiB: SLMP's 32-bit offset).
    file: PathBuf,
    /// The receiver, ADDR or ADDR:PORT (host names resolve; default port 9330).
    #[arg(long, value_name = "ADDR[:PORT]")]
    to: String,
    /// Flow-control window in packets (1..=65536), or `auto` (AIMD).
    #[arg(long, default_value = "auto", value_parser = parse_window)]
    window: WindowMode,
    /// Which segments ask for an ACK: none, msg (first and last), all.
    #[arg(long, value_enum, default_value = "all")]
    sync: SyncArg,
    /// Payload bytes per segment (default fits a 1500-byte MTU).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SEGMENT as u64,
          value_parser = clap::value_parser!(u64).range(1..=softspin_slmp::MAX_SEGMENT as u64))]
    segment: u64,
    /// Gap between segments sent without SYN, in microseconds (sync none/msg).
    #[arg(long, value_name = "US", default_value_t = 0)]
    ipg_us: u64,
    /// Give up when no ACK arrived for this many seconds.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    give_up_s: f64,
    /// Print one JSON object with the statistics.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SyncArg {
    None,
    Msg,
    All,
}

fn parse_window(s: &str) -> std::result::Result<WindowMode, String> {
    softspin_slmp::args::parse_window(s)
}

fn resolve(to: &str) -> Result<SocketAddr> {
    softspin_slmp::args::resolve_peer(to).map_err(|e| anyhow!("--to: {e}"))
}

pub fn main(cmd: SlmpCmd) -> Result<ExitCode> {
    match cmd {
        SlmpCmd::Send(a) => send(a),
        SlmpCmd::Recv(a) => crate::slmp_recv::recv(a),
    }
}

fn send(a: SendArgs) -> Result<ExitCode> {
    let peer = resolve(&a.to)?;
    if !(a.give_up_s.is_finite() && a.give_up_s > 0.0 && a.give_up_s <= 3600.0) {
        bail!("--give-up-s {}: must be in (0, 3600] seconds", a.give_up_s);
    }
    // Checked before reading: a file over SLMP's limit is refused without
    // loading it.
    let len = std::fs::metadata(&a.file)
        .with_context(|| format!("reading {}", a.file.display()))?
        .len();
    if len > softspin_slmp::MAX_MESSAGE {
        bail!(
            "{}: {len} B is over SLMP's 4 GiB message limit (32-bit offset, seed 000 §5.1.2)",
            a.file.display()
        );
    }
    let data = softspin_input::read(&a.file, softspin_slmp::MAX_MESSAGE, "SLMP message")?;
    let cfg = SenderConfig {
        segment: a.segment as usize,
        sync: match a.sync {
            SyncArg::None => SyncMode::None,
            SyncArg::Msg => SyncMode::Msg,
            SyncArg::All => SyncMode::All,
        },
        window: a.window,
        ipg: Duration::from_micros(a.ipg_us),
        idle_timeout: Duration::from_secs_f64(a.give_up_s),
        ..SenderConfig::default()
    };
    let mut sender = Sender::connect(peer, cfg)?;
    // The receiver knows the message by this address and its id.
    let from = sender
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // On a terminal, without --json: segments acknowledged (sent, when
    // not every segment is acknowledged) with an ETA.
    let bar = if a.json {
        indicatif::ProgressBar::hidden()
    } else {
        send_bar()
    };
    let shown = sender.send_batch_with(&[&data], &mut |p| {
        bar.set_length(p.segments);
        bar.set_position(if p.syn == p.segments { p.acked } else { p.sent });
    });
    bar.finish_and_clear();
    let (stats, err) = match shown {
        Ok(s) => (s, None),
        Err(SlmpError::GaveUp {
            msg_id,
            index,
            reason,
            stats,
        }) => {
            let e = SlmpError::GaveUp {
                msg_id,
                index,
                reason,
                stats: Box::default(),
            };
            (*stats, Some(anyhow::Error::from(e)))
        }
        Err(e) => return Err(e.into()),
    };
    let err = err.or_else(|| {
        (!stats.delivery_confirmed).then(|| {
            anyhow!(
                "delivery of {} of {} segments not confirmed (--sync {}: only --sync all acknowledges every segment)",
                stats.unconfirmed_segments,
                stats.segments,
                stats.sync
            )
        })
    });
    if a.json {
        let mut v = serde_json::to_value(&stats)?;
        v["file"] = a.file.display().to_string().into();
        v["to"] = peer.to_string().into();
        v["from"] = from.into();
        v["error"] = err.as_ref().map(|e| e.to_string()).into();
        println!("{}", serde_json::to_string(&v)?);
    } else {
        print_stats(&a, peer, &stats);
    }
    match err {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => Err(e),
    }
}

fn print_stats(a: &SendArgs, peer: SocketAddr, s: &Stats) {
    println!(
        "sent {} ({} B) to {peer}: {} segments of {} B, sync {}",
        a.file.display(),
        s.bytes,
        s.segments,
        s.segment_bytes,
        s.sync
    );
    println!(
        "  packets {}  retransmitted {} (timeouts {}, reorder evidence {})  acks {}  duplicate acks {}  unmatched {}  malformed {}  icmp unreachable {}",
        s.packets_sent, s.retransmitted, s.timeouts, s.fast_retransmits, s.acks_received, s.duplicate_acks, s.unmatched_acks, s.malformed, s.icmp_unreachable
    );
    let r = &s.rtt;
    println!(
        "  rtt us: samples {}  min {:.1}  mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}  (srtt {:.1}, rto {:.1})",
        r.samples, r.min_us, r.mean_us, r.p50_us, r.p99_us, r.max_us, r.srtt_us, r.rto_us
    );
    let w = &s.window;
    println!(
        "  window {}: initial {}  final {}  min {}  max {}  decreases {}",
        w.mode, w.initial, w.final_, w.min, w.max, w.decreases
    );
    let goodput = if s.delivery_confirmed {
        format!("goodput {:.3} Gbit/s", s.goodput_bps / 1e9)
    } else if s.acks_received == 0 && s.sync != "none" {
        "nothing acknowledged: no goodput".to_string()
    } else {
        format!(
            "sent at {:.3} Gbit/s (no goodput: delivery not confirmed)",
            s.bytes as f64 * 8.0 / s.elapsed_s.max(f64::MIN_POSITIVE) / 1e9
        )
    };
    println!(
        "  elapsed {:.3} s  {goodput}  delivery confirmed: {}",
        s.elapsed_s, s.delivery_confirmed
    );
}

fn send_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} sending [{bar:40}] {pos}/{len} segments ({elapsed}, ETA {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
