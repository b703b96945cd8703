//! `softspin sim`: run handler images on the simulated NIC with traffic and
//! print PsPIN-style statistics.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde::Deserialize;
use softspin_engine::traffic::{
    FrameKind, GenConfig, Generator, Payload, PcapSource, Source, TraceSource, DEFAULT_UDP_PORT,
};
use softspin_engine::units::{self, Gbps};
use softspin_engine::{NicConfig, Report};
use softspin_host::{Ectx, EctxOptions, HostWindow, Image, Nic};
use softspin_hpu::ElfImage;

use crate::exit::Status;

#[derive(clap::Args)]
#[command(after_help = crate::exit::SIM_HELP)]
pub struct SimArgs {
    #[command(flatten)]
    ectx: EctxArgs,
    #[command(flatten)]
    nodes: crate::cluster::NodeArgs,

    // -- traffic --
    /// Generator: number of messages [default: 1].
    #[arg(long, conflicts_with_all = ["trace", "pcap"])]
    messages: Option<u32>,
    /// Generator: packets per message.
    #[arg(long, default_value_t = 1)]
    packets: u32,
    /// Generator: frame size in bytes, headers included. The limits come
    /// from the profiles (see `profile_help`).
    #[arg(long, default_value_t = 1024, help = profile_help(HelpFor::Size))]
    size: usize,
    /// Generator: line rate in Gbit/s (see `profile_help`).
    #[arg(long, help = profile_help(HelpFor::Rate))]
    rate: Option<f64>,
    /// Frames start at the IP header (PsPIN's host-order layout) or the
    /// Ethernet header (FPsPIN, wire format) [default: the profile's: ip
    /// for pspin, eth for fpspin; the profile is the image's if it records
    /// one (`softspin build --profile`)].
    #[arg(long, value_enum)]
    frame: Option<Frame>,
    /// Generator: messages in flight at once (their packets interleave round-robin).
    #[arg(long, default_value_t = 1)]
    concurrent: u32,
    /// Generator: UDP payload bytes. With `seq` byte i of packet number n
    /// (0-based over the whole run) is (i + 7n) mod 256; `zero` is all 0;
    /// `random` is SplitMix64 bytes from --seed and n.
    #[arg(long, value_enum, default_value = "seq")]
    payload: PayloadArg,
    /// Generator: seed of `--payload random`.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Generator: IPv4 source address.
    #[arg(long, default_value_t = Ipv4Addr::new(10, 0, 0, 1))]
    src_ip: Ipv4Addr,
    /// Generator: IPv4 destination address.
    #[arg(long, default_value_t = Ipv4Addr::new(10, 0, 0, 2))]
    dst_ip: Ipv4Addr,
    /// Generator: UDP source port.
    #[arg(long, default_value_t = DEFAULT_UDP_PORT)]
    src_port: u16,
    /// Generator: UDP destination port (what scenario `udp_dst_port` matches).
    #[arg(long, default_value_t = DEFAULT_UDP_PORT)]
    dst_port: u16,
    /// PsPIN-style text trace (`src dst size ipg msgid is_last` per line).
    #[arg(long, conflicts_with = "pcap")]
    trace: Option<PathBuf>,
    /// pcap file of Ethernet frames (each packet its own message; capture
    /// times, or back-to-back at --rate if given).
    #[arg(long)]
    pcap: Option<PathBuf>,

    #[command(flatten)]
    jit: crate::jit::JitArgs,

    /// Serve the GDB remote protocol on [HOST]:PORT (docs/debugging.md):
    /// the run waits for gdb before it starts, and NIC time stands still
    /// while gdb holds an HPU. Port 0 picks a free port; stderr says which.
    #[arg(long, value_name = "[HOST]:PORT")]
    gdb: Option<String>,
    /// With --gdb: stop at this handler's entry (a symbol of an ECTX's
    /// image); may be given more than once.
    #[arg(long, value_name = "HANDLER", requires = "gdb")]
    gdb_break: Vec<String>,

    // -- outputs --
    /// Print one JSON object with the statistics.
    #[arg(long)]
    json: bool,
    /// Write a Chrome trace-event timeline (open it in Perfetto).
    #[arg(long)]
    timeline: Option<PathBuf>,
    /// Write the packets the handlers sent to a pcap file.
    #[arg(long)]
    pcap_out: Option<PathBuf>,
    /// Print handler output (printf) on stdout as the run goes, in NIC-time
    /// order, each line prefixed with `[TIME ns ECTX msg ID hpu N]`.
    #[arg(long)]
    stdout: bool,
    /// Write one JSON line per message: msg_id, ectx, packets,
    /// first_arrival_ns/last_arrival_ns (packet-buffer admission),
    /// completion_ns (null if reset or unfinished), errors, host_writes
    /// ({addr, value}; at most 256 listed, *_total counts all).
    #[arg(long, value_name = "FILE.jsonl")]
    records: Option<PathBuf>,
    /// After the run, write each ECTX's host window, raw (several ECTXs:
    /// FILE.NAME each).
    #[arg(long, value_name = "FILE")]
    dump_host: Option<PathBuf>,
    /// After the run, write each ECTX's L2 handler memory, raw (several
    /// ECTXs: FILE.NAME each).
    #[arg(long, value_name = "FILE")]
    dump_handler_mem: Option<PathBuf>,
    /// Stop at this NIC time (ns) even if traffic remains [default: run until idle].
    #[arg(long)]
    until_ns: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Put the RMA transport block (docs/rma.md, "Reliability") in front of
    /// the handler for frames on RMA's UDP port, as node `--rank`.
    #[arg(long, requires = "rank")]
    rma: bool,
}

/// `--rma`: the transport block in front of the only ECTX, as node `rank`.
pub fn plan_rma(rma: bool, rank: Option<u32>, plan: &mut [PlannedEctx]) -> anyhow::Result<()> {
    let Some(rank) = rank.filter(|_| rma) else {
        return Ok(());
    };
    let rank = u16::try_from(rank)
        .map_err(|_| anyhow::anyhow!("--rma: rank {rank} does not fit RMA's 16-bit rank field"))?;
    let [only] = plan else {
        bail!(
            "--rma puts the transport in front of one ECTX; this run has {}",
            plan.len()
        );
    };
    only.opts.rma = Some(softspin_engine::RmaTransportConfig::new(rank));
    Ok(())
}

/// The NIC and its ECTXs: what `sim` and `nic` share.
#[derive(clap::Args)]
pub struct EctxArgs {
    /// Handler image for a single ECTX given on the command line.
    #[arg(long, required_unless_present = "scenario")]
    pub image: Option<PathBuf>,
    /// Header handler symbol (runs first and alone on each message's first packet).
    #[arg(long)]
    pub hh: Option<String>,
    /// Payload handler symbol (runs on every packet).
    #[arg(long)]
    pub ph: Option<String>,
    /// Completion handler symbol (runs last, after the message's last packet).
    #[arg(long)]
    pub th: Option<String>,
    /// Several ECTXs from a TOML scenario file (`[[ectx]]` tables with name,
    /// image, hh/ph/th, udp_dst_port, l1_copy, scratchpad = [per cluster],
    /// handler_mem_size, host_size, watchdog, timeout_ns).
    #[arg(long, conflicts_with = "image")]
    pub scenario: Option<PathBuf>,
    /// NIC profile [default: pspin for sim, fpspin for nic].
    #[arg(long, value_name = "pspin|fpspin", conflicts_with = "config")]
    pub profile: Option<String>,
    /// NIC configuration file (TOML; `profile = ...` picks the base, every
    /// other key overrides it).
    #[arg(long)]
    pub config: Option<PathBuf>,

    // -- ECTX settings for --image --
    /// Bytes of each packet copied to L1 before the handler runs [default: the whole packet].
    #[arg(long)]
    pub l1_copy: Option<u32>,
    /// Scratchpad bytes on each cluster (at most the L1 left after the packet
    /// buffer, runtime areas and stacks) [default: 0; --gdriver: 409600].
    #[arg(long)]
    pub scratchpad: Option<u32>,
    /// Host-memory window size in bytes (at most 4 GiB - 1: task_t.host_mem_size
    /// is 32-bit) [default: 1 MiB; --gdriver: 512 MiB].
    #[arg(long)]
    pub host_size: Option<u64>,
    /// Handler memory in bytes: from the image's data start, room beyond
    /// the data being free [default: the data only]; with --gdriver, a region
    /// of its own apart from the image's data [--gdriver: 524288].
    #[arg(long)]
    pub handler_mem: Option<u32>,
    /// PsPIN's generic-driver settings for the ECTX, so PsPIN's example
    /// handlers run as under its drivers: a scratchpad of 400 KiB on every
    /// cluster, 512 KiB of handler memory of its own (task->handler_mem,
    /// after the image's data), a 512 MiB host window (docs/pspin-drivers.md).
    #[arg(long, conflicts_with = "scenario")]
    pub gdriver: bool,
    /// Watchdog: instruction budget per handler invocation (commands are
    /// charged 1 instruction per 4 bytes they move).
    #[arg(long, default_value_t = 1_000_000)]
    pub watchdog: u64,
    /// Message timeout in ns of NIC time (0: never; at most one hour).
    #[arg(long, default_value_t = 1_000_000)]
    pub timeout_ns: u64,

    /// HPU stack size in bytes (overrides the profile's hpu_stack_size).
    #[arg(long)]
    pub stack_size: Option<u32>,
}

enum HelpFor {
    Size,
    Rate,
}

/// Flag help that quotes the profiles' values, so it cannot drift from them.
fn profile_help(what: HelpFor) -> String {
    let (p, f) = (NicConfig::pspin(), NicConfig::fpspin());
    match what {
        HelpFor::Size => format!(
            "Generator: frame size in bytes, headers included (IP frames: {} B of IPv4 + UDP headers; Ethernet frames: {} B). \
             At most the profile's packet slot (pkt_slot_size: {} B for pspin, {} B for fpspin)",
            softspin_engine::traffic::FrameKind::Ip.header_len(),
            softspin_engine::traffic::FrameKind::Eth.header_len(),
            p.pkt_slot_size,
            f.pkt_slot_size
        ),
        HelpFor::Rate => format!(
            "Generator: line rate in Gbit/s (`inf`: every packet at time 0) [default: the profile's line_rate_gbps, {} for pspin, {} for fpspin]",
            p.line_rate_gbps, f.line_rate_gbps
        ),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Frame {
    Ip,
    Eth,
}

impl From<Frame> for FrameKind {
    fn from(f: Frame) -> FrameKind {
        match f {
            Frame::Ip => FrameKind::Ip,
            Frame::Eth => FrameKind::Eth,
        }
    }
}

/// The profile the planned images record (`softspin build --profile`) and
/// the first image recording it; images that record none are left out.
fn recorded_profile(plan: &[PlannedEctx]) -> anyhow::Result<Option<(String, PathBuf)>> {
    let mut found: Option<(String, PathBuf)> = None;
    for p in plan {
        let Some(name) = softspin_engine::config::image_profile(&load_image(&p.image)?) else {
            continue;
        };
        match &found {
            Some((f, img)) if *f != name => bail!(
                "{} was built for profile `{f}` and {} for `{name}`: build them for one profile",
                img.display(),
                p.image.display()
            ),
            Some(_) => {}
            None => found = Some((name, p.image.clone())),
        }
    }
    Ok(found)
}

/// The NIC and ECTXs of a run (`plan`), on the profile the images record
/// when no --profile or --config names one, else on `default_profile`; an
/// error when --profile names another than the images' (their memory map
/// is that profile's: their handlers would not run). Also the recorded
/// profile and the image that records it.
#[allow(clippy::type_complexity)]
pub fn plan_for_images(
    a: &EctxArgs,
    default_profile: &str,
) -> anyhow::Result<(NicConfig, Vec<PlannedEctx>, Option<(String, PathBuf)>)> {
    let (mut cfg, mut planned) = plan(a, default_profile)?;
    let recorded = recorded_profile(&planned)?;
    if let Some((built, img)) = &recorded {
        match (&a.profile, &a.config) {
            (None, None) => (cfg, planned) = plan(a, built)?,
            (Some(p), _) if p != built => bail!(
                "{} was built for profile `{built}` (softspin build --profile {built}); \
                 run it without --profile or with --profile {built}, or rebuild it with --profile {p}",
                img.display()
            ),
            _ => {}
        }
    }
    Ok((cfg, planned, recorded))
}

/// The NIC, ECTXs and frame kind of a run: the profile and frame kind the
/// images record when the flags name none, an error naming the flags when
/// they contradict it (its handlers could not parse the frames they get).
fn plan_sim(a: &SimArgs) -> anyhow::Result<(NicConfig, Vec<PlannedEctx>, FrameKind)> {
    let (cfg, planned, recorded) = plan_for_images(&a.ectx, "pspin")?;
    let Some((built, img)) = recorded else {
        // A configuration's frames are its base profile's.
        let frame = a.frame.map_or_else(
            || FrameKind::of_profile(&cfg.profile).unwrap_or(FrameKind::Ip),
            Into::into,
        );
        return Ok((cfg, planned, frame));
    };
    let img = img.display();
    let want = FrameKind::of_profile(&built).expect("image_profile returns known profiles");
    let (got, flag) = match (a.frame, &a.pcap) {
        (_, Some(_)) => (FrameKind::Eth, "--pcap (Ethernet frames)".to_string()),
        (Some(f), None) => (f.into(), format!("--frame {}", frame_flag(f.into()))),
        (None, None) => (want, String::new()),
    };
    if got != want {
        bail!(
            "{img} was built for profile `{built}`, whose handlers take {want} frames, \
             but {flag} gives them {got} frames they cannot parse: use --frame {} \
             (or drop --frame), or rebuild it with softspin build --profile {}",
            frame_flag(want),
            ["pspin", "fpspin"]
                .into_iter()
                .find(|p| FrameKind::of_profile(p) == Some(got))
                .unwrap_or("pspin")
        );
    }
    Ok((cfg, planned, got))
}

/// The `--frame` value of a frame kind.
fn frame_flag(k: FrameKind) -> &'static str {
    match k {
        FrameKind::Ip => "ip",
        FrameKind::Eth => "eth",
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PayloadArg {
    Zero,
    Seq,
    Random,
}

/// The NIC configuration from --profile / --config (PsPIN by default).
pub fn nic_config(profile: Option<&str>, config: Option<&Path>) -> anyhow::Result<NicConfig> {
    if let Some(p) = config {
        let text = softspin_input::read_text(p, softspin_input::TEXT_CAP, "NIC configuration")?;
        return Ok(NicConfig::from_toml(&text, &p.display().to_string())?);
    }
    match profile {
        None => Ok(NicConfig::pspin()),
        Some(p) => NicConfig::profile(p).with_context(|| {
            format!(
                "unknown profile `{p}` (known: {})",
                NicConfig::PROFILES.join(", ")
            )
        }),
    }
}

/// One `[[ectx]]` table of a scenario file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioEctx {
    name: String,
    image: PathBuf,
    hh: Option<String>,
    ph: Option<String>,
    th: Option<String>,
    udp_dst_port: Option<u16>,
    /// Live NIC only: `--match` specs selecting this ECTX's frames.
    #[serde(rename = "match", default)]
    matches: Vec<String>,
    l1_copy: Option<u32>,
    #[serde(default)]
    scratchpad: Vec<u32>,
    handler_mem_size: Option<u32>,
    host_size: Option<u64>,
    watchdog: Option<u64>,
    timeout_ns: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    ectx: Vec<ScenarioEctx>,
}

pub(crate) fn load_image(p: &Path) -> anyhow::Result<ElfImage> {
    ElfImage::load(p).map_err(|e| named(p, e))
}

fn load_nic_image(nic: &Nic, p: &Path) -> anyhow::Result<Image> {
    nic.load_image(p).map_err(|e| named(p, e))
}

/// An error about file `p`, naming it unless the error already does.
fn named(p: &Path, e: impl std::error::Error + Send + Sync + 'static) -> anyhow::Error {
    let name = p.display().to_string();
    let mentions = e.to_string().contains(&name);
    let e = anyhow::Error::new(e);
    if mentions {
        e
    } else {
        e.context(name)
    }
}

/// One ECTX to install: its image, options, host window size (0: none)
/// and, for the live NIC, its `--match` specs.
pub struct PlannedEctx {
    pub image: PathBuf,
    pub opts: EctxOptions,
    pub host_size: u64,
    pub matches: Vec<String>,
    /// Handler memory in a region of its own after the image's data
    /// (PsPIN's layout, `EctxOptions::handler_mem_addr`).
    pub own_handler_mem: bool,
}

/// The NIC configuration and the ECTXs `--image`/`--scenario` describe.
pub fn plan(a: &EctxArgs, default_profile: &str) -> anyhow::Result<(NicConfig, Vec<PlannedEctx>)> {
    let mut cfg = nic_config(
        Some(a.profile.as_deref().unwrap_or(default_profile)),
        a.config.as_deref(),
    )?;
    if let Some(n) = a.stack_size {
        // Validated with the rest of the configuration by Nic::with_config.
        cfg.hpu_stack_size = n;
    }
    let mut plan = Vec::new();
    if let Some(path) = &a.scenario {
        let text = softspin_input::read_text(path, softspin_input::TEXT_CAP, "scenario")?;
        let sc: Scenario = toml::from_str(&text).with_context(|| path.display().to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for e in sc.ectx {
            let opts = EctxOptions {
                name: Some(e.name),
                hh: e.hh,
                ph: e.ph,
                th: e.th,
                handler_mem_size: e.handler_mem_size,
                handler_mem_addr: None,
                l1_copy: e.l1_copy,
                scratchpad: e.scratchpad,
                watchdog: Some(e.watchdog.unwrap_or(1_000_000)),
                msg_timeout_ns: Some(e.timeout_ns.unwrap_or(1_000_000)),
                udp_dst_port: e.udp_dst_port,
                host_window: None,
                rules: Vec::new(),
                rma: None,
            };
            let host_size = e.host_size.unwrap_or(1 << 20);
            plan.push(PlannedEctx {
                image: dir.join(&e.image),
                opts,
                host_size,
                matches: e.matches,
                own_handler_mem: false,
            });
        }
    } else {
        let path = a
            .image
            .as_ref()
            .expect("clap requires --image without --scenario");
        if a.hh.is_none() && a.ph.is_none() && a.th.is_none() {
            bail!(
                "give at least one of --hh, --ph, --th (handler symbols of {})",
                path.display()
            );
        }
        use softspin_host::gdriver as gd;
        let (scratch, host, hmem) = match a.gdriver {
            true => (
                gd::SCRATCHPAD_SIZE / gd::EC_MAX,
                gd::HOST_SIZE / gd::EC_MAX as u64,
                Some(gd::L2_SIZE / gd::EC_MAX),
            ),
            false => (0, 1 << 20, None),
        };
        let opts = EctxOptions {
            name: Some(
                path.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            ),
            hh: a.hh.clone(),
            ph: a.ph.clone(),
            th: a.th.clone(),
            l1_copy: a.l1_copy,
            scratchpad: vec![a.scratchpad.unwrap_or(scratch); cfg.clusters as usize],
            handler_mem_size: a.handler_mem.or(hmem),
            watchdog: Some(a.watchdog),
            msg_timeout_ns: Some(a.timeout_ns),
            ..Default::default()
        };
        let host_size = a.host_size.unwrap_or(host);
        plan.push(PlannedEctx {
            image: path.clone(),
            opts,
            host_size,
            matches: Vec::new(),
            own_handler_mem: a.gdriver,
        });
    }
    Ok((cfg, plan))
}

/// Load, install and activate the planned ECTXs, in order.
pub fn install_all(nic: &mut Nic, plan: Vec<PlannedEctx>) -> anyhow::Result<Vec<Ectx>> {
    install_all_with(nic, plan, &mut |nic, size| Ok(nic.host_window(size)?))
}

/// [`install_all`], each host window made by `window(nic, size)` (the
/// live NIC's `--host-shm` lends slices of a shared file).
pub fn install_all_with(
    nic: &mut Nic,
    plan: Vec<PlannedEctx>,
    window: &mut dyn FnMut(&mut Nic, usize) -> anyhow::Result<HostWindow>,
) -> anyhow::Result<Vec<Ectx>> {
    let mut ectxs = Vec::new();
    for PlannedEctx {
        image,
        mut opts,
        host_size,
        own_handler_mem,
        ..
    } in plan
    {
        let path = image;
        let image = load_nic_image(nic, &path)?;
        if own_handler_mem {
            opts.handler_mem_addr = Some(image.data_end().next_multiple_of(64));
        }
        // Size 0: the ECTX gets no host window.
        if host_size > 0 {
            let size = usize::try_from(host_size)
                .context("host window size does not fit this machine's address space")?;
            opts.host_window = Some(window(nic, size)?);
        }
        let e = nic.install(&image, opts).map_err(|e| named(&path, e))?;
        nic.activate(e)?;
        ectxs.push(e);
    }
    Ok(ectxs)
}

pub fn main(a: SimArgs) -> anyhow::Result<ExitCode> {
    let (cfg, mut plan, frame) = plan_sim(&a)?;
    plan_rma(a.rma, a.nodes.rank, &mut plan)?;
    if let Some(p) = plan.iter().find(|p| !p.matches.is_empty()) {
        bail!(
            "ECTX `{}`: `match` selects frames on a live NIC (softspin nic); in sim, ECTXs take packets by udp_dst_port",
            p.opts.name.as_deref().unwrap_or_default()
        );
    }
    let nodes = a.nodes.load()?;
    let mut nic = Nic::with_config(cfg.clone())?;
    a.nodes.apply(&mut nic, nodes.as_ref())?;
    // Nobody answers notifications: host waits run out within the run.
    nic.pause_for_host(false);
    nic.keep_outputs(a.pcap_out.is_some() || a.stdout);
    let images: Vec<PathBuf> = plan.iter().map(|p| p.image.clone()).collect();
    let ectxs = install_all(&mut nic, plan)?;

    let until_ps = a
        .until_ns
        .map(|n| units::until_ns("--until-ns", n))
        .transpose()?;
    let rate = a.rate.unwrap_or(cfg.line_rate_gbps);
    if !(Gbps(rate).is_valid() || rate == f64::INFINITY) {
        bail!(
            "--rate {rate}: must be in {}..={} Gbit/s, or inf",
            Gbps::MIN,
            Gbps::MAX
        );
    }
    let total = if let Some(t) = &a.trace {
        feed(&mut nic, Box::new(TraceSource::open(t, frame)?))?
    } else if let Some(p) = &a.pcap {
        feed(&mut nic, Box::new(PcapSource::open(p, a.rate)?))?
    } else {
        // The limit is the NIC's packet slot, not the frame format's 65535.
        if a.size > cfg.pkt_slot_size as usize {
            bail!(
                "--size {}: a packet of {} bytes exceeds the {}-byte packet buffer slot of profile `{}` (pkt_slot_size)",
                a.size,
                a.size,
                cfg.pkt_slot_size,
                cfg.profile
            );
        }
        let g = GenConfig {
            messages: a.messages.unwrap_or(1),
            packets_per_message: a.packets,
            size: a.size,
            rate_gbps: rate,
            concurrent: a.concurrent,
            frame,
            payload: match a.payload {
                PayloadArg::Zero => Payload::Zero,
                PayloadArg::Seq => Payload::Sequence,
                PayloadArg::Random => Payload::Random { seed: a.seed },
            },
            udp_src_port: a.src_port,
            udp_dst_port: a.dst_port,
            src_ip: a.src_ip.octets(),
            dst_ip: a.dst_ip.octets(),
            ..GenConfig::default()
        };
        feed(&mut nic, Box::new(Generator::new(g)?))?
    };
    if a.timeline.is_some() {
        nic.enable_timeline();
    }
    // Under gdb the engine steps the interpreter (the JIT is not entered).
    let jit = a.jit.resolve()?.filter(|_| a.gdb.is_none());
    if let Some(after) = jit {
        enable_jit(&mut nic, after);
    }

    if let Some(addr) = &a.gdb {
        let mut breaks = std::collections::BTreeSet::new();
        for name in &a.gdb_break {
            let mut found = None;
            for p in &images {
                if let Ok(pc) = load_image(p)?.symbol(name) {
                    found = Some(pc);
                }
            }
            let pc = found.with_context(|| {
                format!("--gdb-break {name}: no such symbol in the ECTXs' images")
            })?;
            breaks.insert(pc);
        }
        let hpus = cfg.clusters as usize * cfg.hpus_per_cluster as usize;
        nic.attach_debugger(Box::new(crate::gdb::GdbServer::accept(addr, hpus, breaks)?));
    }

    let bar = if a.quiet || a.json || a.gdb.is_some() {
        indicatif::ProgressBar::hidden()
    } else {
        progress_bar(total)
    };
    // Records and output are written while the run goes (bounded memory).
    let mut sinks = crate::results::Sinks::new(&mut nic, a.records.as_deref(), a.stdout)?;
    let mut sink_err = None;
    nic.run_with(until_ps.map(|p| p.0), |v| {
        bar.set_position(v.packets_done());
        if sink_err.is_none() {
            sink_err = sinks.drain(v, false).err();
        }
    })?;
    bar.finish_and_clear();
    if let Some(e) = sink_err {
        return Err(e);
    }
    sinks.drain(&mut nic.view(), true)?;
    if let Some(p) = &a.dump_host {
        crate::results::dump_host(&mut nic, &ectxs, p)?;
    }
    if let Some(p) = &a.dump_handler_mem {
        crate::results::dump_handler_mem(&nic, &ectxs, p)?;
    }

    if nic.debug_killed() {
        bail!("the run was killed from gdb (its results are incomplete; `detach` lets it finish)");
    }
    let report = nic.report();
    if let Some(p) = &a.timeline {
        let doc = serde_json::json!({ "traceEvents": nic.timeline(), "displayTimeUnit": "ns" });
        std::fs::write(p, serde_json::to_vec(&doc)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &a.pcap_out {
        let pkts: Vec<(u64, Vec<u8>)> = nic.kept_outbound().map(|(t, f)| (t, f.to_vec())).collect();
        softspin_engine::traffic::write_pcap(p, frame, &pkts)?;
    }
    if a.json {
        let mut j = serde_json::to_value(&report)?;
        j["counters"] = crate::results::counters_json(&nic, &ectxs)?;
        j["hpu_engine"] = crate::jit::engine_json(&nic, jit);
        println!("{}", serde_json::to_string(&j)?);
    } else {
        print!("{}", report.text());
        print!("{}", crate::results::counters_text(&nic, &ectxs)?);
    }
    let (status, why) = outcome(&report, total);
    if let Some(mut d) = nic.detach_debugger() {
        d.finished(status as u8);
    }
    if status != Status::Ok {
        eprintln!("softspin: sim: {why} (exit status {})", status as u8);
    }
    Ok(status.into())
}

/// The exit status of a finished run and, if not 0, why (the first that
/// applies in the order of `exit::Status`).
pub(crate) fn outcome(r: &Report, total: Option<u64>) -> (Status, String) {
    let errors: u64 = r.errors.iter().map(|e| e.total).sum();
    // Message timeouts are recorded as errors too; count them apart.
    let handler_errors = errors.saturating_sub(r.message_timeouts);
    let lost = r.drops + r.unmatched;
    let arrived = total.unwrap_or(r.packets_in).max(r.packets_in);
    if handler_errors > 0 {
        (
            Status::HandlerError,
            format!("{handler_errors} handler errors"),
        )
    } else if r.message_timeouts > 0 {
        (
            Status::MessageTimeout,
            format!("{} message timeouts", r.message_timeouts),
        )
    } else if let Some(f) = r.rma.as_ref().and_then(|m| m.failed.first()) {
        // A node that never acknowledged is a transfer that did not finish.
        let ranks: Vec<String> = r
            .rma
            .iter()
            .flat_map(|m| &m.failed)
            .map(|f| f.rank.to_string())
            .collect();
        (
            Status::MessageTimeout,
            format!(
                "RMA transport: node(s) {} declared failed (no acknowledgement; {} packets to rank {} abandoned)",
                ranks.join(", "),
                f.abandoned,
                f.rank
            ),
        )
    } else if lost > 0 {
        (
            Status::Dropped,
            format!(
                "{} packets dropped, {} matched no ECTX",
                r.drops, r.unmatched
            ),
        )
    } else if let Some(d) = r.output_dropped.first() {
        // Lost handler output is lost data too: the run is not clean.
        let bytes: u64 = r.output_dropped.iter().map(|d| d.bytes).sum();
        (
            Status::Dropped,
            format!("{bytes} bytes of handler output dropped ({})", d.cause),
        )
    } else if r.packets < arrived {
        (
            Status::Unprocessed,
            format!("{} of {arrived} packets processed", r.packets),
        )
    } else {
        (Status::Ok, String::new())
    }
}

/// A zeroed host buffer; an allocation the machine cannot give is an error,
/// not an abort. Zeroed pages come from the OS lazily (calloc), so a large
/// window costs memory only where handlers write.
pub(crate) fn zeroed(size: u64) -> anyhow::Result<Vec<u8>> {
    let n = usize::try_from(size)
        .context("host window size does not fit this machine's address space")?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n)?;
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        bail!("cannot allocate a host window of {size} bytes (--host-size / scenario host_size)");
    }
    // SAFETY: `p` was allocated by the global allocator with the layout of
    // `n` bytes, all initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(p, n, n) })
}

/// Handlers through the JIT, compiling a region at its entry's `after`-th
/// use (sim, nic; `JitArgs::resolve` refused it already in a build without).
pub fn enable_jit(nic: &mut Nic, after: u32) {
    #[cfg(feature = "jit")]
    nic.enable_jit(after);
    #[cfg(not(feature = "jit"))]
    let _ = (nic, after);
}

/// Hand the NIC its traffic; returns how many packets it will bring, if known.
fn feed(nic: &mut Nic, src: Box<dyn Source>) -> anyhow::Result<Option<u64>> {
    let total = src.len_hint();
    nic.feed(src)?;
    Ok(total)
}

/// Packets processed, with an ETA when the traffic's length is known
/// (drawn only on a terminal: indicatif's default target is a hidden one
/// otherwise).
fn progress_bar(total: Option<u64>) -> indicatif::ProgressBar {
    let (bar, template) = match total {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{spinner} simulating [{bar:40}] {pos}/{len} packets ({elapsed}, ETA {eta})",
        ),
        None => (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} simulating: {pos} packets ({elapsed})",
        ),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
