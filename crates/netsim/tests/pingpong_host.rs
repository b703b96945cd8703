//! Ping-pong's stream mode: what node 0's host receives (the pongs the
//! peer's payload handlers send back, addresses and ports swapped) makes
//! it done only once every piece is in; hostile or stray frames are taken
//! without a panic and make the check fail, never pass.

use softspin_netsim::sim::nic_config;
use softspin_netsim::workload::pingpong::{Mode, PingPong};
use softspin_netsim::workload::Workload;
use softspin_netsim::{NetParams, NicKind};

/// What pingpong_ph does to a ping packet: MACs, IPv4 addresses and UDP
/// ports swapped.
fn pong_of(ping: &[u8]) -> Vec<u8> {
    let mut f = ping.to_vec();
    for (a, b, n) in [(0, 6, 6), (26, 30, 4), (34, 36, 2)] {
        let t = f[a..a + n].to_vec();
        f.copy_within(b..b + n, a);
        f[b..b + n].copy_from_slice(&t);
    }
    f
}

fn workload(size: usize) -> (PingPong, std::path::PathBuf) {
    let p = NetParams::sc17();
    let cfg = nic_config(&p, NicKind::Discrete);
    let dir = std::env::temp_dir().join(format!("netsim-pp-{size}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w = PingPong::new(2, size, Mode::Stream, &cfg, &dir, 7, false).unwrap();
    (w, dir)
}

#[test]
fn the_host_is_done_with_the_last_piece_and_refuses_strays() {
    // Three pieces, the last short; a piece size multiple (1,408 x 2) too.
    for size in [2 * 1408 + 5, 2 * 1408] {
        let (w, dir) = workload(size);
        let pongs: Vec<Vec<u8>> = w.host_sends(0).iter().map(|s| pong_of(&s.frame)).collect();
        assert_eq!(pongs.len(), size.div_ceil(1408));
        assert_eq!(
            w.host_receives(1, &pongs[0]),
            None,
            "only node 0's host pings"
        );
        // Out of order, one twice: done only with the last missing piece.
        let n = pongs.len();
        for (i, k) in (1..n).chain([1, 0]).enumerate() {
            assert_eq!(w.host_receives(0, &pongs[k]), Some(i == n), "piece {k}");
        }
        assert!(w.verify(0, None), "size {size}: the pong is the ping");

        // Hostile frames after that: each taken, none a panic, the check fails.
        let mut bad: Vec<Vec<u8>> = vec![vec![], vec![0; 10], vec![0xff; 60]];
        let last = pongs[n - 1].clone();
        bad.push(last[..last.len() - 1].to_vec()); // shorter than its UDP length
        let mut empty = last[..68].to_vec(); // no data, at the message's end
        empty[38..40].copy_from_slice(&34u16.to_be_bytes());
        empty[60..64].copy_from_slice(&(size as u32).to_be_bytes());
        bad.push(empty);
        let mut odd = pongs[0].clone(); // an offset inside a piece
        odd[60..64].copy_from_slice(&7u32.to_be_bytes());
        bad.push(odd);
        for f in &bad {
            assert_eq!(w.host_receives(0, f), Some(true), "still complete");
        }
        assert!(!w.verify(0, None), "strays make the check fail");
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn a_changed_byte_fails_the_check() {
    let (w, dir) = workload(100);
    let mut pong = pong_of(&w.host_sends(0)[0].frame);
    pong[68 + 50] ^= 0x10;
    assert_eq!(w.host_receives(0, &pong), Some(true));
    assert!(!w.verify(0, None));
    std::fs::remove_dir_all(&dir).ok();
}
