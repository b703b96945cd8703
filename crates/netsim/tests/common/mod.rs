//! What the netsim integration tests share. Each test file is its own
//! process: SimGrid runs one simulation per process.

use softspin_netsim::sim::nic_config;
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::{NetParams, NicKind, RunSpec};

/// A broadcast of `size` bytes from `seed` on `nodes` NICs of kind `nic`
/// under the profile sc17 (its handlers built in a scratch directory, gone
/// again once they are loaded), and the spec of a run stopped at `limit_s`.
pub fn broadcast(
    nodes: u32,
    size: usize,
    mode: Mode,
    nic: NicKind,
    seed: u64,
    limit_s: f64,
) -> (Broadcast, RunSpec) {
    let params = NetParams::sc17();
    let dir = softspin_testkit::scratch("netsim-build");
    let b = Broadcast::new(
        nodes,
        size,
        mode,
        &nic_config(&params, nic),
        &dir,
        seed,
        false,
    );
    std::fs::remove_dir_all(&dir).ok();
    let spec = RunSpec {
        params,
        nic,
        nodes,
        limit_s,
    };
    (b.unwrap(), spec)
}

/// The environment variable that makes a test binary's child run one
/// broadcast point (`nodes size mode nic`) instead of its test.
#[allow(dead_code)]
const POINT: &str = "NETSIM_TEST_POINT";

/// SimGrid runs one simulation per process: the broadcast of `size` bytes
/// on `nodes` NICs of kind `nic` in `mode` (their CLI names) runs in a
/// child process of this test binary (test `test` again, which must call
/// [`run_point_if_child`] first). Its completion time in ns; the child
/// fails unless every node verified.
#[allow(dead_code)] // not every test file runs points
pub fn completion_ns(test: &str, nodes: u32, size: usize, mode: &str, nic: &str) -> f64 {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(POINT, format!("{nodes} {size} {mode} {nic}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{nodes} x {size} B {mode} {nic}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find_map(|l| l.split_once("COMPLETION_NS ").map(|x| x.1))
        .expect("the child's line");
    line.parse().unwrap()
}

/// In a child of [`completion_ns`]: run its point, print its completion
/// time, and return true (the test returns then); false in the parent.
#[allow(dead_code)]
pub fn run_point_if_child() -> bool {
    let Ok(point) = std::env::var(POINT) else {
        return false;
    };
    let v: Vec<&str> = point.split(' ').collect();
    let (nodes, size) = (v[0].parse().unwrap(), v[1].parse().unwrap());
    let (mode, nic): (Mode, NicKind) = (v[2].parse().unwrap(), v[3].parse().unwrap());
    let (b, spec) = broadcast(nodes, size, mode, nic, 5, 1e-1);
    let out = softspin_netsim::run(spec, Box::new(b)).unwrap();
    assert!(
        out.verified && out.completed,
        "{point}: {:?}",
        out.error_samples
    );
    println!(
        "COMPLETION_NS {}",
        out.completion_ps.expect("completed") as f64 / 1e3
    );
    true
}
