//! The Rust example (examples/notify), checked against values computed here.

#[path = "../../../examples/notify/host.rs"]
mod notify;

#[test]
fn notify_delivers_every_request_and_response() {
    let dir = softspin_testkit::scratch("notify-test");
    let o = notify::run(&dir).unwrap();
    // Every key was asked exactly once, whatever the order.
    let mut want = std::collections::BTreeMap::new();
    for m in 0..notify::MESSAGES {
        for p in 0..notify::PACKETS {
            for k in notify::keys(m, p) {
                want.insert(k, 1u32);
            }
        }
    }
    assert_eq!(o.requests, want);
    assert!(
        o.max_in_flight > notify::KEYS as usize,
        "requests never overlapped: {}",
        o.max_in_flight
    );
    // Every packet's slot holds the sum of the answers to its keys.
    assert_eq!(o.host_writes, (notify::MESSAGES * notify::PACKETS) as u64);
    for m in 0..notify::MESSAGES {
        for p in 0..notify::PACKETS {
            let keys = notify::keys(m, p);
            let slot = (m * 64 + keys[0] % 64) as usize;
            let got = u64::from_le_bytes(o.host[slot * 8..slot * 8 + 8].try_into().unwrap());
            let sum: u64 = keys.iter().map(|&k| k as u64 * k as u64 + 1).sum();
            assert_eq!(got, sum, "message {m} packet {p}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
