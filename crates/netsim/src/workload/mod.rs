//! Workloads: what runs on a network of sPIN NICs (issue 29 §3). A
//! workload says what every node's NIC installs (a handler image built
//! from the live use case's own source, `examples/cluster/NAME/handler.c`,
//! as `softspin cluster up --image` runs it), what the host actors send,
//! when a node is done, and how each node's host memory is checked against
//! a reference computed independently (a seeded RNG's bytes, never read
//! back from a node).

pub mod accumulate;
pub mod broadcast;
pub mod kvstore;
pub mod pingpong;
pub mod raid;
pub mod trace;

use std::path::{Path, PathBuf};

use softspin_engine::{Engine, NicConfig};
use softspin_hpu::ElfImage;

/// One frame a host hands its NIC's port: to node `to`.
#[derive(Clone, Debug)]
pub struct HostSend {
    pub to: u32,
    pub frame: Vec<u8>,
    /// The first packet of a host-level message: the host pays `o` for it.
    pub first_of_message: bool,
}

/// What every NIC of a workload runs.
#[derive(Clone, Debug)]
pub struct NicProgram {
    pub image: ElfImage,
    pub hh: Option<String>,
    pub ph: Option<String>,
    pub th: Option<String>,
    /// The rules file (TOML, softspin-netio's format) that gives each
    /// frame its message id and end of message: the NIC's matching engine.
    pub rules: String,
    /// The UDP port the handlers' ECTX takes.
    pub udp_port: u16,
    /// Host memory window per node (bytes at `HOST_BASE`).
    pub host_window: u64,
    /// L1 scratchpad per cluster (bytes): what `softspin cluster up --rma`
    /// gives the RMA ECTX (a response buffer per HPU, [`rma_scratchpad`]),
    /// so rma_target builds its responses in L1, not L2.
    pub scratchpad: u32,
    /// Instruction budget per handler, message timeout.
    pub watchdog: u64,
    pub msg_timeout_ns: u64,
}

impl NicProgram {
    /// A use case's handlers (`NAME_hh`, `NAME_ph`, `NAME_th`, built by
    /// [`build_usecase`]) with examples/cluster/common.py's NIC arguments.
    pub fn usecase(
        name: &str,
        cfg: &NicConfig,
        build_dir: &Path,
        rules: String,
        udp_port: u16,
        host_window: u64,
    ) -> Result<NicProgram, String> {
        let mtu = crate::sim::rma_mtu(cfg);
        Self::usecase_at_rma_mtu(name, cfg, build_dir, rules, udp_port, host_window, mtu)
    }

    /// As [`NicProgram::usecase`], RMA segmenting at `rma_mtu` instead of
    /// the profile's packet size (a use case whose RMA packets carry one of
    /// its own packets each: raid's deltas).
    pub fn usecase_at_rma_mtu(
        name: &str,
        cfg: &NicConfig,
        build_dir: &Path,
        rules: String,
        udp_port: u16,
        host_window: u64,
        rma_mtu: u32,
    ) -> Result<NicProgram, String> {
        let image = build_usecase(name, cfg, build_dir, rma_mtu)?;
        Ok(NicProgram {
            scratchpad: rma_scratchpad(cfg, &image)?,
            image,
            hh: Some(format!("{name}_hh")),
            ph: Some(format!("{name}_ph")),
            th: Some(format!("{name}_th")),
            rules,
            udp_port,
            host_window,
            watchdog: 200_000_000,
            msg_timeout_ns: 2_000_000_000,
        })
    }
}

/// Where every node's host window starts (the engine's default).
pub const HOST_BASE: u64 = softspin_engine::ectx::DEFAULT_HOST_BASE;

pub trait Workload {
    fn name(&self) -> &str;
    fn program(&self) -> &NicProgram;
    /// Frames node `k`'s host sends at the start, in order (empty: node k's
    /// host only waits).
    fn host_sends(&self, k: u32) -> Vec<HostSend>;
    /// After node k's NIC completed message `msg_id`: frames node k's host
    /// sends in answer (the host-CPU baselines: `rdma` forwards after each
    /// message lands). The host actor pays `o` per message from the
    /// completion's time on. Default: none.
    fn host_reacts(&self, _k: u32, _msg_id: u32, _engine: &mut Engine) -> Vec<HostSend> {
        Vec::new()
    }
    /// How long after node k's NIC completed message `msg_id` its host's
    /// answer (`host_reacts`) is due, besides `o`: e.g. the DMA read of the
    /// first packet from host memory that a put from host waits for, or the
    /// DMA of the message into host memory when no handler did it, and
    /// the host CPU's own work (`now_ps`: the completion's time, so a
    /// workload can queue work on a busy host CPU). Default: 0.
    fn host_react_delay_ps(&self, _k: u32, _msg_id: u32, _now_ps: u64) -> u64 {
        0
    }
    /// Called once on node k's engine after its ECTX is installed and
    /// active, before its first packet (e.g. `enable_rma_transport` for the
    /// use cases whose handlers issue RMA). Default: nothing.
    fn setup_engine(
        &self,
        _k: u32,
        _engine: &mut Engine,
        _ectx: softspin_engine::EctxId,
    ) -> Result<(), String> {
        Ok(())
    }
    /// The nodes whose node-table entries node k's handlers read (its own
    /// is always written). `None`: every node's. Entries not written cost
    /// no memory, which is what lets 16,384 NICs fit (docs/scale.md).
    fn peers(&self, _k: u32) -> Option<Vec<u32>> {
        None
    }
    /// A frame node k's rules do not give its NIC (not for sPIN), which
    /// node k's host network stack receives: `None` if the workload expects
    /// none such (a drop), else whether node k is now done (e.g. the last
    /// pong datagram of ping-pong's stream mode). Default: `None`.
    fn host_receives(&self, _k: u32, _frame: &[u8]) -> Option<bool> {
        None
    }
    /// Node k's host program (`None`: its host only sends `host_sends` and
    /// `host_reacts`). A node with one is done when its program finishes,
    /// not by `node_done`. Default: none.
    fn host_program(&self, _k: u32) -> Option<Box<dyn HostProgram>> {
        None
    }
    /// Nodes that must finish for the run to be complete.
    fn expected_done(&self) -> u32;
    /// After node k's NIC completed a message: is node k now done?
    fn node_done(&self, k: u32, engine: &mut Engine) -> bool;
    /// Node k's host memory (`None`: its NIC never ran) holds the right
    /// bytes.
    fn verify(&self, k: u32, engine: Option<&mut Engine>) -> bool;
}

/// What a host program does next (`HostProgram::resume`).
#[derive(Clone, Debug)]
pub enum HostStep {
    /// Spend host CPU time, in seconds (a trace's `compute`).
    Compute(f64),
    /// Send frames on the network: `o` per message, the port's g and G.
    Send(Vec<HostSend>),
    /// Hand a frame to the node's own NIC now, as if it had arrived (a
    /// doorbell: live, an RMA write into NIC memory). Host-memory writes
    /// before it are made in `resume`, through the engine.
    Doorbell(Vec<u8>),
    /// Sleep until the NIC signals: a completed message, or a write into
    /// a watched range (at once if a signal is already waiting).
    Wait,
    /// Done: the node counts as done from now on.
    Finished,
}

/// Why a waiting host program woke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostSignal {
    /// The NIC completed message `msg_id` (all its handlers finished).
    Completed { msg_id: u32, time_ps: u64 },
    /// The NIC wrote `len` bytes at `addr`, touching a watched range (by
    /// DMA or a direct write; the time is when the NIC actor saw it).
    Wrote { addr: u64, len: usize, time_ps: u64 },
    /// The host's network stack took `frame` (one the rules leave to the
    /// host and `Workload::host_receives` accepted); it is in host memory
    /// at `time_ps` (one DMA after its arrival, possibly after now).
    Received { frame: Vec<u8>, time_ps: u64 },
}

/// A node's host, run as a state machine by the coupling's host actor
/// (issue 29 §3's trace replay: compute, post receives, wait for the NIC).
pub trait HostProgram {
    /// Host addresses whose writes by the NIC wake the program. Default:
    /// none (completed messages only).
    fn watch(&self) -> Vec<std::ops::Range<u64>> {
        Vec::new()
    }
    /// The next step at `now_ps`, given the signals since the last call,
    /// in order. `engine` is the node's NIC: the host reads and writes its
    /// own memory through `engine.host_memory()`. An error ends the run
    /// (reported, node k named).
    fn resume(
        &mut self,
        now_ps: u64,
        signals: Vec<HostSignal>,
        engine: &mut Engine,
    ) -> Result<HostStep, String>;
}

/// The `#define NAME VALUE` integers of a C header (uc.h, broadcast.h):
/// the handlers' and the host side's one definition.
pub fn c_define(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("#define ")?;
        let mut it = rest.split_whitespace();
        if it.next()? != name {
            return None;
        }
        let v = it.next()?.trim_end_matches('u');
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    })
}

/// The repository's examples directory (the use cases' sources).
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// examples/cluster/uc.h, the use cases' shared header.
pub const UC_H: &str = include_str!("../../../../examples/cluster/uc.h");

/// A define of the C header `text` (named `file` in the error); a missing
/// one is a build-time fact broken, reported.
pub fn header_define(text: &str, file: &str, name: &str) -> Result<u64, String> {
    c_define(text, name).ok_or_else(|| format!("{file} defines no {name}"))
}

/// A uc.h define.
pub fn uc(name: &str) -> Result<u64, String> {
    header_define(UC_H, "examples/cluster/uc.h", name)
}

/// The use cases' ruleset (examples/cluster/common.py `rules_toml`): the
/// message id at byte 44, end of message at bit 0 of the flags word.
pub fn uc_rules() -> Result<String, String> {
    let (port, eom) = (uc("UC_PORT")?, uc("UC_EOM")?);
    Ok(format!(
        "[[ruleset]]\nname = \"usecase\"\nmatch = [\"ip\", \"udp\", \"udp_dport:{port}\"]\n\
         eom = {{ index = 12, mask = {eom}, start = {eom}, end = {eom} }}\n\
         msg_id = {{ offset = 44, size = 4 }}\n"
    ))
}

/// The L1 scratchpad per cluster rma_target uses when given (its
/// `out_buffer`): one response buffer per HPU, as `softspin cluster up
/// --rma` gives it; the buffer's size is the image's `rma_buf_bytes`
/// (it follows the RMA_MTU the image was built for).
pub fn rma_scratchpad(cfg: &NicConfig, image: &ElfImage) -> Result<u32, String> {
    let buf = image_u32(image, "rma_buf_bytes")?;
    Ok(cfg.hpus_per_cluster * buf)
}

/// The initialised u32 at symbol `name` of an image (a const the handlers
/// export for the host).
pub fn image_u32(image: &ElfImage, name: &str) -> Result<u32, String> {
    let at = image
        .symbol(name)
        .map_err(|e| format!("the handlers' image: {e}"))?;
    image
        .segments
        .iter()
        .find_map(|s| {
            let off = at.checked_sub(s.vaddr)? as usize;
            let b = s.data.get(off..off + 4)?;
            Some(u32::from_le_bytes(b.try_into().ok()?))
        })
        .ok_or_else(|| format!("the handlers' image has no initialised {name}"))
}

/// Build a use case's handlers linked with examples/rma_target (as
/// examples/cluster/common.py does) for the NIC model `cfg` and RMA's
/// segment size `rma_mtu`, into `dir`.
pub fn build_usecase(
    name: &str,
    cfg: &NicConfig,
    dir: &Path,
    rma_mtu: u32,
) -> Result<ElfImage, String> {
    let ex = examples_dir();
    let srcs = [
        ex.join("rma_target/handler.c"),
        ex.join(format!("cluster/{name}/handler.c")),
    ];
    let elf = dir.join(format!("{name}.elf"));
    let mut o = softspin_sdk::BuildOptions::handler(&srcs, &elf);
    o.define = cfg.sdk_defines();
    o.define.push(format!("RMA_MTU={rma_mtu}"));
    o.link_symbols = cfg.memory_map().link_symbols();
    softspin_sdk::build(&o).map_err(|e| format!("building examples/cluster/{name}: {e}"))?;
    ElfImage::load(&elf).map_err(|e| format!("{}: {e}", elf.display()))
}

/// Deterministic bytes for a reference (splitmix64).
pub fn seeded_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(n);
    out
}

/// The use cases' ruleset plus RMA's (for handlers linked with
/// examples/rma_target): as `cluster up --rma` matches `udp:RMA_PORT`,
/// each RMA frame a message of its own, numbered in arrival order.
pub fn uc_rma_rules() -> Result<String, String> {
    Ok(format!(
        "{}\n[[ruleset]]\nname = \"rma\"\nmatch = [\"ip\", \"udp\", \"udp_dport:{}\"]\neom = \"true\"\nmsg_id = \"sequence\"\n",
        uc_rules()?,
        softspin_wire::rma::UDP_PORT
    ))
}

/// Node k's RMA set-up on a bare engine, as `softspin nic --rma --window
/// SIZE,KEY` does through crates/host: the transport block in front of
/// `ectx` (this node rank k), and `size` bytes of the host window from its
/// start exported under `key` with every permission (the only entry of the
/// image's window table, which starts empty).
pub fn setup_rma(
    k: u32,
    engine: &mut Engine,
    ectx: softspin_engine::EctxId,
    image: &ElfImage,
    key: u32,
    size: u64,
) -> Result<(), String> {
    use softspin_wire::rma::window;
    let rank = u16::try_from(k).map_err(|_| format!("RMA ranks are 16-bit; node {k} is not"))?;
    engine.enable_rma_transport(ectx, softspin_engine::RmaTransportConfig::new(rank))?;
    let table = image
        .symbol(window::SYMBOL)
        .map_err(|e| format!("the image has no RMA window table: {e}"))?;
    let w = window::Window {
        key,
        perms: window::PERM_ALL,
        base: 0,
        size,
    };
    if !engine.write_nic(table, &w.to_bytes()) {
        return Err(format!(
            "the RMA window table at 0x{table:x} is not NIC memory"
        ));
    }
    Ok(())
}

/// One UDP datagram from node `from` to node `to` (their MACs and IPv4
/// addresses, `node.rs`) carrying `payload`.
pub fn udp_frame(
    from: u32,
    to: u32,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    use softspin_engine::traffic::{build_frame, FrameKind};
    let mut f = build_frame(
        FrameKind::Eth,
        14 + 20 + 8 + payload.len(),
        crate::node::ipv4(from),
        crate::node::ipv4(to),
        sport,
        dport,
        |_| 0,
    )
    .map_err(|e| e.to_string())?;
    f[0..6].copy_from_slice(&crate::node::mac(to));
    f[6..12].copy_from_slice(&crate::node::mac(from));
    f[42..].copy_from_slice(payload);
    Ok(f)
}

/// One use-case datagram (uc.h's header, common.py `packets`) from node
/// `from` to node `to`: `data` at uc offset `off` of a `total`-byte message
/// `seq` of mode `mode`, the last one flagged UC_EOM.
pub fn uc_frame(
    from: u32,
    to: u32,
    seq: u32,
    total: usize,
    off: usize,
    mode: u16,
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let port = uc("UC_PORT")? as u16;
    let hdr = uc("UC_HDR")? as usize;
    let src =
        u16::try_from(from).map_err(|_| format!("uc.h's src is 16-bit; node {from} is not"))?;
    let msg = uc("UC_MSG_BIT")? as u32 | from << 20 | (seq & 0xF_FFFF);
    let eom = if off + data.len() >= total {
        uc("UC_EOM")? as u32
    } else {
        0
    };
    let mut h = vec![0u8; hdr + data.len()];
    h[0..2].copy_from_slice(&(uc("UC_MAGIC")? as u16).to_be_bytes());
    h[2..6].copy_from_slice(&msg.to_be_bytes());
    h[6..10].copy_from_slice(&eom.to_be_bytes());
    h[10..14].copy_from_slice(&seq.to_be_bytes());
    h[14..18].copy_from_slice(&(total as u32).to_be_bytes());
    h[18..22].copy_from_slice(&(off as u32).to_be_bytes());
    h[22..24].copy_from_slice(&src.to_be_bytes());
    h[24..26].copy_from_slice(&mode.to_be_bytes());
    h[hdr..].copy_from_slice(data);
    udp_frame(from, to, port, port, &h)
}
