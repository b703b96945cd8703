//! The SLMP sender against the reference receiver of
//! `softspin_testkit::slmp_receiver` on 127.0.0.1, with seeded loss both ways,
//! duplicates and reordering: every message arrives byte-exact (checked by
//! the receiver's own reassembly, not by the sender's statistics), loss
//! really happened (the receiver's counts), retransmissions follow it, and
//! the sender gives up in bounded time when nobody answers.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use softspin_slmp::{
    Error, GiveUpReason, RtoConfig, Sender, SenderConfig, Stats, SyncMode, WindowMode,
};
use softspin_testkit::slmp_receiver::{Impairment, Outcome, ReferenceReceiver};
use softspin_testkit::Rng;

fn data(len: usize, seed: u64) -> Vec<u8> {
    Rng::new(seed).bytes(len)
}

/// RTO bounds for a loopback test: low floor so 20 % loss at window 1 ends
/// in seconds, but above scheduling noise.
fn cfg(window: WindowMode) -> SenderConfig {
    SenderConfig {
        window,
        rto: RtoConfig {
            initial: Duration::from_millis(50),
            min: Duration::from_millis(1),
            max: Duration::from_millis(500),
        },
        ..SenderConfig::default()
    }
}

fn transfer(msgs: &[Vec<u8>], imp: Impairment, c: SenderConfig) -> (Stats, Outcome, u32) {
    let rx = ReferenceReceiver::spawn(imp).unwrap();
    let mut s = Sender::connect(rx.addr(), c).unwrap();
    let first = s.config().first_msg_id;
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let stats = s
        .send_batch(&refs)
        .unwrap_or_else(|e| panic!("send failed: {e}"));
    (stats, rx.stop(), first)
}

fn check_exact(msgs: &[Vec<u8>], out: &Outcome, first: u32, what: &str) {
    assert_eq!(out.messages.len(), msgs.len(), "{what}: complete messages");
    for (i, m) in msgs.iter().enumerate() {
        let got = &out.messages[&(first + i as u32)];
        assert!(
            got == m,
            "{what}: message {i} differs ({} B vs {} B)",
            got.len(),
            m.len()
        );
    }
}

const SIZES: [usize; 3] = [1, 100 << 10, 4 << 20];

fn matrix(window: WindowMode, seed: u64) {
    for (li, loss) in [0.0, 0.05, 0.20].into_iter().enumerate() {
        for (si, &size) in SIZES.iter().enumerate() {
            let what = format!("window {window:?} loss {loss} size {size}");
            let msg = vec![data(size, seed + si as u64)];
            let imp = Impairment::lossy(seed * 100 + (li * 10 + si) as u64, loss, 0.05, 0.05);
            let t = Instant::now();
            let (st, out, first) = transfer(&msg, imp, cfg(window));
            check_exact(&msg, &out, first, &what);
            assert!(
                st.delivery_confirmed && st.unconfirmed_segments == 0,
                "{what}: {st:?}"
            );
            assert_eq!(st.acks_received, st.segments, "{what}");
            assert_eq!(st.packets_sent, st.segments + st.retransmitted, "{what}");
            if loss > 0.0 && st.segments >= 50 {
                assert!(
                    out.data_dropped > 0 && out.acks_dropped > 0,
                    "{what}: the impairment dropped nothing: {out:?}"
                );
                assert!(st.retransmitted > 0, "{what}: loss but no retransmission");
            }
            if size >= 100 << 10 {
                assert!(out.duplicated > 0 && out.reordered > 0, "{what}: {out:?}");
            }
            if let WindowMode::Fixed(n) = window {
                assert_eq!((st.window.max, st.window.final_), (n, n), "{what}");
            }
            eprintln!(
                "{what}: {:.2} s, sent {} retx {} (timeouts {}, fast {}) dupacks {} window final {} max {} rtt p50 {:.0} p99 {:.0} srtt {:.0} rttvar {:.0} rto {:.0} us",
                t.elapsed().as_secs_f64(),
                st.packets_sent,
                st.retransmitted,
                st.timeouts,
                st.fast_retransmits,
                st.duplicate_acks,
                st.window.final_,
                st.window.max,
                st.rtt.p50_us,
                st.rtt.p99_us,
                st.rtt.srtt_us,
                st.rtt.rttvar_us,
                st.rtt.rto_us
            );
        }
    }
}

#[test]
fn byte_exact_under_loss_window_auto() {
    matrix(WindowMode::default(), 1);
}

#[test]
fn byte_exact_under_loss_window_1() {
    matrix(WindowMode::Fixed(1), 2);
}

#[test]
fn byte_exact_under_loss_window_64() {
    matrix(WindowMode::Fixed(64), 3);
}

/// A clean link and a window below the loopback socket buffer: nothing is
/// lost, so nothing may be retransmitted, and the RTT is a loopback RTT.
#[test]
fn no_loss_no_retransmission_and_sane_rtt() {
    let msgs = vec![data(100 << 10, 7), data(4 << 20, 8)];
    let mut c = cfg(WindowMode::Fixed(32));
    // A floor well above scheduling noise on a shared machine, so a late
    // ACK is not taken for a loss.
    c.rto.min = Duration::from_millis(100);
    c.rto.initial = Duration::from_millis(200);
    c.rto.max = Duration::from_secs(1);
    let (st, out, first) = transfer(&msgs, Impairment::default(), c);
    check_exact(&msgs, &out, first, "clean");
    assert_eq!(
        (
            st.retransmitted,
            st.timeouts,
            st.fast_retransmits,
            st.duplicate_acks
        ),
        (0, 0, 0, 0),
        "{st:?}"
    );
    assert_eq!(st.packets_sent, st.segments);
    let r = &st.rtt;
    assert_eq!(
        r.samples, st.segments,
        "every ACK gives a sample without retransmission"
    );
    assert!(
        r.min_us > 0.0 && r.min_us <= r.p50_us && r.p50_us <= r.p99_us && r.p99_us <= r.max_us,
        "{r:?}"
    );
    assert!(r.p50_us < 50_000.0, "loopback p50 RTT {} us", r.p50_us);
    assert!(r.srtt_us > 0.0 && r.rto_us >= 100_000.0, "{r:?}");
    assert!(st.goodput_bps > 0.0 && st.elapsed_s > 0.0);
}

/// Pure reordering (a quarter of the data packets held back behind 1-3
/// later ones, seeded; nothing lost): delivery is byte-exact and the
/// adaptive window grows, because RACK's time threshold does not take a
/// late segment for a lost one and the decreases it still makes are undone
/// once proven spurious. The rule this replaced ("3 later segments
/// acknowledged first") halved the window on most held packets and kept it
/// at about a dozen (max 16-17 here; the lossy link's 25 % reordering: at
/// most 11). The window is capped at 64 packets, below what would overflow
/// the receiver's socket buffer where it cannot be enlarged (~90
/// datagrams), so no loss creeps in.
#[test]
fn window_grows_under_pure_reordering() {
    let msg = vec![data(8 << 20, 21)];
    let imp = Impairment {
        seed: 21,
        reorder: 0.25,
        max_delay: Duration::from_micros(500),
        ..Impairment::default()
    };
    let w = WindowMode::Auto {
        initial: 4,
        max: 64,
    };
    let (st, out, first) = transfer(&msg, imp, cfg(w));
    check_exact(&msg, &out, first, "pure reordering");
    assert!(out.reordered > 1000 && out.data_dropped == 0, "{out:?}");
    eprintln!(
        "pure reordering: {:.2} s, retx {} (timeouts {}, rack {}), spurious {}, window max {} final {} decreases {} undos {}, reo_wnd {:.1} us, rtt p50 {:.0} us",
        st.elapsed_s,
        st.retransmitted,
        st.timeouts,
        st.fast_retransmits,
        st.spurious_losses,
        st.window.max,
        st.window.final_,
        st.window.decreases,
        st.window.undos,
        st.reorder_window_us,
        st.rtt.p50_us
    );
    // Nothing was lost, so every loss declaration was wrong; the sender
    // must have found most of them out (not all: a segment sent three
    // times proves one declaration, and ACKs still in flight when the
    // transfer ends prove nothing).
    assert!(
        st.spurious_losses * 2 >= st.retransmitted,
        "spurious {} of {} retransmissions",
        st.spurious_losses,
        st.retransmitted
    );
    // Reordering does not hold the window down: nearly every decrease is
    // undone, and the window passes the 16-20 the old 3-later-ACKs rule
    // allowed. (How close it comes to the cap of 64 depends on the host's
    // load: the queueing-delay rule, window.rs, stops it where the
    // loopback receiver's queue passes its target.)
    assert!(
        st.window.max > 20 && st.window.undos + 3 >= st.window.decreases,
        "window stayed small under pure reordering: max {} ({} decreases, {} undone)",
        st.window.max,
        st.window.decreases,
        st.window.undos
    );
}

/// The lossy link's mix on the reference receiver: 5 % loss both ways,
/// 25 % reordering, 1 % duplication. Byte-exact and confirmed; the sender
/// both found real losses (the receiver dropped packets) and proved some
/// loss declarations spurious (reordering), and undid some decreases.
#[test]
fn byte_exact_under_heavy_reordering_and_loss() {
    let msg = vec![data(4 << 20, 23)];
    let imp = Impairment::lossy(23, 0.05, 0.01, 0.25);
    let (st, out, first) = transfer(&msg, imp, cfg(WindowMode::default()));
    check_exact(&msg, &out, first, "5 % loss, 25 % reordering");
    assert!(st.delivery_confirmed, "{st:?}");
    assert!(
        out.data_dropped > 0 && out.acks_dropped > 0 && out.reordered > 0,
        "{out:?}"
    );
    assert!(st.retransmitted > 0 && st.spurious_losses > 0, "{st:?}");
    assert!(
        st.window.undos > 0 && st.window.undos <= st.window.decreases,
        "{:?}",
        st.window
    );
    assert_eq!(st.packets_sent, st.segments + st.retransmitted);
}

/// Several messages in flight at once under loss, one shared window.
#[test]
fn several_messages_in_flight() {
    let msgs: Vec<Vec<u8>> = (0..6)
        .map(|i| data(1 + i * 37_000, 40 + i as u64))
        .collect();
    let (st, out, first) = transfer(
        &msgs,
        Impairment::lossy(11, 0.05, 0.05, 0.05),
        cfg(WindowMode::default()),
    );
    check_exact(&msgs, &out, first, "batch");
    assert_eq!(st.messages, 6);
    // Consecutive ids, then the next batch continues them.
    assert_eq!(
        out.messages.keys().copied().collect::<Vec<_>>(),
        (first..first + 6).collect::<Vec<_>>()
    );
}

/// Fresh segments leave several per send (UDP GSO), and the receiver still
/// gets each as its own datagram of the right length: a wrong GSO size
/// would show as malformed datagrams or a reassembly mismatch. Paced
/// segments (sync none with a gap) go one per send.
#[test]
fn segments_leave_in_gso_batches_as_separate_datagrams() {
    // A message of full segments and one ending in a short segment.
    let msgs = vec![data(1 << 20, 51), data(300_001, 52)];
    let mut c = cfg(WindowMode::Fixed(64));
    c.rto.min = Duration::from_millis(100);
    c.rto.initial = Duration::from_millis(200);
    c.rto.max = Duration::from_secs(1);
    let (st, out, first) = transfer(&msgs, Impairment::default(), c);
    check_exact(&msgs, &out, first, "GSO batches");
    assert!(st.gso_sends > 0, "no GSO send: {st:?}");
    assert_eq!(out.malformed, 0, "{out:?}");
    assert_eq!(
        out.data_packets, st.packets_sent,
        "one datagram per segment"
    );
    assert!(
        st.gso_sends < st.packets_sent / 2,
        "{} GSO sends for {} segments",
        st.gso_sends,
        st.packets_sent
    );
    let mut c = cfg(WindowMode::default());
    c.sync = SyncMode::None;
    c.ipg = Duration::from_micros(20);
    let msg = vec![data(100 << 10, 53)];
    let (st, out, _) = transfer(&msg, Impairment::default(), c);
    assert_eq!(st.gso_sends, 0, "paced segments go one by one");
    assert_eq!(out.data_packets, st.segments);
}

#[test]
fn sync_none_and_msg_report_unconfirmed_delivery() {
    let msg = vec![data(100 << 10, 9)];
    let segs = (100u64 << 10).div_ceil(softspin_slmp::DEFAULT_SEGMENT as u64);
    let mut c = cfg(WindowMode::default());
    c.sync = SyncMode::None;
    c.ipg = Duration::from_micros(20);
    let (st, out, _) = transfer(&msg, Impairment::default(), c.clone());
    assert_eq!(
        (
            st.acks_received,
            st.unconfirmed_segments,
            st.delivery_confirmed
        ),
        (0, segs, false)
    );
    assert_eq!(out.acks_sent, 0, "sync none: no SYN, so no ACK");
    c.sync = SyncMode::Msg;
    let (st, out, first) = transfer(&msg, Impairment::default(), c);
    assert_eq!(
        out.acks_sent, 2,
        "sync msg: SYN on first and last segment only"
    );
    assert_eq!(
        (
            st.acks_received,
            st.unconfirmed_segments,
            st.delivery_confirmed
        ),
        (2, segs - 2, false)
    );
    check_exact(&msg, &out, first, "sync msg, clean link");
}

/// Nobody listens: ICMP port unreachable, no ACK; an error naming the
/// message within the idle limit, never a hang.
#[test]
fn gives_up_when_the_receiver_is_gone() {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut c = cfg(WindowMode::default());
    c.idle_timeout = Duration::from_millis(800);
    c.first_msg_id = 77;
    let mut s = Sender::connect(port, c).unwrap();
    let t = Instant::now();
    let e = s.send(&data(50_000, 1)).unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    match &e {
        Error::GaveUp {
            msg_id: 77,
            index: 0,
            reason: GiveUpReason::NoProgress { .. },
            stats,
        } => {
            assert!(
                stats.packets_sent > 0 && stats.acks_received == 0 && !stats.delivery_confirmed
            );
            // Nothing delivered: no goodput (it used to be bytes / elapsed).
            assert_eq!(stats.goodput_bps, 0.0, "{stats:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("message id 77"), "{e}");
}

/// A receiver that drops every data packet: the retransmission limit ends
/// the transfer, with backoff between the attempts.
#[test]
fn gives_up_after_max_retransmits() {
    let rx = ReferenceReceiver::spawn(Impairment {
        drop_data: 1.0,
        ..Impairment::default()
    })
    .unwrap();
    let mut c = cfg(WindowMode::Fixed(4));
    c.max_retransmits = 4;
    // One segment: the retransmission timer resends only the oldest
    // outstanding segment per expiry (RFC 6298 §5.4), so with more in
    // flight the attempts of one segment interleave with the others'.
    c.rto = RtoConfig {
        initial: Duration::from_millis(10),
        min: Duration::from_millis(10),
        max: Duration::from_secs(1),
    };
    let mut s = Sender::connect(rx.addr(), c).unwrap();
    let t = Instant::now();
    let e = s.send(&data(1_000, 2)).unwrap_err();
    let took = t.elapsed();
    match &e {
        Error::GaveUp {
            reason: GiveUpReason::Retransmits {
                count: 4, limit: 4, ..
            },
            stats,
            ..
        } => {
            // Sent 5 times.
            assert_eq!(stats.packets_sent, 5, "{stats:?}");
            assert_eq!(stats.retransmitted, 4);
        }
        other => panic!("{other:?}"),
    }
    // Backoff: 10 + 20 + 40 + 80 + 160 ms at least before the 5th loss.
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "took {took:?}"
    );
    let out = rx.stop();
    assert_eq!(out.data_dropped, 5);
}

#[test]
fn bad_config_names_the_field() {
    let to = "127.0.0.1:9".parse().unwrap();
    for (c, field) in [
        (
            SenderConfig {
                segment: 0,
                ..SenderConfig::default()
            },
            "segment",
        ),
        (
            SenderConfig {
                segment: 70_000,
                ..SenderConfig::default()
            },
            "segment",
        ),
        (
            SenderConfig {
                window: WindowMode::Fixed(0),
                ..SenderConfig::default()
            },
            "window",
        ),
        (
            SenderConfig {
                window: WindowMode::Auto { initial: 8, max: 4 },
                ..SenderConfig::default()
            },
            "window",
        ),
        (
            SenderConfig {
                max_retransmits: 0,
                ..SenderConfig::default()
            },
            "max_retransmits",
        ),
    ] {
        match Sender::connect(to, c) {
            Err(Error::Config { field: f, .. }) => assert_eq!(f, field),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted bad {field}"),
        }
    }
}

/// The bytes on the wire, read with hand-written offsets (not
/// softspin-wire, which the sender uses): seed 000 §5.1.2's header, flags
/// per sync mode, offsets and message ids; and an ACK built the same way
/// is accepted.
#[test]
fn wire_bytes_match_the_seed_layout() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let to = rx.local_addr().unwrap();
    for (sync, first_flags, mid_flags, last_flags) in [
        (SyncMode::All, 0x4000u16, 0x4000u16, 0xC000u16),
        (SyncMode::Msg, 0x4000, 0x0000, 0xC000),
        (SyncMode::None, 0, 0, 0x8000),
    ] {
        let msg = data(2500, 3);
        let c = SenderConfig {
            segment: 1000,
            sync,
            first_msg_id: 0xA1B2_C3D4,
            ..cfg(WindowMode::Fixed(8))
        };
        let t = std::thread::spawn(move || Sender::connect(to, c).unwrap().send(&msg));
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while got.len() < 3 {
            let (n, from) = rx.recv_from(&mut buf).unwrap();
            let d = &buf[..n];
            let flags = u16::from_be_bytes([d[0], d[1]]);
            let id = u32::from_be_bytes([d[2], d[3], d[4], d[5]]);
            let off = u32::from_be_bytes([d[6], d[7], d[8], d[9]]);
            if flags & 0x4000 != 0 {
                let mut ack = d[..10].to_vec();
                ack[0] |= 0x20;
                rx.send_to(&ack, from).unwrap();
            }
            got.push((flags, id, off, d[10..].to_vec()));
        }
        let r = t.join().unwrap();
        let want = data(2500, 3);
        assert_eq!(
            got.iter()
                .map(|g| (g.0, g.1, g.2, g.3.len()))
                .collect::<Vec<_>>(),
            vec![
                (first_flags, 0xA1B2_C3D4, 0, 1000),
                (mid_flags, 0xA1B2_C3D4, 1000, 1000),
                (last_flags, 0xA1B2_C3D4, 2000, 500)
            ],
            "{sync:?}"
        );
        assert_eq!(
            got.iter().flat_map(|g| g.3.clone()).collect::<Vec<_>>(),
            want
        );
        let st = r.unwrap();
        let acks = match sync {
            SyncMode::All => 3,
            SyncMode::Msg => 2,
            SyncMode::None => 0,
        };
        assert_eq!(st.acks_received, acks, "{sync:?}: {st:?}");
    }
}

/// A peer that answers correctly but also sends junk — short datagrams,
/// ACKs with payload, data instead of ACK, ACKs for unknown messages and
/// offsets between segments: every one is counted, none is taken for an
/// acknowledgement, and the transfer still completes.
#[test]
fn junk_from_the_peer_is_counted_never_trusted() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let to = rx.local_addr().unwrap();
    let c = SenderConfig {
        segment: 1000,
        first_msg_id: 5,
        ..cfg(WindowMode::Fixed(4))
    };
    let t = std::thread::spawn(move || Sender::connect(to, c).unwrap().send(&data(20_000, 4)));
    let mut buf = [0u8; 2048];
    let mut i = 0u32;
    while let Ok((n, from)) = rx.recv_from(&mut buf) {
        let h = &buf[..10.min(n)];
        let ack = |flags: u16, id: u32, off: u32, extra: &[u8]| {
            let mut v = Vec::new();
            v.extend_from_slice(&flags.to_be_bytes());
            v.extend_from_slice(&id.to_be_bytes());
            v.extend_from_slice(&off.to_be_bytes());
            v.extend_from_slice(extra);
            v
        };
        let flags = u16::from_be_bytes([h[0], h[1]]);
        let id = u32::from_be_bytes([h[2], h[3], h[4], h[5]]);
        let off = u32::from_be_bytes([h[6], h[7], h[8], h[9]]);
        let junk = [
            vec![0x20u8; 9],                          // short
            ack(flags | 0x2000, id, off, b"payload"), // ACK with payload
            ack(flags, id, off, &[]),                 // no ACK flag
            ack(0x2000, id + 100, off, &[]),          // unknown message
            ack(0x2000, id, off + 1, &[]),            // not a segment start
        ];
        rx.send_to(&junk[(i % 5) as usize], from).unwrap();
        i += 1;
        rx.send_to(&ack(flags | 0x2000, id, off, &[]), from)
            .unwrap();
    }
    let st = t.join().unwrap().unwrap();
    assert_eq!((st.acks_received, st.segments), (20, 20), "{st:?}");
    assert!(st.delivery_confirmed);
    // 20 junk datagrams, 4 of each of the 5 kinds (retransmissions would add more).
    assert!(st.malformed >= 12 && st.unmatched_acks >= 8, "{st:?}");
    assert_eq!(st.malformed + st.unmatched_acks, i as u64, "{st:?}");
}

/// `send_batch_with`'s progress under loss: counts never go down, never
/// pass the totals, and end with every segment sent and acknowledged; the
/// totals are the messages' segments (computed here from their sizes).
#[test]
fn progress_reports_reach_the_totals() {
    let msgs = [data(100_000, 60), data(1, 61), data(0, 62)];
    let c = cfg(WindowMode::default());
    let seg = c.segment;
    let want: u64 = msgs
        .iter()
        .map(|m| m.len().div_ceil(seg).max(1) as u64)
        .sum();
    let rx = ReferenceReceiver::spawn(Impairment::lossy(12, 0.05, 0.0, 0.0)).unwrap();
    let mut s = Sender::connect(rx.addr(), c).unwrap();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let mut seen: Vec<softspin_slmp::Progress> = Vec::new();
    let st = s.send_batch_with(&refs, &mut |p| seen.push(p)).unwrap();
    let first = s.config().first_msg_id;
    check_exact(&msgs, &rx.stop(), first, "progress");
    assert!(seen.len() > 2, "{seen:?}");
    for w in seen.windows(2) {
        assert!(w[0].sent <= w[1].sent && w[0].acked <= w[1].acked, "{w:?}");
    }
    for p in &seen {
        assert_eq!((p.segments, p.syn), (want, want), "sync all: {p:?}");
        assert!(p.acked <= p.sent && p.sent <= want, "{p:?}");
    }
    assert_eq!(st.segments, want);
    let last = seen.last().unwrap();
    assert_eq!((last.sent, last.acked), (want, want), "{last:?}");
}
