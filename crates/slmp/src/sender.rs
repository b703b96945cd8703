//! The SLMP sender (seed 000 §5.1.2-5.1.3, §7.3): cuts messages into
//! segments, sets SYN/EOM per the sync mode, keeps at most a window of SYN
//! segments unacknowledged, retransmits what is lost (RACK's time threshold,
//! `rack.rs`, then the RTO as the last resort), undoes window decreases
//! that prove spurious, and gives up, with an error naming the message,
//! when a segment cannot get through.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;
use softspin_wire::slmp::{Flags, Packet, Repr, HEADER_LEN};

use crate::rack::Rack;
use crate::rto::{RtoConfig, RtoEstimator};
use crate::stats::{RttStats, Stats, WindowStats};
use crate::window::{Aimd, WindowMode};
use crate::{Error, GiveUpReason, Result};

/// Which segments ask for an ACK (seed 000 §5.1.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncMode {
    /// No SYN: no ACKs, no retransmission, delivery not confirmed.
    None,
    /// SYN on the first and last segment of each message: confirms the
    /// message started and ended, not the segments between.
    Msg,
    /// SYN on every segment: every segment is acknowledged or retransmitted.
    #[default]
    All,
}

impl SyncMode {
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::None => "none",
            SyncMode::Msg => "msg",
            SyncMode::All => "all",
        }
    }
}

/// Bytes of IPv4 and UDP headers under the SLMP header.
const IPV4_UDP_HEADERS: usize = softspin_wire::IPV4_HEADER_LEN + softspin_wire::UDP_HEADER_LEN;
/// Default payload per segment: the frame fits a 1500-byte MTU
/// (1500 - 20 IPv4 - 8 UDP - 10 SLMP = 1462).
pub const DEFAULT_SEGMENT: usize = 1500 - IPV4_UDP_HEADERS - HEADER_LEN;
/// Largest payload per segment: a UDP datagram over IPv4 carries at most
/// 65 507 bytes.
pub const MAX_SEGMENT: usize = 65_535 - IPV4_UDP_HEADERS - HEADER_LEN;
/// Largest message: the 32-bit offset field (seed 000 §5.1.2, 4 GiB).
pub const MAX_MESSAGE: u64 = 1 << 32;
/// Probes (segments beyond a full window after 2·SRTT without an ACK)
/// between two new ACKs; after them only the RTO acts (RFC 8985 sends one).
pub const MAX_PROBES: u32 = 2;
/// Largest fixed window (a u16 worth of packets in flight is already far
/// beyond any receive buffer).
pub const MAX_WINDOW: u32 = 65_536;
/// Segments of one UDP GSO send (Linux's UDP_MAX_SEGMENTS); the datagram
/// holding them is also bounded by [`MAX_GSO_BYTES`].
const GSO_MAX_SEGMENTS: usize = 64;
/// UDP payload of one GSO send: an IPv4 datagram's limit.
const MAX_GSO_BYTES: usize = 65_535 - IPV4_UDP_HEADERS;
/// ACKs taken per `recvmmsg` call.
const ACK_BATCH: usize = 64;
/// Bytes kept of each datagram from the peer: an ACK is HEADER_LEN; longer
/// ones are malformed whatever they hold.
const ACK_BUF: usize = 64;

/// Every limit of the sender, validated by [`SenderConfig::validate`].
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Payload bytes per segment, 1..=[`MAX_SEGMENT`].
    pub segment: usize,
    pub sync: SyncMode,
    pub window: WindowMode,
    pub rto: RtoConfig,
    /// Give up when a segment would be retransmitted more than this often.
    pub max_retransmits: u32,
    /// Give up when no new ACK arrived for this long (sync msg/all).
    pub idle_timeout: Duration,
    /// Gap between segments sent without SYN (the only flow control of
    /// sync none, seed 000 §5.1.3).
    pub ipg: Duration,
    /// Message id of the first message; later ones count up (wrapping).
    pub first_msg_id: u32,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            segment: DEFAULT_SEGMENT,
            sync: SyncMode::All,
            window: WindowMode::default(),
            rto: RtoConfig::default(),
            max_retransmits: 30,
            idle_timeout: Duration::from_secs(10),
            ipg: Duration::ZERO,
            first_msg_id: 1,
        }
    }
}

impl SenderConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |field, value: String, limit| {
            Err(Error::Config {
                field,
                value,
                limit,
            })
        };
        if self.segment == 0 || self.segment > MAX_SEGMENT {
            return bad(
                "segment",
                self.segment.to_string(),
                "1..=65497 bytes (a UDP/IPv4 datagram holds 65507 B, SLMP header 10 B)",
            );
        }
        match self.window {
            WindowMode::Fixed(n) if n == 0 || n > MAX_WINDOW => {
                return bad("window", n.to_string(), "1..=65536 packets, or auto");
            }
            WindowMode::Auto { initial, max }
                if initial == 0 || max == 0 || initial > max || max > MAX_WINDOW =>
            {
                return bad(
                    "window",
                    format!("auto {initial}..{max}"),
                    "1 <= initial <= max <= 65536 packets",
                );
            }
            _ => {}
        }
        let r = self.rto;
        if r.min.is_zero() || r.min > r.initial || r.initial > r.max {
            return bad(
                "rto",
                format!("min {:?} initial {:?} max {:?}", r.min, r.initial, r.max),
                "0 < min <= initial <= max",
            );
        }
        if self.max_retransmits == 0 {
            return bad("max_retransmits", "0".into(), "at least 1");
        }
        if self.idle_timeout.is_zero() {
            return bad("idle_timeout", "0".into(), "greater than 0");
        }
        Ok(())
    }
}

/// How far a send is ([`Sender::send_batch_with`]), for a progress bar:
/// segments are the unit (a message of N bytes has ceil(N / segment)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Segments of all the messages.
    pub segments: u64,
    /// Segments sent at least once.
    pub sent: u64,
    /// Segments that ask for an ACK (all of them with sync all), and those
    /// acknowledged so far.
    pub syn: u64,
    pub acked: u64,
}

/// An SLMP sender over one UDP socket connected to the receiver. The RTO
/// estimator and the adaptive window carry over from one send to the next.
pub struct Sender {
    sock: UdpSocket,
    peer: SocketAddr,
    cfg: SenderConfig,
    next_msg_id: u32,
    rto: RtoEstimator,
    aimd: Option<Aimd>,
    /// Fresh segments of a message go out several per send with UDP GSO
    /// (UDP_SEGMENT): one trip through the socket layer for up to 44
    /// full-MTU segments instead of one each. Cleared when the kernel
    /// refuses it; single sends then.
    gso: bool,
}

type Key = (u32, u32);

#[derive(Clone, Copy, Debug)]
struct Seg {
    msg: u32,
    offset: u32,
    len: u32,
    flags: Flags,
}

struct Outstanding {
    seg: Seg,
    tx: u64,
    sent_at: Instant,
    /// The first copy's send time, when this is the second copy.
    first_sent_at: Option<Instant>,
    transmissions: u32,
    /// Loss episode of the segment's last loss declaration (auto window).
    episode: Option<u64>,
}

/// A segment declared lost, waiting for its retransmission.
#[derive(Clone, Copy)]
struct Lost {
    seg: Seg,
    transmissions: u32,
    episode: Option<u64>,
    /// The last copy's transmission number and send time.
    tx: u64,
    sent_at: Instant,
}

/// An acknowledged segment, kept to judge later ACKs of it.
struct Acked {
    /// It was declared lost at least once.
    declared_lost: bool,
    episode: Option<u64>,
    /// Its last loss declaration is already proven spurious.
    proven: bool,
}

impl Sender {
    /// Bind an ephemeral port of `peer`'s address family and connect to
    /// `peer` (so only its datagrams and its ICMP errors reach us).
    pub fn connect(peer: SocketAddr, cfg: SenderConfig) -> Result<Sender> {
        let local: SocketAddr = if peer.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(local).map_err(|e| Error::io("bind", e))?;
        Self::with_socket(sock, peer, cfg)
    }

    /// Use a bound socket (it gets connected to `peer`).
    pub fn with_socket(sock: UdpSocket, peer: SocketAddr, cfg: SenderConfig) -> Result<Sender> {
        cfg.validate()?;
        sock.connect(peer).map_err(|e| Error::io("connect", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| Error::io("set_nonblocking", e))?;
        let aimd = match cfg.window {
            WindowMode::Auto { initial, max } => Some(Aimd::new(initial, max)),
            WindowMode::Fixed(_) => None,
        };
        Ok(Sender {
            sock,
            peer,
            next_msg_id: cfg.first_msg_id,
            rto: RtoEstimator::new(cfg.rto),
            aimd,
            gso: true,
            cfg,
        })
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// Send one message.
    pub fn send(&mut self, msg: &[u8]) -> Result<Stats> {
        self.send_batch(&[msg])
    }

    /// Send several messages with consecutive ids, all in flight at once
    /// (the window is shared; segments go out message after message).
    pub fn send_batch(&mut self, msgs: &[&[u8]]) -> Result<Stats> {
        self.send_batch_with(msgs, &mut |_| {})
    }

    /// [`Sender::send_batch`], calling `progress` whenever more segments
    /// were sent or acknowledged.
    pub fn send_batch_with(
        &mut self,
        msgs: &[&[u8]],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Stats> {
        for (index, m) in msgs.iter().enumerate() {
            if m.len() as u64 > MAX_MESSAGE {
                return Err(Error::MessageTooLarge {
                    index,
                    len: m.len() as u64,
                });
            }
        }
        let first_id = self.next_msg_id;
        self.next_msg_id = first_id.wrapping_add(msgs.len() as u32);
        let mut run = Run::new(self, msgs, first_id, progress);
        let r = run.run();
        let stats = run.finish();
        match r {
            Ok(()) => Ok(stats),
            Err(Error::GaveUp {
                msg_id,
                index,
                reason,
                ..
            }) => Err(Error::GaveUp {
                msg_id,
                index,
                reason,
                // Not delivered: no goodput to report.
                stats: Box::new(Stats {
                    goodput_bps: 0.0,
                    ..stats
                }),
            }),
            Err(e) => Err(e),
        }
    }
}

/// One transfer's state.
struct Run<'a, 's> {
    s: &'s mut Sender,
    on_progress: &'s mut dyn FnMut(Progress),
    /// What `on_progress` was last told.
    progress: Progress,
    msgs: &'a [&'a [u8]],
    first_id: u32,
    acked_per_msg: Vec<u32>,
    /// Segments each message expects an ACK for.
    syn_per_msg: Vec<u32>,
    /// Next fresh segment: (message index, offset).
    cursor: (usize, u64),
    out: HashMap<Key, Outstanding>,
    by_tx: BTreeMap<u64, Key>,
    lost: HashMap<Key, Lost>,
    retx: VecDeque<Key>,
    acked: HashMap<Key, Acked>,
    rack: Rack,
    /// When the oldest segment eligible for RACK's rule counts as lost.
    rack_deadline: Option<Instant>,
    /// Probes sent since the last new ACK, and when the last one left.
    probes_since_ack: u32,
    last_probe: Instant,
    next_tx: u64,
    /// When the retransmission timer was last restarted by a timeout (a
    /// new ACK restarts it too: `last_progress`).
    timer_restarted: Instant,
    last_send_at: Instant,
    start: Instant,
    last_progress: Instant,
    next_paced: Instant,
    rtt_us: Vec<f64>,
    st: Stats,
    buf: Vec<u8>,
    /// Segments of the GSO send being built.
    batch: Vec<Seg>,
    acks: Box<[[u8; ACK_BUF]; ACK_BATCH]>,
}

impl<'a, 's> Run<'a, 's> {
    fn new(
        s: &'s mut Sender,
        msgs: &'a [&'a [u8]],
        first_id: u32,
        on_progress: &'s mut dyn FnMut(Progress),
    ) -> Self {
        let seg = s.cfg.segment as u64;
        let seg_count: Vec<u32> = msgs
            .iter()
            .map(|m| (m.len() as u64).div_ceil(seg).max(1) as u32)
            .collect();
        let syn_per_msg: Vec<u32> = seg_count
            .iter()
            .map(|&n| match s.cfg.sync {
                SyncMode::None => 0,
                SyncMode::Msg => n.min(2),
                SyncMode::All => n,
            })
            .collect();
        let now = Instant::now();
        let (mode, initial) = match s.cfg.window {
            WindowMode::Fixed(n) => ("fixed", n),
            WindowMode::Auto { .. } => ("auto", s.aimd.as_ref().map_or(1, Aimd::window)),
        };
        let st = Stats {
            sync: s.cfg.sync.name(),
            messages: msgs.len() as u64,
            bytes: msgs.iter().map(|m| m.len() as u64).sum(),
            segment_bytes: seg,
            segments: seg_count.iter().map(|&n| u64::from(n)).sum(),
            window: WindowStats {
                mode,
                initial,
                min: initial,
                max: initial,
                final_: initial,
                samples: vec![(0, initial)],
                ..WindowStats::default()
            },
            ..Stats::default()
        };
        let buf = vec![0u8; HEADER_LEN + s.cfg.segment.max(64)];
        let progress = Progress {
            segments: st.segments,
            syn: syn_per_msg.iter().map(|&n| u64::from(n)).sum(),
            ..Progress::default()
        };
        Run {
            on_progress,
            progress,
            acked_per_msg: vec![0; msgs.len()],
            s,
            msgs,
            first_id,
            syn_per_msg,
            cursor: (0, 0),
            out: HashMap::new(),
            by_tx: BTreeMap::new(),
            lost: HashMap::new(),
            retx: VecDeque::new(),
            acked: HashMap::new(),
            rack: Rack::new(),
            rack_deadline: None,
            probes_since_ack: 0,
            last_probe: now,
            next_tx: 0,
            timer_restarted: now,
            last_send_at: now,
            start: now,
            last_progress: now,
            next_paced: now,
            rtt_us: Vec::new(),
            st,
            buf,
            batch: Vec::with_capacity(GSO_MAX_SEGMENTS),
            acks: Box::new([[0; ACK_BUF]; ACK_BATCH]),
        }
    }

    fn window(&self) -> u32 {
        match (&self.s.aimd, self.s.cfg.window) {
            (Some(a), _) => a.window(),
            (None, WindowMode::Fixed(n)) => n,
            (None, _) => 1,
        }
    }

    fn elapsed_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn record_window(&mut self) {
        let w = self.window();
        let t = self.elapsed_us();
        self.st.window.record(t, w);
    }

    /// The next fresh segment, without consuming it.
    fn peek_fresh(&self) -> Option<Seg> {
        let (mut mi, mut off) = self.cursor;
        while mi < self.msgs.len() {
            let len = self.msgs[mi].len() as u64;
            if off < len || (off == 0 && len == 0) {
                let n = (len - off).min(self.s.cfg.segment as u64);
                let last = off + n >= len;
                let first = off == 0;
                let mut flags = if last { Flags::EOM } else { Flags::NONE };
                let syn = match self.s.cfg.sync {
                    SyncMode::None => false,
                    SyncMode::Msg => first || last,
                    SyncMode::All => true,
                };
                if syn {
                    flags = flags | Flags::SYN;
                }
                return Some(Seg {
                    msg: mi as u32,
                    offset: off as u32,
                    len: n as u32,
                    flags,
                });
            }
            mi += 1;
            off = 0;
        }
        None
    }

    fn advance_fresh(&mut self, seg: Seg) {
        self.progress.sent += 1;
        let end = u64::from(seg.offset) + u64::from(seg.len);
        if seg.flags.eom() {
            self.cursor = (seg.msg as usize + 1, 0);
        } else {
            self.cursor = (seg.msg as usize, end);
        }
    }

    fn done_sending(&self) -> bool {
        self.cursor.0 >= self.msgs.len() && self.retx.is_empty()
    }

    fn all_confirmed(&self) -> bool {
        self.acked_per_msg
            .iter()
            .zip(&self.syn_per_msg)
            .all(|(a, s)| a >= s)
    }

    fn run(&mut self) -> Result<()> {
        let mut told = Progress::default();
        loop {
            if self.progress != told {
                told = self.progress;
                (self.on_progress)(told);
            }
            let now = Instant::now();
            self.expire_timer(now)?;
            self.detect_losses(now)?;
            self.send_allowed()?;
            self.probe(now)?;
            if self.done_sending() && self.out.is_empty() && self.all_confirmed() {
                (self.on_progress)(self.progress);
                return Ok(());
            }
            if self.s.cfg.sync != SyncMode::None
                && now.duration_since(self.last_progress) > self.s.cfg.idle_timeout
            {
                let index = (0..self.msgs.len())
                    .find(|&i| self.acked_per_msg[i] < self.syn_per_msg[i])
                    .unwrap_or(0);
                return Err(self.gave_up(
                    index,
                    GiveUpReason::NoProgress {
                        idle: self.s.cfg.idle_timeout,
                        icmp_unreachable: self.st.icmp_unreachable,
                    },
                ));
            }
            // Wait for an ACK until the next thing to do: a timer, a paced
            // send, or the idle limit.
            let mut until = self.last_progress + self.s.cfg.idle_timeout;
            if let Some(t) = self.rto_deadline() {
                until = until.min(t);
            }
            if let Some(t) = self.rack_deadline {
                until = until.min(t);
            }
            if let Some(t) = self.probe_due() {
                until = until.min(t);
            }
            let window_open = (self.out.len() as u32) < self.window();
            if !self.done_sending() && (window_open || self.next_is_unsynced()) {
                until = until.min(self.next_paced);
            }
            let now = Instant::now();
            let wait = until
                .saturating_duration_since(now)
                .min(Duration::from_millis(50));
            self.receive(wait)?;
        }
    }

    fn next_is_unsynced(&self) -> bool {
        self.retx.is_empty() && self.peek_fresh().is_some_and(|s| !s.flags.syn())
    }

    /// Send retransmissions, then fresh segments, while the window (for
    /// SYN segments) and the pacing gap (for the others) allow.
    fn send_allowed(&mut self) -> Result<()> {
        loop {
            // Retransmissions first: they hold back completion.
            while let Some(key) = self.next_retx() {
                if self.out.len() as u32 >= self.window() {
                    return Ok(());
                }
                if !self.retransmit(key)? {
                    return Ok(());
                }
            }
            let Some(seg) = self.peek_fresh() else {
                return Ok(());
            };
            if seg.flags.syn() {
                if self.out.len() as u32 >= self.window() {
                    return Ok(());
                }
            } else if Instant::now() < self.next_paced {
                return Ok(());
            }
            if self.s.gso && self.gather_batch(seg) > 1 {
                match self.transmit_batch()? {
                    Some(true) => continue,
                    Some(false) => return Ok(()),
                    None => {} // GSO refused: single sends from now on
                }
            }
            if !self.transmit(seg)? {
                return Ok(());
            }
            self.sent_fresh(seg);
        }
    }

    /// Book keeping of a fresh segment that went out.
    fn sent_fresh(&mut self, seg: Seg) {
        self.advance_fresh(seg);
        if seg.flags.syn() {
            self.track(seg, 1, None, None);
        } else {
            self.next_paced = self.last_send_at + self.s.cfg.ipg;
        }
    }

    /// Fill `batch` with the fresh segments, from `first` on, that may go
    /// out now in one GSO send: consecutive segments of one message (all
    /// full but the last, as GSO cuts them), SYN ones within the window,
    /// unsynced ones only when not paced. Returns how many.
    fn gather_batch(&mut self, first: Seg) -> usize {
        self.batch.clear();
        let stride = HEADER_LEN + self.s.cfg.segment;
        let most = GSO_MAX_SEGMENTS.min(MAX_GSO_BYTES / stride);
        let mut room = self.window().saturating_sub(self.out.len() as u32);
        let (mi, mut off) = self.cursor;
        let mut seg = first;
        loop {
            if seg.flags.syn() {
                if room == 0 {
                    break;
                }
                room -= 1;
            } else if !self.s.cfg.ipg.is_zero() {
                break;
            }
            self.batch.push(seg);
            off += u64::from(seg.len);
            if self.batch.len() >= most || seg.flags.eom() || seg.len as usize != self.s.cfg.segment
            {
                break;
            }
            // The next segment of the same message (the cursor is not
            // moved until the send succeeds).
            let saved = self.cursor;
            self.cursor = (mi, off);
            let next = self.peek_fresh();
            self.cursor = saved;
            match next {
                Some(n) if n.msg as usize == mi => seg = n,
                _ => break,
            }
        }
        self.batch.len()
    }

    /// Send `batch` as one UDP GSO datagram cut into segments by the
    /// kernel. Some(false) when the socket buffer is full, None when the
    /// kernel does not do GSO here (the caller sends singly).
    fn transmit_batch(&mut self) -> Result<Option<bool>> {
        let stride = HEADER_LEN + self.s.cfg.segment;
        let n = self.batch.len();
        let mut len = 0;
        if self.buf.len() < n * stride {
            self.buf.resize(n * stride, 0);
        }
        for i in 0..n {
            let seg = self.batch[i];
            let end = len + HEADER_LEN + seg.len as usize;
            self.write_segment(seg, len..end);
            len = end;
        }
        self.last_send_at = Instant::now();
        match crate::send_gso(&self.s.sock, &self.buf[..len], stride as u16) {
            Ok(_) => {}
            Err(e) if self.try_later(&e) => return Ok(Some(false)),
            // No UDP GSO (an old kernel, a device or path without it).
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
                ) =>
            {
                self.s.gso = false;
                return Ok(None);
            }
            Err(e) => return Err(Error::io("send (GSO)", e)),
        }
        for i in 0..n {
            let seg = self.batch[i];
            self.st.packets_sent += 1;
            self.next_tx += 1;
            self.sent_fresh(seg);
        }
        self.st.gso_sends += 1;
        Ok(Some(true))
    }

    /// The first segment of the retransmission queue still lost.
    fn next_retx(&mut self) -> Option<Key> {
        while let Some(&key) = self.retx.front() {
            if self.lost.contains_key(&key) {
                return Some(key);
            }
            self.retx.pop_front();
        }
        None
    }

    /// Resend the lost segment `key` (the retransmission queue's front).
    fn retransmit(&mut self, key: Key) -> Result<bool> {
        let l = self.lost[&key];
        if !self.transmit(l.seg)? {
            return Ok(false);
        }
        self.retx.pop_front();
        self.lost.remove(&key);
        self.st.retransmitted += 1;
        let first = (l.transmissions == 1).then_some(l.sent_at);
        self.track(l.seg, l.transmissions + 1, l.episode, first);
        Ok(true)
    }

    /// When to send a probe (RFC 8985 §7, tail loss probe): the window is
    /// full and no ACK came for PTO = 2·SRTT (at most the RTO). Waiting for
    /// the RTO instead costs its 2 ms floor and its backoff each time, and
    /// a link that reorders by holding a frame until later ones pass (the
    /// lossy forwarder) releases nothing while the sender waits. None when
    /// there is nothing to probe with: a queued retransmission or a fresh
    /// SYN segment (a probe never resends an outstanding segment, so ACK
    /// evidence keeps its meaning).
    fn probe_due(&mut self) -> Option<Instant> {
        // Auto windows only: a fixed window is the user's hard limit.
        if self.s.aimd.is_none()
            || self.out.is_empty()
            || (self.out.len() as u32) < self.window()
            || self.probes_since_ack >= MAX_PROBES
        {
            return None;
        }
        let srtt = self.s.rto.srtt()?;
        if self.next_retx().is_none() && !self.peek_fresh().is_some_and(|s| s.flags.syn()) {
            return None;
        }
        let pto = (srtt * 2).min(self.s.rto.rto());
        Some(self.last_progress.max(self.last_probe) + pto)
    }

    /// Send one segment beyond the window if a probe is due.
    fn probe(&mut self, now: Instant) -> Result<()> {
        match self.probe_due() {
            Some(t) if t <= now => {}
            _ => return Ok(()),
        }
        let sent = if let Some(key) = self.next_retx() {
            self.retransmit(key)?
        } else {
            let seg = self.peek_fresh().expect("probe_due checked");
            let ok = self.transmit(seg)?;
            if ok {
                self.advance_fresh(seg);
                self.track(seg, 1, None, None);
            }
            ok
        };
        if sent {
            self.probes_since_ack += 1;
            self.last_probe = now;
            self.st.probes += 1;
        }
        Ok(())
    }

    fn track(
        &mut self,
        seg: Seg,
        transmissions: u32,
        episode: Option<u64>,
        first_sent_at: Option<Instant>,
    ) {
        let key = (self.first_id.wrapping_add(seg.msg), seg.offset);
        let tx = self.next_tx - 1;
        let sent_at = self.last_send_at;
        self.out.insert(
            key,
            Outstanding {
                seg,
                tx,
                sent_at,
                first_sent_at,
                transmissions,
                episode,
            },
        );
        self.by_tx.insert(tx, key);
    }

    /// Write `seg`'s packet (header and payload) into `self.buf[at]`.
    fn write_segment(&mut self, seg: Seg, at: std::ops::Range<usize>) {
        let mut p = Packet::new_unchecked(&mut self.buf[at]);
        Repr {
            flags: seg.flags,
            msg_id: self.first_id.wrapping_add(seg.msg),
            offset: seg.offset,
        }
        .emit(&mut p)
        .expect("buffer sized for the header");
        let start = seg.offset as usize;
        p.payload_mut()
            .copy_from_slice(&self.msgs[seg.msg as usize][start..start + seg.len as usize]);
    }

    /// Put one segment on the wire; false when the socket buffer is full.
    fn transmit(&mut self, seg: Seg) -> Result<bool> {
        let n = HEADER_LEN + seg.len as usize;
        self.write_segment(seg, 0..n);
        // Before the send: on loopback the ACK can be back before send()
        // returns, and a later timestamp would understate the RTT.
        self.last_send_at = Instant::now();
        match self.s.sock.send(&self.buf[..n]) {
            Ok(_) => {}
            Err(e) if self.try_later(&e) => return Ok(false),
            Err(e) => return Err(Error::io("send", e)),
        }
        self.st.packets_sent += 1;
        self.next_tx += 1;
        Ok(true)
    }

    /// A send refused for now, counted by cause: the socket buffer is full,
    /// or an earlier datagram drew an ICMP error (this one was still not
    /// sent). Both are tried again later.
    fn try_later(&mut self, e: &std::io::Error) -> bool {
        if e.kind() == ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) {
            self.st.send_would_block += 1;
        } else if e.kind() == ErrorKind::ConnectionRefused {
            self.st.icmp_unreachable += 1;
        } else {
            return false;
        }
        true
    }

    /// When the retransmission timer expires: one timer for all SYN
    /// segments (RFC 6298 §5), restarted by every new ACK and by its own
    /// expiry, and never earlier than an RTO after the oldest outstanding
    /// segment left. A timer per segment fired for the whole window at
    /// once whenever the receiver was descheduled for longer than the RTO
    /// (a time slice on a loaded host is several ms, the RTO's floor 2 ms):
    /// up to a window of spurious copies, each costing the receiver as much
    /// as a new segment, and more delay. Segments lost while ACKs still
    /// come are RACK's (`detect_losses`).
    fn rto_deadline(&self) -> Option<Instant> {
        let oldest = self.by_tx.values().next()?;
        let from = self.out[oldest]
            .sent_at
            .max(self.last_progress)
            .max(self.timer_restarted);
        Some(from + self.s.rto.rto())
    }

    /// The timer expired: the oldest outstanding segment is lost and is
    /// resent now, window or not (RFC 6298 §5.4: the window shrank with
    /// the loss and may still be full of segments the same loss burst
    /// took; the ACK of this copy lets RACK find them a round trip later),
    /// the RTO doubles (§5.5) and the timer restarts (§5.6).
    fn expire_timer(&mut self, now: Instant) -> Result<()> {
        if self.rto_deadline().filter(|&t| t <= now).is_none() {
            return Ok(());
        }
        let key = *self
            .by_tx
            .values()
            .next()
            .expect("a deadline needs a segment");
        self.st.timeouts += 1;
        self.s.rto.on_timeout();
        self.timer_restarted = now;
        self.declare_lost(key)?;
        // declare_lost queued it last; it is the earliest, so first.
        self.retx.pop_back();
        self.retx.push_front(key);
        self.retransmit(key)?;
        Ok(())
    }

    fn declare_lost(&mut self, key: Key) -> Result<()> {
        let o = self.out.remove(&key).expect("tracked segment");
        self.by_tx.remove(&o.tx);
        if o.transmissions > self.s.cfg.max_retransmits {
            return Err(self.gave_up(
                o.seg.msg as usize,
                GiveUpReason::Retransmits {
                    offset: o.seg.offset,
                    count: o.transmissions - 1,
                    limit: self.s.cfg.max_retransmits,
                },
            ));
        }
        let mut episode = None;
        if let Some(a) = self.s.aimd.as_mut() {
            let (e, decreased) = a.on_loss(o.tx, self.next_tx);
            episode = Some(e);
            self.st.window.decreases = a.decreases;
            if decreased {
                self.rack.on_episode();
            }
        }
        self.record_window();
        self.lost.insert(
            key,
            Lost {
                seg: o.seg,
                transmissions: o.transmissions,
                episode,
                tx: o.tx,
                sent_at: o.sent_at,
            },
        );
        self.retx.push_back(key);
        Ok(())
    }

    /// RACK (`rack.rs`): every segment sent before the most recently sent
    /// acknowledged one, and older than its deadline, is lost. Segments
    /// are in send order in `by_tx` with non-decreasing send times, so the
    /// first one not yet due ends the scan and sets the next check.
    fn detect_losses(&mut self, now: Instant) -> Result<()> {
        self.rack_deadline = None;
        let Some(latest) = self.rack.latest_tx() else {
            return Ok(());
        };
        let srtt = self.s.rto.srtt();
        let mut lost = Vec::new();
        for (_, k) in self.by_tx.range(..latest) {
            let due = self.rack.deadline(self.out[k].sent_at, srtt);
            if due > now {
                self.rack_deadline = Some(due);
                break;
            }
            lost.push(*k);
        }
        for k in lost {
            self.st.fast_retransmits += 1;
            self.declare_lost(k)?;
        }
        Ok(())
    }

    /// The last loss declaration of `key` proved spurious: an earlier copy
    /// was delivered. Widen the reordering window, and undo the episode's
    /// window decrease if all its losses are now proven spurious.
    fn spurious(&mut self, episode: Option<u64>, now: Instant) {
        self.st.spurious_losses += 1;
        self.rack.on_spurious(now);
        if let (Some(a), Some(e)) = (self.s.aimd.as_mut(), episode) {
            if a.on_spurious(e) {
                self.st.window.undos = a.undos;
                self.record_window();
            }
        }
    }

    fn gave_up(&self, index: usize, reason: GiveUpReason) -> Error {
        Error::GaveUp {
            msg_id: self.first_id.wrapping_add(index as u32),
            index,
            reason,
            stats: Box::default(),
        }
    }

    /// Wait up to `wait` for a datagram, then take every one queued,
    /// up to ACK_BATCH per system call.
    fn receive(&mut self, wait: Duration) -> Result<()> {
        if !wait.is_zero()
            && !crate::wait_readable(&self.s.sock, wait).map_err(|e| Error::io("ppoll", e))?
        {
            return Ok(());
        }
        let mut lens = [0usize; ACK_BATCH];
        loop {
            let r = crate::recv_batch(&self.s.sock, &mut self.acks[..], &mut lens);
            match r {
                Ok(n) => {
                    for i in 0..n {
                        let d = self.acks[i];
                        self.on_datagram(&d[..lens[i].min(ACK_BUF)], lens[i])?;
                    }
                    if n < ACK_BATCH {
                        return Ok(());
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(())
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    self.st.icmp_unreachable += 1;
                    return Ok(());
                }
                Err(e) => return Err(Error::io("recv", e)),
            }
        }
    }

    fn on_datagram(&mut self, d: &[u8], len: usize) -> Result<()> {
        let Ok(p) = Packet::new_checked(d) else {
            self.st.malformed += 1;
            return Ok(());
        };
        let Ok(repr) = Repr::parse(&p) else {
            self.st.malformed += 1;
            return Ok(());
        };
        if !repr.flags.ack() || len != HEADER_LEN {
            self.st.malformed += 1;
            return Ok(());
        }
        let key = (repr.msg_id, repr.offset);
        let now = Instant::now();
        // What proves a loss declaration spurious, given that an ACK echoes
        // only (message id, offset) and so cannot name the copy it answers:
        // an ACK before the retransmission went out, an ACK faster than
        // the minimum RTT after it (RFC 8985 §6.2 step 2), or a second ACK
        // (one per copy). The last can also be a duplicating network's
        // doing; at 1 % duplication that undoes few real decreases.
        // An unambiguous RTT sample of this ACK, for the window's delay.
        let mut sample = None;
        let (seg, declared_lost, episode, proven) = if let Some(o) = self.out.remove(&key) {
            self.by_tx.remove(&o.tx);
            let rtt = now.duration_since(o.sent_at);
            let retransmitted = o.transmissions > 1;
            let early = retransmitted && self.rack.min_rtt().is_some_and(|m| rtt < m);
            if self.s.rto.on_ack(rtt, retransmitted) {
                self.rtt_us.push(rtt.as_secs_f64() * 1e6);
                sample = Some((o.tx, rtt));
            }
            if early {
                // Too fast for the second copy, so it answers the first:
                // an unambiguous sample of the delay that fired the timer
                // (queueing, a descheduled receiver). Without it the RTO
                // keeps the floor its fast samples give and times out
                // again on the next such delay.
                if let Some(first) = o.first_sent_at {
                    let r = now.duration_since(first);
                    if self.s.rto.on_ack(r, false) {
                        self.rtt_us.push(r.as_secs_f64() * 1e6);
                    }
                }
                self.spurious(o.episode, now);
            } else {
                self.rack.on_delivery(o.tx, o.sent_at, rtt);
            }
            (o.seg, retransmitted, o.episode, early)
        } else if let Some(l) = self.lost.remove(&key) {
            // Declared lost, not resent yet: the last copy got through. If
            // it was the only copy the ACK is unambiguous, so it is an RTT
            // sample despite the loss declaration -- the one that tells
            // the estimator its RTO was too short (RFC 4015's point).
            if l.transmissions == 1 {
                let rtt = now.duration_since(l.sent_at);
                if self.s.rto.on_ack(rtt, false) {
                    self.rtt_us.push(rtt.as_secs_f64() * 1e6);
                }
                self.rack.on_delivery(l.tx, l.sent_at, rtt);
            }
            self.spurious(l.episode, now);
            (l.seg, true, l.episode, true)
        } else if let Some(a) = self.acked.get_mut(&key) {
            self.st.duplicate_acks += 1;
            if a.declared_lost && !a.proven {
                a.proven = true;
                let e = a.episode;
                self.spurious(e, now);
            }
            return Ok(());
        } else {
            self.st.unmatched_acks += 1;
            return Ok(());
        };
        self.acked.insert(
            key,
            Acked {
                declared_lost,
                episode,
                proven,
            },
        );
        self.acked_per_msg[seg.msg as usize] += 1;
        self.progress.acked += 1;
        self.st.acks_received += 1;
        self.last_progress = now;
        self.probes_since_ack = 0;
        if let Some(a) = self.s.aimd.as_mut() {
            if let Some((tx, rtt)) = sample {
                a.on_rtt(tx, rtt, self.next_tx);
            }
            a.on_ack();
        }
        self.detect_losses(now)?;
        self.record_window();
        Ok(())
    }

    fn finish(&mut self) -> Stats {
        let mut st = std::mem::take(&mut self.st);
        st.rtt = RttStats::from_samples(&mut self.rtt_us);
        let r = &self.s.rto;
        st.rtt.srtt_us = r.srtt().unwrap_or_default().as_secs_f64() * 1e6;
        st.rtt.rttvar_us = r.rttvar().as_secs_f64() * 1e6;
        st.rtt.rto_us = r.rto().as_secs_f64() * 1e6;
        st.window.final_ = self.window();
        st.reorder_window_us = self.rack.reo_wnd(r.srtt()).as_secs_f64() * 1e6;
        st.elapsed_s = self.start.elapsed().as_secs_f64();
        st.goodput_bps = if st.elapsed_s > 0.0 {
            st.bytes as f64 * 8.0 / st.elapsed_s
        } else {
            0.0
        };
        st.unconfirmed_segments = st.segments.saturating_sub(st.acks_received);
        st.delivery_confirmed = st.unconfirmed_segments == 0;
        st
    }
}
