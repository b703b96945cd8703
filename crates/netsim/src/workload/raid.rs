//! RAID-5 parity between hosts (seed 004 §5.3, Fig. 7c), the live use
//! case examples/cluster/raid on simulated NICs. Ranks as raid.h gives
//! them: node 0 the client, node 1 the parity node, nodes 2-5 the data
//! nodes (further nodes idle). The client's host sends one write of
//! `size` bytes striped over the data nodes (raid.h's packets: each
//! carries the store address, then up to UC_RAID_PER_PKT bytes); each data
//! node's NIC stages it, applies it to its store, puts the delta (old XOR
//! new) into the parity node by RMA, whose NIC XORs it into the parity, and
//! then puts its ack into the client's ack word. The run is done when the
//! client holds all four acks: Fig. 7c's latency.

use std::cell::RefCell;

use softspin_engine::{Engine, NicConfig};

use crate::params::NetParams;

use super::{seeded_bytes, uc, uc_frame, HostSend, NicProgram, Workload, HOST_BASE};

const RAID_H: &str = include_str!("../../../../examples/cluster/raid/raid.h");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The NICs' handlers do the parity update (the use case).
    Spin,
    /// The host CPUs do it (workers.py's baseline): the NICs run only
    /// raid_host_hh (nothing); each host answers its NIC's completed
    /// message after the message's DMA into host memory (latency plus
    /// bytes at the host link's bandwidth), its CPU's XOR and copy
    /// (`host_copy_gib_s`, one message after another) and `o`.
    Rdma,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "spin" => Ok(Mode::Spin),
            "rdma" => Ok(Mode::Rdma),
            _ => Err(format!("--mode {s}: raid runs `spin` or `rdma`")),
        }
    }
}

/// The seq of data node k's part is FIRST_SEQ + k (as the Python client
/// numbers them: one seq per data node's message).
const FIRST_SEQ: u32 = 1;

struct Consts {
    parity: u32,
    first_data: u32,
    data_nodes: u32,
    ranks: u32,
    per_pkt: usize,
    ack: u64,
    store: u64,
    store_size: usize,
    chunk: usize,
    mode_write: u16,
    mode_delta: u16,
    key: u32,
    window: u64,
}

pub struct Raid {
    nodes: u32,
    mode: Mode,
    /// The host link (rdma: a message's DMA into host memory).
    dma_latency_ps: u64,
    dma_bytes_per_ps: f64,
    /// rdma: the host CPU's copy/XOR rate, and when each node's CPU is
    /// free again (it works on one message at a time).
    host_copy_bytes_per_ps: f64,
    host_free_ps: RefCell<Vec<u64>>,
    size: usize,
    /// The write's store address (the same on every data node).
    addr: usize,
    /// The write's bytes.
    data: Vec<u8>,
    /// Data node k's store before the write.
    before: Vec<Vec<u8>>,
    /// The reference after it: each data node's store, then the parity
    /// (their XOR; one bit flipped by sabotage).
    after: Vec<Vec<u8>>,
    parity: Vec<u8>,
    program: NicProgram,
    c: Consts,
}

fn xor_of(stores: &[Vec<u8>]) -> Vec<u8> {
    let mut p = vec![0u8; stores[0].len()];
    for s in stores {
        for (a, b) in p.iter_mut().zip(s) {
            *a ^= b;
        }
    }
    p
}

impl Raid {
    /// The stores from `seed`'s RNG, the write's address and bytes from
    /// seeds derived from it; `sabotage` flips one bit of the reference
    /// parity (so the check must fail).
    #[allow(clippy::too_many_arguments)] // the other workloads' seven, and the parameters
    pub fn new(
        nodes: u32,
        size: usize,
        mode: Mode,
        cfg: &NicConfig,
        params: &NetParams,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<Raid, String> {
        let r = |n: &str| super::header_define(RAID_H, "examples/cluster/raid/raid.h", n);
        let c = Consts {
            parity: r("UC_RAID_PARITY")? as u32,
            first_data: r("UC_RAID_FIRST_DATA")? as u32,
            data_nodes: r("UC_RAID_DATA_NODES")? as u32,
            ranks: r("UC_RAID_RANKS")? as u32,
            per_pkt: r("UC_RAID_PER_PKT")? as usize,
            ack: r("UC_RAID_ACK")?,
            store: r("UC_RAID_STORE")?,
            store_size: r("UC_RAID_STORE_SIZE")? as usize,
            chunk: uc("UC_CHUNK")? as usize,
            mode_write: uc("UC_MODE_RAID_WRITE")? as u16,
            mode_delta: uc("UC_MODE_RAID_DELTA")? as u16,
            key: uc("UC_KEY")? as u32,
            window: uc("UC_WINDOW")?,
        };
        let d = c.data_nodes as usize;
        if nodes < c.ranks {
            return Err(format!(
                "--nodes {nodes}: raid needs {} (the client, the parity node, {d} data nodes; raid.h)",
                c.ranks
            ));
        }
        if size == 0 || !size.is_multiple_of(d) || size / d > c.store_size {
            return Err(format!(
                "--size {size}: raid writes a positive multiple of {d} bytes, at most {} (raid.h's store per data node)",
                d * c.store_size
            ));
        }
        let strip = size / d;
        let all = seeded_bytes(seed, d * c.store_size);
        let before: Vec<Vec<u8>> = all.chunks(c.store_size).map(|s| s.to_vec()).collect();
        let data = seeded_bytes(seed.wrapping_add(1), size);
        let a = u64::from_le_bytes(
            seeded_bytes(seed.wrapping_add(2), 8)
                .try_into()
                .unwrap_or_default(),
        );
        let addr = (a % (c.store_size - strip + 1) as u64) as usize;
        let mut after = before.clone();
        for (k, s) in after.iter_mut().enumerate() {
            s[addr..addr + strip].copy_from_slice(&data[k * strip..(k + 1) * strip]);
        }
        let mut parity = xor_of(&after);
        if sabotage {
            parity[addr + strip / 2] ^= 1;
        }
        // RMA at Ethernet's MTU, as live: each delta travels as one RMA
        // packet per write packet (UC_CHUNK, ~1.4 KiB), and a 4 KiB segment
        // would only pad it.
        let mut program = NicProgram::usecase_at_rma_mtu(
            "raid",
            cfg,
            build_dir,
            super::uc_rma_rules()?,
            uc("UC_PORT")? as u16,
            c.window,
            softspin_wire::rma::MTU as u32,
        )?;
        if mode == Mode::Rdma {
            // An ECTX needs a handler: rdma runs raid_host_hh, which does
            // nothing (the host CPUs do the work).
            program.hh = Some("raid_host_hh".into());
            (program.ph, program.th) = (None, None);
        }
        Ok(Raid {
            nodes,
            mode,
            dma_latency_ps: cfg.host.latency_ns * 1000,
            dma_bytes_per_ps: cfg.host.bandwidth_gbps / 8e3,
            host_copy_bytes_per_ps: params.host_copy_gib_s * (1u64 << 30) as f64 / 1e12,
            host_free_ps: RefCell::new(vec![0; nodes as usize]),
            size,
            addr,
            data,
            before,
            after,
            parity,
            program,
            c,
        })
    }

    fn is_data(&self, k: u32) -> bool {
        k >= self.c.first_data && k < self.c.first_data + self.c.data_nodes
    }

    fn strip(&self) -> usize {
        self.size / self.c.data_nodes as usize
    }

    /// raid.h's stream of `bytes` for store address `addr` (per packet the
    /// address, then its bytes) cut into UC_CHUNK datagrams, `from` -> `to`.
    fn stream_frames(
        &self,
        from: u32,
        to: u32,
        seq: u32,
        mode: u16,
        bytes: &[u8],
    ) -> Result<Vec<HostSend>, String> {
        let mut stream = Vec::with_capacity(bytes.len() + bytes.len().div_ceil(self.c.per_pkt) * 4);
        for part in bytes.chunks(self.c.per_pkt) {
            stream.extend_from_slice(&(self.addr as u32).to_be_bytes());
            stream.extend_from_slice(part);
        }
        let mut v = Vec::new();
        for (i, d) in stream.chunks(self.c.chunk).enumerate() {
            v.push(HostSend {
                to,
                frame: uc_frame(from, to, seq, stream.len(), i * self.c.chunk, mode, d)?,
                first_of_message: i == 0,
            });
        }
        Ok(v)
    }

    /// Data node `node`'s part of the write, from the client.
    fn write_frames(&self, node: u32) -> Result<Vec<HostSend>, String> {
        let k = (node - self.c.first_data) as usize;
        let strip = self.strip();
        let bytes = &self.data[k * strip..(k + 1) * strip];
        self.stream_frames(0, node, FIRST_SEQ + k as u32, self.c.mode_write, bytes)
    }

    /// rdma: an ack (8 bytes, seq | status 0 << 32) `from` -> `to`.
    fn ack_frame(&self, from: u32, to: u32, seq: u32) -> Vec<HostSend> {
        let w = u64::from(seq).to_le_bytes();
        uc_frame(from, to, seq, w.len(), 0, self.c.mode_delta, &w)
            .map(|frame| {
                vec![HostSend {
                    to,
                    frame,
                    first_of_message: true,
                }]
            })
            .unwrap_or_default()
    }

    /// rdma: bytes of a message's uc payload (what the NIC DMAs to the host).
    fn payload_bytes(&self, src: u32) -> usize {
        if src == 0 || (self.is_data(src)) {
            // A write from the client or a delta to the parity: the stream.
            let s = self.strip();
            s + s.div_ceil(self.c.per_pkt) * 4
        } else {
            8
        }
    }

    /// rdma: the host CPU's time for a message from `src` at node k, in
    /// passes over the strip at `host_copy_gib_s`: a data node XORs old and
    /// new into the delta and copies the new bytes into its store (2), the
    /// parity node XORs a delta into the parity (1); acks cost nothing.
    fn host_cpu_ps(&self, k: u32, src: u32) -> u64 {
        let passes = if self.is_data(k) && src == 0 {
            2
        } else if k == self.c.parity && self.is_data(src) {
            1
        } else {
            0
        };
        (passes as f64 * self.strip() as f64 / self.host_copy_bytes_per_ps).round() as u64
    }

    /// rdma: host k does what the handlers do, for a message from `src`.
    fn host_does(&self, k: u32, src: u32, seq: u32, e: &mut Engine) -> Vec<HostSend> {
        let strip = self.strip();
        let at = HOST_BASE + self.c.store + self.addr as u64;
        if self.is_data(k) && src == 0 {
            // The client's write: old XOR new to the parity, the store updated.
            let i = (k - self.c.first_data) as usize;
            let new = &self.data[i * strip..(i + 1) * strip];
            let mut old = vec![0u8; strip];
            if !e.host_memory().read(at, &mut old) || !e.host_memory().write(at, new) {
                return Vec::new();
            }
            for (o, n) in old.iter_mut().zip(new) {
                *o ^= n;
            }
            let mode = self.c.mode_delta;
            return self
                .stream_frames(k, self.c.parity, seq, mode, &old)
                .unwrap_or_default();
        }
        if k == self.c.parity && self.is_data(src) {
            // A delta: XORed into the parity, then acked.
            let i = (src - self.c.first_data) as usize;
            let new = &self.data[i * strip..(i + 1) * strip];
            let mut par = vec![0u8; strip];
            if !e.host_memory().read(at, &mut par) {
                return Vec::new();
            }
            let old = &self.before[i][self.addr..self.addr + strip];
            for ((p, o), n) in par.iter_mut().zip(old).zip(new) {
                *p ^= o ^ n;
            }
            if !e.host_memory().write(at, &par) {
                return Vec::new();
            }
            return self.ack_frame(k, src, seq);
        }
        if self.is_data(k) && src == self.c.parity {
            return self.ack_frame(k, 0, seq);
        }
        if k == 0 && self.is_data(src) {
            let w = u64::from(seq).to_le_bytes();
            e.host_memory()
                .write(HOST_BASE + self.c.ack + 8 * u64::from(src), &w);
        }
        Vec::new()
    }

    fn read(e: &mut Engine, at: u64, n: usize) -> Option<Vec<u8>> {
        let mut b = vec![0u8; n];
        e.host_memory().read(HOST_BASE + at, &mut b).then_some(b)
    }

    /// Every data node's ack word holds its seq with status 0 (RMA_STATUS_OK).
    fn acked(&self, e: &mut Engine) -> bool {
        (0..self.c.data_nodes).all(|k| {
            let r = self.c.first_data + k;
            Self::read(e, self.c.ack + 8 * r as u64, 8)
                .is_some_and(|w| w == u64::from(FIRST_SEQ + k).to_le_bytes())
        })
    }
}

impl Workload for Raid {
    fn name(&self) -> &str {
        "raid"
    }

    fn program(&self) -> &NicProgram {
        &self.program
    }

    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        if k != 0 {
            return Vec::new();
        }
        // The sizes were checked in new(): the frames always build.
        (0..self.c.data_nodes)
            .flat_map(|d| self.write_frames(self.c.first_data + d).unwrap_or_default())
            .collect()
    }

    fn host_reacts(&self, k: u32, msg_id: u32, engine: &mut Engine) -> Vec<HostSend> {
        if self.mode != Mode::Rdma {
            return Vec::new();
        }
        // uc.h's message id: UC_MSG_BIT | src << 20 | seq.
        self.host_does(k, msg_id >> 20 & 0x7ff, msg_id & 0xF_FFFF, engine)
    }

    fn host_react_delay_ps(&self, k: u32, msg_id: u32, now_ps: u64) -> u64 {
        if self.mode != Mode::Rdma {
            return 0;
        }
        let src = msg_id >> 20 & 0x7ff;
        let n = self.payload_bytes(src) as f64;
        let landed = now_ps + self.dma_latency_ps + (n / self.dma_bytes_per_ps).round() as u64;
        let mut free = self.host_free_ps.borrow_mut();
        let Some(f) = free.get_mut(k as usize) else {
            return landed - now_ps;
        };
        let start = landed.max(*f);
        *f = start + self.host_cpu_ps(k, src);
        // Every reaction sends (a delta or an ack) by a put from host: the
        // NIC's DMA read of its first packet, as broadcast's baselines pay.
        let first = if self.is_data(k) && src == 0 {
            self.strip().min(self.c.chunk)
        } else {
            8
        } as f64;
        *f + self.dma_latency_ps + (first / self.dma_bytes_per_ps).round() as u64 - now_ps
    }

    /// The RMA transport and window (`cluster up --rma`), and the stores
    /// and the parity as the Python client sets them before its writes.
    fn setup_engine(
        &self,
        k: u32,
        engine: &mut Engine,
        ectx: softspin_engine::EctxId,
    ) -> Result<(), String> {
        if self.mode == Mode::Spin {
            super::setup_rma(
                k,
                engine,
                ectx,
                &self.program.image,
                self.c.key,
                self.c.window,
            )?;
        }
        let init = if self.is_data(k) {
            Some(self.before[(k - self.c.first_data) as usize].clone())
        } else if k == self.c.parity {
            Some(xor_of(&self.before))
        } else {
            None
        };
        if let Some(b) = init {
            if !engine.host_memory().write(HOST_BASE + self.c.store, &b) {
                return Err(format!("node {k}: the store is not host memory"));
            }
        }
        Ok(())
    }

    fn expected_done(&self) -> u32 {
        1
    }

    fn node_done(&self, k: u32, engine: &mut Engine) -> bool {
        k == 0 && self.acked(engine)
    }

    fn verify(&self, k: u32, engine: Option<&mut Engine>) -> bool {
        let want = if self.is_data(k) {
            &self.after[(k - self.c.first_data) as usize]
        } else if k == self.c.parity {
            &self.parity
        } else if k == 0 {
            return engine.is_some_and(|e| self.acked(e));
        } else {
            // Idle nodes beyond raid.h's ranks: their NICs must not run.
            return engine.is_none() && k < self.nodes;
        };
        engine.is_some_and(|e| {
            Self::read(e, self.c.store, self.c.store_size).is_some_and(|got| &got == want)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// raid.h's packets: 1408-byte datagrams, each the address and 1404
    /// bytes, the last one shorter and flagged; uc offsets on the grid.
    #[test]
    fn a_write_is_cut_as_the_clients() {
        let per = 1404usize;
        let strip = 2 * per + 10;
        let mut stream = Vec::new();
        for part in vec![7u8; strip].chunks(per) {
            stream.extend_from_slice(&5u32.to_be_bytes());
            stream.extend_from_slice(part);
        }
        assert_eq!(stream.len(), 3 * 4 + strip);
        let sizes: Vec<usize> = stream.chunks(1408).map(|c| c.len()).collect();
        assert_eq!(sizes, vec![1408, 1408, 14]);
        assert_eq!(&stream[1408..1412], &5u32.to_be_bytes());
        assert_eq!(xor_of(&[vec![1, 2], vec![3, 4]]), vec![2, 6]);
    }
}
