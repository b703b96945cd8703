//! Ping-pong three ways (seed 004 §4.4.1, Fig. 3b/3c), the live use case
//! examples/cluster/pingpong on simulated NICs: node 0's host sends the
//! ping (UC datagrams of at most UC_CHUNK bytes) to the peer, the node at
//! the far side of the fat tree (the last one); the peer's NIC answers, its
//! host CPU never does:
//! - `device`: one packet; the header handler puts it from NIC memory into
//!   the pinger's UC_PONG (an RMA put), then the round's seq into UC_DONE;
//! - `host`: payload handlers DMA the ping into the peer's UC_RX, the
//!   completion handler puts it from host memory into the pinger's UC_PONG;
//! - `stream`: each payload handler sends its packet back to the pinger's
//!   socket, which the pinger's host receives (not its NIC's rules).
//!
//! Completion is the round trip: the pinger's UC_DONE holding the seq
//! (device, host), or its host holding the last pong datagram (stream).

use std::cell::RefCell;

use softspin_engine::traffic::{build_frame, FrameKind};
use softspin_engine::{EctxId, Engine, NicConfig};

use super::{seeded_bytes, uc, HostSend, NicProgram, Workload, HOST_BASE};
use crate::node;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The header handler puts the one-packet ping from device (UC_MODE_DEVICE).
    Device,
    /// The completion handler puts the whole ping from host memory (UC_MODE_HOST).
    Host,
    /// Each payload handler sends its packet back (UC_MODE_STREAM).
    Stream,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "device" => Ok(Mode::Device),
            "host" => Ok(Mode::Host),
            "stream" | "streaming" => Ok(Mode::Stream),
            _ => Err(format!(
                "--mode {s}: ping-pong runs `device`, `host` or `stream`"
            )),
        }
    }
}

/// The round's seq (the live run's first round is 1 too).
pub(crate) const SEQ: u32 = 1;

/// The pinger's socket port: not UC_PORT (so the stream pongs, sent back to
/// it, are its host's and not its NIC's) nor RMA's; an ephemeral port, as
/// the live pinger's kernel socket has.
pub(crate) const SOCKET_PORT: u16 = 49152;

/// The use cases' wire constants (uc.h), read once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UcConsts {
    pub port: u16,
    pub chunk: usize,
    pub msg_bit: u32,
    pub eom: u32,
    pub magic: u16,
    pub rx: u64,
    pub pong: u64,
    pub done: u64,
    pub key: u32,
    pub window: u64,
}

impl UcConsts {
    pub fn read() -> Result<UcConsts, String> {
        Ok(UcConsts {
            port: uc("UC_PORT")? as u16,
            chunk: uc("UC_CHUNK")? as usize,
            msg_bit: uc("UC_MSG_BIT")? as u32,
            eom: uc("UC_EOM")? as u32,
            magic: uc("UC_MAGIC")? as u16,
            rx: uc("UC_RX")?,
            pong: uc("UC_PONG")?,
            done: uc("UC_DONE")?,
            key: uc("UC_KEY")? as u32,
            window: uc("UC_WINDOW")?,
        })
    }

    /// One UC datagram of a message of `data` from `src`'s socket to
    /// `dst`'s UC_PORT: bytes [off, off + len) (common.py `packets`).
    pub fn frame(
        &self,
        src: u32,
        dst: u32,
        mode: u16,
        data: &[u8],
        off: usize,
        len: usize,
    ) -> Result<Vec<u8>, String> {
        let hdr = 26usize; // uc.h UC_HDR
        let size = 14 + 20 + 8 + hdr + len;
        let mut f = build_frame(
            FrameKind::Eth,
            size,
            node::ipv4(src),
            node::ipv4(dst),
            SOCKET_PORT,
            self.port,
            |_| 0,
        )
        .map_err(|e| e.to_string())?;
        f[0..6].copy_from_slice(&node::mac(dst));
        f[6..12].copy_from_slice(&node::mac(src));
        let msg = self.msg_bit | src << 20 | (SEQ & 0xF_FFFF);
        let flags = if off + len == data.len() { self.eom } else { 0 };
        let h = &mut f[42..];
        h[0..2].copy_from_slice(&self.magic.to_be_bytes());
        h[2..6].copy_from_slice(&msg.to_be_bytes());
        h[6..10].copy_from_slice(&flags.to_be_bytes());
        h[10..14].copy_from_slice(&SEQ.to_be_bytes());
        h[14..18].copy_from_slice(&(data.len() as u32).to_be_bytes());
        h[18..22].copy_from_slice(&(off as u32).to_be_bytes());
        h[22..24].copy_from_slice(&(src as u16).to_be_bytes());
        h[24..26].copy_from_slice(&mode.to_be_bytes());
        h[26..].copy_from_slice(&data[off..off + len]);
        Ok(f)
    }

    /// A whole message from `src`'s host to `dst`, packet by packet.
    pub fn message(&self, src: u32, dst: u32, mode: u16, data: &[u8]) -> Vec<HostSend> {
        let mut v = Vec::new();
        let mut off = 0;
        while off < data.len() {
            let len = self.chunk.min(data.len() - off);
            // Sizes are checked by the workloads' new(): a frame always builds.
            if let Ok(frame) = self.frame(src, dst, mode, data, off, len) {
                v.push(HostSend {
                    to: dst,
                    frame,
                    first_of_message: off == 0,
                });
            }
            off += len;
        }
        v
    }

    /// The use cases' rules plus RMA's (its own port, every datagram a
    /// message, numbered in arrival order), as `softspin cluster up --rma`
    /// gives each NIC.
    pub fn rules_with_rma() -> Result<String, String> {
        super::uc_rma_rules()
    }

    /// Node k's RMA transport as rank k and its host window exported under
    /// UC_KEY (what `softspin cluster up --rma --window` does).
    pub fn setup_rma(
        &self,
        k: u32,
        e: &mut Engine,
        ectx: EctxId,
        program: &NicProgram,
    ) -> Result<(), String> {
        super::setup_rma(k, e, ectx, &program.image, self.key, self.window)
    }

    /// The u64 at `off` in a node's host window.
    pub fn word(&self, e: &mut Engine, off: u64) -> Option<u64> {
        let mut w = [0u8; 8];
        e.host_memory()
            .read(HOST_BASE + off, &mut w)
            .then(|| u64::from_le_bytes(w))
    }

    /// `n` bytes at `off` in a node's host window.
    pub fn bytes(&self, e: &mut Engine, off: u64, n: usize) -> Option<Vec<u8>> {
        let mut v = vec![0u8; n];
        e.host_memory().read(HOST_BASE + off, &mut v).then_some(v)
    }
}

/// The stream pongs the pinger's host received.
struct Pongs {
    bytes: Vec<u8>,
    /// Per UC_CHUNK piece: received (a duplicate is not counted twice).
    got: Vec<bool>,
    /// Datagrams the pinger's host took that were not a pong piece.
    strays: u64,
}

pub struct PingPong {
    peer: u32,
    size: usize,
    mode: Mode,
    data: Vec<u8>,
    /// What the pinger must get back (`data`, or one bit flipped: sabotage).
    reference: Vec<u8>,
    program: NicProgram,
    c: UcConsts,
    mode_word: u16,
    pongs: RefCell<Pongs>,
}

impl PingPong {
    /// A ping of `size` bytes from `seed`'s RNG, node 0 to node
    /// `nodes - 1`; `sabotage` flips one bit of the reference.
    pub fn new(
        nodes: u32,
        size: usize,
        mode: Mode,
        cfg: &NicConfig,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<PingPong, String> {
        let c = UcConsts::read()?;
        let max = uc("UC_MAX_SIZE")? as usize;
        if size == 0 || size > max {
            return Err(format!(
                "--size {size}: ping-pong takes 1 to {max} bytes (uc.h UC_MAX_SIZE)"
            ));
        }
        if mode == Mode::Device && size > c.chunk {
            return Err(format!(
                "--size {size}: device mode is one packet, at most {} bytes (uc.h UC_CHUNK)",
                c.chunk
            ));
        }
        if nodes < 2 {
            return Err(format!("--nodes {nodes}: a ping-pong needs at least 2"));
        }
        let mode_word = uc(match mode {
            Mode::Device => "UC_MODE_DEVICE",
            Mode::Host => "UC_MODE_HOST",
            Mode::Stream => "UC_MODE_STREAM",
        })? as u16;
        let data = seeded_bytes(seed, size);
        let mut reference = data.clone();
        if sabotage {
            reference[size / 2] ^= 1;
        }
        let program = NicProgram::usecase(
            "pingpong",
            cfg,
            build_dir,
            UcConsts::rules_with_rma()?,
            c.port,
            c.window,
        )?;
        let pieces = size.div_ceil(c.chunk);
        Ok(PingPong {
            peer: nodes - 1,
            size,
            mode,
            data,
            reference,
            program,
            c,
            mode_word,
            pongs: RefCell::new(Pongs {
                bytes: vec![0; size],
                got: vec![false; pieces],
                strays: 0,
            }),
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The node that answers: the last, at the far side of the fat tree.
    pub fn peer(&self) -> u32 {
        self.peer
    }

    /// A stream pong piece: (offset, data) if `f` is one of this round's,
    /// from the peer to the pinger's socket.
    fn pong_piece<'a>(&self, f: &'a [u8]) -> Option<(usize, &'a [u8])> {
        let be16 = |at: usize| Some(u16::from_be_bytes(f.get(at..at + 2)?.try_into().ok()?));
        let be32 = |at: usize| Some(u32::from_be_bytes(f.get(at..at + 4)?.try_into().ok()?));
        let udp_len = be16(38)? as usize;
        if f.get(12..14)? != [8, 0]
            || f[23] != 17
            || be16(36)? != SOCKET_PORT
            || be16(34)? != self.c.port
            || be16(42)? != self.c.magic
            || be32(52)? != SEQ
            || be32(56)? as usize != self.size
            || udp_len < 8 + 26
            || 34 + udp_len > f.len()
        {
            return None;
        }
        let off = be32(60)? as usize;
        let data = &f[68..34 + udp_len];
        (!data.is_empty() && off.is_multiple_of(self.c.chunk) && off + data.len() <= self.size)
            .then_some((off, data))
    }
}

impl Workload for PingPong {
    fn name(&self) -> &str {
        "pingpong"
    }

    fn program(&self) -> &NicProgram {
        &self.program
    }

    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        if k != 0 {
            return Vec::new();
        }
        self.c.message(0, self.peer, self.mode_word, &self.data)
    }

    fn setup_engine(&self, k: u32, e: &mut Engine, ectx: EctxId) -> Result<(), String> {
        // Device and host mode pongs are RMA puts; stream needs no RMA.
        if self.mode == Mode::Stream {
            return Ok(());
        }
        self.c.setup_rma(k, e, ectx, &self.program)
    }

    fn host_receives(&self, k: u32, frame: &[u8]) -> Option<bool> {
        if k != 0 || self.mode != Mode::Stream {
            return None;
        }
        let mut p = self.pongs.borrow_mut();
        match self.pong_piece(frame) {
            Some((off, data)) => {
                p.bytes[off..off + data.len()].copy_from_slice(data);
                p.got[off / self.c.chunk] = true;
            }
            None => p.strays += 1,
        }
        Some(p.got.iter().all(|&g| g))
    }

    fn expected_done(&self) -> u32 {
        1
    }

    fn node_done(&self, k: u32, engine: &mut Engine) -> bool {
        k == 0 && self.mode != Mode::Stream && self.c.word(engine, self.c.done) == Some(SEQ as u64)
    }

    fn verify(&self, k: u32, engine: Option<&mut Engine>) -> bool {
        if k == 0 {
            if self.mode == Mode::Stream {
                let p = self.pongs.borrow();
                return p.strays == 0 && p.got.iter().all(|&g| g) && p.bytes == self.reference;
            }
            let Some(e) = engine else {
                return false;
            };
            return self.c.word(e, self.c.done) == Some(SEQ as u64)
                && self.c.bytes(e, self.c.pong, self.size) == Some(self.reference.clone());
        }
        if k != self.peer {
            // No other NIC takes part (the switches carry the packets).
            return engine.is_none();
        }
        let Some(e) = engine else {
            return false;
        };
        let rx = self.c.bytes(e, self.c.rx, self.size);
        match self.mode {
            // The ping went through the peer's host memory ...
            Mode::Host => rx == Some(self.reference.clone()),
            // ... or never touched it.
            Mode::Device | Mode::Stream => rx.is_some_and(|b| b.iter().all(|&x| x == 0)),
        }
    }
}
