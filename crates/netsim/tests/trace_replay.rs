//! Trace replay's pure parts (docs/scale.md "Trace replay"): the TI parser
//! on traces recorded by smpirun (examples/traces), its errors, the
//! collectives' decomposition and the matching reference, each against
//! expectations worked out by hand from the MPI programs in
//! examples/traces/src.

use std::path::{Path, PathBuf};

use softspin_netsim::trace::program::Step;
use softspin_netsim::trace::{self, ti, Action, TAG_COLL, TAG_SENDRECV, TAG_USER_MAX};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces")
}

/// Eager limit of examples/cluster/matching (UC_MT_EAGER_MAX).
const EAGER: u64 = 1408;

fn load(name: &str) -> trace::Trace {
    trace::load(&traces().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn err_of(text: &str) -> String {
    match trace::parse_str("t.txt", text) {
        Ok(t) => match trace::programs(&t).and_then(|p| trace::reference(&p, EAGER).map(|_| ())) {
            Ok(()) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

fn reference_of(text: &str) -> (Vec<trace::Program>, trace::Reference) {
    let t = trace::parse_str("t.txt", text).unwrap();
    let p = trace::programs(&t).unwrap();
    let r = trace::reference(&p, EAGER).unwrap();
    (p, r)
}

#[test]
fn datatype_ids_as_smpi_writes_them() {
    // datatypes.c sends 3 elements of BYTE, DOUBLE, INT, CHAR, SHORT, LONG,
    // FLOAT (tag = index) on x86-64 Linux.
    let sizes = [1u64, 8, 4, 1, 2, 8, 4];
    let t = load("datatypes");
    let sends: Vec<(u32, u64)> = t.ranks[0]
        .iter()
        .filter_map(|a| match a.action {
            Action::Send { tag, bytes, .. } => Some((tag, bytes)),
            _ => None,
        })
        .collect();
    let want: Vec<(u32, u64)> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32, 3 * s))
        .collect();
    assert_eq!(sends, want);
}

#[test]
fn ring_trace() {
    let t = load("ring");
    assert_eq!(t.ranks.len(), 4);
    // rank 2: init, compute 3e5, recv, send, compute, recv, send, irecv, isend, waitall, finalize
    let r2: Vec<&Action> = t.ranks[2].iter().map(|a| &a.action).collect();
    assert_eq!(r2[1], &Action::Compute { flops: 3e5 });
    assert_eq!(
        r2[2],
        &Action::Recv {
            from: 1,
            tag: 0,
            bytes: 64,
            blocking: true
        }
    );
    assert_eq!(
        r2[3],
        &Action::Send {
            to: 3,
            tag: 0,
            bytes: 64,
            blocking: true
        }
    );
    assert!(r2.contains(&&Action::Send {
        to: 3,
        tag: 9,
        bytes: 32,
        blocking: false
    }));
    assert_eq!(r2.last(), Some(&&Action::Finalize));
    // the file and line are kept: rank 2's third line
    assert_eq!(t.ranks[2][2].at.line, 3);
    assert!(t.ranks[2][2].at.file.ends_with("ring/rank-2.txt"));

    let p = trace::programs(&t).unwrap();
    let r = trace::reference(&p, EAGER).unwrap();
    // 2 rounds of 64 B around the ring and one 4-double shift: 3 per rank
    assert_eq!(r.messages.len(), 12);
    assert_eq!(r.total_bytes(), 4 * (2 * 64 + 32));
    // rank 0's first send (round 0) is rank 1's first receive
    let m = r.of_send(0, 0).unwrap();
    assert_eq!((m.dst, m.recv_req, m.tag, m.bytes), (1, 0, 0, 64));
    assert_eq!(r.of_recv(1, 0), Some(m));
}

#[test]
fn halo_trace_rendezvous_and_sendrecv() {
    let t = load("halo");
    let p = trace::programs(&t).unwrap();
    let r = trace::reference(&p, EAGER).unwrap();
    // 3 steps x 4 ranks x (two 8 KiB borders + one int via sendRecv)
    assert_eq!(r.messages.len(), 36);
    let big = r.messages.iter().filter(|m| m.rendezvous(EAGER)).count();
    assert_eq!(big, 24);
    assert!(r
        .messages
        .iter()
        .filter(|m| m.bytes == 8192)
        .all(|m| m.tag == 1 || m.tag == 2));
    let sr: Vec<_> = r
        .messages
        .iter()
        .filter(|m| m.tag == TAG_SENDRECV)
        .collect();
    assert_eq!(sr.len(), 12);
    // sendRecv goes right: each rank's comes from its left neighbour, in step order
    for m in sr {
        assert_eq!(m.dst, (m.src + 1) % 4);
        assert_eq!(m.bytes, 4);
        assert!(m.seq < 3);
    }
    // the same trace with eager-only progress is fine too, and with
    // everything rendezvous it still completes (receives are posted first)
    trace::reference(&p, u64::MAX).unwrap();
    trace::reference(&p, 0).unwrap();
}

#[test]
fn collectives_trace() {
    let t = load("allreduce");
    let p = trace::programs(&t).unwrap();
    let r = trace::reference(&p, EAGER).unwrap();
    // n = 4: a binomial reduce and a bcast are 3 messages each.
    // 2 allreduce (reduce + bcast of 2048 B), bcast 128 B, reduce 64 B,
    // barrier (reduce + bcast of 0 B)
    assert_eq!(r.messages.len(), 2 * 6 + 3 + 3 + 6);
    assert_eq!(r.total_bytes(), 2 * 6 * 2048 + 3 * 128 + 3 * 64);
    assert!(r.messages.iter().all(|m| m.tag >= TAG_COLL));
    // allreduce's compute (0 flops here) follows its messages
    let computes = p[1]
        .steps
        .iter()
        .filter(|s| matches!(s.step, Step::Compute { .. }))
        .count();
    assert_eq!(computes, 2 + 2 + 1); // 2 compute lines, 2 allreduce, 1 reduce
}

#[test]
fn block_collectives_trace() {
    let t = load("alltoall");
    let p = trace::programs(&t).unwrap();
    let r = trace::reference(&p, EAGER).unwrap();
    // n = 4: gather and scatter 3 messages each (4 and 3 doubles), the
    // allgather ring 4 x 3 (5 doubles), alltoall 4 x 3 (6 ints)
    assert_eq!(r.messages.len(), 3 + 3 + 12 + 12);
    assert_eq!(r.total_bytes(), 3 * 32 + 3 * 24 + 12 * 40 + 12 * 24);
    // gather goes to rank 2, scatter comes from rank 1
    let gather: Vec<_> = r.messages.iter().filter(|m| m.bytes == 32).collect();
    assert!(gather.iter().all(|m| m.dst == 2) && gather.len() == 3);
    let scatter: Vec<_> = r
        .messages
        .iter()
        .filter(|m| m.bytes == 24 && m.tag == gather[0].tag + 1)
        .collect();
    assert!(scatter.iter().all(|m| m.src == 1) && scatter.len() == 3);
    // alltoall: every ordered pair once
    let mut pairs: Vec<(u32, u32)> = r
        .messages
        .iter()
        .filter(|m| m.tag == gather[0].tag + 3)
        .map(|m| (m.src, m.dst))
        .collect();
    pairs.sort();
    let want: Vec<(u32, u32)> = (0..4)
        .flat_map(|a| (0..4).filter(move |&b| b != a).map(move |b| (a, b)))
        .collect();
    assert_eq!(pairs, want);
    // an allgather whose block is larger than the receive's: truncated
    let e = err_of("0 init\n0 allgather 2 1\n1 init\n1 allgather 2 1\n");
    assert!(
        e.contains("receive buffer of 1 bytes for a message of 2 bytes"),
        "{e}"
    );
}

#[test]
fn bcast_tree_from_root_1() {
    // n = 4, root 1: relative ranks 0..3 = ranks 1,2,3,0; relative 0
    // sends to 2 then 1, relative 2 sends to 3: 1->3, 1->2, 3->0.
    let text =
        "0 init\n0 bcast 5 1\n1 init\n1 bcast 5 1\n2 init\n2 bcast 5 1\n3 init\n3 bcast 5 1\n";
    let (p, r) = reference_of(text);
    let mut edges: Vec<(u32, u32)> = r.messages.iter().map(|m| (m.src, m.dst)).collect();
    edges.sort();
    assert_eq!(edges, vec![(1, 2), (1, 3), (3, 0)]);
    // root 1 sends the farther child (3) first
    let firsts: Vec<u32> = p[1]
        .steps
        .iter()
        .filter_map(|s| match s.step {
            Step::Send { to, .. } => Some(to),
            _ => None,
        })
        .collect();
    assert_eq!(firsts, vec![3, 2]);
}

#[test]
fn matching_is_per_channel_in_order() {
    // Two messages with one tag match the receives in order (sizes 10, 20
    // into buffers of 10, 20); tags 1 and 2 may be received in reverse
    // when eager.
    let text = "0 init\n0 isend 1 5 10\n0 isend 1 5 20\n0 send 1 1 7\n0 send 1 2 8\n0 waitall 2\n\
                1 init\n1 irecv 0 5 10\n1 irecv 0 5 20\n1 recv 0 2 8\n1 recv 0 1 7\n1 waitall 2\n";
    let (_, r) = reference_of(text);
    let m0 = r.of_recv(1, 0).unwrap();
    let m1 = r.of_recv(1, 1).unwrap();
    assert_eq!((m0.bytes, m0.seq, m0.send_req), (10, 0, 0));
    assert_eq!((m1.bytes, m1.seq, m1.send_req), (20, 1, 1));
    assert_eq!(r.of_recv(1, 2).unwrap().tag, 2);
    assert_eq!(r.of_recv(1, 3).unwrap().tag, 1);
    // different messages get different seeds; the same message the same
    let seeds: std::collections::HashSet<u64> = r.messages.iter().map(|m| m.seed(7)).collect();
    assert_eq!(seeds.len(), 4);
    assert_eq!(m0.seed(7), r.of_send(0, 0).unwrap().seed(7));
    assert_ne!(m0.seed(7), m0.seed(8));
}

#[test]
fn a_receive_buffer_larger_than_the_message() {
    let (_, r) = reference_of("0 init\n0 send 1 3 10\n1 init\n1 recv 0 3 100\n");
    let m = &r.messages[0];
    assert_eq!((m.bytes, m.capacity), (10, 100));
}

#[test]
fn rendezvous_deadlock_is_reported() {
    // Both send 4 KiB first: fine eager, stuck under rendezvous.
    let text =
        "0 init\n0 send 1 0 4096\n0 recv 1 0 4096\n1 init\n1 send 0 0 4096\n1 recv 0 0 4096\n";
    let t = trace::parse_str("t.txt", text).unwrap();
    let p = trace::programs(&t).unwrap();
    trace::reference(&p, 4096).unwrap();
    let e = trace::reference(&p, EAGER).unwrap_err().to_string();
    assert!(
        e.contains("cannot complete")
            && e.contains("rank 0 at t.txt:2")
            && e.contains("rank 1 at t.txt:5"),
        "{e}"
    );
}

#[test]
fn bad_traces_are_refused_with_file_and_line() {
    let ok = "1 init\n1 recv 0 0 8\n";
    let cases: &[(&str, &str)] = &[
        (
            "0 init\n0 alltoallv 8 8\n1 init\n",
            "t.txt:2: action `alltoallv` is not supported",
        ),
        (
            "0 init\n0 frobnicate\n1 init\n",
            "t.txt:2: unknown action `frobnicate`",
        ),
        (
            "0 init\n0 send 0 0 8\n1 init\n",
            "t.txt:2: destination 0 is the rank itself",
        ),
        (
            "0 init\n0 send 7 0 8\n1 init\n",
            "t.txt:2: destination 7 is not a rank",
        ),
        (
            "0 init\n0 send -1 0 8\n1 init\n",
            "t.txt:2: destination `-1` is not a rank",
        ),
        (
            "0 init\n0 send 1 0 8.5\n1 init\n",
            "t.txt:2: count `8.5` is not a whole number",
        ),
        (
            "0 init\n0 send 1 0 8 9\n1 init\n",
            "t.txt:2: datatype id `9`",
        ),
        ("0 init\n0 send 1 0 nan\n1 init\n", "t.txt:2: count `nan`"),
        ("0 init\n0 send 1 0 1e12\n1 init\n", "t.txt:2: message of"),
        (
            "0 init\n0 send 1 0\n1 init\n",
            "t.txt:2: `send` needs its count",
        ),
        (
            "0 init\n0 send 1 0 8 0 0\n1 init\n",
            "t.txt:2: `send` takes at most 4 arguments",
        ),
        ("0 init\n0 compute -3\n1 init\n", "t.txt:2: flops `-3`"),
        ("x init\n", "t.txt:1: rank `x` is not a rank"),
        (
            "0 init\n0 finalize\n0 compute 1\n1 init\n",
            "t.txt:3: an action after `finalize`",
        ),
        (
            "0 compute 1\n1 init\n",
            "t.txt:1: rank 0 does not start with `init`",
        ),
        ("0 init\n2 init\n", "rank 1 has no actions"),
        ("0 init\n", "1 rank(s)"),
        (
            "0 init\n0 recv -333 -444 8 2\n1 init\n",
            "t.txt:2: a wildcard receive (MPI_ANY_SOURCE -333",
        ),
        (
            "0 init\n0 irecv 1 -444 8\n1 init\n",
            "t.txt:2: a wildcard receive",
        ),
        (
            "0 init\n0 wait 0 1 3\n1 init\n",
            "t.txt:2: `wait 0 1 3`: no such outstanding",
        ),
        (
            "0 init\n0 wait 2 3 3\n1 init\n",
            "t.txt:2: `wait 2 3` names a request not of rank 0",
        ),
    ];
    for (text, want) in cases {
        let e = err_of(text);
        assert!(e.contains(want), "{text:?}: got {e:?}, want {want:?}");
    }
    let tag = format!("0 init\n0 send 1 {} 8\n1 init\n", TAG_USER_MAX + 1);
    assert!(err_of(&tag).contains("t.txt:2: tag"));
    // matching errors name the unmatched side
    assert!(err_of(&format!("0 init\n{ok}"))
        .contains("t.txt:3: receive of 8 bytes by rank 1 from 0, tag 0"));
    assert!(err_of("0 init\n0 send 1 0 8\n1 init\n")
        .contains("t.txt:2: send of 8 bytes from rank 0 to 1"));
    assert!(err_of("0 init\n0 send 1 0 9\n1 init\n1 recv 0 0 8\n")
        .contains("t.txt:4: receive buffer of 8 bytes"));
    // collectives must agree
    let e = err_of("0 init\n0 bcast 8 0\n1 init\n1 bcast 8 1\n");
    assert!(
        e.contains("t.txt:4: collective") && e.contains("t.txt:2"),
        "{e}"
    );
    assert!(err_of("0 init\n0 barrier\n1 init\n")
        .contains("t.txt:2: collective Barrier of rank 0: rank 1 does not call it"));
}

#[test]
fn an_index_file_and_directory_errors() {
    let dir = std::env::temp_dir().join(format!("ssW4-trace-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("files")).unwrap();
    std::fs::write(dir.join("files/a.txt"), "0 init\n0 send 1 0 8\n").unwrap();
    std::fs::write(dir.join("files/b.txt"), "1 init\n1 recv 0 0 8\n").unwrap();
    std::fs::write(dir.join("index.txt"), "files/a.txt\nfiles/b.txt\n").unwrap();
    let t = trace::load(&dir.join("index.txt")).unwrap();
    assert_eq!(t.ranks.len(), 2);
    let t = trace::load(&dir.join("files")).unwrap();
    assert_eq!(t.ranks.len(), 2);
    std::fs::write(dir.join("index.txt"), "files/a.txt\nfiles/missing.txt\n").unwrap();
    let e = trace::load(&dir.join("index.txt")).unwrap_err().to_string();
    assert!(
        e.contains("index.txt:2: reading") && e.contains("missing.txt"),
        "{e}"
    );
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let e = trace::load(&dir.join("empty")).unwrap_err().to_string();
    assert!(e.contains("no *.txt action files"), "{e}");
    let e = trace::load(&dir.join("nonexistent"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nonexistent"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mutated recorded traces: an error or a trace, never a panic, and
/// whatever is accepted has a consistent reference.
#[test]
fn mutated_traces_never_panic() {
    let texts: Vec<String> = ["halo", "allreduce", "ring", "alltoall"]
        .iter()
        .map(|n| {
            (0..4)
                .map(|r| {
                    std::fs::read_to_string(traces().join(format!("{n}/rank-{r}.txt"))).unwrap()
                })
                .collect()
        })
        .collect();
    let words = [
        "-1",
        "0",
        "1",
        "3",
        "9",
        "99999999999",
        "1e308",
        "nan",
        "wait",
        "bcast",
        "",
        "\n",
        "init",
    ];
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut accepted = 0;
    for k in 0..3000 {
        let mut w: Vec<String> = texts[k % texts.len()]
            .split(' ')
            .map(String::from)
            .collect();
        for _ in 0..(1 + next() % 3) {
            let i = (next() % w.len() as u64) as usize;
            w[i] = words[(next() % words.len() as u64) as usize].to_string();
        }
        let t = w.join(" ");
        if let Ok(tr) = trace::parse_str("m.txt", &t) {
            if let Ok(p) = trace::programs(&tr) {
                if let Ok(r) = trace::reference(&p, EAGER) {
                    accepted += 1;
                    for m in &r.messages {
                        assert!(m.bytes <= m.capacity);
                        assert_eq!(r.of_send(m.src, m.send_req), Some(m));
                    }
                }
            }
        }
    }
    assert!(accepted > 0);
    let _ = ti::MAX_RANKS;
}

// --- the LogGP timing model (trace::timing), against hand-derived sums ---

use softspin_netsim::trace::{Matching, Model};
use softspin_netsim::{NetParams, NicKind};

fn timing(text: &str, matching: Matching) -> (f64, Vec<f64>) {
    let p = NetParams::sc17();
    let (progs, r) = reference_of(text);
    let m = Model {
        params: &p,
        nic: NicKind::Discrete,
        matching,
        eager_max: EAGER,
        host_flops: 1e9,
    };
    let t = trace::completion(&progs, &r, &m).unwrap();
    (t.completion_ns, t.rank_end_ns)
}

/// Hand-derived parts: two nodes on one 36-port switch are one switch and
/// two wires apart; G per byte from 50 GiB/s; the discrete NIC's DMA is
/// 250 ns + bytes at 64 GiB/s; copies at 150 GiB/s.
struct Hand {
    o: f64,
    l: f64,
    g_byte: f64,
}
impl Hand {
    fn new() -> Hand {
        let p = NetParams::sc17();
        Hand {
            o: p.o_ns,
            l: p.switch_ns + 2.0 * p.wire_ns,
            g_byte: 1e9 / (50.0 * 1073741824.0),
        }
    }
    fn dma(&self, b: f64) -> f64 {
        250.0 + b * 1e9 / (64.0 * 1073741824.0)
    }
    fn copy(&self, b: f64) -> f64 {
        b * 1e9 / (150.0 * 1073741824.0)
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn timing_eager_posted_and_unexpected() {
    let h = Hand::new();
    let posted = "0 init\n0 send 1 0 100\n1 init\n1 recv 0 0 100\n";
    let landed = h.o + h.l + 100.0 * h.g_byte + h.dma(100.0);
    let (t, ends) = timing(posted, Matching::Nic);
    assert!(
        close(ends[0], h.o) && close(t, landed),
        "{ends:?} vs {landed}"
    );
    let (t, _) = timing(posted, Matching::Host);
    assert!(close(t, landed + h.o + h.copy(100.0)), "{t}");

    // the receiver computes 1 s first: the message waits (case III)
    let late = "0 init\n0 send 1 0 100\n1 init\n1 compute 1e9\n1 recv 0 0 100\n";
    let (t, _) = timing(late, Matching::Nic);
    assert!(close(t, 1e9 + h.o + h.copy(100.0)), "{t}");
    let (t, _) = timing(late, Matching::Host);
    assert!(close(t, 1e9 + 2.0 * h.o + h.copy(100.0)), "{t}");
}

#[test]
fn timing_rendezvous() {
    let h = Hand::new();
    let s = 100_000.0;
    let text = "0 init\n0 send 1 0 100000\n1 init\n1 recv 0 0 100000\n";
    let (_, ends) = timing(text, Matching::Nic);
    // header at o + L; get L; data L + sG (+ DMA); FIN L
    assert!(
        close(ends[1], h.o + 3.0 * h.l + s * h.g_byte + h.dma(s)),
        "{ends:?}"
    );
    assert!(close(ends[0], h.o + 4.0 * h.l + s * h.g_byte), "{ends:?}");
    let (_, ends) = timing(text, Matching::Host);
    // clear-to-send at 2o + 2L at the sender, data sent o later
    assert!(
        close(ends[0], 3.0 * h.o + 2.0 * h.l + s * h.g_byte),
        "{ends:?}"
    );
    assert!(
        close(ends[1], 3.0 * h.o + 3.0 * h.l + s * h.g_byte + h.dma(s)),
        "{ends:?}"
    );
}

#[test]
fn timing_overlap_needs_nic_matching() {
    // The receiver posts a large receive, computes 1 s, then waits: with
    // NIC matching the sender is done in about a microsecond; with host
    // matching it waits for the receiver's CPU to reach MPI again.
    let text =
        "0 init\n0 send 1 0 100000\n1 init\n1 irecv 0 0 100000\n1 compute 1e9\n1 wait 0 1 0\n";
    let (_, nic) = timing(text, Matching::Nic);
    let (_, host) = timing(text, Matching::Host);
    assert!(nic[0] < 5e3, "{nic:?}");
    assert!(host[0] > 1e9, "{host:?}");
    assert!(close(nic[1], Hand::new().o + 1e9));
    // a host speed of 0 is an error, not infinity
    let p = NetParams::sc17();
    let (progs, r) = reference_of(text);
    let m = Model {
        params: &p,
        nic: NicKind::Discrete,
        matching: Matching::Nic,
        eager_max: EAGER,
        host_flops: 0.0,
    };
    let e = trace::completion(&progs, &r, &m).unwrap_err().to_string();
    assert!(e.contains("host speed 0 flop/s"), "{e}");
}

#[test]
fn timing_of_the_recorded_traces() {
    let p = NetParams::sc17();
    println!("| trace | ranks | messages | bytes | NIC matching (µs) | host matching (µs) |");
    println!("|---|---|---|---|---|---|");
    for name in ["ring", "halo", "allreduce", "alltoall"] {
        let t = load(name);
        let progs = trace::programs(&t).unwrap();
        let r = trace::reference(&progs, EAGER).unwrap();
        let mut out = Vec::new();
        for matching in [Matching::Nic, Matching::Host] {
            let m = Model {
                params: &p,
                nic: NicKind::Discrete,
                matching,
                eager_max: EAGER,
                host_flops: 1e9,
            };
            out.push(trace::completion(&progs, &r, &m).unwrap().completion_ns);
        }
        println!(
            "| {name} | {} | {} | {} | {:.3} | {:.3} |",
            t.ranks.len(),
            r.messages.len(),
            r.total_bytes(),
            out[0] / 1e3,
            out[1] / 1e3
        );
        // at least the compute (ns at 1 Gflop/s): ring's rank 3 computes
        // 2 x 4e5 flops, halo 3 x 2e6, allreduce 2 x 5e5, alltoall none
        let compute = match name {
            "ring" => 8e5,
            "halo" => 6e6,
            "allreduce" => 1e6,
            _ => 0.0,
        };
        assert!(
            out.iter().all(|&t| t > compute && t < compute + 1e6),
            "{name}: {out:?}"
        );
    }
}

// --- the matching handler's host interface (trace::mt) ---

use softspin_netsim::trace::mt::Mt;

#[test]
fn mt_packets_are_mtapis() {
    let mt = Mt::new().unwrap();
    assert_eq!(mt.eager_max, EAGER);
    // mtapi.packet(3, 0x12345, 0xabcdef, UC_MODE_EAGER, 5, b"abcde"), printed by Python
    let want = "554380312345abcdef01000123450000000500000000000300096162636465";
    let got: String = mt
        .packet(3, 0x12345, 0xabcdef, false, 5, b"abcde")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, want);
    // mtapi.rts(0x110000, 7)
    assert_eq!(mt.rts(0x110000, 7), [0, 0x11, 0, 0, 0, 0, 0, 7]);
    // a rendezvous packet's mode is UC_MODE_RNDV (10) at bytes 24..26
    assert_eq!(
        &mt.packet(1, 0, 0, true, 4096, &mt.rts(0x110000, 1))[24..26],
        &[0, 10]
    );
}

#[test]
fn mt_posts_and_completions() {
    let mt = Mt::new().unwrap();
    // ring entries: 20 bytes of little-endian u32s from 0x1000, 64 of them
    assert_eq!(mt.post_at(0), 0x1000);
    assert_eq!(mt.post_at(65), 0x1000 + 20);
    let e = mt.post_entry(5, Some(2), None, 0x20000, 64);
    assert_eq!(
        e,
        [5, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 2, 0, 64, 0, 0, 0]
    );
    // a completion: status, len, src, tag, slot, gen, how, done = id + 1
    assert_eq!(mt.completion_at(3), 0x2000 + 3 * 32);
    let rec = |done: u32, slot: u32| -> Vec<u8> {
        [0u32, 64, 2, 9, slot, 4, 2, done]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    };
    let c = mt.completion(3, &rec(4, 7)).unwrap();
    assert_eq!(
        (c.status, c.len, c.src, c.tag, c.slot, c.gen, c.how),
        (0, 64, 2, 9, Some(7), 4, mt.how_unexpected)
    );
    assert_eq!(mt.completion(3, &rec(4, 0xffff_ffff)).unwrap().slot, None);
    assert_eq!(mt.completion(3, &rec(3, 7)), None, "not done yet");
    assert_eq!(mt.completion(3, &rec(4, 7)[..28]), None, "short record");
    assert_eq!(mt.unexp_at(2), 0x4000 + 2 * 1408);
    assert_eq!(mt.fin_at(65), 0x200 + 8);
    // the replay's tags fit the handler's
    assert_eq!(mt.tag_max, (1 << trace::TAG_BITS) - 1);
}

#[test]
fn mt_limits() {
    let mt = Mt::new().unwrap();
    let check = |text: &str| {
        let t = trace::parse_str("t.txt", text).unwrap();
        let p = trace::programs(&t).unwrap();
        trace::mt::check_limits(&p, &mt).map_err(|e| e.to_string())
    };
    for name in ["ring", "halo", "allreduce", "alltoall"] {
        let p = trace::programs(&load(name)).unwrap();
        trace::mt::check_limits(&p, &mt).unwrap();
    }
    // 512 KiB is the largest message (UC_MT_MAX)
    check("0 init\n0 send 1 0 524288\n1 init\n1 recv 0 0 524288\n").unwrap();
    let e = check("0 init\n0 send 1 0 524289\n1 init\n1 recv 0 0 524289\n").unwrap_err();
    assert!(
        e.contains("t.txt:2: rank 0: a message of 524289 bytes"),
        "{e}"
    );
    // 64 receives outstanding, not 65; the count drops at the wait
    let posts = |k: usize| {
        let mut t = String::from("0 init\n1 init\n");
        for i in 0..k {
            t += &format!("0 isend 1 {i} 8\n1 irecv 0 {i} 8\n");
        }
        t + "0 waitall 1\n1 waitall 1\n1 irecv 0 99 8\n0 send 1 99 8\n1 waitall 1\n"
    };
    check(&posts(64)).unwrap();
    let e = check(&posts(65)).unwrap_err();
    assert!(
        e.contains("rank 1: more than 64 receives outstanding"),
        "{e}"
    );
    // send area 0x110000..0x200000: two 512 KiB rendezvous sends in flight do not fit
    let e = check("0 init\n0 isend 1 0 524288\n0 isend 1 1 524288\n0 waitall 2\n1 init\n1 irecv 0 0 524288\n1 irecv 0 1 524288\n1 waitall 2\n")
        .unwrap_err();
    assert!(e.contains("t.txt:3: rank 0: 1048576 bytes of rendezvous sends in flight: the send area holds 983040"), "{e}");
}

/// Large traces take linear time: 100,000 open requests waited for one by
/// one (a quadratic search would take minutes), and a 4,096-rank ring.
#[test]
fn large_traces() {
    let k = 100_000;
    let mut t = String::from("0 init\n1 init\n");
    for i in 0..k {
        t += &format!("0 isend 1 {} 8\n1 irecv 0 {} 8\n", i % 7, i % 7);
    }
    for i in 0..k {
        t += &format!("0 wait 0 1 {}\n1 wait 0 1 {}\n", i % 7, i % 7);
    }
    let start = std::time::Instant::now();
    let (progs, r) = reference_of(&t);
    assert_eq!(r.messages.len(), k);
    let p = NetParams::sc17();
    let m = Model {
        params: &p,
        nic: NicKind::Discrete,
        matching: Matching::Host,
        eager_max: EAGER,
        host_flops: 1e9,
    };
    trace::completion(&progs, &r, &m).unwrap();

    let n = 4096;
    let mut t = String::new();
    for i in 0..n {
        t += &format!("{i} init\n");
        if i == 0 {
            t += &format!("0 send 1 0 64\n0 recv {} 0 64\n", n - 1);
        } else {
            t += &format!("{i} recv {} 0 64\n{i} send {} 0 64\n", i - 1, (i + 1) % n);
        }
    }
    let (progs, r) = reference_of(&t);
    assert_eq!(r.messages.len(), n);
    let timing = trace::completion(&progs, &r, &m).unwrap();
    // the token goes round once: n messages one after the other
    assert!(timing.completion_ns > n as f64 * p.o_ns);
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

/// A few collective lines on many ranks make many messages: past
/// MAX_STEPS the trace is refused at the line, not run out of memory.
#[test]
fn too_many_steps() {
    let n = 2048; // an alltoall: 2 (n - 1) steps per rank, 8.4 M in all
    let mut t = String::new();
    for i in 0..n {
        t += &format!("{i} init\n{i} alltoall 1 1\n");
    }
    let tr = trace::parse_str("t.txt", &t).unwrap();
    let e = trace::programs(&tr).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "more than {} point-to-point steps",
            trace::program::MAX_STEPS
        )),
        "{e}"
    );
    assert!(e.starts_with("t.txt:"), "{e}");
}
