//! Classic pcap files for tests (little-endian, microsecond timestamps,
//! Ethernet), through the `pcap-file` crate the engine reads and writes
//! them with; and the packets of a pcapng (`softspin nic --pcap-out`).

use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::Endianness;

/// A pcap of `frames`, the first at time `start`, then `gap` apart.
pub fn to_bytes(frames: &[Vec<u8>], start: Duration, gap: Duration) -> Vec<u8> {
    let header = PcapHeader {
        endianness: Endianness::Little,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).expect("pcap header");
    for (i, f) in frames.iter().enumerate() {
        let ts = start + gap * i as u32;
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
            .expect("pcap record");
    }
    w.into_writer()
}

/// Writes `frames` to `path`, `gap` apart from time zero.
pub fn write(path: &Path, frames: &[Vec<u8>], gap: Duration) {
    std::fs::write(path, to_bytes(frames, Duration::ZERO, gap))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The (timestamp, frame) records of a pcap file, in order; either byte
/// order and timestamp resolution. Panics, naming the file, on a broken one.
pub fn read_records(path: &Path) -> Vec<(Duration, Vec<u8>)> {
    let d = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapReader::new(&d[..]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap_or_else(|e| panic!("{}: record {}: {e}", path.display(), out.len()));
        assert_eq!(
            p.data.len(),
            p.orig_len as usize,
            "{}: record {} truncated",
            path.display(),
            out.len()
        );
        out.push((p.timestamp, p.data.into_owned()));
    }
    out
}

/// The frames of a pcap file, in order.
pub fn read(path: &Path) -> Vec<Vec<u8>> {
    read_records(path).into_iter().map(|(_, f)| f).collect()
}

/// A packet of a pcapng file (an Enhanced Packet Block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NgPacket {
    pub interface: u32,
    /// As stored (nanoseconds: what `softspin nic` declares in if_tsresol).
    pub timestamp: Duration,
    pub frame: Vec<u8>,
    /// Its first opt_comment.
    pub comment: Option<String>,
}

/// The packets of a pcapng file, in order. Panics, naming the file, on a
/// broken one.
pub fn read_ng(path: &Path) -> Vec<NgPacket> {
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
    use pcap_file::pcapng::{Block, PcapNgReader};
    let d = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapNgReader::new(&d[..]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(b) = r.next_block() {
        let b = b.unwrap_or_else(|e| {
            panic!("{}: block after packet {}: {e}", path.display(), out.len())
        });
        if let Block::EnhancedPacket(p) = b {
            let comment = p.options.iter().find_map(|o| match o {
                EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                _ => None,
            });
            out.push(NgPacket {
                interface: p.interface_id,
                timestamp: p.timestamp,
                frame: p.data.into_owned(),
                comment,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes are the classic format, checked field by field by hand.
    #[test]
    fn layout_and_round_trip() {
        let frames = vec![vec![1u8, 2, 3], vec![], vec![9; 70]];
        let b = to_bytes(&frames, Duration::from_secs(1), Duration::from_micros(20));
        let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        assert_eq!(le32(0), 0xa1b2_c3d4, "magic: microseconds, little-endian");
        assert_eq!(
            (le32(4), le32(16), le32(20)),
            (0x0004_0002, 65535, 1),
            "2.4, snaplen, Ethernet"
        );
        assert_eq!(
            (le32(24), le32(28), le32(32), le32(36)),
            (1, 0, 3, 3),
            "first record header"
        );
        assert_eq!(
            (le32(43), le32(47)),
            (1, 20),
            "second record at 1 s + 20 us"
        );
        assert_eq!(b.len(), 24 + 3 * 16 + 3 + 70);
        let p = crate::scratch("testkit-pcap").join("rt.pcap");
        write(&p, &frames, Duration::from_micros(5));
        let r = read_records(&p);
        assert_eq!(r.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>(), frames);
        assert_eq!(r[2].0, Duration::from_micros(10));
        std::fs::write(&p, b"not a pcap").unwrap();
        assert!(std::panic::catch_unwind(|| read(&p)).is_err());
    }
}
