//! LogGOPSim's -L -o -g -G for our parameter profile and one broadcast
//! (bench/scale/loggopsim.sh; docs/scale.md "LogGOPSim reference"), so the
//! values are defined once, in `NetParams`, and the closed form next to
//! LogGOPSim's time comes from `loggp`.
//!
//!   loggopsim_args [--params FILE] --nodes N --size BYTES
//!
//! Prints one line: `L o g G {json}`, the four in LogGOPSim's time unit
//! (integers; 1 unit = 1 fs, so G = 18.626 ps/B keeps 5 digits), then the
//! row's parameters and the closed form as JSON.

use softspin_netsim::loggp::{binomial_children, rdma_bcast_ns, Bcast, FatTree, Hops};
use softspin_netsim::NetParams;

/// LogGOPSim's time units per ns.
const PER_NS: f64 = 1e6;

fn main() {
    if let Err(e) = run() {
        eprintln!("loggopsim_args: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let (mut params, mut nodes, mut size) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--params" => params = Some(val()?),
            "--nodes" => nodes = Some(val()?.parse::<u32>().map_err(|e| format!("--nodes: {e}"))?),
            "--size" => size = Some(val()?.parse::<u64>().map_err(|e| format!("--size: {e}"))?),
            _ => {
                return Err(format!(
                    "unknown argument {a:?} (--params FILE --nodes N --size BYTES)"
                ))
            }
        }
    }
    let (nodes, size) = (
        nodes.ok_or("--nodes is required")?,
        size.ok_or("--size is required")?,
    );
    if nodes < 2 {
        return Err(format!("--nodes {nodes}: at least 2"));
    }
    let mut p = match params {
        Some(f) => {
            let text = std::fs::read_to_string(&f).map_err(|e| format!("{f}: {e}"))?;
            NetParams::from_toml(&text).map_err(|e| format!("{f}: {e}"))?
        }
        None => NetParams::sc17(),
    };
    // LogGOPSim has one L for every pair (its LogGP backend has no
    // topology): the longest path of the fat tree that holds the nodes.
    let tree = FatTree::for_nodes(p.switch_ports, nodes);
    let hops = tree.diameter();
    let units = |ns: f64| -> Result<i64, String> {
        let u = (ns * PER_NS).round();
        if u > i32::MAX as f64 {
            return Err(format!("{ns} ns does not fit LogGOPSim's int parameters"));
        }
        Ok(u as i64)
    };
    let (l, o, g) = (units(hops.latency_ns(&p))?, units(p.o_ns)?, units(p.g_ns)?);
    let big_g = units(p.link_ps_per_byte() / 1000.0)?;
    // The closed form with G as LogGOPSim sees it (rounded to the unit).
    let g_ps_exact = p.link_ps_per_byte();
    p.link_gib_s = 1e12 / (big_g as f64 / PER_NS * 1000.0 * (1u64 << 30) as f64);
    let uniform = move |_: u32, _: u32| -> Hops { hops };
    let kids = move |v: u32| binomial_children(v, nodes);
    let closed = rdma_bcast_ns(
        &p,
        &Bcast {
            nodes,
            size,
            hops: &uniform,
            children: &kids,
            dma: None,
        },
    )
    .map_err(|e| e.to_string())?;
    println!(
        "{l} {o} {g} {big_g} {{\"nodes\": {nodes}, \"size\": {size}, \"profile\": \"{}\", \"unit_ns\": {}, \
         \"L_ns\": {}, \"o_ns\": {}, \"g_ns\": {}, \"G_ps_per_byte\": {g_ps_exact}, \"levels\": {}, \
         \"switches\": {}, \"wires\": {}, \"closed_form_ns\": {closed}}}",
        p.name,
        1.0 / PER_NS,
        l as f64 / PER_NS,
        o as f64 / PER_NS,
        g as f64 / PER_NS,
        tree.levels,
        hops.switches,
        hops.wires,
    );
    Ok(())
}
