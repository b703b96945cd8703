//! `softspin nic`: run the NIC on a real interface until SIGINT/SIGTERM or
//! `--duration`, then detach and print the statistics.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use softspin_host::hostif::server::{ControlServer, EctxEntry, NodeInfo};
use softspin_host::hostif::{self, shm};
use softspin_host::{
    AttachOptions, Ectx, Event, Footprint, LiveStats, Mode, Nic, NicConfig, Report, Ruleset,
};
use softspin_netio::rules;
use softspin_wire::rma::window;

use crate::capture::Capture;
use crate::exit::Status;
use crate::live_timeline::TimelineRing;
use crate::sim::EctxArgs;

#[derive(clap::Args)]
#[command(after_help = NIC_HELP)]
pub struct NicArgs {
    /// The interface to attach to (e.g. a veth end).
    #[arg(long)]
    iface: String,
    #[command(flatten)]
    ectx: EctxArgs,
    #[command(flatten)]
    nodes: crate::cluster::NodeArgs,
    /// Put the RMA transport block (docs/rma.md, "Reliability") in front of
    /// the handler for frames on RMA's UDP port, as node `--rank`.
    #[arg(long, requires = "rank")]
    rma: bool,
    /// Export an RMA window at start-up (docs/rma.md "Windows and keys"):
    /// the first SIZE bytes (K, M, G: KiB, MiB, GiB) of the RMA ECTX's host
    /// memory under KEY [default 1], all rights, so the node serves remote
    /// memory with no host program. Needs the RMA target handlers and
    /// --host-size of at least SIZE.
    #[arg(long, value_name = "SIZE[,KEY]")]
    window: Option<WindowArg>,
    /// Write this file once the NIC is attached and its handlers are
    /// installed (`softspin cluster up` waits for it).
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// A ruleset selecting the ECTX's frames (repeatable; the first that
    /// matches wins): `udp:PORT`, `icmp`, `ipv4`, `all`, `slmp[:PORT]`.
    #[arg(long = "match", value_name = "SPEC")]
    matches: Vec<String>,
    /// Rulesets from a TOML file (docs/rules.md); a ruleset's `ectx = NAME`
    /// picks its ECTX (needed with several ECTXs).
    #[arg(long)]
    rules: Option<PathBuf>,
    /// xdp: XDP matcher + AF_XDP (root); socket: UDP sockets on the
    /// `udp:` rules' ports (no root).
    #[arg(long, value_enum, default_value = "xdp")]
    mode: ModeArg,
    /// Stop after this many seconds [default: until SIGINT/SIGTERM].
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// Frames start at the Ethernet header, as on the wire (FPsPIN).
    #[arg(long, value_enum, default_value = "eth")]
    frame: FrameArg,
    /// Receive coalescing (as a NIC's interrupt moderation): after a burst
    /// of frames, sleep this long when the ring runs dry instead of polling
    /// (docs/live.md, "Receive rate"). 0: off.
    #[arg(long, value_name = "US", default_value = "0")]
    rx_coalesce_us: u64,
    /// Print one JSON object with the statistics.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    progress: crate::status::ProgressArgs,
    /// Print handler output (printf) on stdout as the run goes.
    #[arg(long)]
    stdout: bool,
    /// Write one JSON line per message (as `softspin sim --records`).
    #[arg(long, value_name = "FILE.jsonl")]
    records: Option<PathBuf>,
    /// Write a pcapng of both directions: the frames the NIC took (matched,
    /// with their ECTX) and the frames the handlers sent, stamped with the
    /// wall clock (docs/live.md, "Captures").
    #[arg(long, value_name = "FILE.pcapng")]
    pcap_out: Option<PathBuf>,
    /// Write a Chrome trace-event timeline (Perfetto), as `sim --timeline`:
    /// the events that ended in the run's last --timeline-window seconds,
    /// anchored to the wall clock (docs/live.md, "Timelines").
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Seconds of NIC time --timeline keeps: a ring of the latest events
    /// (at most 500,000); the file's `otherData` counts what was dropped.
    #[arg(long, value_name = "S", default_value = "10")]
    timeline_window: f64,
    /// After the run, write each ECTX's host window, raw (several ECTXs:
    /// FILE.NAME each), as `softspin sim --dump-host`.
    #[arg(long, value_name = "FILE")]
    dump_host: Option<PathBuf>,
    /// Back the ECTXs' host windows with a shared-memory file that host
    /// programs map (docs/host-interface.md): /dev/shm/NAME, made (zeroed)
    /// at start, removed at exit.
    #[arg(long, value_name = "NAME")]
    host_shm: Option<String>,
    /// Serve host programs on a Unix control socket (docs/host-interface.md)
    /// [PATH default: /run/softspin/IFACE.sock].
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    control: Option<Option<PathBuf>>,
    #[command(flatten)]
    jit: crate::jit::JitArgs,
}

/// `--window SIZE[,KEY]`: an RMA window over the first SIZE bytes of the
/// host memory, under KEY (default 1), all rights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowArg {
    pub size: u64,
    pub key: u32,
}

/// The key `--window` exports under without `,KEY` (and `cluster up --rma`).
pub const DEFAULT_WINDOW_KEY: u32 = 1;

impl std::str::FromStr for WindowArg {
    type Err = String;
    fn from_str(s: &str) -> Result<WindowArg, String> {
        let (size, key) = match s.split_once(',') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let key = match key {
            Some(k) => k
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&k| k != softspin_wire::rma::window::KEY_FREE)
                .ok_or_else(|| format!("`{k}`: the key is a nonzero 32-bit number"))?,
            None => DEFAULT_WINDOW_KEY,
        };
        Ok(WindowArg {
            size: parse_size(size)?,
            key,
        })
    }
}

impl std::fmt::Display for WindowArg {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{},{}", self.size, self.key)
    }
}

/// Bytes, with an optional K, M or G suffix (KiB, MiB, GiB); not 0.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        _ => {
            return Err(format!(
                "`{s}`: a size is bytes with an optional K, M or G suffix, e.g. 16M"
            ))
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!("`{s}`: a size is a positive number of bytes (K, M, G suffixes), e.g. 16M")
        })
}

/// The ECTX `--window` exports in: the one behind the RMA transport, else
/// the only one.
fn window_ectx(plan: &[crate::sim::PlannedEctx], w: WindowArg) -> anyhow::Result<usize> {
    let k = match plan.iter().position(|p| p.opts.rma.is_some()) {
        Some(k) => k,
        None if plan.len() == 1 => 0,
        None => bail!(
            "--window: which of the {} ECTXs? Give --rma (its ECTX exports the window) or one --image",
            plan.len()
        ),
    };
    let p = &plan[k];
    if p.host_size < w.size {
        bail!(
            "--window {}: the ECTX `{}` has {} bytes of host memory; give --host-size {} or more",
            w.size,
            p.opts.name.as_deref().unwrap_or_default(),
            p.host_size,
            w.size
        );
    }
    Ok(k)
}

/// How a live command takes frames (shared by `nic` and `slmp recv`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ModeArg {
    Xdp,
    Socket,
}

/// Attach to `iface` with SIGINT/SIGTERM setting the returned stop flag
/// (the live loop checks it; the NIC then detaches cleanly).
pub fn attach(
    iface: &str,
    mode: ModeArg,
    cfg: NicConfig,
) -> anyhow::Result<(Nic, Arc<AtomicBool>)> {
    let mode = match mode {
        ModeArg::Xdp => Mode::Xdp,
        ModeArg::Socket => Mode::Socket,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the SIGINT/SIGTERM handler")?;
    }
    let nic = Nic::attach(
        iface,
        AttachOptions {
            mode,
            config: Some(cfg),
            ..Default::default()
        },
    )
    .with_context(|| format!("attaching to {iface}"))?;
    Ok((nic, stop))
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FrameArg {
    Eth,
}

const NIC_HELP: &str = "\
Frames that match a ruleset run the ECTX's handlers; all other frames go to
the kernel stack untouched (ARP, SSH, pings to other addresses keep working).
XDP mode needs root; without it use --mode socket (UDP rules only).

Exit status (as for sim):
  0  no handler error, message timeout or drop
  1  bad input, or the NIC could not attach (the message says why)
  2  usage error
  3  a handler faulted, hit its watchdog, aborted or had a command rejected
  4  a message timed out
  5  frames were dropped (on the port or in the packet buffer), or handler
     output was dropped
  6  frames were left unprocessed: --duration or a signal ended the run
     while handlers were behind (`unprocessed` in the statistics)";

/// The rulesets for each planned ECTX (by index), as the C and Python
/// bindings combine them (`rules::ectx_rulesets`): `--match` and scenario
/// `match` specs, then the rules file's rulesets for it, else `udp:PORT`.
/// One file serves every ECTX here, so it is also checked against them all.
fn assign_rules(
    plan: &[crate::sim::PlannedEctx],
    matches: &[String],
    file: Option<&PathBuf>,
) -> anyhow::Result<Vec<Vec<Ruleset>>> {
    if !matches.is_empty() && plan.len() != 1 {
        bail!("--match applies to a single --image ECTX; in a scenario give each [[ectx]] its own `match = [...]`");
    }
    let file_rules = match file {
        Some(path) => {
            let r = rules::load_rules(path)?;
            let names: Vec<_> = plan.iter().map(|p| p.opts.name.as_deref()).collect();
            rules::check_shared_file(&r, &names).with_context(|| path.display().to_string())?;
            r
        }
        None => Vec::new(),
    };
    plan.iter()
        .enumerate()
        .map(|(k, p)| {
            let cli = if k == 0 { matches } else { &[] };
            let specs: Vec<&String> = cli.iter().chain(&p.matches).collect();
            let name = p.opts.name.as_deref();
            rules::ectx_rulesets(&specs, file_rules.clone(), name, p.opts.udp_dst_port)
                .with_context(|| format!("ECTX `{}`", name.unwrap_or_default()))
        })
        .collect()
}

pub fn main(a: NicArgs) -> anyhow::Result<ExitCode> {
    let FrameArg::Eth = a.frame;
    if !(a.timeline_window.is_finite() && a.timeline_window > 0.0 && a.timeline_window <= 1e9) {
        bail!(
            "--timeline-window {}: must be a positive number of seconds",
            a.timeline_window
        );
    }
    // Created before the run, so a bad path does not cost one.
    let mut ring = match &a.timeline {
        Some(p) => Some(TimelineRing::create(
            p,
            Duration::from_secs_f64(a.timeline_window),
            crate::live_timeline::MAX_EVENTS,
        )?),
        None => None,
    };
    // FPsPIN's profile unless the images were built for another.
    let (cfg, mut plan, _) = crate::sim::plan_for_images(&a.ectx, "fpspin")?;
    crate::sim::plan_rma(a.rma, a.nodes.rank, &mut plan)?;
    let window = match a.window {
        Some(w) => Some((window_ectx(&plan, w)?, w)),
        None => None,
    };
    let rulesets = assign_rules(&plan, &a.matches, a.rules.as_ref())?;
    for (p, r) in plan.iter_mut().zip(rulesets) {
        if r.is_empty() {
            bail!(
                "ECTX `{}` has no ruleset: give --match SPEC (udp:PORT, icmp, ipv4, all, slmp), --rules FILE or a scenario `match`",
                p.opts.name.as_deref().unwrap_or_default()
            );
        }
        p.opts.rules = r;
    }
    let duration = match a.duration {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= 1e9) => {
            bail!("--duration {s}: must be a positive number of seconds")
        }
        s => s.map(Duration::from_secs_f64),
    };
    // Before attaching to the interface: a --jit this build lacks fails here.
    let jit = a.jit.resolve()?;
    let nodes = a.nodes.load()?;
    if let Some((t, rank)) = &nodes {
        let node = t.node(*rank).expect("rank checked by load");
        if node.iface != a.iface {
            bail!(
                "--iface {} but the node table gives rank {rank} interface {}",
                a.iface,
                node.iface
            );
        }
        softspin_host::check_interface(node)?;
    }
    let coalesce = std::time::Duration::from_micros(a.rx_coalesce_us);
    if coalesce > softspin_host::MAX_RX_COALESCE {
        bail!(
            "--rx-coalesce-us {}: at most {} (the port's rings must hold what a flood brings meanwhile)",
            a.rx_coalesce_us,
            softspin_host::MAX_RX_COALESCE.as_micros()
        );
    }
    let (mut nic, stop) = attach(&a.iface, a.mode, cfg)?;
    nic.set_rx_coalesce(coalesce)?;
    a.nodes.apply(&mut nic, nodes.as_ref())?;
    if let Some(after) = jit {
        crate::sim::enable_jit(&mut nic, after);
    }
    // Nobody answers notifications from the command line.
    nic.pause_for_host(false);
    let keep = a.pcap_out.is_some();
    nic.keep_outputs(keep);
    let (ectxs, shm) = install(&mut nic, plan, a.host_shm.as_deref())?;
    // Before the ready file: a cluster's NICs serve the window once ready.
    if let Some((k, w)) = window {
        nic.export_window(ectxs[k], w.key, 0, w.size, window::PERM_ALL)
            .with_context(|| format!("--window {w}"))?;
    }
    let mut control = match &a.control {
        Some(p) => {
            let path = p
                .clone()
                .unwrap_or_else(|| hostif::default_control_path(&a.iface));
            Some(ControlServer::bind(
                &path,
                node_info(&nic, &a.iface, &ectxs, shm)?,
            )?)
        }
        None => None,
    };
    // Ready once host programs can connect too.
    if let Some(p) = &a.ready_file {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .with_context(|| format!("--ready-file {}", p.display()))?;
    }
    let mut reporter = crate::status::LiveReporter::new(&a.progress, "nic");
    let s = nic.live_stats().expect("attached");
    reporter.started(
        &nic,
        (!a.json).then(|| {
            let mut line = format!(
                "softspin: nic: {} with {} ECTX(s); stop with Ctrl-C",
                s.port,
                ectxs.len()
            );
            if let Some(c) = &control {
                line += &format!(
                    "\nsoftspin: nic: host programs connect to {}",
                    c.path().display()
                );
            }
            line
        }),
    );

    let mut sinks = crate::results::Sinks::new(&mut nic, a.records.as_deref(), a.stdout)?;
    // Written as the frames go, so a long run holds none of them.
    let time0 = nic.time0_unix().expect("attached");
    let mut pcap = match &a.pcap_out {
        Some(p) => {
            nic.capture_rx(true)?;
            let mut names = std::collections::HashMap::new();
            for &e in &ectxs {
                names.insert(e, nic.ectx_name(e)?);
            }
            Some(Capture::create(p, &a.iface, time0, names)?)
        }
        None => None,
    };
    if ring.is_some() {
        nic.enable_timeline();
    }
    let mut sink_err = None;
    let mut peak = Footprint::default();
    nic.run_live_with(duration, &stop, |nic| {
        if sink_err.is_none() {
            sink_err = sinks.drain(&mut nic.view(), false).err();
        }
        // Errors are shown as they come; frames go to the capture.
        if reporter.active() || pcap.is_some() {
            let events = nic.events();
            reporter.events(&events);
            if let (Some(w), None) = (&mut pcap, &sink_err) {
                sink_err = write_frames(nic, &events, w).err();
            }
        }
        if let (Some(r), None) = (&mut ring, &sink_err) {
            sink_err = r.push(nic.take_timeline()).err();
            r.trim(nic.now_ps());
        }
        reporter.tick(nic);
        peak = peak.max(nic.footprint());
        if let Some(c) = &mut control {
            c.poll(nic);
        }
    })?;
    nic.stop_matching()?;
    if let Some(e) = sink_err {
        return Err(e);
    }
    let events = nic.events();
    reporter.events(&events);
    if let Some(mut w) = pcap {
        write_frames(&mut nic, &events, &mut w)?;
        w.finish()?;
        let missed = nic.rx_capture_missed();
        if missed > 0 {
            eprintln!("softspin: nic: {missed} frames taken are missing from the capture (more than {} between two steps)", softspin_host::RX_CAPTURE_MAX);
        }
    }
    if let Some(mut r) = ring {
        r.push(nic.take_timeline())?;
        r.write(nic.now_ps(), time0)?;
    }
    sinks.drain(&mut nic.view(), true)?;
    reporter.finish(&nic);

    if let Some(p) = &a.dump_host {
        crate::results::dump_host(&mut nic, &ectxs, p)?;
    }
    let report = nic.report();
    let live = nic.live_stats().expect("attached");
    // What the handlers pushed with spin_push_counter: a host's proof of
    // what its handlers did (e.g. echo replies sent).
    let counters = crate::results::counters_json(&nic, &ectxs)?;
    let counters_text = crate::results::counters_text(&nic, &ectxs)?;
    drop(nic); // detaches from the interface before we report
    if a.json {
        let mut j = json(&live, &report);
        j["counters"] = counters;
        if let Some(c) = &control {
            let s = c.stats();
            j["control"] = serde_json::json!({
                "socket": c.path().display().to_string(),
                "connections": s.connections,
                "requests": s.requests,
                "errors": s.errors,
                "notifications_delivered": s.notifications_delivered,
                "notifications_dropped": s.notifications_dropped,
                "rma_posted": s.rma_posted,
                "rma_delivered": s.rma_delivered,
                "rma_dropped": s.rma_dropped,
            });
        }
        j["footprint_peak"] = serde_json::json!({
            "events": peak.events,
            "notifications": peak.notifications,
            "packets_held": peak.packets_held,
        });
        println!("{}", serde_json::to_string(&j)?);
    } else {
        print!("{}", text(&live));
        print!("{}", report.text());
        print!("{counters_text}");
    }
    let (mut status, mut why) = crate::sim::outcome(&report, None);
    let port_drops: u64 = live.drops.values().sum();
    if matches!(status, Status::Ok | Status::Unprocessed) && port_drops > 0 {
        (status, why) = (
            Status::Dropped,
            format!("{port_drops} frames dropped ({})", causes(&live)),
        );
    } else if status == Status::Ok && live.unprocessed > 0 {
        (status, why) = (
            Status::Unprocessed,
            format!(
                "{} frames taken from the wire were left unprocessed when the run ended",
                live.unprocessed
            ),
        );
    }
    if status != Status::Ok {
        eprintln!("softspin: nic: {why} (exit status {})", status as u8);
    }
    Ok(status.into())
}

/// Write the frames taken since the last call, and those sent among
/// `events`, to the capture.
fn write_frames(nic: &mut Nic, events: &[Event], w: &mut Capture) -> anyhow::Result<()> {
    let rx = nic.take_rx_captured();
    let tx = events.iter().filter_map(|e| match e {
        Event::Outbound(o) => Some(o),
        _ => None,
    });
    w.write_step(&rx, tx)
}

/// Page-aligned slices of one shared file, one per ECTX with a host
/// window, so a host program finds each window at a fixed offset.
const SHM_ALIGN: usize = 4096;

/// Install the plan; with `--host-shm`, each host window is a slice of one
/// shared-memory file, and its offset there is returned per ECTX.
fn install(
    nic: &mut Nic,
    plan: Vec<crate::sim::PlannedEctx>,
    host_shm: Option<&str>,
) -> anyhow::Result<(Vec<Ectx>, Option<SharedHost>)> {
    let Some(name) = host_shm else {
        return Ok((crate::sim::install_all(nic, plan)?, None));
    };
    let mut offsets = Vec::new();
    let mut total = 0usize;
    for p in &plan {
        let size = usize::try_from(p.host_size).context("host window size")?;
        offsets.push((size > 0).then_some(total));
        total = total
            .checked_add(size.next_multiple_of(SHM_ALIGN))
            .context("--host-shm: the host windows' total size overflows")?;
    }
    if total == 0 {
        bail!("--host-shm: no ECTX has a host window (--host-size 0)");
    }
    let path = shm::shm_path(name)?;
    let map = Arc::new(shm::ShmMap::create(&path, total)?);
    let mut next = offsets.iter().flatten();
    let ectxs = crate::sim::install_all_with(nic, plan, &mut |nic, size| {
        let off = *next.next().context("a host window not planned")?;
        Ok(nic.lend(Box::new(shm::ShmSlice::new(&map, off, size)?))?)
    })?;
    let shared = SharedHost {
        path,
        size: total,
        offsets: offsets.into_iter().map(|o| o.map(|o| o as u64)).collect(),
    };
    Ok((ectxs, Some(shared)))
}

/// The shared host memory file and each ECTX's offset in it.
struct SharedHost {
    path: PathBuf,
    size: usize,
    offsets: Vec<Option<u64>>,
}

fn node_info(
    nic: &Nic,
    iface: &str,
    ectxs: &[Ectx],
    shm: Option<SharedHost>,
) -> anyhow::Result<NodeInfo> {
    let mut entries = Vec::new();
    for (k, &e) in ectxs.iter().enumerate() {
        entries.push(EctxEntry {
            ectx: e,
            name: nic.ectx_name(e)?,
            host: nic.ectx_host_window(e).ok(),
            shm_offset: shm
                .as_ref()
                .and_then(|s| s.offsets.get(k).copied().flatten()),
            rma: nic.rma_windows(e).is_ok(),
        });
    }
    Ok(NodeInfo {
        iface: iface.to_string(),
        rank: nic.rank(),
        shm: shm.map(|s| (s.path, s.size)),
        ectxs: entries,
    })
}

pub fn causes(s: &LiveStats) -> String {
    s.drops
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn text(s: &LiveStats) -> String {
    format!(
        "interface          {} ({})\nwire               {} frames in: {} matched, {} passed to the kernel; {} frames out\n\
         IPv4 fragments     {} matched, {} passed to the kernel (only a first fragment carries the UDP header)\n\
         wire drops         {}\nunprocessed        {} frames (the run ended before their handlers did)\nwall time          {:.3} s\n",
        s.iface,
        s.port,
        s.rx_frames,
        s.matched,
        s.passed_to_kernel,
        s.tx_frames,
        s.fragments_matched,
        s.fragments_passed,
        if s.drops.is_empty() { "none".to_string() } else { causes(s) },
        s.unprocessed,
        s.wall_s
    )
}

/// The `--json` object: the wire counters, drops by cause (the port's and
/// the packet buffer's), and the engine's figures in the form `sim` gives.
fn json(s: &LiveStats, r: &Report) -> serde_json::Value {
    let drops = softspin_host::drops_by_cause(s, r);
    serde_json::json!({
        "iface": s.iface,
        "port": s.port,
        "rx_frames": s.rx_frames,
        "matched": s.matched,
        "passed_to_kernel": s.passed_to_kernel,
        "fragments": {"matched": s.fragments_matched, "passed_to_kernel": s.fragments_passed},
        "tx_frames": s.tx_frames,
        "drops": drops,
        "unprocessed": s.unprocessed,
        "tx_lag_ns": s.tx_lag_ns,
        "errors": r.errors,
        "error_details": r.error_details,
        "handlers": r.handlers,
        "latency_ns": r.latency_ns,
        "packets": r.packets,
        "wall_s": s.wall_s,
        "report": r,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::PlannedEctx;
    use softspin_host::EctxOptions;

    fn planned(name: &str, matches: &[&str], port: Option<u16>) -> PlannedEctx {
        PlannedEctx {
            image: PathBuf::new(),
            opts: EctxOptions {
                name: Some(name.into()),
                udp_dst_port: port,
                ..Default::default()
            },
            host_size: 0,
            matches: matches.iter().map(|m| m.to_string()).collect(),
            own_handler_mem: false,
        }
    }

    fn names(v: &[Ruleset]) -> Vec<&str> {
        v.iter().map(|r| r.name.as_str()).collect()
    }

    const FILE: &str = r#"
[[ruleset]]
name = "for-a"
match = ["ip"]
ectx = "a"
[[ruleset]]
name = "for-b"
match = ["icmp"]
ectx = "b"
"#;

    fn file(tag: &str, text: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("softspin-rules-{}-{tag}.toml", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The CLI gives each ECTX what the C and Python bindings give it for
    /// the same specs and file (they call `rules::ectx_rulesets` per ECTX).
    #[test]
    fn the_cli_combines_as_the_bindings_do() {
        let path = file("same", FILE);
        let plan = [planned("a", &["udp:7"], None), planned("b", &[], Some(9))];
        let cli = assign_rules(&plan, &[], Some(&path)).unwrap();
        let loaded = rules::load_rules(&path).unwrap();
        for (p, got) in plan.iter().zip(&cli) {
            let bindings = rules::ectx_rulesets(
                &p.matches,
                loaded.clone(),
                p.opts.name.as_deref(),
                p.opts.udp_dst_port,
            )
            .unwrap();
            assert_eq!(*got, bindings, "ECTX {:?}", p.opts.name);
        }
        // Written out: specs first, then the file's; the port only alone.
        assert_eq!(names(&cli[0]), ["udp:7", "for-a"]);
        assert_eq!(names(&cli[1]), ["for-b"]);
        // --match of a single ECTX comes before its scenario specs; a port
        // alone is its ruleset.
        let one = [planned("a", &["icmp"], Some(5))];
        let cli = assign_rules(&one, &["ipv4".into()], None).unwrap();
        assert_eq!(names(&cli[0]), ["ipv4", "icmp"]);
        let cli = assign_rules(&[planned("a", &[], Some(5))], &[], None).unwrap();
        assert_eq!(names(&cli[0]), ["udp:5"]);
        std::fs::remove_file(path).unwrap();
    }

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        a: NicArgs,
    }

    fn parse(args: &[&str]) -> NicArgs {
        use clap::Parser;
        let base = ["softspin-nic", "--iface", "eth9", "--image", "x.elf"];
        Cmd::try_parse_from(base.iter().chain(args)).unwrap().a
    }

    /// `--control` alone (before another flag or last) is the default
    /// path; with a value, that path.
    #[test]
    fn control_takes_an_optional_path() {
        assert_eq!(parse(&["--control", "--json"]).control, Some(None));
        assert_eq!(parse(&["--control"]).control, Some(None));
        assert_eq!(
            parse(&["--control", "/tmp/n.sock"]).control,
            Some(Some(PathBuf::from("/tmp/n.sock")))
        );
        assert_eq!(parse(&[]).control, None);
        assert_eq!(
            hostif::default_control_path("eth9"),
            PathBuf::from("/run/softspin/eth9.sock")
        );
        assert_eq!(parse(&["--host-shm", "n0"]).host_shm.as_deref(), Some("n0"));
    }

    #[test]
    fn window_sizes_and_keys() {
        let w = |s: &str| s.parse::<WindowArg>();
        assert_eq!(w("4096"), Ok(WindowArg { size: 4096, key: 1 }));
        assert_eq!(
            w("16M"),
            Ok(WindowArg {
                size: 16 << 20,
                key: 1
            })
        );
        assert_eq!(w("2k,7"), Ok(WindowArg { size: 2048, key: 7 }));
        assert_eq!(
            w("1G"),
            Ok(WindowArg {
                size: 1 << 30,
                key: 1
            })
        );
        for bad in [
            "",
            "0",
            "16Q",
            "M",
            "-1",
            "1,0",
            "1,x",
            "1,",
            "99999999999999999999G",
            "16E",
        ] {
            assert!(w(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse(&["--window", "1M,3"]).window.unwrap().to_string(),
            "1048576,3"
        );
        // The ECTX must have the host memory; with several, --rma picks it.
        let mut one = [planned("a", &[], None)];
        one[0].host_size = 4096;
        let ok = WindowArg { size: 4096, key: 1 };
        assert_eq!(window_ectx(&one, ok).unwrap(), 0);
        let e = window_ectx(&one, WindowArg { size: 8192, key: 1 }).unwrap_err();
        assert!(
            e.to_string().contains("give --host-size 8192 or more"),
            "{e}"
        );
        let mut two = [planned("a", &[], None), planned("b", &[], None)];
        two[1].host_size = 4096;
        assert!(window_ectx(&two, ok)
            .unwrap_err()
            .to_string()
            .contains("--rma"));
        two[1].opts.rma = Some(softspin_engine::RmaTransportConfig::new(0));
        assert_eq!(window_ectx(&two, ok).unwrap(), 1);
    }

    #[test]
    fn a_shared_file_must_fit_the_plan() {
        let unnamed = file("unnamed", "[[ruleset]]\nname = \"x\"\nmatch = [\"ip\"]\n");
        let two = [planned("a", &[], None), planned("b", &[], None)];
        let e = assign_rules(&two, &[], Some(&unnamed)).unwrap_err();
        assert!(
            format!("{e:#}").contains("needs `ectx = NAME` (there are 2 ECTXs)"),
            "{e:#}"
        );
        let one = [planned("a", &[], None)];
        assert_eq!(
            names(&assign_rules(&one, &[], Some(&unnamed)).unwrap()[0]),
            ["x"]
        );
        let path = file("named", FILE);
        let e = assign_rules(&one, &[], Some(&path)).unwrap_err();
        assert!(
            format!("{e:#}").contains("names ECTX `b`, which is not installed"),
            "{e:#}"
        );
        std::fs::remove_file(unnamed).unwrap();
        std::fs::remove_file(path).unwrap();
    }
}
