//! `softspin sim`: run handler images on the simulated NIC with traffic and
//! print PsPIN-style statistics.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde::Deserialize;
use softspin_engine::ectx::DEFAULT_HOST_BASE;
use softspin_engine::traffic::{FrameKind, GenConfig, Generator, Payload, PcapSource, Source, TraceSource};
use softspin_engine::{EctxSpec, Engine, MatchRule, NicConfig};
use softspin_hpu::ElfImage;

#[derive(clap::Args)]
pub struct SimArgs {
    /// Handler image for a single ECTX given on the command line.
    #[arg(long, required_unless_present = "scenario")]
    image: Option<PathBuf>,
    /// Header, payload and completion handler symbols.
    #[arg(long)]
    hh: Option<String>,
    #[arg(long)]
    ph: Option<String>,
    #[arg(long)]
    th: Option<String>,
    /// Several ECTXs from a TOML scenario file (`[[ectx]]` tables).
    #[arg(long, conflicts_with = "image")]
    scenario: Option<PathBuf>,
    /// NIC profile.
    #[arg(long, value_name = "pspin|fpspin", conflicts_with = "config")]
    profile: Option<String>,
    /// NIC configuration file (TOML; `profile = ...` picks the base).
    #[arg(long)]
    config: Option<PathBuf>,

    // -- ECTX settings for --image --
    /// Bytes of each packet copied to L1 before the handler runs (default: all).
    #[arg(long)]
    l1_copy: Option<u32>,
    /// Scratchpad bytes per cluster.
    #[arg(long, default_value_t = 0)]
    scratchpad: u32,
    /// Host-memory window size in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    host_size: u64,
    /// Watchdog: instruction budget per handler invocation.
    #[arg(long, default_value_t = 1_000_000)]
    watchdog: u64,
    /// Message timeout in ns (0: never).
    #[arg(long, default_value_t = 1_000_000)]
    timeout_ns: u64,

    // -- traffic --
    /// Generator: messages, packets per message, packet size.
    #[arg(long, conflicts_with_all = ["trace", "pcap"])]
    messages: Option<u32>,
    #[arg(long, default_value_t = 1)]
    packets: u32,
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Line rate in Gbit/s (default: the profile's).
    #[arg(long)]
    rate: Option<f64>,
    /// Frames start at the IP header (PsPIN) or the Ethernet header (FPsPIN).
    #[arg(long, value_enum, default_value = "ip")]
    frame: Frame,
    /// Messages in flight at once (their packets interleave).
    #[arg(long, default_value_t = 1)]
    concurrent: u32,
    #[arg(long, value_enum, default_value = "seq")]
    payload: PayloadArg,
    /// PsPIN-style text trace (`src dst size ipg msgid is_last` per line).
    #[arg(long, conflicts_with = "pcap")]
    trace: Option<PathBuf>,
    /// pcap file of Ethernet frames.
    #[arg(long)]
    pcap: Option<PathBuf>,

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
    /// Print each HPU's printf output.
    #[arg(long)]
    stdout: bool,
    /// Stop at this virtual time (ns) even if traffic remains.
    #[arg(long)]
    until_ns: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Frame {
    Ip,
    Eth,
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
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(NicConfig::from_toml(&text, &p.display().to_string())?);
    }
    match profile {
        None => Ok(NicConfig::pspin()),
        Some(p) => NicConfig::profile(p).with_context(|| format!("unknown profile `{p}` (known: pspin, fpspin)")),
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

fn load_image(p: &Path) -> anyhow::Result<ElfImage> {
    ElfImage::load(p).with_context(|| p.display().to_string())
}

pub fn main(a: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = nic_config(a.profile.as_deref(), a.config.as_deref())?;
    let mut engine = Engine::new(cfg.clone())?;
    let mut specs = Vec::new();
    if let Some(path) = &a.scenario {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let sc: Scenario = toml::from_str(&text).with_context(|| path.display().to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for (k, e) in sc.ectx.into_iter().enumerate() {
            let mut s = EctxSpec::new(&e.name, load_image(&dir.join(&e.image))?);
            s.hh = e.hh;
            s.ph = e.ph;
            s.th = e.th;
            s.matching = e.udp_dst_port.map(MatchRule::UdpDstPort).unwrap_or_default();
            s.l1_copy = e.l1_copy.unwrap_or(u32::MAX);
            s.scratchpad = e.scratchpad;
            if let Some(sz) = e.handler_mem_size {
                let (_, data) = image_data(&s.image);
                s.handler_mem = Some((data.unwrap_or(softspin_hpu::abi::L2_HANDLER_BASE), sz));
            }
            s.host_window = (DEFAULT_HOST_BASE + ((k as u64) << 32), e.host_size.unwrap_or(1 << 20));
            s.watchdog = e.watchdog.unwrap_or(1_000_000);
            s.msg_timeout_ns = e.timeout_ns.unwrap_or(1_000_000);
            specs.push(s);
        }
    } else {
        let path = a.image.as_ref().unwrap();
        let mut s = EctxSpec::new(&path.file_stem().unwrap_or_default().to_string_lossy(), load_image(path)?);
        s.hh = a.hh.clone();
        s.ph = a.ph.clone();
        s.th = a.th.clone();
        if s.hh.is_none() && s.ph.is_none() && s.th.is_none() {
            bail!("give at least one of --hh, --ph, --th (handler symbols of {})", path.display());
        }
        s.l1_copy = a.l1_copy.unwrap_or(u32::MAX);
        s.scratchpad = vec![a.scratchpad; cfg.clusters as usize];
        s.host_window = (DEFAULT_HOST_BASE, a.host_size);
        s.watchdog = a.watchdog;
        s.msg_timeout_ns = a.timeout_ns;
        specs.push(s);
    }
    for s in specs {
        let (base, size) = s.host_window;
        let id = engine.install(s)?;
        engine.add_host_region(base, size as usize).map_err(anyhow::Error::msg)?;
        engine.activate(id)?;
    }

    let rate = a.rate.unwrap_or(cfg.line_rate_gbps);
    let frame = match a.frame {
        Frame::Ip => FrameKind::Ip,
        Frame::Eth => FrameKind::Eth,
    };
    let source: Box<dyn Source> = if let Some(t) = &a.trace {
        Box::new(TraceSource::open(t, frame)?)
    } else if let Some(p) = &a.pcap {
        Box::new(PcapSource::open(p, a.rate)?)
    } else {
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
                PayloadArg::Random => Payload::Random { seed: 1 },
            },
            ..GenConfig::default()
        };
        Box::new(Generator::new(g)?)
    };
    let total = source.len_hint();
    if a.timeline.is_some() {
        engine.enable_timeline();
    }
    engine.keep_outputs(a.pcap_out.is_some() || a.stdout);
    engine.set_source(source)?;

    let bar = if a.quiet || a.json { indicatif::ProgressBar::hidden() } else { progress_bar(total) };
    engine.run(a.until_ns.map(|n| n * 1000), |done| bar.set_position(done))?;
    bar.finish_and_clear();

    let report = engine.report();
    if a.stdout {
        for h in 0..engine.hpu_count() {
            let out = engine.hpu_stdout(h);
            if !out.is_empty() {
                for line in String::from_utf8_lossy(out).lines() {
                    eprintln!("[hpu {h:2}] {line}");
                }
            }
        }
    }
    if let Some(p) = &a.timeline {
        let doc = serde_json::json!({ "traceEvents": engine.timeline(), "displayTimeUnit": "ns" });
        std::fs::write(p, serde_json::to_vec(&doc)?).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &a.pcap_out {
        let pkts: Vec<(u64, Vec<u8>)> = engine.outbound().iter().map(|o| (o.time_ps, o.frame.clone())).collect();
        softspin_engine::traffic::write_pcap(p, frame, &pkts)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}

fn image_data(img: &ElfImage) -> (u32, Option<u32>) {
    let d = img.segments.iter().filter(|s| !s.perm.has(softspin_hpu::Perm::X)).map(|s| s.vaddr).min();
    (0, d)
}

fn progress_bar(total: Option<u64>) -> indicatif::ProgressBar {
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} simulating [{bar:40}] {pos}/{len} packets ({elapsed})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
