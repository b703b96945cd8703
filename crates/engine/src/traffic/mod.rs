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
//! PsPIN's traces also load: their first line, a header of three numbers
//! `SOURCES PACKETS MAX_SIZE`, is checked (PACKETS lines follow, none larger
//! than MAX_SIZE), and a line of `size` 0 is a wait: no packet, its `ipg`
//! added to the next packet's gap.
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
//!
//! Files: [`frame`] (frame building), [`generator`], [`trace`] (PsPIN
//! traces), [`pcap`] (captures).

mod frame;
mod generator;
mod pcap;
mod trace;

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

use self::frame::*;
pub use self::frame::{build_frame, FrameKind};
pub use self::generator::{splitmix64, GenConfig, Generator, Payload};
pub use self::pcap::{write_pcap, PcapSink, PcapSource};
pub use self::trace::TraceSource;

/// UDP port used by trace frames (and the generator's default): SLMP's.
pub const DEFAULT_UDP_PORT: u16 = softspin_wire::slmp::UDP_PORT;
/// Destination MAC address of generated Ethernet frames.
pub const ETH_DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Source MAC address of generated Ethernet frames.
pub const ETH_SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Largest frame any source builds.
pub const MAX_FRAME_SIZE: usize = 65535;

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
    /// (Borrowed where it is the same for every packet: no string per packet.)
    pub origin: Cow<'static, str>,
    /// The ECTX a matching engine already chose (the live NIC's rulesets,
    /// seed 000 §3.2.1); `None`: the ECTXs' own `MatchRule`s choose.
    pub ectx: Option<usize>,
}

/// A source's packet whose frame is not built yet ([`Source::next_packet`]):
/// an [`Arrival`]'s fields but the frame, which the source writes with
/// [`Source::write_frame`] where the NIC keeps it (its packet-buffer slot),
/// so no vector holds it on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    pub time_ps: u64,
    /// The frame's length in bytes.
    pub len: usize,
    pub msg_id: u32,
    pub eom: bool,
    pub origin: Cow<'static, str>,
    /// The source's number for the frame, passed back to `write_frame`.
    pub frame_id: u64,
}

impl PacketInfo {
    /// The arrival with its frame, built by the source into `frame`
    /// (cleared first; its allocation reused).
    pub fn into_arrival(self, src: &(impl Source + ?Sized), mut frame: Vec<u8>) -> Arrival {
        frame.clear();
        frame.resize(self.len, 0);
        src.write_frame(self.frame_id, &mut frame);
        Arrival {
            time_ps: self.time_ps,
            frame,
            msg_id: self.msg_id,
            eom: self.eom,
            origin: self.origin,
            ectx: None,
        }
    }
}

/// A source's next packet as the NIC inbound engine takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Its frame built.
    Built(Arrival),
    /// Its frame left to [`Source::write_frame`].
    Later(PacketInfo),
}

impl Packet {
    pub fn time_ps(&self) -> u64 {
        match self {
            Packet::Built(a) => a.time_ps,
            Packet::Later(p) => p.time_ps,
        }
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
    /// The next packet, its frame possibly left to `write_frame`
    /// (`Packet::Later`: a source that builds its frames, the generator).
    /// The default: `next_arrival`'s, built.
    fn next_packet(&mut self) -> Result<Option<Packet>, TrafficError> {
        Ok(self.next_arrival()?.map(Packet::Built))
    }
    /// Write the frame of a `Packet::Later` this source returned (its
    /// `frame_id`) into `out`, of the packet's length. Only a source that
    /// returns `Packet::Later` is asked.
    fn write_frame(&self, frame_id: u64, out: &mut [u8]) {
        let _ = (frame_id, out);
        unreachable!("write_frame of a source whose packets come built")
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        (**self).next_arrival()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
    fn next_packet(&mut self) -> Result<Option<Packet>, TrafficError> {
        (**self).next_packet()
    }
    fn write_frame(&self, frame_id: u64, out: &mut [u8]) {
        (**self).write_frame(frame_id, out)
    }
}

impl<S: Source + ?Sized> Source for &mut S {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        (**self).next_arrival()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
    fn next_packet(&mut self) -> Result<Option<Packet>, TrafficError> {
        (**self).next_packet()
    }
    fn write_frame(&self, frame_id: u64, out: &mut [u8]) {
        (**self).write_frame(frame_id, out)
    }
}

/// Back-to-back packets on a line of fixed rate: the one pacing rule of
/// softspin (generator, pcap replay, host API sends, and through
/// [`wire_time_ps`] the engine's PCIe and outbound links).
#[derive(Clone, Debug)]
pub struct LineClock {
    /// Rate in bit/s; None = infinite.
    bps: Option<u128>,
    /// The last packet's arrival, from the bits sent so far (`bits`):
    /// `bits * PS_PER_S + bps / 2 = ps * bps + rem`, `rem < bps` (the
    /// nearest picosecond, kept as a quotient and remainder so a packet
    /// costs additions, not a 128-bit division).
    ps: u128,
    rem: u128,
    /// The last packet size's share, `bytes * 8 * PS_PER_S` divided by the
    /// rate: (bytes, quotient, remainder).
    step: (usize, u128, u128),
}

impl LineClock {
    /// A line of `rate_gbps` Gbit/s (infinite: every packet at time 0).
    pub fn new(rate_gbps: f64) -> Result<Self, String> {
        if rate_gbps.is_nan() || rate_gbps <= 0.0 {
            return Err(format!("rate must be > 0 Gbit/s, got {rate_gbps}"));
        }
        let unpaced = LineClock {
            bps: None,
            ps: 0,
            rem: 0,
            step: (0, 0, 0),
        };
        if rate_gbps.is_infinite() {
            return Ok(unpaced);
        }
        // Whole bit/s keeps the arithmetic exact for any sensible rate.
        let bps = (rate_gbps * 1e9).round();
        if bps < 1.0 {
            return Err(format!("rate {rate_gbps} Gbit/s is below 1 bit/s"));
        }
        let bps = bps as u128;
        Ok(LineClock {
            bps: Some(bps),
            rem: bps / 2,
            ..unpaced
        })
    }

    /// Arrival time of the last bit of the next `bytes`-byte packet; None on overflow.
    pub fn advance(&mut self, bytes: usize) -> Option<u64> {
        let Some(bps) = self.bps else { return Some(0) };
        // From the running total, so per-packet rounding never accumulates.
        if self.step.0 != bytes {
            let d = bytes as u128 * 8 * PS_PER_S;
            self.step = (bytes, d / bps, d % bps);
        }
        self.ps += self.step.1;
        self.rem += self.step.2;
        if self.rem >= bps {
            self.rem -= bps;
            self.ps += 1;
        }
        u64::try_from(self.ps).ok()
    }
}

/// Serialisation time in ps of `bytes` at `gbps`, rounded to the nearest
/// picosecond (a one-packet [`LineClock`]); None if the rate is not > 0 or
/// the time overflows.
pub fn wire_time_ps(bytes: usize, gbps: f64) -> Option<u64> {
    LineClock::new(gbps).ok()?.advance(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh scratch directory (no tempfile crate available).
    pub(super) fn scratch(tag: &str) -> PathBuf {
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

    pub(super) fn drain(src: &mut dyn Source) -> Vec<Arrival> {
        let mut v = Vec::new();
        while let Some(a) = src.next_arrival().unwrap() {
            v.push(a);
        }
        v
    }

    pub(super) fn gen(cfg: GenConfig) -> Vec<Arrival> {
        drain(&mut Generator::new(cfg).unwrap())
    }

    /// Independent RFC 1071 check: the one's complement sum of a valid header is 0xFFFF.
    pub(super) fn ones_sum(b: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for i in (0..b.len()).step_by(2) {
            s += (u64::from(b[i]) << 8) | u64::from(b[i + 1]);
        }
        while s >> 16 != 0 {
            s = (s & 0xFFFF) + (s >> 16);
        }
        s as u16
    }

    /// Against the closed form, rounded to the nearest picosecond from the
    /// running bit count, for sizes that change and rates that do not
    /// divide evenly.
    #[test]
    fn line_clock_matches_the_running_total() {
        for gbps in [400.0, 100.0, 7.3, 0.001, 123.456_789] {
            let mut clock = LineClock::new(gbps).unwrap();
            let bps = (gbps * 1e9_f64).round() as u128;
            let mut bits = 0u128;
            for k in 0..2_000usize {
                let bytes = [64, 64, 1500, 9000, 65_535, 1][k % 6] + k % 3;
                bits += bytes as u128 * 8;
                let want = (bits * PS_PER_S + bps / 2) / bps;
                assert_eq!(
                    clock.advance(bytes),
                    Some(want as u64),
                    "{gbps} Gbit/s, packet {k}"
                );
            }
        }
        let mut inf = LineClock::new(f64::INFINITY).unwrap();
        assert_eq!(inf.advance(1500), Some(0));
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
