//! `softspin rma lat --server host`: the host-CPU baseline of the chase
//! (docs/cluster.md "Benchmarks"): bench/cluster's C UDP server in node
//! --to's namespace and its client in node --from's, built with the system
//! `cc` from the sources this binary carries (as `cluster up --rma` carries
//! rma_target's), same chain, same report as `--server nic`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use softspin_cluster::local::{self, Names};
use softspin_cluster::NodeTable;

use crate::rma::Nodes;

/// The sources, at their paths in the repository (hostrma.h includes the
/// other two relative to itself).
const SOURCES: [(&str, &str); 5] = [
    (
        "bench/cluster/hostserver.c",
        include_str!("../../../bench/cluster/hostserver.c"),
    ),
    (
        "bench/cluster/hostclient.c",
        include_str!("../../../bench/cluster/hostclient.c"),
    ),
    (
        "bench/cluster/hostrma.h",
        include_str!("../../../bench/cluster/hostrma.h"),
    ),
    (
        "bench/live/common.h",
        include_str!("../../../bench/live/common.h"),
    ),
    (
        "sdk/include/spin_rma.h",
        include_str!("../../../sdk/include/spin_rma.h"),
    ),
];
/// The host server's UDP port: near the NIC's but none the RMA NICs'
/// matchers take (RMA's, and examples/rma_chase's command port, RMA's + 1),
/// so its datagrams reach the kernel.
const PORT: u16 = softspin_wire::rma::UDP_PORT + 5;
/// hostclient's default region.
const DEFAULT_REGION: u64 = 16 << 20;
/// A guard: the server ends itself if this command is killed.
const SERVER_LIFETIME_S: &str = "3600";

pub fn lat(
    n: &Nodes,
    count: u64,
    region: Option<u64>,
    seed: u64,
    stride: u64,
) -> anyhow::Result<ExitCode> {
    if n.control.is_some() {
        bail!("--server host finds the nodes by --prefix (their namespaces), not --control");
    }
    let region = region.unwrap_or(DEFAULT_REGION);
    if region < 1 << 20 || !region.is_multiple_of(stride) {
        bail!("--region {region}: with --server host, a multiple of {stride} of at least 1 MiB (hostclient's bounds)");
    }
    let table_path = local::default_table_path(&n.prefix);
    let table = NodeTable::load(&table_path).with_context(|| {
        format!(
            "cluster `{}` (softspin cluster up --prefix {})",
            n.prefix, n.prefix
        )
    })?;
    for r in [n.from, n.to] {
        if table.node(u32::from(r)).is_none() {
            bail!(
                "no rank {r} in the node table ({} nodes)",
                table.nodes().len()
            );
        }
    }
    let ip = table.node(u32::from(n.to)).expect("checked").ipv4;
    let names = Names::new(&n.prefix, 1)?;
    let dir = local::state_dir(&n.prefix).join("hostrma");
    let (server, client) = (build(&dir, "hostserver")?, build(&dir, "hostclient")?);

    let mut srv = Command::new("ip")
        .args(["netns", "exec", &names.ns(u32::from(n.to))])
        .arg(&server)
        .args([
            &PORT.to_string(),
            &region.to_string(),
            "--seconds",
            SERVER_LIFETIME_S,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting hostserver")?;
    let mut out = BufReader::new(srv.stdout.take().expect("piped"));
    let mut line = String::new();
    let ready = out.read_line(&mut line).is_ok() && line.trim() == "listening";
    let run = || -> anyhow::Result<std::process::Output> {
        if !ready {
            bail!("hostserver in node {}'s namespace did not start", n.to);
        }
        Command::new("ip")
            .args(["netns", "exec", &names.ns(u32::from(n.from))])
            .arg(&client)
            .args([&ip.to_string(), &PORT.to_string(), "--region"])
            .args([region.to_string(), "--seed".into(), seed.to_string()])
            .args(["--chase".to_string(), count.to_string()])
            .output()
            .context("running hostclient")
    };
    let got = run();
    // SIGTERM: the server prints what it served and exits.
    // SAFETY: kill(2) on our own child's pid (not yet waited for, so not
    // reused); no memory is involved.
    unsafe { libc::kill(srv.id() as i32, libc::SIGTERM) };
    let mut served = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut served);
    let _ = srv.wait();
    let o = got?;
    let j: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let chase = &j["chase"];
    if !o.status.success() || chase.is_null() {
        bail!(
            "hostclient (node {} -> node {}) exited {}: {}",
            n.from,
            n.to,
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    let verified = chase["verified"].as_u64().unwrap_or_default();
    if verified != count {
        bail!(
            "hostclient verified {verified} of {count} chased values: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    let report = json!({
        "server": "host", "from": n.from, "to": n.to, "region": region, "seed": seed,
        "stride": stride, "lines": region / stride, "count": count, "verified": verified,
        "retried": chase["retried"], "samples": chase["samples"], "lat_ns": chase["lat_ns"],
        "readback": j["readback"],
        "client": {"requests": j["requests"], "retransmits": j["retransmits"],
                   "mismatches": j["mismatches"], "errors": j["errors"]},
        "served": serde_json::from_str::<Value>(served.trim()).unwrap_or(Value::Null),
    });
    if n.json {
        println!("{report}");
    } else {
        let l = &report["lat_ns"];
        println!(
            "rma lat --server host: {verified} of {count} reads verified, rank {} -> rank {} ({region}-byte chain); wall clock p50 {:.1} us, p99 {:.1} us, mean {:.1} us",
            n.from,
            n.to,
            l["p50"].as_f64().unwrap_or_default() / 1e3,
            l["p99"].as_f64().unwrap_or_default() / 1e3,
            l["mean"].as_f64().unwrap_or_default() / 1e3,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The sources under `dir`, and `prog` built from them with `cc` (once per
/// cluster: `up` makes the state directory anew).
fn build(dir: &Path, prog: &str) -> anyhow::Result<PathBuf> {
    let bin = dir.join(prog);
    if bin.exists() {
        return Ok(bin);
    }
    for (path, text) in SOURCES {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a directory"))
            .with_context(|| format!("creating {}", p.display()))?;
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    let src = dir.join(format!("bench/cluster/{prog}.c"));
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .context(
            "running the system C compiler `cc` (--server host builds bench/cluster's programs)",
        )?;
    if !o.status.success() {
        let _ = std::fs::remove_file(&bin);
        bail!(
            "cc {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(bin)
}
