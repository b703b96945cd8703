//! LogGP times for a binomial broadcast, computed without simulation
//! (issue 29 item 5; docs/scale.md "Closed forms"): the host-CPU baseline
//! (`rdma`) with LogGOPSim's semantics, and sPIN's streaming and
//! store-and-forward variants (seed 004 §4.4.3). They take the pair's
//! switch hops and the per-hop handler time as inputs, so netsim's
//! simulated times can be checked against them.
//!
//! Conventions (LogGOPSim, `src/LogGOPSim/LogGOPSim.cpp` at commit
//! 76451de): a send started at `t` by a host CPU keeps the CPU until
//! `t + o` and the NIC until `t + g + (s-1)G`; its last byte arrives at
//! `t + o + L + (s-1)G`; the receiving CPU is done `o` later. The next send
//! of the same host starts at max(CPU free, NIC free). A send a NIC handler
//! issues has no `o` (its handler time covers it) but the same NIC gap.

use crate::params::{DmaParams, NetParams};

/// Switches and cables between two nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hops {
    pub switches: u32,
    pub wires: u32,
}

impl Hops {
    /// L for this path: cut-through switches, so serialisation is paid once
    /// (in `(s-1)G`), not per switch.
    pub fn latency_ns(self, p: &NetParams) -> f64 {
        self.switches as f64 * p.switch_ns + self.wires as f64 * p.wire_ns
    }
}

/// A fat tree of `ports`-port switches (half of each switch's ports down,
/// half up; a single switch uses all its ports for nodes), with the fewest
/// levels that hold `nodes`: a level-`l` tree holds 2 (ports/2)^l nodes
/// (36 ports: 36, 648, 11,664). Node `i` sits on leaf switch `i / (ports/2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatTree {
    pub ports: u32,
    pub levels: u32,
}

impl FatTree {
    pub fn for_nodes(ports: u32, nodes: u32) -> FatTree {
        let half = (ports / 2).max(2) as u64;
        let mut levels = 1;
        while 2 * half.pow(levels) < nodes as u64 {
            levels += 1;
        }
        FatTree { ports, levels }
    }

    /// Path between nodes `a` and `b`: up to the lowest level whose subtree
    /// holds both (a subtree of level `j` holds (ports/2)^j nodes; the top
    /// level holds all), and down again.
    pub fn hops(&self, a: u32, b: u32) -> Hops {
        if a == b {
            return Hops {
                switches: 0,
                wires: 0,
            };
        }
        let half = (self.ports / 2).max(2) as u64;
        let mut j = 1;
        while j < self.levels && a as u64 / half.pow(j) != b as u64 / half.pow(j) {
            j += 1;
        }
        Hops {
            switches: 2 * j - 1,
            wires: 2 * j,
        }
    }

    /// The longest path: through the top level.
    pub fn diameter(&self) -> Hops {
        Hops {
            switches: 2 * self.levels - 1,
            wires: 2 * self.levels,
        }
    }
}

/// The binomial tree of LogGOPSim's `schedgen -p binomialtreebcast` (root
/// 0): node `v` receives from `v - 2^r` where 2^r <= v < 2^(r+1), and
/// sends to `v + 2^r` for every 2^r > v, nearest first, which is the
/// largest subtree first.
pub fn binomial_children(v: u32, nodes: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut b: u64 = 1;
    while b <= v as u64 {
        b <<= 1;
    }
    while v as u64 + b < nodes as u64 {
        out.push(v + b as u32);
        b <<= 1;
    }
    out
}

/// The same tree, farthest child first (smallest subtree first): the order
/// `examples/cluster/broadcast` once sent in by mistake, kept to show what
/// it cost (one send per level).
pub fn binomial_children_far_first(v: u32, nodes: u32) -> Vec<u32> {
    let mut c = binomial_children(v, nodes);
    c.reverse();
    c
}

/// A tree `Bcast::children` describes that the walk cannot use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("node {parent} lists child {child}, not in {parent}+1..{nodes}")]
    BadChild { parent: u32, child: u32, nodes: u32 },
    #[error("node {node} has {parents} parents (every node but the root needs one)")]
    Parents { node: u32, parents: u32 },
}

/// Every child above its parent and below `nodes`, every node but the root
/// with exactly one parent.
fn check_tree(b: &Bcast) -> Result<(), TreeError> {
    let mut parents = vec![0u32; b.nodes as usize];
    for v in 0..b.nodes {
        for c in (b.children)(v) {
            if c <= v || c >= b.nodes {
                return Err(TreeError::BadChild {
                    parent: v,
                    child: c,
                    nodes: b.nodes,
                });
            }
            parents[c as usize] += 1;
        }
    }
    match parents.iter().enumerate().skip(1).find(|(_, &k)| k != 1) {
        Some((node, &k)) => Err(TreeError::Parents {
            node: node as u32,
            parents: k,
        }),
        None => Ok(()),
    }
}

/// Time to write or read `bytes` through a DMA path (seed 004 §4.3: a
/// LogGP system with o = g = 0): L + bytes / bandwidth.
pub fn dma_ns(d: &DmaParams, bytes: u64) -> f64 {
    d.latency_ns + bytes as f64 * 1e9 / (d.bandwidth_gib_s * (1u64 << 30) as f64)
}

/// G in ns per byte.
fn big_g(p: &NetParams) -> f64 {
    p.link_ps_per_byte() / 1000.0
}

/// A broadcast's inputs besides the parameters. `children(v)` lists `v`'s
/// children in send order, and every child's rank is above its parent's
/// (true of `binomial_children`).
pub struct Bcast<'a> {
    pub nodes: u32,
    pub size: u64,
    pub hops: &'a dyn Fn(u32, u32) -> Hops,
    pub children: &'a dyn Fn(u32) -> Vec<u32>,
    /// Delivery into host memory (seed 004 §4.3: added for every message in
    /// RDMA, and when a sPIN handler DMAs a packet); `None` leaves it out,
    /// as LogGOPSim does.
    pub dma: Option<&'a DmaParams>,
}

/// The host-CPU broadcast (`rdma`): every node's CPU receives the message
/// (o), then sends it to its children (o each, NIC gap between them); a
/// hop costs o + L(a, b) + (s-1)G [+ DMA into host memory] + o. Returns
/// the time the last CPU is done, LogGOPSim's "max over hosts". With
/// `dma: None` and uniform hops this is what LogGOPSim computes.
pub fn rdma_bcast_ns(p: &NetParams, b: &Bcast) -> Result<f64, TreeError> {
    check_tree(b)?;
    let n = b.nodes as usize;
    let (o, g, gb) = (p.o_ns, p.g_ns, big_g(p));
    let tail = b.size.saturating_sub(1) as f64 * gb;
    let dma = b.dma.map_or(0.0, |d| dma_ns(d, b.size));
    let mut recv_done = vec![0.0f64; n];
    let mut end: f64 = 0.0;
    for v in 0..b.nodes {
        let (mut cpu, mut nic) = (recv_done[v as usize], recv_done[v as usize]);
        for c in (b.children)(v) {
            let start = cpu.max(nic);
            cpu = start + o;
            nic = start + g + tail;
            recv_done[c as usize] = start + o + (b.hops)(v, c).latency_ns(p) + tail + dma + o;
        }
        end = end.max(cpu).max(recv_done[v as usize]);
    }
    Ok(end)
}

/// How a sPIN NIC forwards (seed 004 §4.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forwarding {
    /// Each packet's payload handler forwards it to the children as it
    /// arrives, in message order.
    Streaming,
    /// The whole message lands first. One packet: the completion handler
    /// (after the payload handler) puts it from the device. More: the
    /// message is DMAed to host memory and put from host.
    Store,
}

/// The offloaded broadcast: the root's host puts the message to each child
/// (as `rdma_bcast_ns` sends); every other node's NIC forwards it, each
/// forwarding `handler_ns` after the packet (or message) is ready, each
/// copy taking the NIC for g + (len-1)G. A node is done when its last
/// packet is handled (+ its DMA into host memory when `dma` is given).
/// Enough HPUs are assumed that no packet waits for one.
///
/// Single packet, uniform hops L, N = 2^k, largest subtree first:
/// streaming = o + k (L + (s-1)G + h), store = that + (k-1) h.
pub fn spin_bcast_ns(
    p: &NetParams,
    b: &Bcast,
    handler_ns: f64,
    mode: Forwarding,
) -> Result<f64, TreeError> {
    check_tree(b)?;
    let n = b.nodes as usize;
    let (o, g, gb) = (p.o_ns, p.g_ns, big_g(p));
    let mtu = p.mtu as u64;
    // (offset, len) of each packet; an empty message is one empty packet.
    let packets: Vec<(u64, u64)> = if b.size == 0 {
        vec![(0, 0)]
    } else {
        (0..b.size.div_ceil(mtu))
            .map(|k| (k * mtu, mtu.min(b.size - k * mtu)))
            .collect()
    };
    let last = packets.len() - 1;
    let dma_pkt = |len: u64| b.dma.map_or(0.0, |d| dma_ns(d, len));
    // arrival[v][k]: when packet k's last byte reached node v.
    let mut arrival = vec![Vec::<f64>::new(); n];
    let mut end: f64 = 0.0;
    for v in 0..b.nodes {
        let kids = (b.children)(v);
        // A whole message whose first byte leaves at `start`: packet k's
        // last byte arrives (off + len - 1)G after it, plus L.
        let whole = |c: u32, start: f64| -> Vec<f64> {
            let l = (b.hops)(v, c).latency_ns(p);
            packets
                .iter()
                .map(|&(off, len)| start + l + (off + len).saturating_sub(1) as f64 * gb)
                .collect()
        };
        if v == 0 {
            // The root's host puts the whole message to each child.
            let (mut cpu, mut nic) = (0.0f64, 0.0f64);
            for &c in &kids {
                let start = cpu.max(nic);
                cpu = start + o;
                nic = start + g + b.size.saturating_sub(1) as f64 * gb;
                arrival[c as usize] = whole(c, start + o);
            }
            end = end.max(cpu);
            continue;
        }
        let a = std::mem::take(&mut arrival[v as usize]);
        let done = a[last] + handler_ns + dma_pkt(packets[last].1);
        end = end.max(done);
        if kids.is_empty() {
            continue;
        }
        let mut nic = 0.0f64;
        match mode {
            Forwarding::Streaming => {
                let mut starts = vec![vec![0.0; packets.len()]; kids.len()];
                for (k, &(_, len)) in packets.iter().enumerate() {
                    for (i, _) in kids.iter().enumerate() {
                        let start = (a[k] + handler_ns).max(nic);
                        nic = start + g + len.saturating_sub(1) as f64 * gb;
                        starts[i][k] = start;
                    }
                }
                for (i, &c) in kids.iter().enumerate() {
                    let l = (b.hops)(v, c).latency_ns(p);
                    arrival[c as usize] = packets
                        .iter()
                        .enumerate()
                        .map(|(k, &(_, len))| starts[i][k] + l + len.saturating_sub(1) as f64 * gb)
                        .collect();
                }
            }
            Forwarding::Store => {
                let ready = if packets.len() == 1 {
                    a[last] + 2.0 * handler_ns
                } else {
                    // Payload handler, message into host memory, completion
                    // handler, then the put from host reads the first chunk.
                    a[last]
                        + handler_ns
                        + b.dma.map_or(0.0, |d| dma_ns(d, b.size))
                        + handler_ns
                        + b.dma.map_or(0.0, |d| d.latency_ns)
                };
                for &c in &kids {
                    let start = ready.max(nic);
                    nic = start + g + b.size.saturating_sub(1) as f64 * gb;
                    arrival[c as usize] = whole(c, start);
                }
            }
        }
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round numbers, so the expectations below are computed by hand:
    /// o = 100, g = 10, G = 1 ns/B, L = 1000 (one switch, no wire).
    fn round() -> NetParams {
        NetParams {
            o_ns: 100.0,
            g_ns: 10.0,
            link_gib_s: 1e9 / (1u64 << 30) as f64,
            switch_ns: 1000.0,
            wire_ns: 0.0,
            mtu: 64,
            ..NetParams::sc17()
        }
    }

    fn one_switch(_: u32, _: u32) -> Hops {
        Hops {
            switches: 1,
            wires: 0,
        }
    }

    fn bcast<'a>(nodes: u32, size: u64, children: &'a dyn Fn(u32) -> Vec<u32>) -> Bcast<'a> {
        Bcast {
            nodes,
            size,
            hops: &one_switch,
            children,
            dma: None,
        }
    }

    #[test]
    fn fat_tree_levels_and_hops() {
        assert_eq!(FatTree::for_nodes(36, 36).levels, 1);
        assert_eq!(FatTree::for_nodes(36, 37).levels, 2);
        assert_eq!(FatTree::for_nodes(36, 648).levels, 2);
        assert_eq!(FatTree::for_nodes(36, 649).levels, 3);
        assert_eq!(FatTree::for_nodes(36, 1024).levels, 3);
        let one = FatTree::for_nodes(36, 36);
        assert_eq!(
            one.hops(0, 35),
            Hops {
                switches: 1,
                wires: 2
            }
        );
        let t = FatTree::for_nodes(36, 1024);
        assert_eq!(
            t.hops(0, 17),
            Hops {
                switches: 1,
                wires: 2
            }
        );
        assert_eq!(
            t.hops(0, 18),
            Hops {
                switches: 3,
                wires: 4
            }
        );
        assert_eq!(
            t.hops(0, 323),
            Hops {
                switches: 3,
                wires: 4
            }
        );
        assert_eq!(
            t.hops(0, 324),
            Hops {
                switches: 5,
                wires: 6
            }
        );
        assert_eq!(
            t.hops(5, 5),
            Hops {
                switches: 0,
                wires: 0
            }
        );
        assert_eq!(
            t.diameter(),
            Hops {
                switches: 5,
                wires: 6
            }
        );
        // sc17: 5 x 50 + 6 x 33.4 ns.
        assert!((t.diameter().latency_ns(&NetParams::sc17()) - 450.4).abs() < 1e-9);
    }

    #[test]
    fn binomial_tree_is_schedgens() {
        assert_eq!(binomial_children(0, 8), vec![1, 2, 4]);
        assert_eq!(binomial_children(1, 8), vec![3, 5]);
        assert_eq!(binomial_children(3, 8), vec![7]);
        assert_eq!(binomial_children(4, 8), Vec::<u32>::new());
        assert_eq!(binomial_children(0, 3), vec![1, 2]);
        assert_eq!(binomial_children(1, 3), Vec::<u32>::new());
        // Every node but the root has exactly one parent, below it.
        let n = 1000;
        let mut parents = vec![0; n as usize];
        for v in 0..n {
            for c in binomial_children(v, n) {
                assert!(c > v);
                parents[c as usize] += 1;
            }
        }
        assert!(parents[1..].iter().all(|&k| k == 1));
    }

    #[test]
    fn rdma_matches_hand_computed_loggopsim_times() {
        let kids8 = |v| binomial_children(v, 8);
        // A hop: o + L + 7 G + o = 1207; the deepest node (7) is three
        // first-children down: 3 x 1207. LogGOPSim at 76451de prints the
        // same (L=1000 o=100 g=10 G=1, schedgen binomialtreebcast -s 8 -d 8).
        assert_eq!(
            rdma_bcast_ns(&round(), &bcast(8, 8, &kids8)).unwrap(),
            3621.0
        );
        // Three nodes: node 2 is the root's second send (after o = 100):
        // 100 + 1207.
        let kids3 = |v| binomial_children(v, 3);
        assert_eq!(
            rdma_bcast_ns(&round(), &bcast(3, 8, &kids3)).unwrap(),
            1307.0
        );
        // Two nodes, 1 KiB: o + L + 1023 G + o.
        let kids2 = |v| binomial_children(v, 2);
        assert_eq!(
            rdma_bcast_ns(&round(), &bcast(2, 1024, &kids2)).unwrap(),
            2223.0
        );
        // DMA into host memory adds L_dma + s / bandwidth per hop.
        let d = DmaParams {
            latency_ns: 250.0,
            bandwidth_gib_s: 1e9 / (1u64 << 30) as f64,
        };
        let mut b = bcast(2, 1024, &kids2);
        b.dma = Some(&d);
        assert!((rdma_bcast_ns(&round(), &b).unwrap() - (2223.0 + 250.0 + 1024.0)).abs() < 1e-6);
    }

    #[test]
    fn spin_single_packet_hand_computed() {
        let kids4 = |v| binomial_children(v, 4);
        let b = bcast(4, 8, &kids4);
        // Root put to 1 at 0: last byte at 100 + 1000 + 7 = 1107; node 1's
        // handler (50) forwards at 1157, node 3 has it at 2164, done 2214.
        // = o + 2 (L + 7G + h).
        assert_eq!(
            spin_bcast_ns(&round(), &b, 50.0, Forwarding::Streaming).unwrap(),
            2214.0
        );
        // Store and forward: payload then completion handler before the
        // put from device: one more h per forwarding level.
        assert_eq!(
            spin_bcast_ns(&round(), &b, 50.0, Forwarding::Store).unwrap(),
            2264.0
        );
        // The uniform closed form of the doc comment, N = 1024.
        let kids = |v| binomial_children(v, 1024);
        let b = bcast(1024, 8, &kids);
        let (o, l, h) = (100.0, 1000.0 + 7.0, 50.0);
        let stream = o + 10.0 * (l + h);
        assert_eq!(
            spin_bcast_ns(&round(), &b, h, Forwarding::Streaming).unwrap(),
            stream
        );
        assert_eq!(
            spin_bcast_ns(&round(), &b, h, Forwarding::Store).unwrap(),
            stream + 9.0 * h
        );
    }

    #[test]
    fn spin_streaming_two_packets_hand_computed() {
        // 128 B, MTU 64: two packets, 63 G behind each packet's first byte.
        let kids4 = |v| binomial_children(v, 4);
        let b = bcast(4, 128, &kids4);
        // Node 1: packets at 1163 and 1227. Its forwards: 1213 (NIC busy
        // until 1213 + 10 + 63 = 1286), then max(1277, 1286) = 1286; node 3
        // gets them at 2276 and 2349, done 2399. Node 2 (root's second put,
        // at max(o, g + 127 G) = 137) is done at 137 + 100 + 1000 + 127 +
        // 50 = 1414.
        assert_eq!(
            spin_bcast_ns(&round(), &b, 50.0, Forwarding::Streaming).unwrap(),
            2399.0
        );
    }

    #[test]
    fn per_pair_hops_change_the_answer() {
        // Same tree, node 3 two more switches away: +2000 on its path only.
        let kids4 = |v| binomial_children(v, 4);
        let far = |a: u32, b: u32| Hops {
            switches: if a == 1 && b == 3 { 3 } else { 1 },
            wires: 0,
        };
        let b = Bcast {
            hops: &far,
            ..bcast(4, 8, &kids4)
        };
        assert_eq!(
            spin_bcast_ns(&round(), &b, 50.0, Forwarding::Streaming).unwrap(),
            4214.0
        );
        assert_eq!(rdma_bcast_ns(&round(), &b).unwrap(), 2.0 * 1207.0 + 2000.0);
    }

    #[test]
    fn farthest_first_costs_one_send_per_level() {
        // N = 4, the root sends to 2 first, to 1 o = 100 later: node 1
        // forwards to 3 a send later than largest-first.
        assert_eq!(binomial_children_far_first(0, 4), vec![2, 1]);
        let far = |v| binomial_children_far_first(v, 4);
        let b = bcast(4, 8, &far);
        assert_eq!(rdma_bcast_ns(&round(), &b).unwrap(), 100.0 + 2.0 * 1207.0);
        // Node 1 has the packet at 100 + 100 + 1007 = 1207, forwards at
        // 1257; node 3 has it at 2264, done 2314.
        assert_eq!(
            spin_bcast_ns(&round(), &b, 50.0, Forwarding::Streaming).unwrap(),
            2314.0
        );
    }

    #[test]
    fn bad_trees_are_refused() {
        type Children<'a> = &'a dyn Fn(u32) -> Vec<u32>;
        let cases: [(Children, TreeError); 4] = [
            (
                &|v| if v == 0 { vec![1, 9] } else { vec![] },
                TreeError::BadChild {
                    parent: 0,
                    child: 9,
                    nodes: 3,
                },
            ),
            (
                &|v| if v == 2 { vec![1] } else { vec![] },
                TreeError::BadChild {
                    parent: 2,
                    child: 1,
                    nodes: 3,
                },
            ),
            (
                &|v| if v == 0 { vec![1] } else { vec![] },
                TreeError::Parents {
                    node: 2,
                    parents: 0,
                },
            ),
            (
                &|v| if v < 2 { vec![2] } else { vec![] },
                TreeError::Parents {
                    node: 1,
                    parents: 0,
                },
            ),
        ];
        for (kids, want) in cases {
            let b = bcast(3, 8, kids);
            assert_eq!(rdma_bcast_ns(&round(), &b), Err(want.clone()));
            assert_eq!(
                spin_bcast_ns(&round(), &b, 1.0, Forwarding::Store),
                Err(want)
            );
        }
    }

    /// LogGOPSim's own times (bench/scale/loggopsim.sh at commit 76451de,
    /// bench/results/loggopsim-sc17.json) against `rdma_bcast_ns` for the
    /// sc17 profile, L = the fat tree's diameter. G is rounded to 1 fs for
    /// LogGOPSim's integers, hence the tolerance. If the profile changes,
    /// re-run the script.
    #[test]
    fn rdma_matches_loggopsim_runs() {
        let text = include_str!("../../../bench/results/loggopsim-sc17.json");
        let field = |row: &str, name: &str| -> f64 {
            let at = row.find(&format!("\"{name}\": ")).unwrap() + name.len() + 4;
            let end = row[at..].find([',', '\n', '}']).unwrap();
            row[at..at + end].trim().parse().unwrap()
        };
        let p = NetParams::sc17();
        let rows: Vec<&str> = text.split("\"nodes\": ").skip(1).collect();
        assert_eq!(rows.len(), 20, "2..1024 nodes x {{8, 65536}} B");
        for row in rows {
            let row = format!("\"nodes\": {row}");
            let (n, s) = (field(&row, "nodes") as u32, field(&row, "size") as u64);
            let hops = FatTree::for_nodes(p.switch_ports, n).diameter();
            let uniform = move |_: u32, _: u32| hops;
            let kids = move |v: u32| binomial_children(v, n);
            let b = Bcast {
                nodes: n,
                size: s,
                hops: &uniform,
                children: &kids,
                dma: None,
            };
            let ours = rdma_bcast_ns(&p, &b).unwrap();
            let theirs = field(&row, "time_ns");
            assert!(
                (ours - theirs).abs() <= 1e-4 * theirs,
                "{n} nodes, {s} B: closed form {ours} ns, LogGOPSim {theirs} ns (profile changed? re-run bench/scale/loggopsim.sh)"
            );
        }
    }
}
