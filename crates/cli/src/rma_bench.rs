//! `softspin rma lat` and `softspin rma bw`: the NIC-served series of the
//! cluster benchmark (issue 27, items 4 and 6; docs/cluster.md
//! "Benchmarks"), posted like `rma put|get` through node --from's control
//! socket. Their JSON reports as bench/cluster/hostclient does (`verified`,
//! `lat_ns` with the same keys, `goodput_gbps`), so the series sit side by
//! side.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use softspin_engine::traffic::splitmix64;
use softspin_host::hostif::rma_error;
use softspin_host::{NicClient, RmaCompletion, RmaHandle, RmaOp, RmaRequest};

use crate::rma::Nodes;

/// Bytes between chain elements: a cache line, as hostclient's STRIDE.
const STRIDE: u64 = 64;
/// Largest piece the fill and read-back post at once.
const CHUNK: u64 = 1 << 20;
/// The largest --size (issue 27: 8 B to 16 MiB).
const MAX_SIZE: u64 = 16 << 20;

pub const LAT_HELP: &str = "\
Exit status: 0 every chased value equalled the chain's; 1 a mismatch, a
failed operation (its status named), a timeout or a refusal; 2 usage error.";
pub const BW_HELP: &str = "\
Exit status: 0 every operation completed OK (and every get's bytes equalled
what was put); 1 a failed operation (its status named), a mismatch, a
timeout or a refusal; 2 usage error.";

#[derive(clap::Args)]
pub struct LatArgs {
    #[command(flatten)]
    node: Nodes,
    /// Dependent 8-byte reads.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    count: u64,
    /// Bytes of the target's window the chain spans (a multiple of 64;
    /// default: with `--server nic` the initiator's host window, which
    /// stages the chain; with `host` hostclient's 16 MiB).
    #[arg(long, value_name = "BYTES")]
    region: Option<u64>,
    /// The chain's seed (the same seed gives hostclient's chain).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Who serves the reads: node --to's NIC from its window (`nic`), or
    /// the host-CPU baseline: bench/cluster's C UDP server in node --to's
    /// namespace, chased by its client in node --from's (`host`; built
    /// with the system `cc` into the cluster's state directory).
    #[arg(long, value_enum, default_value = "nic")]
    server: Server,
    /// Who issues the reads (with `--server nic`): node --from's host,
    /// posting each through its NIC's control socket (`host`), or node
    /// --from's NIC alone (`nic`): a handler of `cluster up --rma`'s image
    /// (examples/rma_chase) issues each read when the previous response
    /// arrives, --hops reads per command, with no host in the loop (DiAD's
    /// accelerator-issued reads, seed 003 §IV). The command is a datagram
    /// sent from node --to's namespace, so it crosses the wire.
    #[arg(long, value_enum, default_value = "host")]
    initiator: Initiator,
    /// With `--initiator nic`: dependent reads per command; a sample is one
    /// command's wall time (command datagram to results in host memory)
    /// over its reads.
    #[arg(long, value_name = "N", default_value_t = 128)]
    hops: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Initiator {
    Host,
    Nic,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Server {
    Nic,
    Host,
}

#[derive(clap::Args)]
pub struct BwArgs {
    #[command(flatten)]
    node: Nodes,
    #[arg(long, value_enum)]
    op: BwOp,
    /// Bytes per operation (8 B to 16 MiB).
    #[arg(long, value_name = "S")]
    size: u64,
    /// Operations kept in flight.
    #[arg(long, value_name = "W", default_value_t = 1)]
    outstanding: u32,
    /// Stop posting after this many bytes (default: after --seconds).
    #[arg(long, value_name = "BYTES")]
    total: Option<u64>,
    /// Without --total: stop posting after this long (at least one op).
    #[arg(long, value_name = "T", default_value_t = 0.3)]
    seconds: f64,
    /// The data pattern's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BwOp {
    Put,
    Get,
}

/// `--count` reads of a random single cycle (Sattolo) through `region`
/// bytes of the target's window, wall-clock timed one by one.
pub fn lat(a: &LatArgs) -> anyhow::Result<ExitCode> {
    if a.count == 0 {
        bail!("--count 0: chase at least one read");
    }
    if a.server == Server::Host {
        if a.initiator == Initiator::Nic {
            bail!("--initiator nic chases through a NIC-served window: not with --server host");
        }
        return crate::rma_host::lat(&a.node, a.count, a.region, a.seed, STRIDE);
    }
    if a.initiator == Initiator::Nic && !(1..=4096).contains(&a.hops) {
        bail!("--hops {}: 1 to 4096 reads per command", a.hops);
    }
    let (mut c, ectx) = a.node.connect()?;
    let wlen = c.window_mem(ectx)?.len() as u64;
    let region = a.region.unwrap_or(wlen / STRIDE * STRIDE);
    if region < 2 * STRIDE || !region.is_multiple_of(STRIDE) || region > wlen {
        bail!(
            "--region {region}: a multiple of {STRIDE} of at least {} and at most node {}'s {wlen}-byte host window, which stages the chain",
            2 * STRIDE,
            a.node.from
        );
    }
    let chain = chain(region, a.seed);
    // The chain goes to the target's window through the initiator's.
    c.window_mem(ectx)?[..region as usize].copy_from_slice(&chain);
    let t_fill = Instant::now();
    transfer(&mut c, &a.node, true, 0, 0, region)?;
    let fill_s = t_fill.elapsed().as_secs_f64();
    let before = target_status(&a.node);
    if a.initiator == Initiator::Nic {
        return nic_chase(a, &mut c, ectx, &chain, region, fill_s, before);
    }
    let mut lat = Vec::with_capacity(a.count as usize);
    // The post's share: one control-socket round trip of the two a read takes.
    let mut post = Vec::with_capacity(a.count as usize);
    let (mut cur, mut verified) = (0u64, 0u64);
    let t0 = Instant::now();
    for i in 0..a.count {
        // A value the chain never holds, so a read that did not land shows.
        c.window_mem(ectx)?[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let req = RmaRequest {
            rank: a.node.to,
            key: a.node.key,
            offset: cur,
            op: RmaOp::Get { local: 0, len: 8 },
        };
        let t = Instant::now();
        let h = c.post(&req)?;
        post.push(t.elapsed().as_nanos() as u64);
        wait_one(&mut c, &a.node, h, &req)?;
        lat.push(t.elapsed().as_nanos() as u64);
        let got = le64(&c.window_mem(ectx)?[..8]);
        let want = le64(&chain[cur as usize..]);
        if got != want {
            bail!(
                "chase read {i} at offset {cur} of rank {}: got {got:#x}, the chain says {want:#x} ({verified} verified before it)",
                a.node.to
            );
        }
        verified += 1;
        cur = got;
    }
    let secs = t0.elapsed().as_secs_f64();
    let after = target_status(&a.node);
    let lat_ns = percentiles(&mut lat);
    let post_ns = percentiles(&mut post);
    let model = model(before.as_ref(), after.as_ref(), a.count);
    if a.node.json {
        println!(
            "{}",
            json!({
                "server": "nic", "from": a.node.from, "to": a.node.to, "key": a.node.key,
                "region": region, "seed": a.seed, "stride": STRIDE, "lines": region / STRIDE,
                "count": a.count, "verified": verified, "samples": lat.len(),
                "time_s": secs, "fill_s": fill_s, "lat_ns": lat_ns, "post_ns": post_ns,
                "model": model,
            })
        );
    } else {
        println!(
            "rma lat: {verified} of {} reads verified, rank {} -> rank {} ({region}-byte chain); wall clock p50 {:.1} us, p99 {:.1} us, mean {:.1} us",
            a.count,
            a.node.from,
            a.node.to,
            lat_ns["p50"].as_f64().unwrap_or_default() / 1e3,
            lat_ns["p99"].as_f64().unwrap_or_default() / 1e3,
            lat_ns["mean"].as_f64().unwrap_or_default() / 1e3,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// examples/rma_chase's command (its chase_cmd_t, little-endian): magic
/// "CHSE", op, rank, key, remote offset, local offset, reads, arg.
const CHASE_MAGIC: u32 = 0x4553_4843;
const CHASE_OP_CHASE: u32 = 1;
/// Where the chase's reads land in node --from's window (the chain's
/// staging area, free once the chain is in place), and its results after
/// them: last value, reads done, status (u64 each).
const CHASE_LOCAL: u64 = 0;

/// `rma lat --initiator nic`: commands of --hops reads to node --from's
/// NIC until --count reads, each checked against the chain.
fn nic_chase(
    a: &LatArgs,
    c: &mut NicClient,
    ectx: u32,
    chain: &[u8],
    region: u64,
    fill_s: f64,
    before: Option<Value>,
) -> anyhow::Result<ExitCode> {
    use softspin_cluster::{local, NodeTable};
    let n = &a.node;
    let table = NodeTable::load(&local::default_table_path(&n.prefix)).with_context(|| {
        format!(
            "cluster `{}` (softspin cluster up --prefix {})",
            n.prefix, n.prefix
        )
    })?;
    let (Some(from), Some(to)) = (table.node(u32::from(n.from)), table.node(u32::from(n.to)))
    else {
        bail!(
            "ranks {} and {} must both be in the node table ({} nodes)",
            n.from,
            n.to,
            table.nodes().len()
        );
    };
    let Some(ns) = to.netns.clone() else {
        bail!("--initiator nic sends its commands from node {}'s network namespace: a cluster made by `softspin cluster up`", n.to);
    };
    let dst = std::net::SocketAddr::from((from.ipv4, crate::cluster::rma_chase_port()?));
    let sock = socket_in_netns(&ns)?;
    let res = (CHASE_LOCAL + 8) as usize;
    let deadline = n.wait_limit();
    let mut per_read = Vec::new();
    let (mut cur, mut verified, mut nic_s) = (0u64, 0u64, 0f64);
    while verified < a.count {
        let hops = u64::from(a.hops).min(a.count - verified);
        let mem = c.window_mem(ectx)?;
        mem[res..res + 24].fill(0xff); // the marker: not done yet
        let mut cmd = Vec::with_capacity(40);
        for w in [CHASE_MAGIC, CHASE_OP_CHASE, u32::from(n.to), n.key] {
            cmd.extend(w.to_le_bytes());
        }
        cmd.extend(cur.to_le_bytes());
        cmd.extend(CHASE_LOCAL.to_le_bytes());
        cmd.extend((hops as u32).to_le_bytes());
        cmd.extend(0u32.to_le_bytes());
        let t = Instant::now();
        sock.send_to(&cmd, dst)
            .context("sending the chase command")?;
        let (last, done, status) = loop {
            let m = c.window_mem(ectx)?;
            // One DMA writes the three words, in no promised order: done
            // when none holds the marker any more (none of them can).
            let w = (le64(&m[res..]), le64(&m[res + 8..]), le64(&m[res + 16..]));
            if w.0 != u64::MAX && w.1 != u64::MAX && w.2 != u64::MAX {
                break w;
            }
            if t.elapsed() > deadline {
                bail!(
                    "node {}'s NIC did not finish a chase of {hops} reads within {} s ({verified} verified before it; is the cluster's image the default one, with examples/rma_chase?)",
                    n.from, n.timeout
                );
            }
            // Sleep, not spin: the two NICs need this machine's cores while
            // their handlers chase (the sleep's overshoot, over --hops reads,
            // counts against the NIC).
            std::thread::sleep(Duration::from_micros(50));
        };
        let took = t.elapsed();
        nic_s += took.as_secs_f64();
        if status != 0 || done != hops {
            bail!(
                "node {}'s chase from offset {cur}: {done} of {hops} reads done, RMA status {status} ({verified} verified before it)",
                n.from
            );
        }
        let mut want = cur;
        for _ in 0..hops {
            want = le64(&chain[want as usize..]);
        }
        if last != want {
            bail!(
                "node {}'s chase from offset {cur}: ended at {last:#x}, the chain says {want:#x}",
                n.from
            );
        }
        per_read.push((took.as_nanos() as u64) / hops);
        verified += hops;
        cur = last;
    }
    let after = target_status(n);
    let lat_ns = percentiles(&mut per_read);
    let model = model(before.as_ref(), after.as_ref(), a.count);
    if n.json {
        println!(
            "{}",
            json!({
                "server": "nic", "initiator": "nic", "from": n.from, "to": n.to, "key": n.key,
                "region": region, "seed": a.seed, "stride": STRIDE, "lines": region / STRIDE,
                "count": a.count, "hops": a.hops, "verified": verified, "samples": per_read.len(),
                "time_s": nic_s, "fill_s": fill_s, "lat_ns": lat_ns, "model": model,
            })
        );
    } else {
        println!(
            "rma lat: {verified} of {} reads verified, issued by rank {}'s NIC to rank {} ({region}-byte chain, {} reads per command); per read p50 {:.1} us, mean {:.1} us",
            a.count,
            n.from,
            n.to,
            a.hops,
            lat_ns["p50"].as_f64().unwrap_or_default() / 1e3,
            lat_ns["mean"].as_f64().unwrap_or_default() / 1e3,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A UDP socket made in network namespace `ns` (it stays there; setns
/// moves only the thread that makes it, which then ends).
fn socket_in_netns(ns: &str) -> anyhow::Result<std::net::UdpSocket> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || -> anyhow::Result<std::net::UdpSocket> {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
        // SAFETY: a namespace fd open for the call; CLONE_NEWNET moves only this thread.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("entering {path}: {}", std::io::Error::last_os_error());
        }
        Ok(std::net::UdpSocket::bind("0.0.0.0:0")?)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
}

/// --outstanding operations of --size bytes in flight until --total bytes
/// or --seconds; gets read what was put first and are compared with it.
pub fn bw(a: &BwArgs) -> anyhow::Result<ExitCode> {
    if !(8..=MAX_SIZE).contains(&a.size) {
        bail!("--size {}: 8 B to {MAX_SIZE} B", a.size);
    }
    if !(1..=1024).contains(&a.outstanding) {
        bail!("--outstanding {}: 1 to 1024", a.outstanding);
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 3600.0) {
        bail!("--seconds {}: 0 < T <= 3600", a.seconds);
    }
    if a.total == Some(0) {
        bail!("--total 0: move at least one operation's bytes");
    }
    let (mut c, ectx) = a.node.connect()?;
    let wlen = c.window_mem(ectx)?.len() as u64;
    if a.size > wlen {
        bail!(
            "--size {}: larger than node {}'s {wlen}-byte host window",
            a.size,
            a.node.from
        );
    }
    let w = u64::from(a.outstanding);
    // Slots of --size bytes at the same offsets in both windows: an op on
    // slot j moves local j*S <-> remote j*S. With a slot per op in flight
    // each owns its slot (a get's is cleared first); with fewer, ops share
    // slots, whose bytes are the same whichever lands last.
    let slots = (wlen / a.size).min(w);
    let span = slots * a.size;
    let mut mirror = vec![0u8; span as usize];
    let mut g = a.seed;
    for ch in mirror.chunks_mut(8) {
        ch.copy_from_slice(&splitmix64(&mut g).to_le_bytes()[..ch.len()]);
    }
    c.window_mem(ectx)?[..span as usize].copy_from_slice(&mirror);
    let op = a.op;
    if op == BwOp::Get {
        // What the gets read: put first.
        transfer(&mut c, &a.node, true, 0, 0, span)?;
    }
    let exclusive = slots == w;
    let mut free: Vec<u64> = (0..slots).rev().collect();
    let mut in_flight: Vec<(RmaHandle, u64, RmaRequest)> = Vec::new();
    let (mut posted, mut ops, mut bytes, mut next_shared) = (0u64, 0u64, 0u64, 0u64);
    let limit = Duration::from_secs_f64(a.seconds);
    let before = target_status(&a.node);
    let t0 = Instant::now();
    loop {
        let more = |posted: u64| match a.total {
            Some(t) => posted < t,
            None => posted == 0 || t0.elapsed() < limit,
        };
        while (in_flight.len() as u64) < w && more(posted) {
            let slot = if exclusive {
                free.pop().expect("a free slot per op in flight")
            } else {
                next_shared = (next_shared + 1) % slots;
                next_shared
            };
            let off = slot * a.size;
            let range = off as usize..(off + a.size) as usize;
            if op == BwOp::Get && exclusive {
                c.window_mem(ectx)?[range].fill(0);
            }
            let rop = match op {
                BwOp::Put => RmaOp::Put {
                    local: off,
                    len: a.size,
                },
                BwOp::Get => RmaOp::Get {
                    local: off,
                    len: a.size,
                },
            };
            let req = RmaRequest {
                rank: a.node.to,
                key: a.node.key,
                offset: off,
                op: rop,
            };
            let h = c.post(&req)?;
            in_flight.push((h, slot, req));
            posted += a.size;
        }
        if in_flight.is_empty() {
            break;
        }
        let handles: Vec<RmaHandle> = in_flight.iter().map(|x| x.0).collect();
        let done = c.wait_any(&handles, a.node.wait_limit())?;
        if done.is_empty() {
            bail!(
                "{} {}-byte {}s from rank {} to rank {}: none completed within {} s",
                in_flight.len(),
                a.size,
                op_name(op),
                a.node.from,
                a.node.to,
                a.node.timeout
            );
        }
        for d in done {
            let Some(i) = in_flight.iter().position(|x| x.0 == d.handle) else {
                bail!(
                    "a completion for handle {} this command did not post",
                    d.handle.0
                );
            };
            let (_, slot, req) = in_flight.swap_remove(i);
            check(&d, &req)?;
            let off = (slot * a.size) as usize;
            let range = off..off + a.size as usize;
            if op == BwOp::Get && c.window_mem(ectx)?[range.clone()] != mirror[range] {
                bail!(
                    "get {ops} of {} bytes at offset {off} of rank {}: the bytes differ from what was put",
                    a.size,
                    a.node.to
                );
            }
            if exclusive {
                free.push(slot);
            }
            ops += 1;
            bytes += a.size;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    // The target NIC's own count of the bytes it moved by DMA for these
    // operations (to its host for puts, from it for gets).
    let counter = match op {
        BwOp::Put => "dma_to_host_bytes",
        BwOp::Get => "dma_from_host_bytes",
    };
    let target_dma = before
        .zip(target_status(&a.node))
        .and_then(|(b, e)| e[counter].as_u64()?.checked_sub(b[counter].as_u64()?));
    if op == BwOp::Put {
        // Read the slots back: the puts' bytes are what the target holds.
        c.window_mem(ectx)?[..span as usize].fill(0);
        transfer(&mut c, &a.node, false, 0, 0, span)?;
        if c.window_mem(ectx)?[..span as usize] != mirror[..] {
            bail!(
                "read back of rank {}'s first {span} bytes after the puts: they differ from what was put",
                a.node.to
            );
        }
    }
    if let Some(d) = target_dma.filter(|&d| d != bytes) {
        bail!(
            "rank {}'s NIC counted {d} bytes of DMA ({counter}) for {bytes} bytes of {}s",
            a.node.to,
            op_name(op)
        );
    }
    let gbps = bytes as f64 * 8.0 / secs / 1e9;
    if a.node.json {
        println!(
            "{}",
            json!({
                "server": "nic", "op": op_name(op), "from": a.node.from, "to": a.node.to,
                "key": a.node.key, "size": a.size, "outstanding": a.outstanding, "ops": ops,
                "bytes": bytes, "packets": ops * a.size.div_ceil(softspin_wire::rma::MAX_PAYLOAD as u64),
                "time_s": secs, "goodput_gbps": gbps, "ops_per_s": ops as f64 / secs,
                "target_dma_bytes": target_dma,
            })
        );
    } else {
        println!(
            "rma bw: {} {ops} x {} B, {} in flight, rank {} -> rank {}: {bytes} bytes in {:.3} s, {gbps:.4} Gbit/s",
            op_name(op),
            a.size,
            a.outstanding,
            a.node.from,
            a.node.to,
            secs
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn op_name(op: BwOp) -> &'static str {
    match op {
        BwOp::Put => "put",
        BwOp::Get => "get",
    }
}

/// The chase's region: hostclient's layout for the same seed (pattern
/// bytes, then at each 64-byte line the offset of the next line of one
/// Sattolo cycle).
fn chain(region: u64, seed: u64) -> Vec<u8> {
    let mut g = seed;
    let mut p = splitmix64(&mut g);
    let mut m = vec![0u8; region as usize];
    for ch in m.chunks_mut(8) {
        ch.copy_from_slice(&splitmix64(&mut p).to_le_bytes()[..ch.len()]);
    }
    let lines = region / STRIDE;
    let mut perm: Vec<u64> = (0..lines).collect();
    for i in (1..lines).rev() {
        let j = splitmix64(&mut g) % i;
        perm.swap(i as usize, j as usize);
    }
    for (i, next) in perm.iter().enumerate() {
        let at = i * STRIDE as usize;
        m[at..at + 8].copy_from_slice(&(next * STRIDE).to_le_bytes());
    }
    m
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Blocking puts (`put`) or gets of `len` bytes between local and remote
/// offsets, a piece of at most CHUNK bytes at a time.
fn transfer(
    c: &mut NicClient,
    n: &Nodes,
    put: bool,
    local: u64,
    remote: u64,
    len: u64,
) -> anyhow::Result<()> {
    let mut done = 0;
    while done < len {
        let k = CHUNK.min(len - done);
        let (l, r) = (local + done, remote + done);
        let op = if put {
            RmaOp::Put { local: l, len: k }
        } else {
            RmaOp::Get { local: l, len: k }
        };
        let req = RmaRequest {
            rank: n.to,
            key: n.key,
            offset: r,
            op,
        };
        let h = c.post(&req)?;
        wait_one(c, n, h, &req)?;
        done += k;
    }
    Ok(())
}

fn wait_one(
    c: &mut NicClient,
    n: &Nodes,
    h: RmaHandle,
    req: &RmaRequest,
) -> anyhow::Result<RmaCompletion> {
    let Some(d) = c.wait(h, n.wait_limit())? else {
        bail!(
            "RMA {:?} from rank {} to rank {}: not completed within {} s",
            req.op,
            n.from,
            n.to,
            n.timeout
        );
    };
    check(&d, req)?;
    Ok(d)
}

fn check(d: &RmaCompletion, req: &RmaRequest) -> anyhow::Result<()> {
    match rma_error(d.status, req) {
        Some(e) => bail!("{e}"),
        None => Ok(()),
    }
}

/// hostclient's latency summary (nearest-rank percentiles), in ns.
pub fn percentiles(xs: &mut [u64]) -> Value {
    xs.sort_unstable();
    let n = xs.len();
    let p = |q: f64| xs[(q / 100.0 * (n - 1) as f64 + 0.5) as usize];
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    json!({
        "min": xs[0], "p1": p(1.0), "p5": p(5.0), "p25": p(25.0), "p50": p(50.0),
        "p75": p(75.0), "p95": p(95.0), "p99": p(99.0), "max": xs[n - 1], "mean": mean,
    })
}

/// The target NIC's status, when its control socket is found by --prefix
/// (None with --control or when it does not answer: the model part of the
/// report is then null, the measurement stands).
fn target_status(n: &Nodes) -> Option<Value> {
    if n.control.is_some() {
        return None;
    }
    let path = softspin_cluster::local::control_path(&n.prefix, u32::from(n.to));
    let mut c = NicClient::connect(path).ok()?;
    c.status().ok()
}

/// What the target's NIC model says about the chase: packets it completed
/// and sent per read, and its modelled packet latency (arrival to last task
/// done, in NIC time at the profile's clock, over every packet since it
/// started, the fill included). (A live NIC's clock follows the wall clock,
/// so its advance says nothing of its own.)
fn model(before: Option<&Value>, after: Option<&Value>, reads: u64) -> Value {
    let (Some(b), Some(a)) = (before, after) else {
        return Value::Null;
    };
    let d = |k: &str| {
        a[k].as_u64().unwrap_or_default() as f64 - b[k].as_u64().unwrap_or_default() as f64
    };
    json!({
        "target_packets_per_read": d("packets") / reads as f64,
        "target_outbound_packets_per_read": d("outbound_packets") / reads as f64,
        "target_dma_from_host_bytes_per_read": d("dma_from_host_bytes") / reads as f64,
        "target_packet_latency_ns": a["latency_ns"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One cycle through every line, each value a line offset.
    #[test]
    fn chain_is_one_cycle() {
        let m = chain(64 * 1000, 7);
        let (mut cur, mut seen) = (0u64, vec![false; 1000]);
        for _ in 0..1000 {
            assert!(!seen[(cur / STRIDE) as usize], "a shorter cycle");
            seen[(cur / STRIDE) as usize] = true;
            cur = le64(&m[cur as usize..]);
            assert!(cur.is_multiple_of(STRIDE));
        }
        assert_eq!(cur, 0, "back at the start after every line");
        assert!(seen.iter().all(|&s| s));
    }
}
