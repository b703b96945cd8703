//! Inbound traffic: the packets that reach the NIC inbound engine, with their
//! arrival times.
//!
//! Three [`Source`]s produce [`Arrival`]s in non-decreasing time order, one
//! at a time (nothing is loaded whole):
//! * [`Generator`]: synthetic messages of equal-sized packets at a line rate;
//! * [`TraceSource`]: a PsPIN-style text trace (format below);
//! * [`PcapSource`]: a pcap / pcapng capture of Ethernet frames.
//!
//! # Timing
//! Times are integer picoseconds. A packet of `size` bytes takes
//! `size * 8 / rate` to serialise (no preamble, no inter-frame gap) and
//! arrives when its last byte is in: with back-to-back packets the k-th
//! (from 0) arrives at the sum of the serialisation times of packets 0..=k.
//! That sum is computed from the running bit count in exact integer
//! arithmetic (rate rounded to whole bit/s), so there is no drift: 64 B at
//! 400 Gbit/s arrive every 1280 ps, 1024 B at 100 Gbit/s every 81920 ps.
//! An infinite rate makes every packet arrive at time 0.
//!
//! # Frame formats ([`FrameKind`])
//! Every frame is headers + UDP payload, `size` bytes in total (at most
//! 65535). Payload byte `i` counts from the first byte after the UDP header.
//!
//! * `FrameKind::Eth` (what FPsPIN handlers expect) -- real wire format:
//!   Ethernet II (dst 02:00:00:00:00:02, src 02:00:00:00:00:01, type 0x0800),
//!   IPv4 (0x45, TOS 0, big-endian total length = size - 14, id 0, no
//!   fragmentation, TTL 64, protocol 17, valid header checksum, addresses in
//!   network order), UDP (big-endian ports and length, checksum 0).
//!   Minimum size 42 B.
//! * `FrameKind::Ip` (what PsPIN handlers expect) -- PsPIN's `ip_hdr_t` /
//!   `udp_hdr_t` layout, *not* wire format. PsPIN's `GET_IP_UDP_PLD` reads
//!   the header through a C struct whose bit-fields put `version` in the LOW
//!   nibble of byte 0 and `ihl` in the HIGH nibble, and it uses the 16-bit
//!   `length` as stored, i.e. in host (little-endian) order. So this format
//!   has byte 0 = 0x54 (ihl 5, version 4), total length (= size) little-endian,
//!   id/offset 0, TTL 64, protocol 17, and, following the same host-order
//!   convention, the addresses stored as little-endian u32 (10.0.0.1 is read
//!   by a handler as 0x0A000001) and UDP ports and length little-endian
//!   (checksum 0). The IP header checksum is the RFC 1071 sum over the bytes
//!   as written; that sum is byte-order independent, so the 20 header bytes
//!   verify in either order. Minimum size 28 B.
//!
//! # Trace format ([`TraceSource`])
//! A text file, one packet per line, six whitespace-separated fields:
//! ```text
//! # src       dst       size  ipg    msgid  is_last
//! 10.0.0.1    10.0.0.2  1024  20.48  0      0
//! 1           2         64    1.28   7      1
//! ```
//! * `src`, `dst`: an IPv4 address as a dotted quad, or a decimal node id
//!   `n` < 2^24 standing for 10.(n>>16 & 255).(n>>8 & 255).(n & 255)
//!   (node 1 = 10.0.0.1, node 258 = 10.0.1.2);
//! * `size`: frame bytes, headers included (at least the header size of the
//!   frame kind chosen when opening the trace, at most 65535);
//! * `ipg`: the gap, in nanoseconds, between the previous packet's arrival
//!   and this packet's arrival (the first packet arrives at `ipg`); a
//!   non-negative decimal that may be fractional (picosecond resolution,
//!   finer digits are rounded);
//! * `msgid`: the message id (u32); `is_last`: 1 if the packet ends its
//!   message, else 0.
//!
//! Blank lines and lines whose first non-blank character is `#` are ignored.
//! Frames are built with [`build_frame`] with UDP ports 9330 -> 9330 and the
//! [`Payload::Sequence`] pattern (packet number = 0-based index of the packet
//! in the trace). Arrival origins are `FILE:LINE`; errors name the file, the
//! line and the problem.
//!
//! # Pcap ([`PcapSource`], [`write_pcap`])
//! Classic pcap (either byte order, micro- or nanosecond timestamps) and
//! pcapng (Enhanced Packet Blocks, honouring `if_tsresol`) with link type
//! Ethernet. Each packet is its own message (`msg_id` = packet index,
//! `eom` = true); origins are `FILE#N`. Times are either the capture
//! timestamps relative to the first packet's, or, if a rate is given,
//! back-to-back at that rate as for the generator.
//!
//! Sources stop (return `Ok(None)`) after they have returned an error.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

/// UDP port used by trace frames (and the generator's default).
pub const DEFAULT_UDP_PORT: u16 = 9330;
/// Destination MAC address of generated Ethernet frames.
pub const ETH_DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Source MAC address of generated Ethernet frames.
pub const ETH_SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Largest frame any source builds.
pub const MAX_FRAME_SIZE: usize = 65535;

const ETH_HLEN: usize = 14;
const IPV4_HLEN: usize = 20;
const UDP_HLEN: usize = 8;
const PS_PER_S: u128 = 1_000_000_000_000;

/// One packet as it reaches the NIC inbound engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Virtual time in picoseconds at which the packet's last byte has arrived.
    pub time_ps: u64,
    /// The packet bytes (starting at the IPv4 header or at the Ethernet header).
    pub frame: Vec<u8>,
    /// Message this packet belongs to.
    pub msg_id: u32,
    /// Whether this packet ends its message (EOM).
    pub eom: bool,
    /// Where it came from: "generator", or "FILE:LINE" / "FILE#N" (packet index), for error messages.
    pub origin: String,
}

/// Where a frame starts. PsPIN's examples expect IP first, FPsPIN's expect Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// PsPIN's host-order IP/UDP header layout (see the module doc).
    Ip,
    /// Ethernet II + IPv4 + UDP in wire format.
    Eth,
}

impl FrameKind {
    /// Bytes of headers before the UDP payload.
    pub fn header_len(self) -> usize {
        match self {
            FrameKind::Ip => IPV4_HLEN + UDP_HLEN,
            FrameKind::Eth => ETH_HLEN + IPV4_HLEN + UDP_HLEN,
        }
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameKind::Ip => "PsPIN IP/UDP",
            FrameKind::Eth => "Ethernet/IPv4/UDP",
        })
    }
}

/// Errors of the traffic sources. Each message names the generator
/// parameter, the file and line (trace), or the file and packet index (pcap).
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    /// A bad generator / frame / rate parameter.
    #[error("invalid parameter `{param}`: {msg}")]
    Param { param: &'static str, msg: String },
    /// A file could not be opened, read or written.
    #[error("{file}: cannot {op}: {source}")]
    Io {
        file: String,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// A malformed trace line.
    #[error("{file}:{line}: {msg}")]
    Trace {
        file: String,
        line: u64,
        msg: String,
    },
    /// A problem with a pcap file as a whole (header, format, link type).
    #[error("{file}: {msg}")]
    PcapFile { file: String, msg: String },
    /// A problem with one packet (0-based index) of a pcap file.
    #[error("{file}: packet #{index}: {msg}")]
    PcapPacket {
        file: String,
        index: u64,
        msg: String,
    },
}

/// A stream of arrivals in non-decreasing time order.
pub trait Source {
    /// The next packet, `Ok(None)` at the end.
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError>;
    /// Total packets if known in advance (for a progress bar).
    fn len_hint(&self) -> Option<u64> {
        None
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        (**self).next_arrival()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
}

impl<S: Source + ?Sized> Source for &mut S {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        (**self).next_arrival()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
}

// ---------------------------------------------------------------- timing

/// Back-to-back packets on a line of fixed rate.
#[derive(Clone, Debug)]
struct LineClock {
    /// Rate in bit/s; None = infinite.
    bps: Option<u128>,
    bits: u128,
}

impl LineClock {
    fn new(rate_gbps: f64) -> Result<Self, String> {
        if rate_gbps.is_nan() || rate_gbps <= 0.0 {
            return Err(format!("rate must be > 0 Gbit/s, got {rate_gbps}"));
        }
        if rate_gbps.is_infinite() {
            return Ok(LineClock { bps: None, bits: 0 });
        }
        // Whole bit/s keeps the arithmetic exact for any sensible rate.
        let bps = (rate_gbps * 1e9).round();
        if bps < 1.0 {
            return Err(format!("rate {rate_gbps} Gbit/s is below 1 bit/s"));
        }
        Ok(LineClock {
            bps: Some(bps as u128),
            bits: 0,
        })
    }

    /// Arrival time of the last bit of the next `bytes`-byte packet; None on overflow.
    fn advance(&mut self, bytes: usize) -> Option<u64> {
        let Some(bps) = self.bps else { return Some(0) };
        self.bits += bytes as u128 * 8;
        // From the running total, so per-packet rounding never accumulates.
        let ps = (self.bits * PS_PER_S + bps / 2) / bps;
        u64::try_from(ps).ok()
    }
}

// ---------------------------------------------------------------- frames

/// Contents of the UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// All zero bytes.
    Zero,
    /// Byte i of packet number seq is `(i + seq * 7) as u8`, so packets differ.
    Sequence,
    /// Deterministic pseudo-random bytes from `seed` and the packet number.
    Random { seed: u64 },
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 output function: a good 64-bit mixer.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Payload {
    /// Byte `i` of the UDP payload of packet number `seq`.
    pub fn byte(self, seq: u64, i: usize) -> u8 {
        match self {
            Payload::Zero => 0,
            Payload::Sequence => (i as u64).wrapping_add(seq.wrapping_mul(7)) as u8,
            Payload::Random { seed } => {
                let word = Self::random_word(Self::random_key(seed, seq), (i / 8) as u64);
                (word >> (8 * (i % 8))) as u8
            }
        }
    }

    fn random_key(seed: u64, seq: u64) -> u64 {
        mix64(seed ^ mix64(seq.wrapping_add(1).wrapping_mul(GOLDEN)))
    }

    // Counter-based, so any byte can be computed independently of the others.
    fn random_word(key: u64, k: u64) -> u64 {
        mix64(key.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN)))
    }

    /// A payload closure for [`build_frame`] for packet number `seq`.
    pub fn filler(self, seq: u64) -> impl FnMut(usize) -> u8 {
        let key = match self {
            Payload::Random { seed } => Self::random_key(seed, seq),
            _ => 0,
        };
        let mut cached: Option<(u64, u64)> = None; // (word index, word)
        move |i| match self {
            Payload::Random { .. } => {
                let k = (i / 8) as u64;
                let word = match cached {
                    Some((ck, w)) if ck == k => w,
                    _ => {
                        let w = Self::random_word(key, k);
                        cached = Some((k, w));
                        w
                    }
                };
                (word >> (8 * (i % 8))) as u8
            }
            other => other.byte(seq, i),
        }
    }
}

/// Why a frame of `size` bytes of `kind` cannot be built, if it cannot.
fn frame_size_problem(kind: FrameKind, size: usize) -> Option<String> {
    let min = kind.header_len();
    if size < min {
        Some(format!(
            "{size} B is too small: {kind} frames need at least {min} B of headers"
        ))
    } else if size > MAX_FRAME_SIZE {
        Some(format!("{size} B is too large: at most {MAX_FRAME_SIZE} B"))
    } else {
        None
    }
}

/// RFC 1071 Internet checksum of `bytes` (even length).
fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Build one frame: headers + payload bytes, total `size` bytes (error if
/// size is too small for the headers or above 65535). `payload(i)` gives UDP
/// payload byte `i`; it is called for i = 0, 1, 2, ... in order.
pub fn build_frame(
    kind: FrameKind,
    size: usize,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    sport: u16,
    dport: u16,
    mut payload: impl FnMut(usize) -> u8,
) -> Result<Vec<u8>, TrafficError> {
    if let Some(msg) = frame_size_problem(kind, size) {
        return Err(TrafficError::Param { param: "size", msg });
    }
    let mut f = Vec::with_capacity(size);
    match kind {
        FrameKind::Eth => {
            f.extend_from_slice(&ETH_DST_MAC);
            f.extend_from_slice(&ETH_SRC_MAC);
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let ip_len = (size - ETH_HLEN) as u16;
            let ip = f.len();
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&ip_len.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&src_ip);
            f.extend_from_slice(&dst_ip);
            let csum = internet_checksum(&f[ip..ip + IPV4_HLEN]);
            f[ip + 10..ip + 12].copy_from_slice(&csum.to_be_bytes());
            f.extend_from_slice(&sport.to_be_bytes());
            f.extend_from_slice(&dport.to_be_bytes());
            f.extend_from_slice(&(ip_len - IPV4_HLEN as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        FrameKind::Ip => {
            // PsPIN layout: ihl in the high nibble, multi-byte fields little-endian.
            let ip_len = size as u16;
            f.extend_from_slice(&[0x54, 0]);
            f.extend_from_slice(&ip_len.to_le_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&u32::from_be_bytes(src_ip).to_le_bytes());
            f.extend_from_slice(&u32::from_be_bytes(dst_ip).to_le_bytes());
            let csum = internet_checksum(&f[..IPV4_HLEN]);
            f[10..12].copy_from_slice(&csum.to_be_bytes());
            f.extend_from_slice(&sport.to_le_bytes());
            f.extend_from_slice(&dport.to_le_bytes());
            f.extend_from_slice(&(ip_len - IPV4_HLEN as u16).to_le_bytes());
            f.extend_from_slice(&[0, 0]);
        }
    }
    let n = size - f.len();
    f.extend((0..n).map(&mut payload));
    Ok(f)
}

// ---------------------------------------------------------------- generator

/// Parameters of the synthetic traffic [`Generator`].
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Number of messages (M).
    pub messages: u32,
    /// Packets per message (P).
    pub packets_per_message: u32,
    /// Frame bytes, headers included.
    pub size: usize,
    /// Line rate in Gbit/s; `f64::INFINITY` = every packet at time 0.
    pub rate_gbps: f64,
    /// Messages in flight, packets interleaved round-robin among them (>= 1).
    pub concurrent: u32,
    pub frame: FrameKind,
    pub payload: Payload,
    pub first_msg_id: u32,
    pub udp_src_port: u16,
    pub udp_dst_port: u16,
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            messages: 1,
            packets_per_message: 1,
            size: 1024,
            rate_gbps: 400.0,
            concurrent: 1,
            frame: FrameKind::Ip,
            payload: Payload::Sequence,
            first_msg_id: 0,
            udp_src_port: DEFAULT_UDP_PORT,
            udp_dst_port: DEFAULT_UDP_PORT,
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
        }
    }
}

/// Synthetic traffic: `concurrent` messages in flight, one packet from each
/// in turn; a finished message's slot is taken by the next message.
pub struct Generator {
    cfg: GenConfig,
    clock: LineClock,
    /// In-flight messages: (message number from 0, packets sent).
    slots: Vec<(u32, u32)>,
    cur: usize,
    next_msg: u32,
    emitted: u64,
}

impl Generator {
    /// Validate `cfg` and create the generator.
    pub fn new(cfg: GenConfig) -> Result<Generator, TrafficError> {
        let param = |param, msg: &str| TrafficError::Param {
            param,
            msg: msg.to_string(),
        };
        if cfg.messages == 0 {
            return Err(param("messages", "must be at least 1"));
        }
        if cfg.packets_per_message == 0 {
            return Err(param("packets_per_message", "must be at least 1"));
        }
        if cfg.concurrent == 0 {
            return Err(param("concurrent", "must be at least 1"));
        }
        let clock = LineClock::new(cfg.rate_gbps).map_err(|m| param("rate_gbps", &m))?;
        if let Some(m) = frame_size_problem(cfg.frame, cfg.size) {
            return Err(param("size", &m));
        }
        if cfg.first_msg_id.checked_add(cfg.messages - 1).is_none() {
            return Err(param(
                "first_msg_id",
                &format!(
                    "{} + {} messages overflows the u32 message id",
                    cfg.first_msg_id, cfg.messages
                ),
            ));
        }
        let inflight = cfg.concurrent.min(cfg.messages);
        Ok(Generator {
            slots: (0..inflight).map(|m| (m, 0)).collect(),
            next_msg: inflight,
            cur: 0,
            emitted: 0,
            clock,
            cfg,
        })
    }

    /// Total number of packets (M * P).
    pub fn total_packets(&self) -> u64 {
        u64::from(self.cfg.messages) * u64::from(self.cfg.packets_per_message)
    }
}

impl Source for Generator {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        if self.slots.is_empty() {
            return Ok(None);
        }
        let seq = self.emitted;
        let c = &self.cfg;
        let frame = build_frame(
            c.frame,
            c.size,
            c.src_ip,
            c.dst_ip,
            c.udp_src_port,
            c.udp_dst_port,
            c.payload.filler(seq),
        )?;
        let time_ps = self
            .clock
            .advance(c.size)
            .ok_or_else(|| TrafficError::Param {
                param: "rate_gbps",
                msg: format!("arrival time of packet {seq} overflows u64 picoseconds"),
            })?;
        let slot = &mut self.slots[self.cur];
        slot.1 += 1;
        let msg_id = c.first_msg_id + slot.0;
        let eom = slot.1 == c.packets_per_message;
        if !eom {
            self.cur += 1;
        } else if self.next_msg < c.messages {
            *slot = (self.next_msg, 0);
            self.next_msg += 1;
            self.cur += 1;
        } else {
            // The next slot shifts into `cur`.
            self.slots.remove(self.cur);
        }
        if self.cur >= self.slots.len() {
            self.cur = 0;
        }
        self.emitted += 1;
        Ok(Some(Arrival {
            time_ps,
            frame,
            msg_id,
            eom,
            origin: "generator".to_string(),
        }))
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total_packets())
    }
}

// ---------------------------------------------------------------- trace

/// A PsPIN-style text trace (format in the module doc), read line by line.
pub struct TraceSource {
    file: String,
    reader: BufReader<File>,
    kind: FrameKind,
    line_no: u64,
    time_ps: u64,
    index: u64,
    buf: Vec<u8>,
    done: bool,
}

impl TraceSource {
    /// Open a trace; frames are built as `frame`.
    pub fn open(path: &Path, frame: FrameKind) -> Result<Self, TrafficError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|source| TrafficError::Io {
            file: file.clone(),
            op: "open trace",
            source,
        })?;
        Ok(TraceSource {
            file,
            reader: BufReader::new(f),
            kind: frame,
            line_no: 0,
            time_ps: 0,
            index: 0,
            buf: Vec::new(),
            done: false,
        })
    }

    fn err(&self, msg: String) -> TrafficError {
        TrafficError::Trace {
            file: self.file.clone(),
            line: self.line_no,
            msg,
        }
    }

    /// Parse one non-comment line.
    fn parse_line(&self, line: &str) -> Result<TraceLine, String> {
        const FIELDS: &str = "`src dst size ipg msgid is_last`";
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            return Err(format!("expected 6 fields {FIELDS}, found {}", f.len()));
        }
        let src = parse_addr(f[0]).map_err(|m| format!("bad `src` {:?}: {m}", f[0]))?;
        let dst = parse_addr(f[1]).map_err(|m| format!("bad `dst` {:?}: {m}", f[1]))?;
        let size: usize = f[2]
            .parse()
            .map_err(|_| format!("bad `size` {:?}: expected a decimal byte count", f[2]))?;
        if let Some(m) = frame_size_problem(self.kind, size) {
            return Err(format!("bad `size`: {m}"));
        }
        let ipg = parse_ns_as_ps(f[3]).map_err(|m| format!("bad `ipg` {:?}: {m}", f[3]))?;
        let msg_id: u32 = f[4]
            .parse()
            .map_err(|_| format!("bad `msgid` {:?}: expected a decimal u32", f[4]))?;
        let eom = match f[5] {
            "0" => false,
            "1" => true,
            other => return Err(format!("bad `is_last` {other:?}: must be 0 or 1")),
        };
        Ok(TraceLine {
            src,
            dst,
            size,
            ipg_ps: ipg,
            msg_id,
            eom,
        })
    }
}

/// The fields of one trace line.
struct TraceLine {
    src: [u8; 4],
    dst: [u8; 4],
    size: usize,
    ipg_ps: u64,
    msg_id: u32,
    eom: bool,
}

/// A dotted quad, or a decimal node id n < 2^24 meaning 10.(n>>16).(n>>8).n.
fn parse_addr(s: &str) -> Result<[u8; 4], String> {
    if s.contains('.') {
        s.parse::<std::net::Ipv4Addr>()
            .map(|a| a.octets())
            .map_err(|_| "expected a dotted-quad IPv4 address or a node id".to_string())
    } else {
        let n: u32 = s
            .parse()
            .map_err(|_| "expected a dotted-quad IPv4 address or a node id".to_string())?;
        if n >= 1 << 24 {
            return Err(format!("node id must be below {}", 1u32 << 24));
        }
        Ok([10, (n >> 16) as u8, (n >> 8) as u8, n as u8])
    }
}

/// Non-negative decimal nanoseconds to picoseconds, exactly when possible.
fn parse_ns_as_ps(s: &str) -> Result<u64, String> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !(int.is_empty() && frac.is_empty()) && digits(int) && digits(frac) {
        let too_big = || "too large".to_string();
        let whole: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| too_big())?
        };
        let fb = frac.as_bytes();
        let mut ps_frac: u64 = 0;
        for k in 0..3 {
            ps_frac = ps_frac * 10 + fb.get(k).map_or(0, |b| u64::from(b - b'0'));
        }
        // Round to the nearest picosecond.
        if fb.get(3).is_some_and(|&b| b >= b'5') {
            ps_frac += 1;
        }
        return whole
            .checked_mul(1000)
            .and_then(|p| p.checked_add(ps_frac))
            .ok_or_else(too_big);
    }
    // Anything else (e.g. exponent notation) through f64.
    let v: f64 = s
        .parse()
        .map_err(|_| "expected a non-negative decimal number of nanoseconds".to_string())?;
    if !v.is_finite() || v < 0.0 {
        return Err("must be a finite, non-negative number of nanoseconds".to_string());
    }
    let ps = (v * 1000.0).round();
    if ps >= u64::MAX as f64 {
        return Err("too large".to_string());
    }
    Ok(ps as u64)
}

impl Source for TraceSource {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_inner();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }
}

impl TraceSource {
    fn next_inner(&mut self) -> Result<Option<Arrival>, TrafficError> {
        loop {
            self.buf.clear();
            let n = self.reader.read_until(b'\n', &mut self.buf);
            self.line_no += 1;
            match n {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(self.err(format!("read error: {e}"))),
            }
            let line = match std::str::from_utf8(&self.buf) {
                Ok(l) => l.trim(),
                Err(_) => return Err(self.err("line is not valid UTF-8".to_string())),
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let TraceLine {
                src,
                dst,
                size,
                ipg_ps: ipg,
                msg_id,
                eom,
            } = self.parse_line(line).map_err(|m| self.err(m))?;
            self.time_ps = self
                .time_ps
                .checked_add(ipg)
                .ok_or_else(|| self.err("arrival time overflows u64 picoseconds".to_string()))?;
            let frame = build_frame(
                self.kind,
                size,
                src,
                dst,
                DEFAULT_UDP_PORT,
                DEFAULT_UDP_PORT,
                Payload::Sequence.filler(self.index),
            )
            .map_err(|e| self.err(e.to_string()))?;
            self.index += 1;
            return Ok(Some(Arrival {
                time_ps: self.time_ps,
                frame,
                msg_id,
                eom,
                origin: format!("{}:{}", self.file, self.line_no),
            }));
        }
    }
}

// ---------------------------------------------------------------- pcap

enum PcapInner {
    Classic {
        reader: PcapReader<File>,
        nanos: bool,
    },
    Ng(PcapNgReader<File>),
}

/// Packets of a pcap / pcapng capture of Ethernet frames.
pub struct PcapSource {
    file: String,
    inner: PcapInner,
    clock: Option<LineClock>,
    first_ps: Option<u128>,
    last_ps: u128,
    index: u64,
    done: bool,
}

const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xA1, 0xB2, 0xC3, 0xD4],
    [0xD4, 0xC3, 0xB2, 0xA1],
    [0xA1, 0xB2, 0x3C, 0x4D],
    [0x4D, 0x3C, 0xB2, 0xA1],
];
const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
const LINKTYPE_ETHERNET: u32 = 1;

fn pcap_error_text(e: &PcapError) -> String {
    match e {
        PcapError::IoError(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            "truncated or corrupt: the file ends inside this record (or its length field is bogus)"
                .to_string()
        }
        PcapError::IoError(io) => format!("read error: {io}"),
        other => format!("corrupt: {other}"),
    }
}

impl PcapSource {
    /// Open a capture. With `rate_gbps` = Some(r), timestamps are ignored and
    /// packets arrive back-to-back at r Gbit/s; with None, each arrives at its
    /// timestamp minus the first packet's.
    pub fn open(path: &Path, rate_gbps: Option<f64>) -> Result<Self, TrafficError> {
        let file = path.display().to_string();
        let clock = match rate_gbps {
            Some(r) => Some(LineClock::new(r).map_err(|msg| TrafficError::Param {
                param: "rate_gbps",
                msg,
            })?),
            None => None,
        };
        let io_err = |source| TrafficError::Io {
            file: file.clone(),
            op: "read pcap",
            source,
        };
        let whole = |msg: String| TrafficError::PcapFile {
            file: file.clone(),
            msg,
        };
        let mut f = File::open(path).map_err(|source| TrafficError::Io {
            file: file.clone(),
            op: "open pcap",
            source,
        })?;
        let mut magic = [0u8; 4];
        match f.read_exact(&mut magic) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(whole("too short to be a pcap file".to_string()))
            }
            Err(e) => return Err(io_err(e)),
        }
        f.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let inner = if PCAP_MAGICS.contains(&magic) {
            let reader = PcapReader::new(f)
                .map_err(|e| whole(format!("bad pcap header: {}", pcap_error_text(&e))))?;
            let h = reader.header();
            let link = u32::from(h.datalink);
            if link != LINKTYPE_ETHERNET {
                return Err(whole(format!(
                    "link type {link} ({:?}) is not Ethernet (LINKTYPE_ETHERNET = 1)",
                    h.datalink
                )));
            }
            PcapInner::Classic {
                reader,
                nanos: h.ts_resolution == TsResolution::NanoSecond,
            }
        } else if magic == PCAPNG_MAGIC {
            let reader = PcapNgReader::new(f).map_err(|e| {
                whole(format!(
                    "bad pcapng section header: {}",
                    pcap_error_text(&e)
                ))
            })?;
            PcapInner::Ng(reader)
        } else {
            return Err(whole(format!(
                "not a pcap or pcapng file (magic bytes {:02x} {:02x} {:02x} {:02x})",
                magic[0], magic[1], magic[2], magic[3]
            )));
        };
        Ok(PcapSource {
            file,
            inner,
            clock,
            first_ps: None,
            last_ps: 0,
            index: 0,
            done: false,
        })
    }

    fn err(&self, msg: String) -> TrafficError {
        TrafficError::PcapPacket {
            file: self.file.clone(),
            index: self.index,
            msg,
        }
    }

    /// Next packet as (absolute timestamp in ps, captured length == original length, data).
    fn next_raw(&mut self) -> Result<Option<(u128, Vec<u8>)>, TrafficError> {
        let (abs_ps, data, orig_len) = match &mut self.inner {
            PcapInner::Classic { reader, nanos } => {
                let nanos = *nanos;
                let raw = match reader.next_raw_packet() {
                    None => return Ok(None),
                    Some(Err(e)) => {
                        let m = pcap_error_text(&e);
                        return Err(self.err(m));
                    }
                    Some(Ok(raw)) => raw,
                };
                let (frac_limit, ps_per_unit) = if nanos {
                    (1_000_000_000, 1_000)
                } else {
                    (1_000_000, 1_000_000)
                };
                if raw.ts_frac >= frac_limit {
                    let m = format!(
                        "bad timestamp: fraction {} is not below {frac_limit}",
                        raw.ts_frac
                    );
                    return Err(self.err(m));
                }
                let abs = u128::from(raw.ts_sec) * PS_PER_S + u128::from(raw.ts_frac) * ps_per_unit;
                let orig = raw.orig_len;
                (abs, raw.data.into_owned(), orig)
            }
            PcapInner::Ng(reader) => loop {
                let (iface, units, data, orig) = match reader.next_block() {
                    None => return Ok(None),
                    Some(Err(e)) => {
                        let m = format!("pcapng block: {}", pcap_error_text(&e));
                        return Err(self.err(m));
                    }
                    Some(Ok(Block::EnhancedPacket(p))) => {
                        // pcap-file stores the raw timestamp units in a Duration's nanoseconds.
                        (p.interface_id, p.timestamp.as_nanos(), p.data.into_owned(), p.original_len)
                    }
                    Some(Ok(Block::SimplePacket(_) | Block::Packet(_))) => {
                        return Err(self.err(
                            "unsupported pcapng packet block (simple or obsolete); only enhanced packet blocks are read"
                                .to_string(),
                        ))
                    }
                    Some(Ok(_)) => continue,
                };
                let Some(idb) = reader.interfaces().get(iface as usize) else {
                    return Err(self.err(format!("no interface description for interface {iface}")));
                };
                let link = u32::from(idb.linktype);
                if link != LINKTYPE_ETHERNET {
                    let m = format!(
                        "link type {link} ({:?}) is not Ethernet (LINKTYPE_ETHERNET = 1)",
                        idb.linktype
                    );
                    return Err(self.err(m));
                }
                let mut tsresol = 6u8; // pcapng default: microseconds
                let mut offset_s = 0u64;
                for opt in &idb.options {
                    match opt {
                        InterfaceDescriptionOption::IfTsResol(r) => tsresol = *r,
                        InterfaceDescriptionOption::IfTsOffset(o) => offset_s = *o,
                        _ => {}
                    }
                }
                let Some(abs) =
                    ng_units_to_ps(units, tsresol).map(|p| p + u128::from(offset_s) * PS_PER_S)
                else {
                    return Err(self.err("timestamp out of range".to_string()));
                };
                break (abs, data, orig);
            },
        };
        if data.len() as u64 != u64::from(orig_len) {
            return Err(self.err(format!(
                "only {} of its {orig_len} bytes were captured (snap length too small)",
                data.len()
            )));
        }
        Ok(Some((abs_ps, data)))
    }

    fn next_inner(&mut self) -> Result<Option<Arrival>, TrafficError> {
        let Some((abs_ps, frame)) = self.next_raw()? else {
            return Ok(None);
        };
        let time_ps = match &mut self.clock {
            Some(clock) => {
                let t = clock.advance(frame.len());
                t.ok_or_else(|| self.err("arrival time overflows u64 picoseconds".to_string()))?
            }
            None => {
                let first = *self.first_ps.get_or_insert(abs_ps);
                if abs_ps < self.last_ps {
                    return Err(self.err(format!(
                        "timestamp goes backwards ({} ps before the previous packet's)",
                        self.last_ps - abs_ps
                    )));
                }
                self.last_ps = abs_ps;
                u64::try_from(abs_ps - first).map_err(|_| {
                    self.err("time since the first packet overflows u64 picoseconds".to_string())
                })?
            }
        };
        let index = self.index;
        self.index += 1;
        Ok(Some(Arrival {
            time_ps,
            frame,
            msg_id: index as u32,
            eom: true,
            origin: format!("{}#{index}", self.file),
        }))
    }
}

/// pcapng timestamp units to ps: if_tsresol bit 7 clear = 10^-n s, set = 2^-n s.
fn ng_units_to_ps(units: u128, tsresol: u8) -> Option<u128> {
    let n = u32::from(tsresol & 0x7F);
    if tsresol & 0x80 == 0 {
        if n <= 12 {
            units.checked_mul(10u128.pow(12 - n))
        } else {
            Some(10u128.checked_pow(n - 12).map_or(0, |d| units / d))
        }
    } else {
        let scaled = units.checked_mul(PS_PER_S)?;
        Some(if n >= 128 { 0 } else { scaled >> n })
    }
}

impl Source for PcapSource {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_inner();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }
}

/// Write packets (time_ps, bytes) to a pcap file (nanosecond timestamps;
/// times are truncated to whole ns), with link type Ethernet for
/// `FrameKind::Eth` and raw IP (LINKTYPE_RAW, 101) for `FrameKind::Ip`
/// (PsPIN-layout headers, so dissectors will not decode those).
pub fn write_pcap(
    path: &Path,
    kind: FrameKind,
    packets: &[(u64, Vec<u8>)],
) -> Result<(), TrafficError> {
    let file = path.display().to_string();
    let io_err = |source| TrafficError::Io {
        file: file.clone(),
        op: "write pcap",
        source,
    };
    let pcap_err = |e: PcapError| match e {
        PcapError::IoError(source) => io_err(source),
        other => TrafficError::PcapFile {
            file: file.clone(),
            msg: other.to_string(),
        },
    };
    let f = File::create(path).map_err(|source| TrafficError::Io {
        file: file.clone(),
        op: "create pcap",
        source,
    })?;
    let longest = packets.iter().map(|(_, d)| d.len()).max().unwrap_or(0);
    let Ok(snaplen) = u32::try_from(longest.max(MAX_FRAME_SIZE)) else {
        return Err(TrafficError::PcapFile {
            file,
            msg: format!("a packet of {longest} B is too long for pcap"),
        });
    };
    let header = PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen,
        datalink: match kind {
            FrameKind::Eth => DataLink::ETHERNET,
            FrameKind::Ip => DataLink::RAW,
        },
        ts_resolution: TsResolution::NanoSecond,
        endianness: Endianness::native(),
    };
    let mut w = PcapWriter::with_header(BufWriter::new(f), header).map_err(pcap_err)?;
    for (index, (t, data)) in packets.iter().enumerate() {
        let pkt = PcapPacket::new(Duration::from_nanos(t / 1000), data.len() as u32, data);
        w.write_packet(&pkt).map_err(|e| match e {
            PcapError::IoError(source) => io_err(source),
            other => TrafficError::PcapPacket {
                file: file.clone(),
                index: index as u64,
                msg: other.to_string(),
            },
        })?;
    }
    w.into_writer().flush().map_err(io_err)
}

// ---------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{LinkSlice, NetSlice, SlicedPacket, TransportSlice};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh scratch directory (no tempfile crate available).
    fn scratch(tag: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "softspin-traffic-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn drain(src: &mut dyn Source) -> Vec<Arrival> {
        let mut v = Vec::new();
        while let Some(a) = src.next_arrival().unwrap() {
            v.push(a);
        }
        v
    }

    fn gen(cfg: GenConfig) -> Vec<Arrival> {
        drain(&mut Generator::new(cfg).unwrap())
    }

    /// Independent RFC 1071 check: the one's complement sum of a valid header is 0xFFFF.
    fn ones_sum(b: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for i in (0..b.len()).step_by(2) {
            s += (u64::from(b[i]) << 8) | u64::from(b[i + 1]);
        }
        while s >> 16 != 0 {
            s = (s & 0xFFFF) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn generator_timing_64b_at_400() {
        let a = gen(GenConfig {
            messages: 2,
            packets_per_message: 50,
            size: 64,
            ..Default::default()
        });
        assert_eq!(a.len(), 100);
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.time_ps, (k as u64 + 1) * 1280, "packet {k}");
        }
    }

    #[test]
    fn generator_timing_1024b() {
        let a = gen(GenConfig {
            packets_per_message: 1000,
            size: 1024,
            rate_gbps: 100.0,
            ..Default::default()
        });
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.time_ps, (k as u64 + 1) * 81920);
        }
        let a = gen(GenConfig {
            packets_per_message: 3,
            size: 1024,
            ..Default::default()
        });
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![20480, 40960, 61440]
        );
    }

    #[test]
    fn generator_timing_no_drift_on_inexact_rate() {
        // 64 B at 3 Gbit/s = 170666.67 ps each: must not drift after many packets.
        let n = 30_000u64;
        let a = gen(GenConfig {
            packets_per_message: n as u32,
            size: 64,
            rate_gbps: 3.0,
            ..Default::default()
        });
        let last = a.last().unwrap().time_ps;
        assert_eq!(
            last,
            (n * 512 * 1_000_000_000_000 + 1_500_000_000) / 3_000_000_000
        );
        assert!(a.windows(2).all(|w| w[1].time_ps - w[0].time_ps >= 170666));
    }

    #[test]
    fn generator_infinite_rate_all_at_zero() {
        let a = gen(GenConfig {
            packets_per_message: 5,
            rate_gbps: f64::INFINITY,
            ..Default::default()
        });
        assert_eq!(a.len(), 5);
        assert!(a.iter().all(|x| x.time_ps == 0));
    }

    #[test]
    fn generator_round_robin_and_eom() {
        let a = gen(GenConfig {
            messages: 3,
            packets_per_message: 4,
            concurrent: 2,
            first_msg_id: 10,
            ..Default::default()
        });
        let got: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        let want = vec![
            (10, false),
            (11, false),
            (10, false),
            (11, false),
            (10, false),
            (11, false),
            (10, true),
            (11, true),
            (12, false),
            (12, false),
            (12, false),
            (12, true),
        ];
        assert_eq!(got, want);
        assert!(a.iter().all(|x| x.origin == "generator"));
    }

    #[test]
    fn generator_more_concurrency_than_messages() {
        let a = gen(GenConfig {
            messages: 2,
            packets_per_message: 2,
            concurrent: 5,
            ..Default::default()
        });
        let got: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        assert_eq!(got, vec![(0, false), (1, false), (0, true), (1, true)]);
    }

    #[test]
    fn generator_len_hint() {
        let g = Generator::new(GenConfig {
            messages: 7,
            packets_per_message: 3,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(g.len_hint(), Some(21));
        let mut g = g;
        assert_eq!(drain(&mut g).len(), 21);
        assert_eq!(g.next_arrival().unwrap(), None);
    }

    #[test]
    fn eth_frame_parses_back() {
        let size = 200;
        let a = gen(GenConfig {
            size,
            frame: FrameKind::Eth,
            src_ip: [192, 168, 1, 7],
            dst_ip: [172, 16, 0, 9],
            udp_src_port: 1234,
            udp_dst_port: 4321,
            ..Default::default()
        });
        let f = &a[0].frame;
        assert_eq!(f.len(), size);
        let p = SlicedPacket::from_ethernet(f).unwrap();
        let Some(LinkSlice::Ethernet2(eth)) = &p.link else {
            panic!("no ethernet")
        };
        assert_eq!(eth.destination(), ETH_DST_MAC);
        assert_eq!(eth.source(), ETH_SRC_MAC);
        assert_eq!(eth.ether_type(), etherparse::EtherType::IPV4);
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("no ipv4")
        };
        let h = ip.header();
        assert_eq!(h.source(), [192, 168, 1, 7]);
        assert_eq!(h.destination(), [172, 16, 0, 9]);
        assert_eq!(h.total_len() as usize, size - 14);
        assert_eq!(h.ihl(), 5);
        assert_eq!(h.ttl(), 64);
        assert_eq!(h.protocol(), etherparse::IpNumber::UDP);
        assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
        assert_eq!(ones_sum(&f[14..34]), 0xFFFF);
        let Some(TransportSlice::Udp(udp)) = &p.transport else {
            panic!("no udp")
        };
        assert_eq!(udp.source_port(), 1234);
        assert_eq!(udp.destination_port(), 4321);
        assert_eq!(udp.length() as usize, size - 34);
        assert_eq!(udp.payload().len(), size - 42);
        assert_eq!(udp.payload()[..3], [0, 1, 2]);
    }

    #[test]
    fn ip_frame_pspin_layout() {
        let size = 300usize;
        let a = gen(GenConfig {
            size,
            frame: FrameKind::Ip,
            udp_src_port: 0x1234,
            udp_dst_port: 0x5678,
            ..Default::default()
        });
        let f = &a[0].frame;
        assert_eq!(f.len(), size);
        assert_eq!(f[0], 0x54);
        // What PsPIN's GET_IP_UDP_PLD computes: ihl from the high nibble, length as host u16.
        let ihl = (f[0] >> 4) as usize;
        let length = u16::from_le_bytes([f[2], f[3]]) as usize;
        assert_eq!(ihl, 5);
        assert_eq!(length, size);
        assert_eq!(length - 20 - 8, size - 28);
        assert_eq!([f[2], f[3]], [(size & 0xFF) as u8, (size >> 8) as u8]);
        assert_eq!(f[8], 64);
        assert_eq!(f[9], 17);
        assert_eq!(ones_sum(&f[..20]), 0xFFFF);
        assert_eq!(
            u32::from_le_bytes(f[12..16].try_into().unwrap()),
            0x0A00_0001
        );
        assert_eq!(
            u32::from_le_bytes(f[16..20].try_into().unwrap()),
            0x0A00_0002
        );
        assert_eq!(u16::from_le_bytes([f[20], f[21]]), 0x1234);
        assert_eq!(u16::from_le_bytes([f[22], f[23]]), 0x5678);
        assert_eq!(u16::from_le_bytes([f[24], f[25]]) as usize, size - 20);
        assert_eq!(&f[ihl * 4 + 8..ihl * 4 + 12], &[0, 1, 2, 3]);
    }

    #[test]
    fn payload_patterns() {
        let base = GenConfig {
            messages: 1,
            packets_per_message: 3,
            size: 100,
            ..Default::default()
        };
        let hl = FrameKind::Ip.header_len();

        let z = gen(GenConfig {
            payload: Payload::Zero,
            ..base.clone()
        });
        assert!(z.iter().all(|a| a.frame[hl..].iter().all(|&b| b == 0)));

        let s = gen(GenConfig {
            payload: Payload::Sequence,
            ..base.clone()
        });
        for (seq, a) in s.iter().enumerate() {
            for (i, &b) in a.frame[hl..].iter().enumerate() {
                assert_eq!(b, ((i + seq * 7) % 256) as u8);
            }
        }
        // Sequence wraps at 256 for long payloads.
        let long = gen(GenConfig {
            size: 400,
            payload: Payload::Sequence,
            ..base.clone()
        });
        assert_eq!(long[0].frame[hl + 300], 44);

        let r1 = gen(GenConfig {
            payload: Payload::Random { seed: 42 },
            ..base.clone()
        });
        let r1b = gen(GenConfig {
            payload: Payload::Random { seed: 42 },
            ..base.clone()
        });
        let r2 = gen(GenConfig {
            payload: Payload::Random { seed: 43 },
            ..base.clone()
        });
        assert_eq!(r1, r1b);
        assert_ne!(r1[0].frame[hl..], r2[0].frame[hl..]);
        assert_ne!(r1[0].frame[hl..], r1[1].frame[hl..]);
        // Headers are unaffected by the payload; the bytes look random.
        assert_eq!(r1[0].frame[..hl], z[0].frame[..hl]);
        let pld = &r1[0].frame[hl..];
        let distinct: std::collections::HashSet<u8> = pld.iter().copied().collect();
        assert!(
            distinct.len() > 40,
            "only {} distinct bytes",
            distinct.len()
        );
        // filler and byte() agree.
        for (i, &b) in pld.iter().enumerate() {
            assert_eq!(b, Payload::Random { seed: 42 }.byte(0, i));
        }
    }

    #[test]
    fn generator_parameter_errors() {
        let cases: Vec<(GenConfig, &str)> = vec![
            (
                GenConfig {
                    messages: 0,
                    ..Default::default()
                },
                "messages",
            ),
            (
                GenConfig {
                    packets_per_message: 0,
                    ..Default::default()
                },
                "packets_per_message",
            ),
            (
                GenConfig {
                    concurrent: 0,
                    ..Default::default()
                },
                "concurrent",
            ),
            (
                GenConfig {
                    rate_gbps: 0.0,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    rate_gbps: -5.0,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    rate_gbps: f64::NAN,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    size: 27,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    size: 41,
                    frame: FrameKind::Eth,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    size: 65536,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    first_msg_id: u32::MAX,
                    messages: 2,
                    ..Default::default()
                },
                "first_msg_id",
            ),
        ];
        for (cfg, param) in cases {
            let e = Generator::new(cfg.clone())
                .err()
                .unwrap_or_else(|| panic!("accepted {cfg:?}"));
            let msg = e.to_string();
            assert!(msg.contains(&format!("`{param}`")), "{msg}");
        }
        // The boundaries are accepted.
        assert!(Generator::new(GenConfig {
            size: 28,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            size: 42,
            frame: FrameKind::Eth,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            size: 65535,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            first_msg_id: u32::MAX,
            ..Default::default()
        })
        .is_ok());
    }

    #[test]
    fn build_frame_size_errors_and_minimum() {
        let f = build_frame(FrameKind::Eth, 42, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2, |_| {
            0xAA
        })
        .unwrap();
        assert_eq!(f.len(), 42);
        let f = build_frame(FrameKind::Ip, 29, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2, |_| {
            0xAA
        })
        .unwrap();
        assert_eq!(f[28], 0xAA);
        let e = build_frame(FrameKind::Ip, 10, [0; 4], [0; 4], 1, 2, |_| 0).unwrap_err();
        assert!(e.to_string().contains("`size`"), "{e}");
    }

    fn write_trace(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn trace_exact_arrivals() {
        let d = scratch("trace");
        let p = write_trace(
            &d,
            "small.trace",
            "# src dst size ipg msgid is_last\n\
             10.0.0.1 10.0.0.2 64 1.28 5 0\n\
             \n\
             \t# indented comment\n\
             1 258 100 0.5 5 1\r\n\
             192.168.0.3   192.168.0.4\t1024 20.4805 6 1\n\
             3 4 64 1e3 7 1",
        );
        let mut t = TraceSource::open(&p, FrameKind::Eth).unwrap();
        let a = drain(&mut t);
        assert_eq!(a.len(), 4);
        let times: Vec<u64> = a.iter().map(|x| x.time_ps).collect();
        assert_eq!(
            times,
            vec![1280, 1780, 1780 + 20481, 1780 + 20481 + 1_000_000]
        );
        let ids: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        assert_eq!(ids, vec![(5, false), (5, true), (6, true), (7, true)]);
        let sizes: Vec<usize> = a.iter().map(|x| x.frame.len()).collect();
        assert_eq!(sizes, vec![64, 100, 1024, 64]);
        let file = p.display().to_string();
        let origins: Vec<String> = a.iter().map(|x| x.origin.clone()).collect();
        assert_eq!(
            origins,
            vec![
                format!("{file}:2"),
                format!("{file}:5"),
                format!("{file}:6"),
                format!("{file}:7")
            ]
        );
        // Addresses: dotted quads and node ids.
        let ip = |f: &Vec<u8>| (f[26..30].to_vec(), f[30..34].to_vec());
        assert_eq!(ip(&a[0].frame), (vec![10, 0, 0, 1], vec![10, 0, 0, 2]));
        assert_eq!(ip(&a[1].frame), (vec![10, 0, 0, 1], vec![10, 0, 1, 2]));
        assert_eq!(
            ip(&a[2].frame),
            (vec![192, 168, 0, 3], vec![192, 168, 0, 4])
        );
        // Ports 9330, Sequence payload numbered by packet index.
        assert_eq!(a[1].frame[34..38], [0x24, 0x72, 0x24, 0x72]);
        assert_eq!(a[1].frame[42], 7);
        assert_eq!(t.next_arrival().unwrap(), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn trace_ip_frames() {
        let d = scratch("traceip");
        let p = write_trace(&d, "ip.trace", "1 2 28 0 0 1\n1 2 65535 0 1 1\n");
        let a = drain(&mut TraceSource::open(&p, FrameKind::Ip).unwrap());
        assert_eq!(a[0].frame.len(), 28);
        assert_eq!(a[0].frame[0], 0x54);
        assert_eq!(a[1].frame[2..4], [0xFF, 0xFF]);
        assert!(a.iter().all(|x| x.time_ps == 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn trace_malformed_lines() {
        let d = scratch("tracebad");
        let good = "10.0.0.1 10.0.0.2 64 1 0 0\n# c\n";
        // (bad line, frame kind, text expected in the message); the bad line is line 3.
        let cases: Vec<(&str, FrameKind, &str)> = vec![
            ("1 2 64 1 0", FrameKind::Eth, "6 fields"),
            ("1 2 64 1 0 1 9", FrameKind::Eth, "6 fields"),
            ("1 2 abc 1 0 1", FrameKind::Eth, "`size`"),
            ("1 2 64 x 0 1", FrameKind::Eth, "`ipg`"),
            ("1 2 64 -1 0 1", FrameKind::Eth, "`ipg`"),
            ("1 2 64 1 -3 1", FrameKind::Eth, "`msgid`"),
            ("1 2 64 1 4294967296 1", FrameKind::Eth, "`msgid`"),
            ("1 2 64 1 0 2", FrameKind::Eth, "`is_last`"),
            ("1 2 64 1 0 yes", FrameKind::Eth, "`is_last`"),
            ("1 2 41 1 0 1", FrameKind::Eth, "too small"),
            ("1 2 27 1 0 1", FrameKind::Ip, "too small"),
            ("1 2 65536 1 0 1", FrameKind::Ip, "too large"),
            ("10.0.0.256 2 64 1 0 1", FrameKind::Eth, "`src`"),
            ("1 16777216 64 1 0 1", FrameKind::Eth, "`dst`"),
            ("1 2 64 99999999999999999999 0 1", FrameKind::Eth, "`ipg`"),
        ];
        for (k, (bad, kind, what)) in cases.iter().enumerate() {
            let name = format!("bad{k}.trace");
            let p = write_trace(&d, &name, &format!("{good}{bad}\n1 2 64 1 0 1\n"));
            let mut t = TraceSource::open(&p, *kind).unwrap();
            assert!(t.next_arrival().unwrap().is_some());
            let e = t.next_arrival().expect_err(bad);
            let msg = e.to_string();
            assert!(msg.contains(&name), "{msg}");
            assert!(msg.contains(&format!("{name}:3:")), "{msg}");
            assert!(msg.contains(what), "case {bad:?}: {msg}");
            assert_eq!(
                t.next_arrival().unwrap(),
                None,
                "source stops after an error"
            );
        }
        // Time overflow.
        let p = write_trace(
            &d,
            "ovf.trace",
            "1 2 64 18446744073709551 0 1\n1 2 64 18446744073709551 0 1\n",
        );
        let mut t = TraceSource::open(&p, FrameKind::Eth).unwrap();
        assert!(t.next_arrival().unwrap().is_some());
        assert!(t
            .next_arrival()
            .unwrap_err()
            .to_string()
            .contains("ovf.trace:2:"));
        // Missing file.
        let e = TraceSource::open(&d.join("nope.trace"), FrameKind::Eth)
            .err()
            .unwrap();
        assert!(e.to_string().contains("nope.trace"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn address_parsing() {
        assert_eq!(parse_addr("0"), Ok([10, 0, 0, 0]));
        assert_eq!(parse_addr("258"), Ok([10, 0, 1, 2]));
        assert_eq!(parse_addr("16777215"), Ok([10, 255, 255, 255]));
        assert_eq!(parse_addr("65539"), Ok([10, 1, 0, 3]));
        assert_eq!(parse_addr("1.2.3.4"), Ok([1, 2, 3, 4]));
        assert!(parse_addr("16777216").is_err());
        assert!(parse_addr("1.2.3").is_err());
        assert!(parse_addr("-1").is_err());
    }

    #[test]
    fn ipg_parsing() {
        assert_eq!(parse_ns_as_ps("0"), Ok(0));
        assert_eq!(parse_ns_as_ps("12"), Ok(12_000));
        assert_eq!(parse_ns_as_ps("1.28"), Ok(1280));
        assert_eq!(parse_ns_as_ps(".5"), Ok(500));
        assert_eq!(parse_ns_as_ps("3."), Ok(3000));
        assert_eq!(parse_ns_as_ps("0.0014"), Ok(1));
        assert_eq!(parse_ns_as_ps("0.0015"), Ok(2));
        assert_eq!(parse_ns_as_ps("2.5e1"), Ok(25_000));
        assert!(parse_ns_as_ps(".").is_err());
        assert!(parse_ns_as_ps("inf").is_err());
        assert!(parse_ns_as_ps("-0.5").is_err());
    }

    fn eth_frames(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|k| {
                build_frame(
                    FrameKind::Eth,
                    60 + 37 * k,
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    1,
                    2,
                    Payload::Sequence.filler(k as u64),
                )
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn pcap_round_trip_timestamps() {
        let d = scratch("pcap");
        let p = d.join("rt.pcap");
        let frames = eth_frames(5);
        let times = [
            5_000_000u64,
            5_001_000,
            5_001_000,
            7_000_000_000_000,
            7_000_000_123_000,
        ];
        let pkts: Vec<(u64, Vec<u8>)> = times.iter().copied().zip(frames.iter().cloned()).collect();
        write_pcap(&p, FrameKind::Eth, &pkts).unwrap();
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(a.len(), 5);
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.frame, frames[k]);
            assert_eq!(x.time_ps, times[k] - times[0]);
            assert_eq!(x.msg_id, k as u32);
            assert!(x.eom);
            assert_eq!(x.origin, format!("{}#{k}", p.display()));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_round_trip_generator_at_rate() {
        let d = scratch("pcaprate");
        let p = d.join("gen.pcap");
        let g = gen(GenConfig {
            messages: 4,
            packets_per_message: 3,
            size: 64,
            frame: FrameKind::Eth,
            ..Default::default()
        });
        let pkts: Vec<(u64, Vec<u8>)> = g.iter().map(|a| (a.time_ps, a.frame.clone())).collect();
        write_pcap(&p, FrameKind::Eth, &pkts).unwrap();
        // At the same rate the times are the generator's again.
        let a = drain(&mut PcapSource::open(&p, Some(400.0)).unwrap());
        assert_eq!(a.len(), 12);
        for (x, y) in a.iter().zip(&g) {
            assert_eq!(x.frame, y.frame);
            assert_eq!(x.time_ps, y.time_ps);
        }
        // From timestamps: truncated to ns, relative to the first.
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        for (x, y) in a.iter().zip(&g) {
            assert_eq!(x.time_ps, y.time_ps / 1000 * 1000 - 1000);
        }
        let e = PcapSource::open(&p, Some(0.0)).err().unwrap();
        assert!(e.to_string().contains("rate_gbps"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_microsecond_big_endian_file() {
        // Hand-made classic pcap: big-endian, microsecond resolution.
        let d = scratch("pcapus");
        let p = d.join("us.pcap");
        let frames = eth_frames(2);
        let mut b = Vec::new();
        b.extend_from_slice(&0xA1B2C3D4u32.to_be_bytes());
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&4u16.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&65535u32.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        for (k, (sec, usec)) in [(100u32, 999_999u32), (101, 3)].iter().enumerate() {
            b.extend_from_slice(&sec.to_be_bytes());
            b.extend_from_slice(&usec.to_be_bytes());
            b.extend_from_slice(&(frames[k].len() as u32).to_be_bytes());
            b.extend_from_slice(&(frames[k].len() as u32).to_be_bytes());
            b.extend_from_slice(&frames[k]);
        }
        std::fs::write(&p, &b).unwrap();
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 4_000_000]
        );
        assert_eq!(a[1].frame, frames[1]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_errors() {
        let d = scratch("pcaperr");
        let frames = eth_frames(4);
        let pkts: Vec<(u64, Vec<u8>)> = frames
            .iter()
            .enumerate()
            .map(|(k, f)| (k as u64 * 1000, f.clone()))
            .collect();

        // Non-Ethernet link type.
        let raw = d.join("raw.pcap");
        write_pcap(&raw, FrameKind::Ip, &pkts).unwrap();
        let e = PcapSource::open(&raw, None).err().unwrap().to_string();
        assert!(e.contains("raw.pcap") && e.contains("link type 101"), "{e}");

        // Truncated mid-record: cut inside packet #2's data.
        let good = d.join("good.pcap");
        write_pcap(&good, FrameKind::Eth, &pkts).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let cut_at = 24 + (16 + frames[0].len()) + (16 + frames[1].len()) + 16 + 10;
        let trunc = d.join("trunc.pcap");
        std::fs::write(&trunc, &bytes[..cut_at]).unwrap();
        let mut s = PcapSource::open(&trunc, None).unwrap();
        assert!(s.next_arrival().unwrap().is_some());
        assert!(s.next_arrival().unwrap().is_some());
        let e = s.next_arrival().unwrap_err().to_string();
        assert!(e.contains("trunc.pcap") && e.contains("packet #2"), "{e}");
        assert_eq!(s.next_arrival().unwrap(), None);
        // Cut inside a record header.
        std::fs::write(&trunc, &bytes[..24 + 16 + frames[0].len() + 7]).unwrap();
        let mut s = PcapSource::open(&trunc, None).unwrap();
        assert!(s.next_arrival().unwrap().is_some());
        assert!(s
            .next_arrival()
            .unwrap_err()
            .to_string()
            .contains("packet #1"));

        // Bogus record length (larger than the file).
        let mut bogus = bytes.clone();
        let at = 24 + 8;
        bogus[at..at + 4].copy_from_slice(&0x7FFF_FFFFu32.to_ne_bytes());
        let bp = d.join("bogus.pcap");
        std::fs::write(&bp, &bogus).unwrap();
        let e = drain_err(&bp);
        assert!(e.contains("bogus.pcap") && e.contains("packet #0"), "{e}");

        // Capture shorter than the packet (orig_len > incl_len).
        let mut snap = bytes.clone();
        let orig_at = 24 + 12;
        snap[orig_at..orig_at + 4].copy_from_slice(&(frames[0].len() as u32 + 1).to_ne_bytes());
        let sp = d.join("snap.pcap");
        std::fs::write(&sp, &snap).unwrap();
        let e = drain_err(&sp);
        assert!(e.contains("packet #0") && e.contains("captured"), "{e}");

        // Timestamps going backwards.
        let back = d.join("back.pcap");
        write_pcap(
            &back,
            FrameKind::Eth,
            &[
                (5000, frames[0].clone()),
                (6000, frames[1].clone()),
                (4000, frames[2].clone()),
            ],
        )
        .unwrap();
        let e = drain_err(&back);
        assert!(e.contains("packet #2") && e.contains("backwards"), "{e}");
        // ... but ignored when a rate is given.
        assert_eq!(
            drain(&mut PcapSource::open(&back, Some(100.0)).unwrap()).len(),
            3
        );

        // Garbage, short and empty files, missing file.
        for (name, content) in [
            (
                "garbage.pcap",
                b"this is not a capture file at all, just some text".to_vec(),
            ),
            ("short.pcap", vec![0xD4, 0xC3]),
            ("empty.pcap", vec![]),
            ("hdr.pcap", bytes[..20].to_vec()),
        ] {
            let gp = d.join(name);
            std::fs::write(&gp, &content).unwrap();
            let e = PcapSource::open(&gp, None).err().unwrap().to_string();
            assert!(e.contains(name), "{e}");
        }
        let e = PcapSource::open(&d.join("missing.pcap"), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("missing.pcap"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    fn drain_err(p: &Path) -> String {
        let mut s = PcapSource::open(p, None).unwrap();
        loop {
            match s.next_arrival() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error from {}", p.display()),
                Err(e) => return e.to_string(),
            }
        }
    }

    #[test]
    fn pcapng_with_tsresol() {
        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::PcapNgWriter;
        let d = scratch("pcapng");
        let frames = eth_frames(3);
        let write = |name: &str, link: DataLink, tsresol: Option<u8>, units: &[u64]| {
            let p = d.join(name);
            let mut w = PcapNgWriter::new(File::create(&p).unwrap()).unwrap();
            let mut idb = InterfaceDescriptionBlock::new(link, 65535);
            if let Some(r) = tsresol {
                idb.options.push(InterfaceDescriptionOption::IfTsResol(r));
            }
            w.write_pcapng_block(idb).unwrap();
            for (k, f) in frames.iter().enumerate() {
                let epb = EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: Duration::from_nanos(units[k]),
                    original_len: f.len() as u32,
                    data: std::borrow::Cow::Borrowed(&f[..]),
                    options: vec![],
                };
                w.write_pcapng_block(epb).unwrap();
            }
            p
        };
        // Nanosecond units.
        let p = write(
            "ns.pcapng",
            DataLink::ETHERNET,
            Some(9),
            &[1_000, 1_500, 4_000],
        );
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 500_000, 3_000_000]
        );
        assert_eq!(
            a.iter().map(|x| x.frame.clone()).collect::<Vec<_>>(),
            frames
        );
        // Default resolution is microseconds.
        let p = write("us.pcapng", DataLink::ETHERNET, None, &[10, 11, 13]);
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 1_000_000, 3_000_000]
        );
        // Binary resolution 2^-10 s.
        let p = write(
            "bin.pcapng",
            DataLink::ETHERNET,
            Some(0x80 | 10),
            &[0, 1, 1024],
        );
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 976_562_500, 1_000_000_000_000]
        );
        // Non-Ethernet interface.
        let p = write("raw.pcapng", DataLink::RAW, Some(9), &[0, 1, 2]);
        let e = drain_err(&p);
        assert!(
            e.contains("raw.pcapng") && e.contains("packet #0") && e.contains("link type 101"),
            "{e}"
        );
        // Truncated pcapng.
        let p = write("cut.pcapng", DataLink::ETHERNET, Some(9), &[0, 1, 2]);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 30]).unwrap();
        let e = drain_err(&p);
        assert!(e.contains("cut.pcapng") && e.contains("packet #2"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn boxed_source_works() {
        let mut s: Box<dyn Source> = Box::new(
            Generator::new(GenConfig {
                packets_per_message: 2,
                ..Default::default()
            })
            .unwrap(),
        );
        assert_eq!(s.len_hint(), Some(2));
        assert_eq!(drain(&mut s).len(), 2);
    }
}
