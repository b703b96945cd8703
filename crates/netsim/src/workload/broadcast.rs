//! Broadcast on a binomial tree (seed 004 §4.4.3, Fig. 5a), the live use
//! case examples/cluster/broadcast on simulated NICs: rank 0's host sends
//! the message to its children (UC datagrams of at most UC_CHUNK bytes),
//! every other node's NIC writes it to host memory (UC_RX) and forwards it
//! to its children, per packet (`streaming` = the use case's `stream`) or
//! after the whole message (`store`); a node is done once its NIC wrote
//! the round's seq into UC_DONE. The baselines (Fig. 5a's RDMA and Portals
//! 4; docs/scale.md "Baselines"): the handlers only deposit
//! (UC_MODE_BC_DEPOSIT) and, once a node's NIC completed the message, its
//! host forwards it to the children (`rdma`: o per message, g apart) or
//! its pre-set triggered puts do (`portals`: no o, no handler).

use softspin_engine::traffic::{build_frame, FrameKind};
use softspin_engine::{Engine, NicConfig};

use super::{seeded_bytes, uc, HostSend, NicProgram, Workload, HOST_BASE};
use crate::node;

const BROADCAST_H: &str = include_str!("../../../../examples/cluster/broadcast/broadcast.h");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each payload handler forwards its packet (uc.h UC_MODE_BC_STREAM).
    Streaming,
    /// The completion handler forwards the whole message (UC_MODE_BC_STORE).
    Store,
    /// The host CPU forwards once the message landed (handlers deposit).
    Rdma,
    /// Triggered puts forward once the message landed, without a CPU.
    Portals,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "streaming" | "stream" => Ok(Mode::Streaming),
            "store" => Ok(Mode::Store),
            "rdma" => Ok(Mode::Rdma),
            "portals" => Ok(Mode::Portals),
            _ => Err(format!(
                "--mode {s}: broadcast runs `streaming`, `store`, `rdma` or `portals`"
            )),
        }
    }
}

/// The round's seq (the live run's first timed round is 1 too).
const SEQ: u32 = 1;

pub struct Broadcast {
    nodes: u32,
    size: usize,
    mode: Mode,
    data: Vec<u8>,
    /// What every node must hold (`data`, or with one bit flipped: sabotage).
    reference: Vec<u8>,
    program: NicProgram,
    c: Consts,
    /// The baselines' put from host: the DMA read of its first packet.
    read_first_ps: u64,
}

struct Consts {
    port: u16,
    chunk: usize,
    msg_bit: u32,
    rank_shift: u32,
    seq_mask: u32,
    eom: u32,
    magic: u16,
    mode: u16,
    rx: u64,
    done: u64,
}

impl Broadcast {
    /// `size` bytes from `seed`'s RNG; `sabotage` flips one bit of the
    /// reference (so the check must fail).
    pub fn new(
        nodes: u32,
        size: usize,
        mode: Mode,
        cfg: &NicConfig,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<Broadcast, String> {
        let bc = |n: &str| {
            super::header_define(BROADCAST_H, "examples/cluster/broadcast/broadcast.h", n)
        };
        let max = uc("UC_MAX_SIZE")? as usize;
        if size == 0 || size > max {
            return Err(format!(
                "--size {size}: broadcast takes 1 to {max} bytes (uc.h UC_MAX_SIZE)"
            ));
        }
        if nodes < 2 {
            return Err(format!("--nodes {nodes}: a broadcast needs at least 2"));
        }
        let c = Consts {
            port: uc("UC_PORT")? as u16,
            chunk: uc("UC_CHUNK")? as usize,
            msg_bit: uc("UC_MSG_BIT")? as u32,
            rank_shift: bc("UC_BC_RANK_SHIFT")? as u32,
            seq_mask: bc("UC_BC_SEQ_MASK")? as u32,
            eom: uc("UC_EOM")? as u32,
            magic: uc("UC_MAGIC")? as u16,
            mode: uc(match mode {
                Mode::Streaming => "UC_MODE_BC_STREAM",
                Mode::Store => "UC_MODE_BC_STORE",
                Mode::Rdma | Mode::Portals => "UC_MODE_BC_DEPOSIT",
            })? as u16,
            rx: uc("UC_RX")?,
            done: uc("UC_DONE")?,
        };
        let data = seeded_bytes(seed, size);
        let mut reference = data.clone();
        if sabotage {
            reference[size / 2] ^= 1;
        }
        let program = NicProgram::usecase(
            "broadcast",
            cfg,
            build_dir,
            super::uc_rules()?,
            c.port,
            uc("UC_WINDOW")?,
        )?;
        // Seed 004 §4.3: L_dma + bytes / bandwidth (bandwidth in Gb/s).
        let first = size.min(c.chunk) as f64;
        let read_first_ps = (cfg.host.latency_ns as f64 * 1e3
            + first * 8.0 / cfg.host.bandwidth_gbps * 1e3)
            .round() as u64;
        Ok(Broadcast {
            nodes,
            size,
            mode,
            data,
            reference,
            program,
            c,
            read_first_ps,
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Children of rank r, largest subtree first (broadcast.h's tree, the
    /// order `forward()` sends in: LogGOPSim's binomial tree).
    pub fn children(r: u32, n: u32) -> Vec<u32> {
        crate::loggp::binomial_children(r, n)
    }

    /// Node `from`'s sends of the whole message to each of its children,
    /// UC datagrams of at most UC_CHUNK bytes; `cpu`: the first of each
    /// child's message costs the sender's CPU o. (Public for tools that
    /// feed one node alone: examples/bcast_hop.rs.)
    pub fn sends_to_children(&self, from: u32, cpu: bool) -> Vec<HostSend> {
        let mut v = Vec::new();
        for child in Self::children(from, self.nodes) {
            let mut off = 0;
            while off < self.size {
                let len = self.c.chunk.min(self.size - off);
                // The sizes are checked in new(): a frame always builds.
                if let Ok(frame) = self.frame(from, child, off, len) {
                    v.push(HostSend {
                        to: child,
                        frame,
                        first_of_message: cpu && off == 0,
                    });
                }
                off += len;
            }
        }
        v
    }

    /// One UC datagram from node `from` to `child`: bytes [off, off + len).
    fn frame(&self, from: u32, child: u32, off: usize, len: usize) -> Result<Vec<u8>, String> {
        let c = &self.c;
        let hdr = 26usize; // uc.h UC_HDR
        let size = 14 + 20 + 8 + hdr + len;
        let mut f = build_frame(
            FrameKind::Eth,
            size,
            node::ipv4(from),
            node::ipv4(child),
            c.port,
            c.port,
            |_| 0,
        )
        .map_err(|e| e.to_string())?;
        f[0..6].copy_from_slice(&node::mac(child));
        f[6..12].copy_from_slice(&node::mac(from));
        let msg = c.msg_bit | child << c.rank_shift | (SEQ & c.seq_mask);
        let flags = if off + len == self.size { c.eom } else { 0 };
        let h = &mut f[42..];
        h[0..2].copy_from_slice(&c.magic.to_be_bytes());
        h[2..6].copy_from_slice(&msg.to_be_bytes());
        h[6..10].copy_from_slice(&flags.to_be_bytes());
        h[10..14].copy_from_slice(&SEQ.to_be_bytes());
        h[14..18].copy_from_slice(&(self.size as u32).to_be_bytes());
        h[18..22].copy_from_slice(&(off as u32).to_be_bytes());
        h[22..24].copy_from_slice(&(from as u16).to_be_bytes());
        h[24..26].copy_from_slice(&c.mode.to_be_bytes());
        h[26..].copy_from_slice(&self.data[off..off + len]);
        Ok(f)
    }

    fn done_word(&self, e: &mut Engine) -> Option<u64> {
        let mut w = [0u8; 8];
        e.host_memory()
            .read(HOST_BASE + self.c.done, &mut w)
            .then(|| u64::from_le_bytes(w))
    }
}

impl Workload for Broadcast {
    fn name(&self) -> &str {
        "broadcast"
    }

    fn program(&self) -> &NicProgram {
        &self.program
    }

    /// Its parent (r without its highest set bit) and its children.
    fn peers(&self, k: u32) -> Option<Vec<u32>> {
        let mut v = Broadcast::children(k, self.nodes);
        if k > 0 {
            v.push(k & !(1 << (31 - k.leading_zeros())));
        }
        Some(v)
    }

    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        if k != 0 {
            return Vec::new();
        }
        self.sends_to_children(0, true)
    }

    /// The baselines: once node k's NIC has the whole message in host
    /// memory (its done word written), the host (`rdma`, paying o per
    /// child) or the triggered puts (`portals`, no CPU) send it on.
    fn host_reacts(&self, k: u32, _msg_id: u32, engine: &mut Engine) -> Vec<HostSend> {
        let cpu = match self.mode {
            Mode::Rdma => true,
            Mode::Portals => false,
            Mode::Streaming | Mode::Store => return Vec::new(),
        };
        if k == 0 || self.done_word(engine) != Some(SEQ as u64) {
            return Vec::new();
        }
        self.sends_to_children(k, cpu)
    }

    /// Both baselines put from host memory (seed 004 §4.4.1: "the data is
    /// fetched via DMA from the CPU's main memory as in the RDMA case"):
    /// the first packet's DMA read comes before the first send; later
    /// packets' reads overlap the sends (PCIe's 64 GiB/s outruns the link).
    fn host_react_delay_ps(&self, _k: u32, _msg_id: u32, _now_ps: u64) -> u64 {
        match self.mode {
            Mode::Rdma | Mode::Portals => self.read_first_ps,
            Mode::Streaming | Mode::Store => 0,
        }
    }

    fn expected_done(&self) -> u32 {
        self.nodes - 1
    }

    fn node_done(&self, _k: u32, engine: &mut Engine) -> bool {
        self.done_word(engine) == Some(SEQ as u64)
    }

    fn verify(&self, k: u32, engine: Option<&mut Engine>) -> bool {
        if k == 0 {
            // The root's host memory holds the message it sent; its NIC
            // takes no part. The sabotaged reference still shows here.
            return self.reference == self.data;
        }
        let Some(e) = engine else {
            return false;
        };
        let mut got = vec![0u8; self.size];
        self.done_word(e) == Some(SEQ as u64)
            && e.host_memory().read(HOST_BASE + self.c.rx, &mut got)
            && got == self.reference
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// broadcast.h's definition: parent = r without its highest bit;
    /// children r + 2^k for 2^k > r.
    #[test]
    fn the_tree_is_the_use_cases() {
        // Largest subtree first: child 1 heads 8 nodes, child 8 only itself.
        assert_eq!(Broadcast::children(0, 16), vec![1, 2, 4, 8]);
        assert_eq!(Broadcast::children(1, 16), vec![3, 5, 9]);
        assert_eq!(Broadcast::children(3, 16), vec![7, 11]);
        assert_eq!(Broadcast::children(8, 16), Vec::<u32>::new());
        assert_eq!(Broadcast::children(0, 2), vec![1]);
        assert_eq!(Broadcast::children(2, 5), Vec::<u32>::new());
        for n in [2u32, 3, 7, 16, 100] {
            let mut seen = vec![0u32; n as usize];
            for r in 0..n {
                for c in Broadcast::children(r, n) {
                    let parent = c - (1 << (31 - c.leading_zeros()));
                    assert_eq!(parent, r, "n {n}: child {c}");
                    seen[c as usize] += 1;
                }
            }
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&s| s == 1), "n {n}: {seen:?}");
        }
    }
}
