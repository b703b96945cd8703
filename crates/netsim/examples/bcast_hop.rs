//! One broadcast hop on one NIC, alone (docs/scale.md "Where a hop's time
//! goes"): node `--rank`'s engine, made as the coupling makes it
//! (`sim::node_engine`), takes its parent's frames of the message (the
//! packets one serialisation apart, as they come off the link) and runs to
//! quiet with the timeline on. Prints the handler and command slices in
//! NIC time from the first packet's arrival, and when each forwarded frame
//! left.
//!
//!   bcast_hop [--nodes 1024] [--rank 1] [--size 8] [--mode streaming]
//!             [--nic discrete]

use softspin_engine::traffic::Arrival;
use softspin_netio::rules::{parse_rules, Matcher};
use softspin_netsim::sim::{nic_config, node_engine};
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::Workload;
use softspin_netsim::{NetParams, NicKind};

fn main() {
    if let Err(e) = run() {
        eprintln!("bcast_hop: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let (mut nodes, mut rank, mut size) = (1024u32, 1u32, 8usize);
    let (mut mode, mut nic) = (Mode::Streaming, NicKind::Discrete);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{a} {v}: {e}");
        match a.as_str() {
            "--nodes" => nodes = v.parse().map_err(|e| bad(&e))?,
            "--rank" => rank = v.parse().map_err(|e| bad(&e))?,
            "--size" => size = v.parse().map_err(|e| bad(&e))?,
            "--mode" => mode = v.parse().map_err(|e: String| bad(&e))?,
            "--nic" => {
                nic = v
                    .parse()
                    .map_err(|e: softspin_netsim::ParamsError| bad(&e))?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if rank == 0 || rank >= nodes {
        return Err(format!(
            "--rank {rank}: 1 to {} (the root forwards by its host)",
            nodes - 1
        ));
    }
    let params = NetParams::sc17();
    let cfg = nic_config(&params, nic);
    let dir = std::env::temp_dir().join(format!("softspin-bcast-hop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let b = Broadcast::new(nodes, size, mode, &cfg, &dir, 1, false);
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
    let b = b?;
    let p = b.program();
    let matcher = parse_rules(&p.rules)
        .and_then(Matcher::new)
        .map_err(|e| e.to_string())?;
    let (mut e, _) = node_engine(&cfg, &b, rank, nodes, p.udp_port, None)?;
    e.enable_timeline();
    let parent = rank & !(1 << (31 - rank.leading_zeros()));
    let link_ps_per_byte = 1e12 / (params.link_gib_s * (1u64 << 30) as f64);
    // Each packet arrives one serialisation after the one before.
    let (mut t, mut first_ps) = (0u64, None);
    for s in b
        .sends_to_children(parent, false)
        .into_iter()
        .filter(|s| s.to == rank)
    {
        let v = matcher
            .classify(&s.frame)
            .ok_or("a frame the rules do not take")?;
        t += (s.frame.len() as f64 * link_ps_per_byte).round() as u64;
        first_ps.get_or_insert(t);
        e.inject(Arrival {
            time_ps: t,
            frame: s.frame,
            msg_id: v.msg_id.unwrap_or(0),
            eom: v.eom,
            origin: "bcast_hop".into(),
            ectx: None,
        });
    }
    let first_ps = first_ps.ok_or("no frame for this rank")?;
    while let Some(next) = e.next_event_ps() {
        e.run_until(next).map_err(|e| e.to_string())?;
    }
    let mut tl = e.take_timeline();
    tl.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    let ns = |us: f64| us * 1e3 - first_ps as f64 / 1e3;
    println!("node {rank} of {nodes}, {size} B {mode:?}, {nic:?}: NIC time from the first packet's arrival (ns)");
    for ev in &tl {
        println!(
            "{:>10.1} {:>9} {:>3}/{:<3} {:<28} {}",
            ns(ev.ts),
            ev.dur.map_or(String::new(), |d| format!("{:.1}", d * 1e3)),
            ev.pid,
            ev.tid,
            ev.name,
            ev.args.as_ref().map_or(String::new(), |a| a.to_string())
        );
    }
    let (out, _, done) = e.drain_outputs();
    for o in &out {
        println!(
            "sent {:>10.1} ns  {} B to {:?}",
            o.time_ps as f64 / 1e3 - first_ps as f64 / 1e3,
            o.frame.len(),
            softspin_netsim::node::of_frame(&o.frame, nodes)
        );
    }
    for d in &done {
        println!("done {d:?}");
    }
    Ok(())
}
