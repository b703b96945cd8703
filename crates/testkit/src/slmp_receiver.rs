//! A reference SLMP receiver for tests (of `softspin-slmp` and the CLI):
//! a UDP socket thread that does what seed 000 §5.1.2 asks of a receiver — ACK every SYN segment with its header, write each payload at
//! its offset, a message is complete when EOM was seen and every byte
//! before it arrived — behind a seeded impairment that drops data packets
//! and ACKs, duplicates and reorders/delays data packets, and counts what
//! it did so a test can check that loss really happened.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use softspin_wire::slmp::{Flags, Packet, Repr, HEADER_LEN};

use crate::Rng;

/// What the receiver does to traffic; fractions in 0..=1.
#[derive(Clone, Copy, Debug, Default)]
pub struct Impairment {
    pub seed: u64,
    /// Data packets dropped before the receiver sees them.
    pub drop_data: f64,
    /// ACKs dropped instead of sent.
    pub drop_ack: f64,
    /// Data packets delivered twice.
    pub duplicate: f64,
    /// Data packets held back and delivered after later ones (or after
    /// `max_delay`).
    pub reorder: f64,
    pub max_delay: Duration,
}

impl Impairment {
    /// Loss `p` both ways, with `dup` duplicates and `reorder` reordering.
    pub fn lossy(seed: u64, p: f64, dup: f64, reorder: f64) -> Impairment {
        Impairment {
            seed,
            drop_data: p,
            drop_ack: p,
            duplicate: dup,
            reorder,
            max_delay: Duration::from_micros(500),
        }
    }
}

/// What the receiver saw and did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Complete messages by id.
    pub messages: BTreeMap<u32, Vec<u8>>,
    /// Messages with some bytes but not complete.
    pub incomplete: usize,
    pub data_packets: u64,
    pub data_dropped: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub acks_sent: u64,
    pub acks_dropped: u64,
    /// Datagrams that are not SLMP data, or a segment at a known offset
    /// with a different length.
    pub malformed: u64,
}

#[derive(Default)]
struct Reassembly {
    buf: Vec<u8>,
    seen: BTreeMap<u32, u32>,
    covered: u64,
    end: Option<u64>,
}

/// The receiver thread; [`ReferenceReceiver::stop`] returns its outcome.
pub struct ReferenceReceiver {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Outcome>>,
}

impl ReferenceReceiver {
    /// Listen on 127.0.0.1, an ephemeral port.
    pub fn spawn(imp: Impairment) -> std::io::Result<ReferenceReceiver> {
        Self::spawn_on("127.0.0.1:0".parse().unwrap(), imp)
    }

    pub fn spawn_on(bind: SocketAddr, imp: Impairment) -> std::io::Result<ReferenceReceiver> {
        let sock = UdpSocket::bind(bind)?;
        sock.set_nonblocking(true)?;
        grow_receive_buffer(&sock, RECEIVE_BUFFER);
        let addr = sock.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || serve(sock, imp, flag));
        Ok(ReferenceReceiver {
            addr,
            stop,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop after the socket has been quiet for a few ms, and report.
    pub fn stop(mut self) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().expect("receiver thread")
    }
}

impl Drop for ReferenceReceiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Receive buffer asked for: the default (~200 KiB, ~90 datagrams) drops
/// datagrams beyond the impairment's once an adaptive window grows past
/// it, and the tests compare the sender's packet count with the
/// receiver's.
const RECEIVE_BUFFER: libc::c_int = 16 << 20;

/// SO_RCVBUFFORCE (root) or else SO_RCVBUF (capped by rmem_max); best
/// effort, a smaller buffer only means drops the sender must repair.
fn grow_receive_buffer(sock: &UdpSocket, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a valid socket and a c_int option value of its size.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return;
        }
    }
}

fn serve(sock: UdpSocket, imp: Impairment, stop: Arc<AtomicBool>) -> Outcome {
    let mut rng = Rng::new(imp.seed);
    let mut out = Outcome::default();
    let mut msgs: HashMap<u32, Reassembly> = HashMap::new();
    let mut held: VecDeque<(Instant, u32, Vec<u8>, SocketAddr)> = VecDeque::new();
    let mut buf = vec![0u8; 65_536];
    let mut quiet_since: Option<Instant> = None;
    loop {
        // A short wait, so held packets leave close to their delay.
        let _ = softspin_slmp::wait_readable(&sock, Duration::from_micros(100));
        let got = match sock.recv_from(&mut buf) {
            Ok((n, from)) => Some((buf[..n].to_vec(), from)),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => None,
            Err(_) => None,
        };
        let now = Instant::now();
        // Held packets: released after their delay or after 1-3 newer ones.
        let mut release = Vec::new();
        held.retain_mut(|h| {
            if got.is_some() {
                h.1 = h.1.saturating_sub(1);
            }
            if h.0 <= now || h.1 == 0 || stop.load(Ordering::Relaxed) {
                release.push((std::mem::take(&mut h.2), h.3));
                false
            } else {
                true
            }
        });
        match got {
            Some((d, from)) => {
                quiet_since = None;
                out.data_packets += 1;
                if rng.chance(imp.drop_data) {
                    out.data_dropped += 1;
                } else if rng.chance(imp.reorder) {
                    out.reordered += 1;
                    let later = 1 + (rng.next_u64() % 3) as u32;
                    let delay = Duration::from_nanos(
                        rng.next_u64() % (imp.max_delay.as_nanos() as u64 + 1),
                    );
                    held.push_back((now + delay, later, d, from));
                } else {
                    let dup = rng.chance(imp.duplicate);
                    deliver(&sock, &d, from, &imp, &mut rng, &mut msgs, &mut out);
                    if dup {
                        out.duplicated += 1;
                        deliver(&sock, &d, from, &imp, &mut rng, &mut msgs, &mut out);
                    }
                }
            }
            None => {
                if stop.load(Ordering::Relaxed) && held.is_empty() && release.is_empty() {
                    let q = *quiet_since.get_or_insert(now);
                    if now.duration_since(q) >= Duration::from_millis(5) {
                        break;
                    }
                }
            }
        }
        for (d, from) in release {
            deliver(&sock, &d, from, &imp, &mut rng, &mut msgs, &mut out);
        }
    }
    for (id, r) in msgs {
        match r.end {
            Some(end) if r.covered == end => {
                let mut b = r.buf;
                b.resize(end as usize, 0);
                out.messages.insert(id, b);
            }
            _ => out.incomplete += 1,
        }
    }
    out
}

fn deliver(
    sock: &UdpSocket,
    d: &[u8],
    from: SocketAddr,
    imp: &Impairment,
    rng: &mut Rng,
    msgs: &mut HashMap<u32, Reassembly>,
    out: &mut Outcome,
) {
    let Ok(p) = Packet::new_checked(d) else {
        out.malformed += 1;
        return;
    };
    let Ok(repr) = Repr::parse(&p) else {
        out.malformed += 1;
        return;
    };
    if repr.flags.ack() {
        out.malformed += 1;
        return;
    }
    let payload = p.payload();
    let r = msgs.entry(repr.msg_id).or_default();
    match r.seen.get(&repr.offset) {
        Some(&len) if len as usize != payload.len() => out.malformed += 1,
        Some(_) => {}
        None => {
            let start = repr.offset as usize;
            let end = start + payload.len();
            if r.buf.len() < end {
                r.buf.resize(end, 0);
            }
            r.buf[start..end].copy_from_slice(payload);
            r.seen.insert(repr.offset, payload.len() as u32);
            r.covered += payload.len() as u64;
        }
    }
    if repr.flags.eom() {
        r.end = Some(u64::from(repr.offset) + payload.len() as u64);
    }
    if repr.flags.syn() {
        if rng.chance(imp.drop_ack) {
            out.acks_dropped += 1;
            return;
        }
        let mut ack = [0u8; HEADER_LEN];
        let mut a = Packet::new_unchecked(&mut ack[..]);
        Repr {
            flags: repr.flags | Flags::ACK,
            ..repr
        }
        .emit(&mut a)
        .expect("header-sized buffer");
        if sock.send_to(&ack, from).is_ok() {
            out.acks_sent += 1;
        }
    }
}
