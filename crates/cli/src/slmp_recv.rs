//! `softspin slmp recv`: the live NIC with SLMP's receive handlers
//! (examples/slmp_recv): every segment goes by DMA to its offset in host
//! memory and is ACKed from the NIC; each completed message is written to
//! a file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use softspin_host::{EctxOptions, NicConfig, Ruleset};
use softspin_netio::rules::{MatchUnit, MsgIdField};

use crate::exit::Status;

/// The receive handlers, built into the binary so `recv` works anywhere.
const HANDLER_SRC: &str = include_str!("../../../examples/slmp_recv/handler.c");
/// Message slots of the handler (`SLMP_SLOTS`, read back from the image).
const SLOTS_SYMBOL: &str = "slmp_slot_count";
/// After the last message, keep answering until the link has been quiet
/// this long (at most `LINGER_MAX`): a sender whose final ACK was lost
/// retransmits after its RTO, and with the receiver gone it got ICMP
/// unreachable until its 10 s give-up, though every byte had arrived.
const LINGER_QUIET: Duration = Duration::from_secs(1);
const LINGER_MAX: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct RecvArgs {
    /// The interface to receive on.
    #[arg(long)]
    iface: String,
    /// Where messages go: a file for one message (`--count 1`), else a
    /// directory that gets `msg-ID` files.
    #[arg(long)]
    out: PathBuf,
    /// UDP port of the SLMP rule.
    #[arg(long, default_value_t = softspin_wire::SLMP_UDP_PORT)]
    port: u16,
    /// Exit after this many messages [default: 1].
    #[arg(long, default_value_t = 1)]
    count: u32,
    /// Payload bytes of every segment but the last (the sender's --segment).
    #[arg(long, default_value_t = 1462)]
    segment: u32,
    /// Largest message in bytes (host memory per message slot).
    #[arg(long, default_value_t = 64 << 20)]
    max_size: u32,
    /// Give up after this many seconds without all messages [default: never].
    #[arg(long, value_name = "S")]
    timeout: Option<f64>,
    /// xdp (root) or socket.
    #[arg(long, value_enum, default_value = "xdp")]
    mode: crate::nic::ModeArg,
    /// Print one JSON object with the statistics.
    #[arg(long)]
    json: bool,
}

/// Build the handler image for the NIC's profile into a temporary directory.
fn build_handler(cfg: &NicConfig) -> anyhow::Result<(tempdir::Dir, PathBuf)> {
    let dir = tempdir::Dir::new("softspin-slmp-recv")?;
    let src = dir.path().join("slmp_recv.c");
    std::fs::write(&src, HANDLER_SRC).with_context(|| format!("writing {}", src.display()))?;
    let elf = dir.path().join("slmp_recv.elf");
    let mut o = softspin_host::sdk::BuildOptions::handler(&[&src], &elf);
    // As `softspin build --profile`: the NIC's defines and memory map.
    o.define = cfg.sdk_defines();
    o.link_symbols = cfg.memory_map().link_symbols();
    softspin_host::sdk::build(&o).context("building the SLMP receive handlers")?;
    Ok((dir, elf))
}

/// A directory removed on drop.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(prefix: &str) -> anyhow::Result<Dir> {
            let p = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
            std::fs::create_dir_all(&p)?;
            Ok(Dir(p))
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

pub fn recv(a: RecvArgs) -> anyhow::Result<ExitCode> {
    if a.count == 0 {
        bail!("--count 0: nothing to receive");
    }
    if a.segment == 0 || a.max_size < a.segment {
        bail!("--segment {} / --max-size {}: need 0 < segment <= max-size", a.segment, a.max_size);
    }
    let out_is_file = a.count == 1 && !a.out.is_dir();
    if !out_is_file {
        std::fs::create_dir_all(&a.out).with_context(|| format!("creating directory {}", a.out.display()))?;
    }
    let cfg = NicConfig::fpspin();
    let (mut nic, stop) = crate::nic::attach(&a.iface, a.mode, cfg)?;
    nic.keep_outputs(false);
    // After attaching: a bad interface is reported without a compile first.
    let (_dir, elf) = build_handler(nic.config())?;
    let image = nic.load_image(&elf)?;
    // The table's geometry, from the image itself (its data reaches NIC
    // memory only at install, and the window must be sized before).
    let elf_image = crate::sim::load_image(&elf)?;
    let slots = u64::from(elf_u32(&elf_image, SLOTS_SYMBOL)?);
    let slot_bytes = elf_u32(&elf_image, "slmp_slot_bytes")?;
    let stride = u64::from(a.max_size).next_multiple_of(4096);
    let window = nic.host_window(usize::try_from(stride * slots).context("host window size")?)?;
    let ectx = nic.install(
        &image,
        EctxOptions {
            name: Some("slmp_recv".into()),
            ph: Some("slmp_ph".into()),
            host_window: Some(window),
            rules: vec![packet_per_message(Ruleset::slmp(a.port))],
            ..Default::default()
        },
    )?;
    let mut config = a.segment.to_le_bytes().to_vec();
    config.extend_from_slice(&u32::try_from(stride).context("--max-size")?.to_le_bytes());
    nic.nic_write(image.symbol("slmp_config")?, &config)?;
    let slots_base = image.symbol("slmp_slots")?;
    nic.activate(ectx)?;
    // On stderr even with --json: scripts wait for this line before sending.
    eprintln!("softspin: slmp recv: {} on UDP port {}; waiting for {} message(s)", a.iface, a.port, a.count);

    let start = Instant::now();
    let mut got: Vec<serde_json::Value> = Vec::new();
    let mut failure: Option<anyhow::Error> = None;
    let limit = a.timeout.map(Duration::from_secs_f64);
    // (since, last frame at, frames then) once every message is in.
    let mut linger: Option<(Instant, Instant, u64)> = None;
    nic.run_live_with(limit, &stop, |nic| {
        for n in nic.poll_notifications() {
            // Past --count: a late retransmission of a one-segment message
            // completes it again on its freed slot; it is not a new one.
            if n.data.len() < 12 || failure.is_some() || got.len() as u32 >= a.count {
                continue;
            }
            let (msg_id, len, slot) = (u32_at(&n.data, 0), u32_at(&n.data, 4), u32_at(&n.data, 8));
            let r = (|| -> anyhow::Result<PathBuf> {
                let bytes = nic.host_read(n.host_ref, len as usize)?;
                let path = if out_is_file { a.out.clone() } else { a.out.join(format!("msg-{msg_id}")) };
                std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
                // The message is consumed: free its slot and the notification.
                nic.nic_write(slots_base + slot * slot_bytes, &vec![0u8; slot_bytes as usize])?;
                Ok(path)
            })();
            match r {
                Ok(path) => got.push(serde_json::json!({
                    "msg_id": msg_id, "bytes": len, "file": path.display().to_string(),
                    "at_s": start.elapsed().as_secs_f64(),
                })),
                Err(e) => failure = Some(e),
            }
        }
        if failure.is_some() {
            stop.store(true, Ordering::Relaxed);
        } else if got.len() as u32 >= a.count {
            let now = Instant::now();
            let rx = nic.live_stats().map_or(0, |l| l.rx_frames);
            let (since, last, seen) = linger.get_or_insert((now, now, rx));
            if rx != *seen {
                (*last, *seen) = (now, rx);
            }
            if now.duration_since(*last) >= LINGER_QUIET || now.duration_since(*since) >= LINGER_MAX {
                stop.store(true, Ordering::Relaxed);
            }
        }
    })?;
    nic.stop_matching()?;
    if let Some(e) = failure {
        return Err(e);
    }
    let counters = nic.counters(ectx)?;
    let report = nic.report();
    let live = nic.live_stats().expect("attached");
    drop(nic);
    let bytes: u64 = got.iter().filter_map(|m| m["bytes"].as_u64()).sum();
    let doc = serde_json::json!({
        "messages": got,
        "bytes": bytes,
        "rx_frames": live.rx_frames,
        "matched": live.matched,
        "tx_frames": live.tx_frames,
        "drops": live.drops,
        "handler_counters": counters.iter().map(|(i, s, c)| serde_json::json!({"index": i, "sum": s, "count": c})).collect::<Vec<_>>(),
        "errors": report.errors,
        "wall_s": start.elapsed().as_secs_f64(),
    });
    if a.json {
        println!("{doc}");
    } else {
        for m in &got {
            println!("message {} ({} bytes) -> {}", m["msg_id"], m["bytes"], m["file"].as_str().unwrap_or_default());
        }
        // Not a failure (the sender retransmits what the port lost), but
        // never silent.
        let port_drops: u64 = live.drops.values().sum();
        if port_drops > 0 {
            println!("{port_drops} frames dropped on the port ({}); SLMP retransmission covered them", crate::nic::causes(&live));
        }
    }
    let (mut status, mut why) = crate::sim::outcome(&report, None);
    if status == Status::Unprocessed {
        status = Status::Ok; // frames still in flight at exit do not count here
    }
    if status == Status::Ok && (got.len() as u32) < a.count {
        (status, why) = (Status::Failure, format!("{} of {} messages received", got.len(), a.count));
    }
    if status != Status::Ok {
        eprintln!("softspin: slmp recv: {why} (exit status {})", status as u8);
    }
    Ok(status.into())
}

/// SLMP's frames, each its own engine message. The handlers keep the real
/// message state themselves (by SLMP message id and offset), so segments run
/// with full packet-level parallelism, and a retransmitted segment that comes
/// after the EOM one opens no engine message that would never end.
fn packet_per_message(mut r: Ruleset) -> Ruleset {
    r.eom = MatchUnit::TRUE;
    r.msg_id = MsgIdField::Sequence;
    r
}

/// A `const uint32_t` of the image, read from its initialised data.
fn elf_u32(elf: &softspin_hpu::ElfImage, name: &str) -> anyhow::Result<u32> {
    let addr = elf.symbol(name)?;
    elf.segments
        .iter()
        .find_map(|s| {
            let off = addr.checked_sub(s.vaddr)? as usize;
            s.data.get(off..off + 4).map(|b| u32_at(b, 0))
        })
        .with_context(|| format!("symbol {name} at 0x{addr:x} is not initialised data of the image"))
}
