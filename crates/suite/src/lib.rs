//! The handler suite: every example of `examples/` that the seeds use to
//! evaluate sPIN, run on the simulated NIC through the public host API,
//! verified against an independent reference and measured, with its
//! off-path baseline (the same computation on host threads over packets in
//! memory: the "ideal DPDK" setting of seed 001 §4.3).
//!
//! An example is a directory `examples/NAME/` with `handler.c`, `host.rs`
//! (a module of this crate, listed in [`SUITE`]), and a README.
//! Its `host.rs` provides
//! `pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome>` and
//! `pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline>`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;
use softspin_host::sdk::{build_isa, BuildOptions};
use softspin_host::{BufferFull, Image, Nic, NicConfig, Report};

/// An example's run on the NIC and its host baseline.
pub type Run = fn(&Ctx, usize) -> anyhow::Result<Outcome>;
pub type Base = fn(&Ctx, usize) -> anyhow::Result<Baseline>;

/// The whole suite, in the order the table prints it.
pub const SUITE: &[(&str, Run, Base)] = &[
    ("empty", empty::run, empty::baseline),
    ("reduce", reduce::run, reduce::baseline),
    ("accumulate", accumulate::run, accumulate::baseline),
    ("broadcast_fwd", broadcast_fwd::run, broadcast_fwd::baseline),
    ("pspin_compat", pspin_compat::run, pspin_compat::baseline),
    ("aggregate", aggregate::run, aggregate::baseline),
    ("histogram", histogram::run, histogram::baseline),
    ("filtering", filtering::run, filtering::baseline),
    ("kvstore", kvstore::run, kvstore::baseline),
    ("strided_ddt", strided_ddt::run, strided_ddt::baseline),
    ("raid_parity", raid_parity::run, raid_parity::baseline),
];

// The examples' host programs: one module per `examples/NAME/host.rs`.
#[path = "../../../examples/accumulate/host.rs"]
pub mod accumulate;
#[path = "../../../examples/aggregate/host.rs"]
pub mod aggregate;
#[path = "../../../examples/broadcast_fwd/host.rs"]
pub mod broadcast_fwd;
#[path = "../../../examples/empty/host.rs"]
pub mod empty;
#[path = "../../../examples/filtering/host.rs"]
pub mod filtering;
#[path = "../../../examples/histogram/host.rs"]
pub mod histogram;
#[path = "../../../examples/kvstore/host.rs"]
pub mod kvstore;
#[path = "../../../examples/pspin_compat/host.rs"]
pub mod pspin_compat;
#[path = "../../../examples/raid_parity/host.rs"]
pub mod raid_parity;
#[path = "../../../examples/reduce/host.rs"]
pub mod reduce;
#[path = "../../../examples/strided_ddt/host.rs"]
pub mod strided_ddt;

/// Where and how big to run.
pub struct Ctx {
    pub root: PathBuf,
    pub work: PathBuf,
    /// Workloads scaled down (tests) instead of the seeds' sizes.
    pub quick: bool,
    /// The ISA handlers are built for (sdk/toolchain.txt); None: its default.
    pub isa: Option<String>,
    built: Mutex<Vec<(String, PathBuf)>>,
}

/// What running an example on the NIC gave.
pub struct Outcome {
    /// Ok if the result matched the independent reference.
    pub verified: Result<(), String>,
    pub report: Report,
}

/// The off-path baseline: the same computation on host threads.
pub struct Baseline {
    pub gbps: f64,
    pub threads: usize,
}

impl Ctx {
    pub fn new(quick: bool) -> anyhow::Result<Ctx> {
        Self::with_isa(quick, None)
    }

    /// Handlers built for `isa` (`rv32imac`, `corev`) instead of the default.
    pub fn with_isa(quick: bool, isa: Option<&str>) -> anyhow::Result<Ctx> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()?;
        // One directory per Ctx, so that several can live at once (tests).
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let work = std::env::temp_dir().join(format!("softspin-suite-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&work)?;
        Ok(Ctx {
            root,
            work,
            quick,
            isa: isa.map(str::to_string),
            built: Mutex::new(Vec::new()),
        })
    }

    /// The NIC every example runs on: PsPIN, with back-pressure instead of
    /// drops when the packet buffer is full. The workloads need every packet,
    /// and the rate the NIC then sustains is what is measured (small packets
    /// arrive faster than 32 HPUs can process most handlers).
    pub fn nic(&self) -> anyhow::Result<Nic> {
        let mut cfg = NicConfig::pspin();
        cfg.buffer_full = BufferFull::Backpressure;
        Ok(Nic::with_config(cfg)?)
    }

    /// Build (once) and load `examples/NAME/handler.c` with extra defines.
    pub fn image(&self, nic: &Nic, name: &str, defines: &[&str]) -> anyhow::Result<Image> {
        let key = format!("{name}{}", defines.join(","));
        let mut built = self.built.lock().unwrap();
        let path = match built.iter().find(|(k, _)| *k == key) {
            Some((_, p)) => p.clone(),
            None => {
                let out = self.work.join(format!("{name}-{}.elf", built.len()));
                let mut o = BuildOptions::handler(
                    &[self.root.join("examples").join(name).join("handler.c")],
                    &out,
                );
                o.define = defines.iter().map(|d| d.to_string()).collect();
                build_isa(&o, self.isa.as_deref())
                    .with_context(|| format!("building examples/{name}/handler.c"))?;
                built.push((key, out.clone()));
                out
            }
        };
        Ok(nic.load_image(path)?)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// Header bytes of the IP-first (PsPIN-style) frames `Nic::send_message` builds.
pub const HDR: usize = 28;

/// Payload bytes per packet of `packet_size`.
pub fn payload_per_packet(packet_size: usize) -> usize {
    packet_size.saturating_sub(HDR).max(4) & !3
}

/// A byte stream split into packets that say where they belong:
/// [u32 LE byte offset][data...], so that handlers can place them in any order.
pub fn offset_packets(msg: &[u8], packet_size: usize) -> Vec<Vec<u8>> {
    let per = payload_per_packet(packet_size) - 4;
    msg.chunks(per)
        .enumerate()
        .map(|(k, c)| {
            let mut p = ((k * per) as u32).to_le_bytes().to_vec();
            p.extend_from_slice(c);
            p
        })
        .collect()
}

/// Run `work` over `items` on `threads` host threads (static partition, as
/// in seed 001 §4.3) and return the Gbit/s it sustained.
pub fn host_throughput<T: Sync>(
    items: &[T],
    bytes: u64,
    threads: usize,
    work: impl Fn(&T) + Sync,
) -> f64 {
    host_throughput_local(items, bytes, threads, || (), |_, x| work(x)).0
}

/// As [`host_throughput`], each thread with private state made by `init`
/// (a DPDK program keeps per-core accumulators rather than sharing atomics);
/// returns the Gbit/s and every thread's final state, for the caller to merge.
pub fn host_throughput_local<T: Sync, S: Send>(
    items: &[T],
    bytes: u64,
    threads: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &T) + Sync,
) -> (f64, Vec<S>) {
    let t0 = Instant::now();
    let states = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(items.len().div_ceil(threads).max(1))
            .map(|chunk| {
                let (init, work) = (&init, &work);
                s.spawn(move || {
                    let mut st = init();
                    chunk.iter().for_each(|x| work(&mut st, x));
                    st
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (
        bytes as f64 * 8.0 / t0.elapsed().as_secs_f64() / 1e9,
        states,
    )
}

/// Little-endian u32 words as bytes.
pub fn words_to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn bytes_to_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A small deterministic generator for workloads (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() >> 32) as u32 % n
    }
}

/// Check helper: Err with a message naming the first difference.
pub fn same<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} items, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}[{i}] = {:?}, expected {:?}",
            got[i], want[i]
        )),
    }
}
