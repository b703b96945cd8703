//! Seed 004's broadcast claims as tests (§4.4.3, Fig. 5a; docs/scale.md
//! "Results"), each simulation a child process of this binary (SimGrid
//! runs one per process):
//! - at 1,024 processes sPIN's streaming broadcast is faster than RDMA
//!   (host CPUs forwarding) and Portals 4 (triggered puts) for 8 B and
//!   64 KiB on the discrete NIC, and on the integrated NIC at 8 B by at
//!   least the paper's margins (7 % and 5 %);
//! - store-and-forward is within 5 % of streaming for single-packet
//!   messages (8 B, and a full packet: UC_CHUNK = 1,408 data bytes) at
//!   1,024 processes.

mod common;

use common::{completion_ns, run_point_if_child};

/// Completion times (ns) of broadcasts on 1,024 nodes: (size, mode, nic)
/// each, run side by side.
fn points(test: &str, pts: &[(usize, &str, &str)]) -> Vec<f64> {
    std::thread::scope(|s| {
        let h: Vec<_> = pts
            .iter()
            .map(|&(size, mode, nic)| s.spawn(move || completion_ns(test, 1024, size, mode, nic)))
            .collect();
        h.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// (streaming, rdma, portals).
fn three(test: &str, size: usize, nic: &str) -> (f64, f64, f64) {
    let v = points(
        test,
        &[
            (size, "streaming", nic),
            (size, "rdma", nic),
            (size, "portals", nic),
        ],
    );
    (v[0], v[1], v[2])
}

#[test]
fn streaming_beats_rdma_and_portals_at_8_bytes_on_both_nics() {
    if run_point_if_child() {
        return;
    }
    let test = "streaming_beats_rdma_and_portals_at_8_bytes_on_both_nics";
    let (s, r, p) = three(test, 8, "discrete");
    assert!(
        s < r && s < p,
        "discrete: streaming {s} ns, rdma {r} ns, portals {p} ns"
    );
    // Seed 004 §4.4.3: "sPIN is still 7% and 5% faster than RDMA and
    // Portals 4 at 1,024 processes" on the integrated NIC.
    let (s, r, p) = three(test, 8, "integrated");
    assert!(
        s <= 0.93 * r && s <= 0.95 * p,
        "integrated: streaming {s} ns, rdma {r} ns, portals {p} ns"
    );
}

#[test]
fn streaming_beats_rdma_and_portals_at_64_kib_on_the_discrete_nic() {
    if run_point_if_child() {
        return;
    }
    let test = "streaming_beats_rdma_and_portals_at_64_kib_on_the_discrete_nic";
    let (s, r, p) = three(test, 65536, "discrete");
    assert!(
        s < r && s < p,
        "streaming {s} ns, rdma {r} ns, portals {p} ns"
    );
}

#[test]
fn store_is_within_5_percent_of_streaming_for_one_packet() {
    if run_point_if_child() {
        return;
    }
    let test = "store_is_within_5_percent_of_streaming_for_one_packet";
    let cases = [(8, "discrete"), (1408, "discrete"), (8, "integrated")];
    let pts: Vec<_> = cases
        .iter()
        .flat_map(|&(size, nic)| [(size, "streaming", nic), (size, "store", nic)])
        .collect();
    let v = points(test, &pts);
    for (i, (size, nic)) in cases.iter().enumerate() {
        let (s, st) = (v[2 * i], v[2 * i + 1]);
        assert!(
            (st - s).abs() <= 0.05 * s,
            "1,024 x {size} B {nic}: store {st} ns, streaming {s} ns"
        );
    }
}
