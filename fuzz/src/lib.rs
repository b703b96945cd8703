//! Shared pieces of the fuzz targets: a small NIC, the prebuilt handler
//! images (fuzz/handlers/, built from examples/*/handler.c), running one
//! packet through the engine, and a scratch file for the parsers that open
//! paths.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::path::PathBuf;

use softspin_engine::traffic::{build_frame, Arrival, FrameKind, Source, TrafficError};
use softspin_engine::{EctxSpec, Engine, NicConfig};
use softspin_hpu::ElfImage;

/// Handler images the targets build on, embedded so a crash reproduces from
/// the input file alone. Rebuild with
/// `target/release/softspin build examples/NAME/handler.c -o fuzz/handlers/NAME.elf`.
pub const HANDLERS: [(&str, &[u8]); 7] = [
    ("empty", include_bytes!("../handlers/empty.elf")),
    ("copy_to_host", include_bytes!("../handlers/copy_to_host.elf")),
    ("notify", include_bytes!("../handlers/notify.elf")),
    ("ping_pong", include_bytes!("../handlers/ping_pong.elf")),
    ("pspin_compat", include_bytes!("../handlers/pspin_compat.elf")),
    ("kvstore", include_bytes!("../handlers/kvstore.elf")),
    // RMA target and initiator: host-posted operations, and frames fed to
    // it are requests, responses (forged txns) and doorbells.
    ("rma_target", include_bytes!("../handlers/rma_target.elf")),
];

/// A prebuilt image, parsed.
pub fn handler(k: usize) -> ElfImage {
    ElfImage::parse(HANDLERS[k % HANDLERS.len()].1).expect("prebuilt handler image parses")
}

/// PsPIN with 2 HPUs per cluster: every mechanism, a fraction of the setup
/// cost per run (the images are built for PsPIN's 4 clusters).
pub fn small_config() -> NicConfig {
    let mut c = NicConfig::pspin();
    c.hpus_per_cluster = 2;
    c
}

/// Instructions a fuzzed handler may run per invocation: small, so an
/// endless loop ends quickly in a watchdog fault.
pub const WATCHDOG: u64 = 20_000;

/// NIC time after which a run is cut off (1 ms).
pub const RUN_LIMIT_PS: u64 = 1_000_000_000;

/// Packets from a list.
pub struct ListSource(pub VecDeque<Arrival>);
impl Source for ListSource {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        Ok(self.0.pop_front())
    }
}

/// One IP/UDP packet of `size` bytes to the default sPIN port.
pub fn packet(size: usize, msg_id: u32, eom: bool) -> Arrival {
    let frame = build_frame(FrameKind::Ip, size.max(64), [10, 0, 0, 1], [10, 0, 0, 2], 1000, 9330, |i| (i * 7) as u8)
        .expect("a 64..1500-byte frame builds");
    Arrival { time_ps: 1000, frame, msg_id, eom, origin: "fuzz".into(), ectx: None }
}

/// Install `spec` on a fresh engine built from `cfg`, feed it `packets` and
/// run until idle or `RUN_LIMIT_PS`. Errors are fine (they are the NIC
/// rejecting bad input); panics, aborts and hangs are the bugs we look for.
pub fn run_engine(cfg: NicConfig, spec: EctxSpec, packets: Vec<Arrival>) {
    if let Err(err) = try_run_engine(cfg, spec, packets) {
        debug(&err);
    }
}

fn try_run_engine(cfg: NicConfig, mut spec: EctxSpec, packets: Vec<Arrival>) -> Result<(), String> {
    let mut e = Engine::new(cfg).map_err(|x| format!("engine: {x}"))?;
    spec.watchdog = spec.watchdog.min(WATCHDOG);
    let (base, size) = spec.host_window;
    let id = e.install(spec).map_err(|x| format!("install: {x}"))?;
    e.add_host_region(base, size as usize).map_err(|x| format!("host region: {x}"))?;
    e.activate(id).map_err(|x| format!("activate: {x}"))?;
    e.set_source(Box::new(ListSource(packets.into()))).map_err(|x| format!("source: {x}"))?;
    e.run(Some(RUN_LIMIT_PS), |_| {}).map_err(|x| format!("run: {x}"))?;
    debug(&format!("{:?}", e.errors()));
    Ok(())
}

/// With SOFTSPIN_FUZZ_DEBUG set, say why an input went nowhere (to check
/// that the seeds reach the code they are meant to).
pub fn debug(what: &str) {
    if std::env::var_os("SOFTSPIN_FUZZ_DEBUG").is_some() {
        eprintln!("{what}");
    }
}

/// Memory the process may hold, like `ulimit -v 1G` (issue 10: "under a
/// memory limit of 1 GB no handler, flag, file or API call can make the
/// process die of allocation"). An allocation past it fails: fallible paths
/// (`try_reserve`) must turn that into an error, infallible ones abort with
/// "memory allocation of N bytes failed", which libFuzzer records as a
/// crash. (libFuzzer's own -malloc_limit_mb needs a sanitizer's malloc
/// hooks, which stable Rust does not have.) With SOFTSPIN_FUZZ_DEBUG set,
/// each refusal prints its size and stack.
pub const ALLOC_LIMIT: usize = 1 << 30;

struct LimitedAlloc;
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// A refusal report is being printed (its own allocations pass).
static REPORTING: AtomicBool = AtomicBool::new(false);

/// Count `size` more bytes; false (and nothing counted) past the limit.
fn charge(size: usize) -> bool {
    if LIVE.fetch_add(size, Ordering::Relaxed) + size <= ALLOC_LIMIT || REPORTING.load(Ordering::Relaxed) {
        return true;
    }
    LIVE.fetch_sub(size, Ordering::Relaxed);
    if !REPORTING.swap(true, Ordering::Relaxed) {
        if std::env::var_os("SOFTSPIN_FUZZ_DEBUG").is_some() {
            let live = LIVE.load(Ordering::Relaxed);
            eprintln!("==softspin-fuzz== refused {size} bytes ({live} live, limit {ALLOC_LIMIT})");
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
        REPORTING.store(false, Ordering::Relaxed);
    }
    false
}

// SAFETY: forwards to the system allocator; only counts and refuses (a
// refusal is a null pointer, as from an exhausted system allocator).
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !charge(l.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !charge(l.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !charge(new - l.size()) {
            return std::ptr::null_mut();
        }
        let q = System.realloc(p, l, new);
        if q.is_null() && new > l.size() {
            LIVE.fetch_sub(new - l.size(), Ordering::Relaxed);
        } else if !q.is_null() && new < l.size() {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;

/// A file for the parsers that only open paths, one per fuzzing process
/// (libFuzzer runs inputs one at a time in a process).
pub fn scratch_file(tag: &str, data: &[u8]) -> PathBuf {
    // tmpfs when there is one: rewriting a file on a disk file system each
    // run made the parsers' targets 50x slower.
    let dir = std::env::var_os("SOFTSPIN_FUZZ_TMP").map(PathBuf::from).unwrap_or_else(|| {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        }
    });
    let p = dir.join(format!("softspin-fuzz-{tag}-{}", std::process::id()));
    std::fs::write(&p, data).expect("write the scratch file");
    p
}
