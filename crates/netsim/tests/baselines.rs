//! The broadcast baselines' timing (docs/scale.md "Baselines"), on 4
//! nodes (0 -> 1, 2; 1 -> 3): node 1's NIC deposits the message, then node
//! 1 forwards it to node 3 after the put's DMA read of the data from host
//! memory (L_dma + bytes / bandwidth, seed 004 §4.3), plus o for `rdma`'s
//! host CPU, nothing for `portals`' triggered put. Node 3's packet must
//! arrive that plus one transfer after node 1 was done.

mod common;

use softspin_netsim::workload::broadcast::Mode;
use softspin_netsim::{FatTree, NetParams, NicKind};

fn gap_ps(mode: Mode) -> (f64, f64) {
    let (b, spec) = common::broadcast(4, 8, mode, NicKind::Discrete, 3, 1e-3);
    let p = spec.params.clone();
    let out = softspin_netsim::run(spec, Box::new(b)).unwrap();
    assert!(out.verified, "{out:?}");
    assert_eq!(out.transfers, 3);
    let done1 = out.per_node[1].done_ps.unwrap() as f64;
    let arrival3 = out.per_node[3].first_arrival_ps.unwrap() as f64;
    let frame = 14 + 20 + 8 + 26 + 8;
    let tree = FatTree::new(4, p.switch_ports);
    let read = (p.discrete.latency_ns
        + 8.0 / (p.discrete.bandwidth_gib_s * (1u64 << 30) as f64) * 1e9)
        * 1e3;
    let wire = tree.transfer_s(&p, 1, 3, frame) * 1e12;
    (arrival3 - done1, read + wire)
}

// SimGrid runs one simulation per process: each mode runs in a child
// process of this test binary.
#[test]
fn rdma_pays_o_and_the_read_portals_only_the_read() {
    if let Ok(m) = std::env::var("NETSIM_BASELINE_MODE") {
        let mode = m.parse::<Mode>().unwrap();
        let (got, base) = gap_ps(mode);
        println!("GAP {got} {base}");
        return;
    }
    let o_ps = NetParams::sc17().o_ns * 1e3;
    for (mode, extra) in [("rdma", o_ps), ("portals", 0.0)] {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "rdma_pays_o_and_the_read_portals_only_the_read",
                "--nocapture",
            ])
            .env("NETSIM_BASELINE_MODE", mode)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mode}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find(|l| l.starts_with("GAP "))
            .expect("the child's line");
        let v: Vec<f64> = line[4..].split(' ').map(|x| x.parse().unwrap()).collect();
        let want = v[1] + extra;
        assert!(
            (v[0] - want).abs() <= 1.0,
            "{mode}: node 3's packet {} ps after node 1 was done, by hand {want} ps",
            v[0]
        );
    }
}
