//! `softspin rma`: remote memory from the command line, as `ib_write_bw`
//! and `ib_read_lat` are for RDMA (docs/rma.md "From the command line"). A
//! put or get is posted by node `--from`'s host through its NIC process's
//! control socket (docs/host-interface.md "RMA"): the data goes through
//! that node's shared host memory, never through the socket.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use softspin_host::hostif::rma_status_name;
use softspin_host::{NicClient, RmaOp, RmaRequest};
use softspin_wire::rma::MAX_PAYLOAD;

#[derive(clap::Subcommand)]
pub enum RmaCmd {
    /// Write FILE into rank --to's window at --offset, from rank --from's
    /// host memory (the file is first copied there, at --local).
    #[command(after_help = EXIT_HELP)]
    Put {
        #[command(flatten)]
        at: Endpoints,
        /// The bytes to write (at least 1).
        file: PathBuf,
    },
    /// Read --len bytes at --offset of rank --to's window into rank
    /// --from's host memory (at --local), then into --out.
    #[command(after_help = EXIT_HELP)]
    Get {
        #[command(flatten)]
        at: Endpoints,
        /// Bytes to read (at least 1).
        #[arg(long, value_name = "N")]
        len: u64,
        /// Where the bytes go.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    // `lat` (pointer chasing) and `bw` come with the benchmarks.
}

/// Who posts, to whom, where.
#[derive(clap::Args)]
pub struct Endpoints {
    /// The initiator: the node whose NIC posts the operation.
    #[arg(long, value_name = "RANK")]
    from: u16,
    /// The target node.
    #[arg(long, value_name = "RANK")]
    to: u16,
    /// Byte offset in the target's window.
    #[arg(long, value_name = "OFF")]
    offset: u64,
    /// The target's window key (`cluster up --rma` exports key 1).
    #[arg(long, default_value_t = 1)]
    key: u32,
    /// Where the bytes sit in the initiator's host memory (offset in its
    /// RMA ECTX's host window; what is there is overwritten).
    #[arg(long, value_name = "OFF", default_value_t = 0)]
    local: u64,
    /// The cluster (`softspin cluster up --prefix P`): node --from's control
    /// socket is RUN_DIR/cluster-P/RANK.sock.
    #[arg(long, default_value = crate::cluster::DEFAULT_PREFIX)]
    prefix: String,
    /// Node --from's control socket (instead of finding it by --prefix).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Give up when the operation has not completed after this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    timeout: f64,
    /// Print one JSON object (op, ranks, bytes, packets, time, status).
    #[arg(long)]
    json: bool,
}

pub const EXIT_HELP: &str = "\
Exit status: 0 the operation completed with status OK; 1 anything else (the
NIC refused it, a non-OK status such as BAD_KEY or PEER_FAILED, a timeout, a
file); stderr says why. 2 usage error.";

pub fn main(cmd: RmaCmd) -> anyhow::Result<ExitCode> {
    let (at, op) = match &cmd {
        RmaCmd::Put { at, .. } => (at, "put"),
        RmaCmd::Get { at, .. } => (at, "get"),
    };
    if !(at.timeout.is_finite() && at.timeout > 0.0 && at.timeout <= 3600.0) {
        bail!("--timeout {}: 0 < S <= 3600", at.timeout);
    }
    let data = match &cmd {
        RmaCmd::Put { file, .. } => {
            let d = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            if d.is_empty() {
                bail!("{}: empty; a put writes at least one byte", file.display());
            }
            Some(d)
        }
        RmaCmd::Get { len: 0, .. } => bail!("--len 0: a get reads at least one byte"),
        RmaCmd::Get { .. } => None,
    };
    let len = match (&cmd, &data) {
        (_, Some(d)) => d.len() as u64,
        (RmaCmd::Get { len, .. }, None) => *len,
        _ => unreachable!("a put has data"),
    };
    let path = at
        .control
        .clone()
        .unwrap_or_else(|| softspin_cluster::local::control_path(&at.prefix, u32::from(at.from)));
    let mut c = NicClient::connect(&path).with_context(|| {
        format!(
            "node {}'s NIC (is the cluster up with NICs serving host programs? `softspin cluster status --prefix {}`)",
            at.from, at.prefix
        )
    })?;
    if let Some(r) = c.hello()["rank"].as_u64() {
        if r != u64::from(at.from) {
            bail!(
                "--from {}: the NIC at {} is rank {r}",
                at.from,
                path.display()
            );
        }
    }
    let ectx = {
        let rma: Vec<_> = c.ectxs().iter().filter(|e| e.rma).collect();
        match rma[..] {
            [e] => e.ectx,
            [] => bail!(
                "the NIC at {} runs no RMA handlers (examples/rma_target)",
                path.display()
            ),
            _ => bail!(
                "the NIC at {} has {} ECTXs with the RMA handlers; this command posts on one",
                path.display(),
                rma.len()
            ),
        }
    };
    c.set_rma_ectx(Some(ectx));
    let window = c.window_mem(ectx)?;
    let wlen = window.len();
    let local = usize::try_from(at.local)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(l, n)| Some(l..l.checked_add(n)?))
        .filter(|r| r.end <= wlen)
        .with_context(|| {
            format!(
                "--local {} + {len} bytes: beyond node {}'s {wlen}-byte host window",
                at.local, at.from
            )
        })?;
    if let Some(d) = &data {
        window[local.clone()].copy_from_slice(d);
    }
    let rop = match data {
        Some(_) => RmaOp::Put {
            local: at.local,
            len,
        },
        None => RmaOp::Get {
            local: at.local,
            len,
        },
    };
    let req = RmaRequest {
        rank: at.to,
        key: at.key,
        offset: at.offset,
        op: rop,
    };
    let t0 = Instant::now();
    let h = c.post(&req)?;
    let done = c.wait(h, Duration::from_secs_f64(at.timeout))?;
    let secs = t0.elapsed().as_secs_f64();
    let Some(done) = done else {
        bail!(
            "{op} of {len} bytes from rank {} to rank {}: not completed within {} s",
            at.from,
            at.to,
            at.timeout
        );
    };
    let (status, _) = rma_status_name(done.status);
    let packets = len.div_ceil(MAX_PAYLOAD as u64);
    if at.json {
        println!(
            "{}",
            serde_json::json!({
                "op": op, "from": at.from, "to": at.to, "key": at.key, "offset": at.offset,
                "local": at.local, "bytes": len, "packets": packets, "time_s": secs,
                "status": status,
                "error": softspin_host::hostif::rma_error(done.status, &req),
            })
        );
    }
    if let Some(e) = softspin_host::hostif::rma_error(done.status, &req) {
        eprintln!("softspin: rma: {e}");
        return Ok(ExitCode::from(crate::exit::FAILURE));
    }
    if let RmaCmd::Get { out, .. } = &cmd {
        let window = c.window_mem(ectx)?;
        std::fs::write(out, &window[local])
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if !at.json {
        let arrow = if op == "put" { "->" } else { "<-" };
        println!(
            "{op}: {len} bytes ({packets} packets) rank {} {arrow} rank {} key {} offset {} in {:.3} ms: {status}",
            at.from,
            at.to,
            at.key,
            at.offset,
            secs * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}
