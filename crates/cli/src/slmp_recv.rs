//! `softspin slmp recv`: the live NIC with SLMP's receive handlers
//! (examples/slmp_recv): every segment goes by DMA to its offset in host
//! memory and is ACKed from the NIC; each completed message is written to
//! a file before the ACK that completes it is sent (`SLMP_CFG_ACK_AFTER_HOST`),
//! and this host program retires the handlers' message slots (stored
//! messages, and incomplete ones idle for `--evict-after`). docs/slmp.md
//! "Receiver".

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
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
/// Default of `--evict-after`: above the sender's largest RTO (2 s, so a
/// live sender's retransmissions keep its message alive) and below its
/// 10 s give-up (so a sender locked out by forged messages is let in in time).
const EVICT_AFTER_DEFAULT: &str = "5";
/// Largest value of the seconds options (`--timeout`, `--evict-after`).
const MAX_SECONDS: f64 = 86_400.0;
/// A stored message's slot answers retransmissions of its segments for
/// this long after the last one, then becomes a tombstone.
const STORED_QUIET: Duration = LINGER_QUIET;
/// Between the two steps of retiring a slot: every task that saw its old
/// tag has ended (a handler's waits are bounded by 1 ms of NIC time).
const RETIRE_GRACE: Duration = Duration::from_millis(100);
/// How often the slot table is read.
const SCAN_EVERY: Duration = Duration::from_millis(50);
/// Evictions listed one by one in the JSON (all are counted).
const EVICTIONS_LISTED: usize = 64;

#[derive(clap::Args)]
pub struct RecvArgs {
    /// The interface to receive on.
    #[arg(long)]
    iface: String,
    /// Where messages go: a file for one message (`--count 1`), else a
    /// directory that gets `msg-ADDR-PORT-ID` files (the sender's address,
    /// UDP port and message id). Checked before anything is received.
    #[arg(long)]
    out: PathBuf,
    /// UDP port of the SLMP rule.
    #[arg(long, default_value_t = softspin_wire::SLMP_UDP_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Exit after this many messages.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
    /// Payload bytes of every segment but the last (the sender's --segment).
    #[arg(long, default_value_t = softspin_slmp::DEFAULT_SEGMENT as u32,
          value_parser = clap::value_parser!(u32).range(1..=softspin_slmp::MAX_SEGMENT as i64))]
    segment: u32,
    /// Largest message in bytes (host memory per message slot).
    #[arg(long, default_value_t = 64 << 20)]
    max_size: u32,
    /// Give up after this many seconds without all messages [default: never].
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    timeout: Option<f64>,
    /// Evict an incomplete message after this many seconds without a
    /// segment of it (its slot is freed; its sender is not ACKed again).
    #[arg(long, value_name = "S", default_value = EVICT_AFTER_DEFAULT, value_parser = parse_seconds)]
    evict_after: f64,
    /// xdp (root) or socket.
    #[arg(long, value_enum, default_value = "xdp")]
    mode: crate::nic::ModeArg,
    /// Print one JSON object with the statistics.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    progress: crate::status::ProgressArgs,
}

/// Seconds in (0, MAX_SECONDS]: NaN, infinities, 0 and negatives are usage errors.
fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= MAX_SECONDS {
        Ok(v)
    } else {
        Err(format!("{s}: must be in (0, {MAX_SECONDS}] seconds"))
    }
}

/// Prefix of the directory the handlers are built in (`-PID` follows).
const BUILD_DIR_PREFIX: &str = "softspin-slmp-recv";

/// Build the handler image for the NIC's profile and return the ELF's
/// bytes. The build directory is gone before any traffic is taken, so a
/// `recv` killed while it serves leaves nothing behind; one killed during
/// the build leaves its directory to the next `recv`, which removes the
/// directories of processes no longer running.
fn build_handler(cfg: &NicConfig) -> anyhow::Result<Vec<u8>> {
    remove_stale_build_dirs();
    let dir = tempdir::Dir::new(BUILD_DIR_PREFIX)?;
    let src = dir.path().join("slmp_recv.c");
    std::fs::write(&src, HANDLER_SRC).with_context(|| format!("writing {}", src.display()))?;
    let elf = dir.path().join("slmp_recv.elf");
    let mut o = softspin_host::sdk::BuildOptions::handler(&[&src], &elf);
    // As `softspin build --profile`: the NIC's defines and memory map.
    o.define = cfg.sdk_defines();
    o.link_symbols = cfg.memory_map().link_symbols();
    softspin_host::sdk::build(&o).context("building the SLMP receive handlers")?;
    std::fs::read(&elf).with_context(|| format!("reading {}", elf.display()))
}

/// Remove `BUILD_DIR_PREFIX-PID` directories whose process has ended.
fn remove_stale_build_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| {
            n.strip_prefix(BUILD_DIR_PREFIX)?
                .strip_prefix('-')?
                .parse::<u32>()
                .ok()
        }) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
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

/// Where messages go, checked before anything is received: a file that can
/// be written (`--count 1`, unless PATH is a directory) or a directory in
/// which files can be created.
fn check_out(out: &Path, count: u32) -> anyhow::Result<bool> {
    if count == 1 && !out.is_dir() {
        if out.exists() {
            if !out.is_file() {
                bail!("--out {}: not a regular file", out.display());
            }
            // Opened as it will be written (without truncating it yet).
            std::fs::OpenOptions::new()
                .write(true)
                .open(out)
                .with_context(|| {
                    format!("--out {}: cannot write the message there", out.display())
                })?;
        } else {
            // Nothing is created before a message arrives: probe the directory.
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            probe_dir(parent).with_context(|| {
                format!("--out {}: cannot write the message there", out.display())
            })?;
        }
        return Ok(true);
    }
    if out.exists() && !out.is_dir() {
        bail!("--out {}: not a directory (--count {count} writes one file per message into a directory)", out.display());
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("--out {}: creating the directory", out.display()))?;
    probe_dir(out)
        .with_context(|| format!("--out {}: cannot create files there", out.display()))?;
    Ok(false)
}

/// Can files be created in `dir`? (Creates one and removes it.)
fn probe_dir(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".softspin-slmp-recv-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// The handlers' slot header (slmp.h `slmp_slot_t`, 8 words before the
/// bitmap; slmp.h asserts the offset) and the values this program reads
/// and writes (`slot_constants_match_slmp_h` checks them against slmp.h).
mod slot {
    pub const TAG: usize = 0;
    pub const RECEIVED: usize = 1;
    pub const DONE: usize = 3;
    pub const MSG: usize = 4;
    pub const PEER_IP: usize = 5;
    pub const PEER_PORT: usize = 6;
    pub const SEEN: usize = 7;
    pub const HEADER_WORDS: usize = 8;
    pub const TAG_CLAIMING: u32 = 0xffff_ffff;
    pub const TAG_RETIRING: u32 = 0xffff_fffe;
    pub const TAG_EVICTED: u32 = 0xffff_fffd;
    pub const TAG_DELIVERED: u32 = 0xffff_fffc;
    pub const DONE_STORED: u32 = 2;
    pub const CFG_ACK_AFTER_HOST: u32 = 1;
}

/// A message's identity: its sender's address and UDP port, and its id.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct MsgKey {
    peer: Ipv4Addr,
    port: u16,
    msg_id: u32,
}

impl MsgKey {
    fn of(h: &[u32]) -> MsgKey {
        // peer_ip is kept in wire order: its bytes in memory are the address.
        MsgKey {
            peer: Ipv4Addr::from(h[slot::PEER_IP].to_le_bytes()),
            port: h[slot::PEER_PORT] as u16,
            msg_id: h[slot::MSG],
        }
    }
    fn file_name(&self) -> String {
        format!("msg-{}-{}-{}", self.peer, self.port, self.msg_id)
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({"peer": self.peer.to_string(), "port": self.port, "msg_id": self.msg_id})
    }
}

/// What this program knows of one handler slot.
struct Watch {
    /// (tag, seen) at the last change, and when it changed.
    last: (u32, u32),
    since: Instant,
    /// Retiring: when the tag became RETIRING, and the tombstone to leave.
    retiring: Option<(Instant, u32)>,
}

/// The handlers' message slots, seen from the host: stored messages and
/// idle incomplete ones are retired in two steps (slmp.h `slmp_slot_t`).
struct Slots {
    base: u32,
    bytes: u32,
    watch: Vec<Watch>,
    scanned: Instant,
    evict_after: Duration,
    evicted: u64,
    evictions: Vec<serde_json::Value>,
}

impl Slots {
    fn header(&self, nic: &softspin_host::Nic, i: u32) -> softspin_host::Result<Vec<u32>> {
        let b = nic.nic_read(self.base + i * self.bytes, slot::HEADER_WORDS * 4)?;
        Ok(b.chunks_exact(4).map(|w| u32_at(w, 0)).collect())
    }

    fn write_word(
        &self,
        nic: &mut softspin_host::Nic,
        i: u32,
        word: usize,
        v: u32,
    ) -> softspin_host::Result<()> {
        nic.nic_write(
            self.base + i * self.bytes + 4 * word as u32,
            &v.to_le_bytes(),
        )
    }

    /// Read the table every SCAN_EVERY; retire what is due.
    fn scan(&mut self, nic: &mut softspin_host::Nic, start: Instant) -> softspin_host::Result<()> {
        let now = Instant::now();
        if now.duration_since(self.scanned) < SCAN_EVERY {
            return Ok(());
        }
        self.scanned = now;
        for i in 0..self.watch.len() as u32 {
            let h = self.header(nic, i)?;
            let w = &mut self.watch[i as usize];
            if let Some((at, tomb)) = w.retiring {
                if now.duration_since(at) >= RETIRE_GRACE {
                    // Step 2: every task that saw the old tag has ended.
                    // Keep the key under a tombstone, clear the rest.
                    let mut b = vec![0u8; self.bytes as usize];
                    for (k, v) in [
                        (slot::TAG, tomb),
                        (slot::MSG, h[slot::MSG]),
                        (slot::PEER_IP, h[slot::PEER_IP]),
                        (slot::PEER_PORT, h[slot::PEER_PORT]),
                    ] {
                        b[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
                    }
                    nic.nic_write(self.base + i * self.bytes, &b)?;
                    w.retiring = None;
                }
                continue;
            }
            let (tag, seen) = (h[slot::TAG], h[slot::SEEN]);
            if (tag, seen) != w.last {
                (w.last, w.since) = ((tag, seen), now);
            }
            let owned = tag != 0 && tag < slot::TAG_DELIVERED;
            let quiet = now.duration_since(w.since);
            let tomb = if owned && h[slot::DONE] == slot::DONE_STORED && quiet >= STORED_QUIET {
                slot::TAG_DELIVERED
            } else if ((owned && h[slot::DONE] == 0) || tag == slot::TAG_CLAIMING)
                && quiet >= self.evict_after
            {
                self.evicted += 1;
                if self.evictions.len() < EVICTIONS_LISTED {
                    let mut e = MsgKey::of(&h).json();
                    e["bytes_received"] = h[slot::RECEIVED].into();
                    e["at_s"] = start.elapsed().as_secs_f64().into();
                    self.evictions.push(e);
                }
                slot::TAG_EVICTED
            } else {
                continue;
            };
            // Step 1: tasks that come now are refused (not ACKed).
            w.retiring = Some((now, tomb));
            self.write_word(nic, i, slot::TAG, slot::TAG_RETIRING)?;
        }
        Ok(())
    }
}

pub fn recv(a: RecvArgs) -> anyhow::Result<ExitCode> {
    if a.max_size < a.segment {
        bail!(
            "--segment {} / --max-size {}: need segment <= max-size",
            a.segment,
            a.max_size
        );
    }
    let out_is_file = check_out(&a.out, a.count)?;
    let cfg = NicConfig::fpspin();
    let (mut nic, stop) = crate::nic::attach(&a.iface, a.mode, cfg)?;
    nic.keep_outputs(false);
    // After attaching: a bad interface is reported without a compile first.
    let elf = build_handler(nic.config())?;
    let image = nic.image_from_bytes(&elf)?;
    // The table's geometry, from the image itself (its data reaches NIC
    // memory only at install, and the window must be sized before).
    let elf_image =
        softspin_hpu::ElfImage::parse(&elf).context("the SLMP receive handlers' image")?;
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
    config.extend_from_slice(&slot::CFG_ACK_AFTER_HOST.to_le_bytes());
    nic.nic_write(image.symbol("slmp_config")?, &config)?;
    let start = Instant::now();
    let mut table = Slots {
        base: image.symbol("slmp_slots")?,
        bytes: slot_bytes,
        watch: (0..slots)
            .map(|_| Watch {
                last: (0, 0),
                since: start,
                retiring: None,
            })
            .collect(),
        scanned: start,
        evict_after: Duration::from_secs_f64(a.evict_after),
        evicted: 0,
        evictions: Vec::new(),
    };
    nic.activate(ectx)?;
    let mut reporter = crate::status::LiveReporter::new(&a.progress, "slmp recv");
    // On stderr even with --json: scripts wait for this line before sending
    // (a `start` object with --progress json).
    reporter.started(
        &nic,
        Some(format!(
            "softspin: slmp recv: {} on UDP port {}; waiting for {} message(s)",
            a.iface, a.port, a.count
        )),
    );

    let mut got: Vec<serde_json::Value> = Vec::new();
    // Every message written, so a late retransmission that completes one
    // again (its tombstone taken by another message) is not written twice.
    let mut stored: HashSet<MsgKey> = HashSet::new();
    // Completed past --count: neither written nor ACKed in full (their
    // senders do not report delivery).
    let mut refused: Vec<serde_json::Value> = Vec::new();
    let mut failure: Option<anyhow::Error> = None;
    let limit = a.timeout.map(Duration::from_secs_f64);
    // (since, last frame at, frames then) once every message is in.
    let mut linger: Option<(Instant, Instant, u64)> = None;
    nic.run_live_with(limit, &stop, |nic| {
        reporter.step(nic);
        let r = (|| -> anyhow::Result<()> {
            for n in nic.poll_notifications() {
                if n.data.len() < 12 {
                    continue;
                }
                let (len, i) = (u32_at(&n.data, 4), u32_at(&n.data, 8));
                if i as usize >= table.watch.len() {
                    bail!("the handlers notified slot {i} of {}", table.watch.len());
                }
                let h = table.header(nic, i)?;
                let key = MsgKey::of(&h);
                if !stored.contains(&key) {
                    if got.len() as u32 >= a.count {
                        let mut m = key.json();
                        m["bytes"] = len.into();
                        refused.push(m);
                        continue;
                    }
                    let path = if out_is_file {
                        a.out.clone()
                    } else {
                        a.out.join(key.file_name())
                    };
                    store(nic, n.host_ref, len as usize, &path)
                        .with_context(|| format!("writing {}", path.display()))?;
                    stored.insert(key);
                    let mut m = key.json();
                    m["bytes"] = len.into();
                    m["file"] = path.display().to_string().into();
                    m["at_s"] = start.elapsed().as_secs_f64().into();
                    got.push(m);
                }
                // Stored: the handlers ACK its segments from now on.
                table.write_word(nic, i, slot::DONE, slot::DONE_STORED)?;
            }
            table.scan(nic, start)?;
            Ok(())
        })();
        if let Err(e) = r {
            failure = Some(e);
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
            if now.duration_since(*last) >= LINGER_QUIET || now.duration_since(*since) >= LINGER_MAX
            {
                stop.store(true, Ordering::Relaxed);
            }
        }
    })?;
    nic.stop_matching()?;
    reporter.events(&nic.events());
    reporter.finish(&nic);
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
        "evicted": table.evicted,
        "evictions": table.evictions,
        "refused_after_count": refused,
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
            println!(
                "message {} from {}:{} ({} bytes) -> {}",
                m["msg_id"],
                m["peer"].as_str().unwrap_or_default(),
                m["port"],
                m["bytes"],
                m["file"].as_str().unwrap_or_default()
            );
        }
        if table.evicted > 0 {
            println!(
                "{} incomplete message(s) evicted after {} s without a segment (their slots freed)",
                table.evicted, a.evict_after
            );
        }
        if !refused.is_empty() {
            println!("{} message(s) completed after --count {}: not written, their last segment not ACKed", refused.len(), a.count);
        }
        // Not a failure (the sender retransmits what the port lost), but
        // never silent.
        let port_drops: u64 = live.drops.values().sum();
        if port_drops > 0 {
            println!(
                "{port_drops} frames dropped on the port ({}); SLMP retransmission covered them",
                crate::nic::causes(&live)
            );
        }
    }
    let (mut status, mut why) = crate::sim::outcome(&report, None);
    if status == Status::Unprocessed {
        status = Status::Ok; // frames still in flight at exit do not count here
    }
    if status == Status::Ok && (got.len() as u32) < a.count {
        (status, why) = (
            Status::Failure,
            format!("{} of {} messages received", got.len(), a.count),
        );
    }
    if status != Status::Ok {
        eprintln!("softspin: slmp recv: {why} (exit status {})", status as u8);
    }
    Ok(status.into())
}

/// Bytes of host memory copied per write when storing a message.
const STORE_CHUNK: usize = 1 << 20;

/// Write `len` bytes of host memory at `addr` to `path`, a chunk at a
/// time: the last ACK waits for this, and one buffer of the whole message
/// cost a fresh zeroed allocation (page faults) on top of the copies.
fn store(nic: &mut softspin_host::Nic, addr: u64, len: usize, path: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    let mut at = 0;
    while at < len {
        let k = (len - at).min(STORE_CHUNK);
        f.write_all(&nic.host_read(addr + at as u64, k)?)?;
        at += k;
    }
    Ok(())
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
        .with_context(|| {
            format!("symbol {name} at 0x{addr:x} is not initialised data of the image")
        })
}

#[cfg(test)]
mod tests {
    use super::slot;

    /// The slot values this program writes are slmp.h's (one definition
    /// there; a mismatch would free slots under running handlers).
    #[test]
    fn slot_constants_match_slmp_h() {
        let h = include_str!("../../../sdk/include/slmp.h");
        let define = |name: &str| -> u32 {
            let line = h
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("{name} in slmp.h"));
            let v = line
                .split_whitespace()
                .nth(2)
                .unwrap()
                .trim_end_matches('u');
            match v.strip_prefix("0x") {
                Some(x) => u32::from_str_radix(x, 16).unwrap(),
                None => v.parse().unwrap(),
            }
        };
        assert_eq!(define("SLMP_TAG_CLAIMING"), slot::TAG_CLAIMING);
        assert_eq!(define("SLMP_TAG_RETIRING"), slot::TAG_RETIRING);
        assert_eq!(define("SLMP_TAG_EVICTED"), slot::TAG_EVICTED);
        assert_eq!(define("SLMP_TAG_DELIVERED"), slot::TAG_DELIVERED);
        assert_eq!(define("SLMP_DONE_STORED"), slot::DONE_STORED);
        assert_eq!(define("SLMP_CFG_ACK_AFTER_HOST"), slot::CFG_ACK_AFTER_HOST);
        // The header's field order (slmp.h asserts the bitmap's offset).
        let body = &h[h.find("typedef struct slmp_slot {").unwrap()..];
        let fields: Vec<&str> = body
            .lines()
            .skip(1)
            .take(slot::HEADER_WORDS)
            .map(|l| l.split_whitespace().nth(1).unwrap().trim_end_matches(';'))
            .collect();
        let at = |f: &str| fields.iter().position(|x| *x == f).unwrap();
        assert_eq!(
            [
                at("tag"),
                at("received"),
                at("done"),
                at("msg"),
                at("peer_ip"),
                at("peer_port"),
                at("seen")
            ],
            [
                slot::TAG,
                slot::RECEIVED,
                slot::DONE,
                slot::MSG,
                slot::PEER_IP,
                slot::PEER_PORT,
                slot::SEEN
            ]
        );
    }
}
