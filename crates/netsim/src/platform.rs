//! The network: a fat tree of `switch_ports`-port switches (seed 004 §4.2:
//! 36 ports), written as a SimGrid platform (`<cluster
//! topology="FAT_TREE">`), and the hop counts the closed-form checks use.
//!
//! The tree: a leaf switch gives half its ports to hosts and half to the
//! level above, and so does every middle level; the top level gives all
//! its ports to the level below. The smallest such tree with at least N
//! host ports is used: `levels` and the down-port counts `down` (SimGrid
//! needs the host count to be their product: hosts beyond N exist in the
//! platform but get no NIC and no traffic).
//!
//! L of LogGOPS onto SimGrid: every link (host-switch and switch-switch)
//! has latency `wire_ns + switch_ns`, so a path through h switches (h + 1
//! links) costs (h + 1) x (wire + switch): each cable's delay and one switch
//! traversal per switch, plus one more `switch_ns` for the two NIC ports'
//! MAC/PHY (a uniform per-link latency cannot give h switches on h + 1
//! links). Bandwidth: every link `link_gib_s`; a transfer of B bytes then
//! takes its path's latency plus B x G (CM02, factors 1, no cross-traffic).

use crate::params::NetParams;

/// The fat tree for N nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatTree {
    /// Nodes with a NIC (hosts 0..nodes).
    pub nodes: u32,
    /// Down ports per switch, level 1 (leaf) first.
    pub down: Vec<u32>,
    /// Up links per node, level 1 first (hosts have one NIC link).
    pub up: Vec<u32>,
}

impl FatTree {
    /// The smallest tree of `ports`-port switches with room for `nodes`
    /// hosts (`nodes` >= 1, `ports` even >= 4, as `NetParams::check` says).
    pub fn new(nodes: u32, ports: u32) -> FatTree {
        let half = ports / 2;
        // Capacity with L levels: half^(L-1) x ports.
        let mut levels = 1u32;
        while (half as u64).pow(levels - 1) * (ports as u64) < nodes as u64 {
            levels += 1;
        }
        if levels == 1 {
            return FatTree {
                nodes,
                down: vec![nodes.max(1)],
                up: vec![1],
            };
        }
        let below = (half as u64).pow(levels - 1);
        let top = (nodes as u64).div_ceil(below) as u32;
        let mut down = vec![half; levels as usize - 1];
        down.push(top);
        let mut up = vec![1];
        up.extend(std::iter::repeat_n(half, levels as usize - 1));
        FatTree { nodes, down, up }
    }

    pub fn levels(&self) -> u32 {
        self.down.len() as u32
    }

    /// Hosts in the platform (product of the down-port counts, >= nodes).
    pub fn hosts(&self) -> u64 {
        self.down.iter().map(|&d| d as u64).product()
    }

    /// Switches a packet from host `a` to host `b` crosses: 2l - 1, where
    /// level l is the lowest whose subtree holds both (0 for a == b).
    pub fn switch_hops(&self, a: u32, b: u32) -> u32 {
        if a == b {
            return 0;
        }
        let mut span = 1u64;
        for (l, &d) in self.down.iter().enumerate() {
            span *= d as u64;
            if a as u64 / span == b as u64 / span {
                return 2 * (l as u32 + 1) - 1;
            }
        }
        2 * self.levels() - 1
    }

    /// SimGrid's `topo_parameters`: "levels;down...;up...;parallel...".
    pub fn topo_parameters(&self) -> String {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let ones = vec![1u32; self.down.len()];
        format!(
            "{};{};{};{}",
            self.levels(),
            list(&self.down),
            list(&self.up),
            list(&ones)
        )
    }

    /// Per-link latency in seconds (see the module comment).
    pub fn link_latency_s(p: &NetParams) -> f64 {
        (p.wire_ns + p.switch_ns) * 1e-9
    }

    /// Link bandwidth in bytes per second.
    pub fn link_bytes_s(p: &NetParams) -> f64 {
        p.link_gib_s * (1u64 << 30) as f64
    }

    /// The platform XML. Host k is `n{k}`.
    pub fn xml(&self, p: &NetParams) -> String {
        format!(
            "<?xml version='1.0'?>\n\
             <!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
             <platform version=\"4.1\">\n\
             <cluster id=\"fattree\" prefix=\"n\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" \
             bw=\"{:e}Bps\" lat=\"{:e}s\" topology=\"FAT_TREE\" topo_parameters=\"{}\"/>\n\
             </platform>\n",
            self.hosts() - 1,
            Self::link_bytes_s(p),
            Self::link_latency_s(p),
            self.topo_parameters()
        )
    }

    /// Closed form of one transfer of `bytes` from host a to host b, in
    /// seconds: (hops + 1) links of latency, and the bytes at G.
    pub fn transfer_s(&self, p: &NetParams, a: u32, b: u32, bytes: u64) -> f64 {
        (self.switch_hops(a, b) + 1) as f64 * Self::link_latency_s(p)
            + bytes as f64 / Self::link_bytes_s(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_tree_that_holds_the_nodes() {
        assert_eq!(FatTree::new(2, 36).down, vec![2]);
        assert_eq!(FatTree::new(36, 36).down, vec![36]);
        assert_eq!(FatTree::new(37, 36).down, vec![18, 3]);
        assert_eq!(FatTree::new(648, 36).down, vec![18, 36]);
        assert_eq!(FatTree::new(1024, 36).down, vec![18, 18, 4]);
        assert_eq!(FatTree::new(16384, 36).down, vec![18, 18, 18, 3]);
        assert_eq!(FatTree::new(1024, 36).up, vec![1, 18, 18]);
        assert_eq!(
            FatTree::new(1024, 36).topo_parameters(),
            "3;18,18,4;1,18,18;1,1,1"
        );
        for n in [1, 2, 17, 36, 37, 100, 648, 649, 1024, 11664, 11665, 16384] {
            let t = FatTree::new(n, 36);
            assert!(t.hosts() >= n as u64, "{n}");
            assert!(*t.down.last().unwrap() <= 36, "{n}");
        }
    }

    /// Hops from the tree's definition: up to the lowest common switch and
    /// down again (the level where the two hosts' leaf numbers, divided by
    /// the subtree sizes, meet).
    #[test]
    fn switch_hops_on_a_two_level_tree() {
        let t = FatTree::new(100, 36); // 18 hosts per leaf, 6 leaves
        assert_eq!(t.switch_hops(0, 0), 0);
        assert_eq!(t.switch_hops(0, 17), 1, "same leaf");
        assert_eq!(t.switch_hops(0, 18), 3, "neighbour leaf");
        assert_eq!(t.switch_hops(99, 1), 3);
        let t = FatTree::new(1024, 36); // 18 per leaf, 324 per pod
        assert_eq!(t.switch_hops(5, 17), 1);
        assert_eq!(t.switch_hops(5, 323), 3);
        assert_eq!(t.switch_hops(5, 324), 5);
        assert_eq!(t.switch_hops(1023, 0), 5);
        let t = FatTree::new(20, 36);
        assert_eq!(t.switch_hops(0, 19), 1, "one switch");
    }
}
