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
