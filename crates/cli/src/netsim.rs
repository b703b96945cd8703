//! `softspin netsim`: a network of simulated sPIN NICs on SimGrid (issue
//! 29, docs/scale.md): every node's NIC runs the live use case's handler
//! binary, SimGrid's fat tree carries the packets.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use anyhow::{bail, Context};
use softspin_netsim::trace::{self, Matching, Program, Reference};
use softspin_netsim::workload::accumulate::Accumulate;
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::kvstore::KvStore;
use softspin_netsim::workload::pingpong::PingPong;
use softspin_netsim::workload::raid::{Mode as RaidMode, Raid};
use softspin_netsim::workload::trace::Replay;
use softspin_netsim::workload::Workload;
use softspin_netsim::{NetParams, NicKind, NodeStats, Outcome, RunSpec};

use crate::exit;

#[derive(clap::Args)]
#[command(after_help = NETSIM_HELP)]
pub struct NetsimArgs {
    /// Nodes in the network (each a host and a NIC); trace: default the
    /// trace's ranks.
    #[arg(long, required_unless_present = "trace")]
    nodes: Option<u32>,
    /// What runs: broadcast, pingpong, accumulate (these two between node 0
    /// and the last node), raid, kvstore, trace (an MPI trace replayed).
    #[arg(long)]
    workload: String,
    /// Message size in bytes (not for trace: the trace gives them).
    #[arg(long, required_unless_present = "trace")]
    size: Option<usize>,
    /// trace: the SMPI time-independent trace (its index file, a directory
    /// of `*.txt` action files, or one file of every rank's actions).
    #[arg(long, value_name = "PATH", required_if_eq("workload", "trace"))]
    trace: Option<PathBuf>,
    /// broadcast: streaming (payload handlers forward each packet), store
    /// (the completion handler forwards the whole message), rdma (the host
    /// CPU forwards once it landed) or portals (triggered puts forward it);
    /// pingpong: device, host or stream (examples/cluster/pingpong);
    /// accumulate: streaming (its payload handlers work per packet); raid:
    /// spin (the NICs update the parity) or rdma (the hosts do); kvstore:
    /// spin; trace: nic (the matching handlers match) or host (the host
    /// CPUs do).
    #[arg(long)]
    mode: String,
    /// Where the NIC sits: discrete (PCIe) or integrated.
    #[arg(long, default_value = "discrete")]
    nic: String,
    /// Parameters (TOML, the sc17 profile's fields) overriding sc17's.
    #[arg(long, value_name = "FILE")]
    params: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Flip one bit of the reference the nodes are checked against (the
    /// run must then report `verified: false` and exit 1).
    #[arg(long)]
    sabotage: bool,
    /// Seed of the message's bytes.
    #[arg(long, default_value_t = 4)]
    seed: u64,
    /// Simulated time after which the run stops, in ms.
    #[arg(long, default_value_t = 100.0)]
    limit_ms: f64,
}

const NETSIM_HELP: &str = "\
Exit status: 0 verified (every node's host memory holds the reference's
bytes, no handler error, no drop); 1 not verified, incomplete, or bad input;
3 a handler error; 5 a drop.";

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// min / mean / max of a per-node value over the nodes that ran an engine.
fn summary(v: &[&NodeStats], f: impl Fn(&NodeStats) -> u64) -> serde_json::Value {
    if v.is_empty() {
        return serde_json::json!(null);
    }
    let xs: Vec<u64> = v.iter().map(|s| f(s)).collect();
    let sum: u64 = xs.iter().sum();
    serde_json::json!({
        "min": xs.iter().min(),
        "mean": sum as f64 / xs.len() as f64,
        "max": xs.iter().max(),
    })
}

pub fn main(a: NetsimArgs) -> anyhow::Result<ExitCode> {
    let params = match &a.params {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("--params {}", p.display()))?;
            NetParams::from_toml(&text).with_context(|| format!("--params {}", p.display()))?
        }
        None => NetParams::sc17(),
    };
    let nic: NicKind = a.nic.parse().map_err(|e| anyhow::anyhow!("--nic: {e}"))?;
    let mut trace = match (&a.trace, a.workload.as_str()) {
        (Some(t), "trace") => Some(load_trace(t)?),
        (Some(_), w) => bail!("--trace is for --workload trace, not {w}"),
        (None, _) => None,
    };
    let size = match (a.size, &trace) {
        (Some(s), None) => s,
        (Some(s), Some(_)) => bail!("--size {s}: a trace gives its messages' sizes"),
        (None, Some(_)) => 0,
        (None, None) => bail!("--size is needed"),
    };
    let nodes = match (a.nodes, &trace) {
        (Some(n), Some((p, _))) if (n as usize) < p.len() => bail!(
            "--nodes {n}: the trace has {} ranks, one node each",
            p.len()
        ),
        (Some(n), _) => n,
        (None, Some((p, _))) => p.len() as u32,
        (None, None) => bail!("--nodes is needed"),
    };
    if nodes < 2 {
        bail!("--nodes {nodes}: at least 2");
    }
    if !(a.limit_ms.is_finite() && a.limit_ms > 0.0) {
        bail!("--limit-ms {}: a positive number", a.limit_ms);
    }
    let cfg = softspin_netsim::sim::nic_config(&params, nic);
    let dir = std::env::temp_dir().join(format!("softspin-netsim-build-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    // The images are built into `dir`, removed whatever the outcome.
    let mut replay: Option<Rc<Replay>> = None;
    let workload = (|| -> anyhow::Result<Result<Box<dyn Workload>, String>> {
        Ok(match a.workload.as_str() {
            "trace" => {
                let matching = match a.mode.as_str() {
                    "nic" => Matching::Nic,
                    "host" => Matching::Host,
                    m => bail!("--mode {m}: trace runs `nic` (matching on the NICs) or `host` (on the host CPUs)"),
                };
                let (progs, refr) = trace.take().context("loaded above")?;
                match Replay::new(
                    progs, refr, matching, &params, &cfg, &dir, a.seed, a.sabotage,
                ) {
                    Ok(w) => {
                        let w = Rc::new(w);
                        replay = Some(w.clone());
                        Ok(Box::new(Shared(w)) as Box<dyn Workload>)
                    }
                    Err(e) => Err(e),
                }
            }
            "broadcast" => {
                let mode: Mode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                Broadcast::new(nodes, size, mode, &cfg, &dir, a.seed, a.sabotage)
                    .map(|w| Box::new(w) as Box<dyn Workload>)
            }
            "pingpong" => {
                let mode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                PingPong::new(nodes, size, mode, &cfg, &dir, a.seed, a.sabotage)
                    .map(|w| Box::new(w) as Box<dyn Workload>)
            }
            "accumulate" => {
                if !matches!(a.mode.as_str(), "streaming" | "stream") {
                    bail!("--mode {}: accumulate runs `streaming` (its payload handlers multiply per packet)", a.mode);
                }
                Accumulate::new(nodes, size, &cfg, &dir, a.seed, a.sabotage)
                    .map(|w| Box::new(w) as Box<dyn Workload>)
            }
            "raid" => {
                let mode: RaidMode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                Raid::new(nodes, size, mode, &cfg, &params, &dir, a.seed, a.sabotage)
                    .map(|w| Box::new(w) as Box<dyn Workload>)
            }
            "kvstore" => {
                if a.mode != "spin" {
                    bail!("--mode {}: kvstore runs `spin`", a.mode);
                }
                KvStore::new(nodes, size, &cfg, &dir, a.seed, a.sabotage)
                    .map(|w| Box::new(w) as Box<dyn Workload>)
            }
            w => {
                bail!("--workload {w}: unknown (known: broadcast, pingpong, accumulate, raid, kvstore, trace)")
            }
        })
    })();
    std::fs::remove_dir_all(&dir).ok();
    let workload = workload?.map_err(|e| anyhow::anyhow!(e))?;
    let spec = RunSpec {
        params: params.clone(),
        nic,
        nodes,
        limit_s: a.limit_ms * 1e-3,
    };
    let out = softspin_netsim::run(spec, workload).map_err(|e| anyhow::anyhow!(e))?;
    let rss = peak_rss_kib();
    let extra = match &replay {
        Some(r) => Some(trace_report(r, nic)?),
        None => None,
    };
    report(&a, size, &params, &out, rss, extra);
    let st = status(&out);
    if st != exit::Status::Ok {
        eprintln!("softspin: netsim: {}", cause(&a, &out, st));
    }
    Ok(ExitCode::from(st as u8))
}

fn status(o: &Outcome) -> exit::Status {
    let errors: u64 = o.per_node.iter().map(|s| s.errors).sum();
    let drops: u64 = o.per_node.iter().map(|s| s.drops).sum();
    if errors > 0 {
        exit::Status::HandlerError
    } else if drops > 0 {
        exit::Status::Dropped
    } else if !o.verified {
        exit::Status::Failure
    } else {
        exit::Status::Ok
    }
}

/// The exit status's reason, in words.
fn cause(a: &NetsimArgs, o: &Outcome, st: exit::Status) -> String {
    let sum = |f: fn(&NodeStats) -> u64| o.per_node.iter().map(f).sum::<u64>();
    match st {
        exit::Status::HandlerError => format!(
            "{} handler errors{}",
            sum(|s| s.errors),
            o.error_samples
                .first()
                .map_or(String::new(), |e| format!(" (first: {e})"))
        ),
        exit::Status::Dropped => format!("{} packets dropped", sum(|s| s.drops)),
        _ if !o.completed => {
            let done = o.per_node.iter().filter(|s| s.done_ps.is_some()).count();
            match o.ended {
                "limit" => format!(
                    "not complete: {done} nodes done by --limit-ms {}",
                    a.limit_ms
                ),
                _ => format!("not complete: {done} nodes done, then nothing left to happen"),
            }
        }
        _ => {
            let bad = o.per_node.iter().filter(|s| !s.verified).count();
            format!("not verified: {bad} nodes' host memory differs from the reference")
        }
    }
}

/// A trace's programs and reference; errors name the file and line.
fn load_trace(path: &Path) -> anyhow::Result<(Vec<Program>, Reference)> {
    let t = trace::load(path).map_err(|e| anyhow::anyhow!("--trace {e}"))?;
    let progs = trace::programs(&t).map_err(|e| anyhow::anyhow!("--trace {e}"))?;
    let eager = trace::mt::Mt::new()
        .map_err(|e| anyhow::anyhow!(e))?
        .eager_max;
    let refr = trace::reference(&progs, eager).map_err(|e| anyhow::anyhow!("--trace {e}"))?;
    Ok((progs, refr))
}

/// The replay's own report: message counts, the receives checked and how
/// they matched, the LogGP model's completion for the same trace.
fn trace_report(r: &Replay, nic: NicKind) -> anyhow::Result<serde_json::Value> {
    let model = r.model(nic).map_err(|e| anyhow::anyhow!(e))?;
    let res = r.results();
    let sum = |f: fn(&softspin_netsim::workload::trace::RankResult) -> u64| {
        res.iter().map(f).sum::<u64>()
    };
    let errors: Vec<&String> = res.iter().flat_map(|x| &x.errors).take(8).collect();
    Ok(serde_json::json!({
        "counts": r.counts(),
        "received": sum(|x| x.received),
        "matched_posted": sum(|x| x.posted),
        "matched_unexpected": sum(|x| x.unexpected),
        "ranks_finished": res.iter().filter(|x| x.finished).count(),
        "check_errors": errors,
        "model_completion_ns": model.completion_ns,
    }))
}

/// The trace workload, shared with the report (`run` takes its box).
struct Shared(Rc<Replay>);

impl Workload for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn program(&self) -> &softspin_netsim::workload::NicProgram {
        self.0.program()
    }
    fn host_sends(&self, k: u32) -> Vec<softspin_netsim::workload::HostSend> {
        self.0.host_sends(k)
    }
    fn setup_engine(
        &self,
        k: u32,
        e: &mut softspin_engine::Engine,
        id: softspin_engine::EctxId,
    ) -> Result<(), String> {
        self.0.setup_engine(k, e, id)
    }
    fn host_receives(&self, k: u32, frame: &[u8]) -> Option<bool> {
        self.0.host_receives(k, frame)
    }
    fn host_program(&self, k: u32) -> Option<Box<dyn softspin_netsim::workload::HostProgram>> {
        self.0.host_program(k)
    }
    fn expected_done(&self) -> u32 {
        self.0.expected_done()
    }
    fn node_done(&self, k: u32, e: &mut softspin_engine::Engine) -> bool {
        self.0.node_done(k, e)
    }
    fn verify(&self, k: u32, e: Option<&mut softspin_engine::Engine>) -> bool {
        self.0.verify(k, e)
    }
}

fn report(
    a: &NetsimArgs,
    size: usize,
    p: &NetParams,
    o: &Outcome,
    rss: Option<u64>,
    trace: Option<serde_json::Value>,
) {
    let ran: Vec<&NodeStats> = o.per_node.iter().filter(|s| s.engine).collect();
    let slowest = o
        .per_node
        .iter()
        .filter(|s| s.done_ps.is_some())
        .max_by_key(|s| s.done_ps);
    let bad: Vec<u32> = o
        .per_node
        .iter()
        .filter(|s| !s.verified)
        .map(|s| s.node)
        .take(16)
        .collect();
    let (errors, drops, counters) = o.per_node.iter().fold((0, 0, 0), |t, s| {
        (t.0 + s.errors, t.1 + s.drops, t.2 + s.counters)
    });
    let j = serde_json::json!({
        "workload": a.workload,
        "mode": a.mode,
        "nodes": o.nodes,
        "size": size,
        "nic": a.nic,
        "params": p.name,
        "nic_model": "pspin",
        "completed": o.completed,
        "ended": o.ended,
        "completion_ns": o.completion_ps.map(|t| t as f64 / 1e3),
        "verified": o.verified,
        "nodes_not_verified": bad,
        "handler_errors": errors,
        "drops": drops,
        "counters": counters,
        "error_samples": o.error_samples,
        "per_node": {
            "handlers": summary(&ran, |s| s.handlers),
            "hpu_busy_ns": summary(&ran, |s| s.hpu_busy_ps / 1000),
            "packets": summary(&ran, |s| s.packets),
            "sent": summary(&ran, |s| s.sent),
        },
        "slowest_node": slowest,
        "engines": o.engines,
        "transfers": o.transfers,
        "max_send_lag_ps": o.max_send_lag_ps,
        "wall_s": o.wall_s,
        "peak_rss_mib": rss.map(|k| k as f64 / 1024.0),
        "trace": trace,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&j).unwrap_or_default());
        return;
    }
    println!(
        "netsim: {} {} of {} B on {} nodes ({} NIC, params {}, NIC model pspin)",
        a.workload, a.mode, size, o.nodes, a.nic, p.name
    );
    match o.completion_ps {
        Some(t) => println!("completion: {:.3} us (simulated)", t as f64 / 1e6),
        None => println!("completion: not complete (ended: {})", o.ended),
    }
    let line = |name: &str, f: &dyn Fn(&NodeStats) -> u64| {
        if let serde_json::Value::Object(m) = summary(&ran, f) {
            println!(
                "  {name:<12} min {} mean {:.1} max {}",
                m["min"],
                m["mean"].as_f64().unwrap_or(0.0),
                m["max"]
            );
        }
    };
    println!("per node ({} NICs ran):", ran.len());
    line("handlers", &|s| s.handlers);
    line("hpu_busy_ns", &|s| s.hpu_busy_ps / 1000);
    line("packets", &|s| s.packets);
    if let Some(s) = slowest {
        println!(
            "slowest node: {} done at {:.3} us ({} handlers)",
            s.node,
            s.done_ps.unwrap_or(0) as f64 / 1e6,
            s.handlers
        );
    }
    println!("handler errors {errors}, drops {drops}, counters {counters}");
    for e in &o.error_samples {
        println!("  {e}");
    }
    if let Some(t) = &trace {
        let c = &t["counts"];
        println!(
            "trace: {} ranks, {} messages ({} eager, {} rendezvous, {} B); {} receives checked ({} matched posted, {} unexpected); LogGP model {:.3} us",
            c["ranks"], c["messages"], c["eager"], c["rendezvous"], c["bytes"],
            t["received"], t["matched_posted"], t["matched_unexpected"],
            t["model_completion_ns"].as_f64().unwrap_or(0.0) / 1e3
        );
        if let Some(e) = t["check_errors"].as_array() {
            for e in e {
                println!("  {}", e.as_str().unwrap_or_default());
            }
        }
    }
    println!("verified: {}", o.verified);
    if !bad.is_empty() {
        println!("nodes not verified (first {}): {bad:?}", bad.len());
    }
    println!(
        "engines allocated: {}, transfers {}, wall {:.2} s, peak RSS {} MiB",
        o.engines,
        o.transfers,
        o.wall_s,
        rss.map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0))
    );
}
