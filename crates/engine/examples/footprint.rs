//! Memory and time per Engine, for networks of simulated NICs (issue 29:
//! one Engine per node, thousands in one process). Creates N engines of the
//! pspin profile, installs examples/cluster/broadcast's image (with
//! rma_target, as `cluster up --rma --image` does) in each with a node
//! table of its binomial-tree peers, sends each one packet, and prints the resident memory per engine after each step, read
//! from /proc/self/status.
//!
//! `cargo run --release -p softspin-engine --example footprint -- [N]`
//! (docs/perf-engine.md "Footprint").

use std::time::Instant;

use softspin_engine::traffic::{build_frame, Arrival, FrameKind};
use softspin_engine::{EctxSpec, Engine, NicConfig};
use softspin_hpu::ElfImage;

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb * 1024
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N: a number of engines"))
        .unwrap_or(1000);
    let elf = softspin_testkit::handler_image(
        "footprint-broadcast",
        &[
            "examples/rma_target/handler.c",
            "examples/cluster/broadcast/handler.c",
        ],
    );
    let image = ElfImage::load(&elf).expect("broadcast image");
    let cfg = NicConfig::pspin();
    let frame = build_frame(
        FrameKind::Ip,
        1024,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1000,
        9330,
        |i| i as u8,
    )
    .unwrap();

    let base = rss_bytes();
    let t = Instant::now();
    let mut engines: Vec<Engine> = (0..n).map(|_| Engine::new(cfg.clone()).unwrap()).collect();
    let t_new = t.elapsed();
    let after_new = rss_bytes();

    let t = Instant::now();
    for e in &mut engines {
        let mut s = EctxSpec::new("broadcast", image.clone());
        s.hh = Some("broadcast_hh".into());
        s.ph = Some("broadcast_ph".into());
        s.th = Some("broadcast_th".into());
        let id = e.install(s).unwrap();
        e.activate(id).unwrap();
    }
    // Each node's table: its own entry and its binomial-tree peers'
    // (rank +- 2^k), of a network of MAX_NODES nodes.
    let nodes = softspin_hpu::abi::MAX_NODES;
    for (k, e) in engines.iter_mut().enumerate() {
        let me = (k as u32 * 7919) % nodes;
        let peers = (0..nodes.ilog2())
            .flat_map(|b| [me ^ (1 << b)])
            .chain([me])
            .map(|r| {
                let b = r.to_be_bytes();
                let entry = softspin_hpu::abi::NodeEntry {
                    ipv4: [10, b[1], b[2], b[3]],
                    mac: [2, 0, 0, b[1], b[2], b[3]],
                    udp_port: 9330,
                };
                (r, entry)
            })
            .collect::<Vec<_>>();
        e.set_node_entries(me, nodes, &peers).unwrap();
    }
    let t_install = t.elapsed();
    let after_install = rss_bytes();

    let t = Instant::now();
    for e in &mut engines {
        e.inject(Arrival {
            time_ps: 1000,
            frame: frame.clone(),
            msg_id: 0,
            eom: true,
            origin: "footprint".into(),
            ectx: None,
        });
        e.run_until(1_000_000).unwrap();
        assert_eq!(e.stats().packets_in, 1);
    }
    let t_packet = t.elapsed();
    let after_packet = rss_bytes();

    // Each memory mapping is a kernel VMA; a process has at most
    // vm.max_map_count (65,530 by default) of them.
    let maps = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count());
    let per = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / n as f64;
    println!(
        "{{\"engines\": {n}, \"bytes_per_engine\": {{\"new\": {:.0}, \"install\": {:.0}, \"one_packet\": {:.0}}}, \
         \"us_per_engine\": {{\"new\": {:.1}, \"install\": {:.1}, \"one_packet\": {:.1}}}, \"rss_total_mb\": {:.1}, \"mappings\": {maps}}}",
        per(base, after_new),
        per(base, after_install),
        per(base, after_packet),
        t_new.as_secs_f64() * 1e6 / n as f64,
        t_install.as_secs_f64() * 1e6 / n as f64,
        t_packet.as_secs_f64() * 1e6 / n as f64,
        after_packet as f64 / 1e6,
    );
    drop(engines);
}
