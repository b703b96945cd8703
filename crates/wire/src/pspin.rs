//! PsPIN's IP/UDP header layout: what PsPIN's handlers read through its C
//! structs `ip_hdr_t` and `udp_hdr_t` (seed 001; PsPIN's `GET_IP_UDP_PLD`).
//! It is *not* a wire format, and lives here so that the traffic generator
//! and the engine's matching share one description of it:
//!
//! * byte 0 holds ihl in the HIGH nibble and the version in the LOW nibble
//!   (the C bit-fields' order), so a 20-byte header starts with 0x54;
//! * multi-byte fields are in host (little-endian) order: total length, UDP
//!   ports and length, and the addresses as little-endian u32 (10.0.0.1 is
//!   read by a handler as 0x0A000001);
//! * the IP header checksum is the RFC 1071 sum over the bytes as written,
//!   stored big-endian; that sum is byte-order independent, so the header
//!   verifies in either reading.
//!
//! The datagram is the IP header, the UDP header and the payload; the total
//! length counts all three.

use crate::ipv4::{self, Ipv4Address};
use crate::{checksum, need, udp, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const IHL_VER: usize = 0;
    pub const LENGTH: Field = 2..4;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
    // UDP fields, relative to the end of the IP header.
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const UDP_LENGTH: usize = 4;
    pub const UDP_CHECKSUM: usize = 6;
}

/// Bytes of the IP (without options) and UDP headers.
pub const HEADER_LEN: usize = ipv4::HEADER_LEN + udp::HEADER_LEN;

const LAYER: &str = "PsPIN IP/UDP";
const PROTOCOL_UDP: u8 = 17;
/// TTL of the datagrams [`Repr::emit`] writes.
pub const DEFAULT_TTL: u8 = 64;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// A view of a PsPIN-layout IP/UDP datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking: accessors may panic on a short buffer. Use
    /// only on buffers this program sized, else [`Packet::new_checked`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wrap after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Whether the IP header (options included), the UDP header and the
    /// total length stated in the IP header are all within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        need(LAYER, len, HEADER_LEN)?;
        let hlen = self.header_len();
        if hlen < ipv4::HEADER_LEN {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "ihl",
                value: (hlen / 4) as u64,
                limit: "at least 5 (20 B)",
            });
        }
        need(LAYER, len, hlen + udp::HEADER_LEN)?;
        let total = usize::from(self.total_len());
        if total < hlen + udp::HEADER_LEN {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "total length",
                value: total as u64,
                limit: "at least the IP header length plus 8 (UDP header)",
            });
        }
        need(LAYER, len, total)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version, from the LOW nibble of byte 0.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::IHL_VER] & 0x0F
    }

    /// IP header bytes (ihl * 4, ihl from the HIGH nibble of byte 0).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::IHL_VER] >> 4) * 4
    }

    pub fn total_len(&self) -> u16 {
        le16(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> ipv4::IpProtocol {
        self.buffer.as_ref()[field::PROTOCOL].into()
    }

    pub fn src_addr(&self) -> Ipv4Address {
        let b: [u8; 4] = self.buffer.as_ref()[field::SRC_ADDR].try_into().unwrap();
        Ipv4Address(u32::from_le_bytes(b).to_be_bytes())
    }

    pub fn dst_addr(&self) -> Ipv4Address {
        let b: [u8; 4] = self.buffer.as_ref()[field::DST_ADDR].try_into().unwrap();
        Ipv4Address(u32::from_le_bytes(b).to_be_bytes())
    }

    /// Whether the IP header checksum verifies (over the bytes as written).
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        checksum::sum(&b[..self.header_len().clamp(ipv4::HEADER_LEN, b.len())]) == 0xFFFF
    }

    // UDP fields follow the IP header; clamp so a setter-made ihl cannot panic.
    fn udp_field(&self, at: usize) -> u16 {
        let b = self.buffer.as_ref();
        let u = self.header_len().min(b.len() - udp::HEADER_LEN);
        le16(b, u + at)
    }

    pub fn src_port(&self) -> u16 {
        self.udp_field(field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        self.udp_field(field::DST_PORT)
    }

    pub fn udp_len(&self) -> u16 {
        self.udp_field(field::UDP_LENGTH)
    }

    /// Everything after the UDP header.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[(self.header_len() + udp::HEADER_LEN).min(b.len())..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len() + udp::HEADER_LEN;
        let b = self.buffer.as_mut();
        let start = start.min(b.len());
        &mut b[start..]
    }
}

/// A PsPIN-layout IP/UDP header pair as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub src_addr: Ipv4Address,
    pub dst_addr: Ipv4Address,
    pub src_port: u16,
    pub dst_port: u16,
    /// Bytes after the UDP header.
    pub payload_len: usize,
}

impl Repr {
    /// Parse a UDP datagram (version 4, protocol 17) whose total length and
    /// UDP length agree with each other and fit in the buffer.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::BadVersion(packet.version()));
        }
        if packet.protocol() != ipv4::IpProtocol::Udp {
            let value = u64::from(u8::from(packet.protocol()));
            return Err(Error::Unsupported {
                layer: LAYER,
                field: "protocol",
                value,
            });
        }
        let (hlen, total) = (packet.header_len(), usize::from(packet.total_len()));
        if usize::from(packet.udp_len()) != total - hlen {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "UDP length",
                value: u64::from(packet.udp_len()),
                limit: "must be the IP total length minus the IP header length",
            });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: total - hlen - udp::HEADER_LEN,
        })
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write both headers (TTL [`DEFAULT_TTL`], ident 0, no fragmentation,
    /// UDP checksum 0). The buffer must hold at least the headers.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let b = packet.buffer.as_mut();
        need(LAYER, b.len(), HEADER_LEN)?;
        let total = HEADER_LEN
            .checked_add(self.payload_len)
            .filter(|&t| t <= ipv4::MAX_TOTAL_LEN)
            .ok_or(Error::Malformed {
                layer: LAYER,
                field: "total length",
                value: self.payload_len.saturating_add(HEADER_LEN) as u64,
                limit: "at most 65535",
            })? as u16;
        let ip = &mut b[..ipv4::HEADER_LEN];
        ip.fill(0);
        ip[field::IHL_VER] = ((ipv4::HEADER_LEN / 4) as u8) << 4 | 4;
        ip[field::LENGTH].copy_from_slice(&total.to_le_bytes());
        ip[field::TTL] = DEFAULT_TTL;
        ip[field::PROTOCOL] = PROTOCOL_UDP;
        ip[field::SRC_ADDR].copy_from_slice(&u32::from_be_bytes(self.src_addr.0).to_le_bytes());
        ip[field::DST_ADDR].copy_from_slice(&u32::from_be_bytes(self.dst_addr.0).to_le_bytes());
        let c = checksum::checksum(ip);
        ip[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        let u = &mut b[ipv4::HEADER_LEN..HEADER_LEN];
        u[field::SRC_PORT..][..2].copy_from_slice(&self.src_port.to_le_bytes());
        u[field::DST_PORT..][..2].copy_from_slice(&self.dst_port.to_le_bytes());
        u[field::UDP_LENGTH..][..2]
            .copy_from_slice(&(total - ipv4::HEADER_LEN as u16).to_le_bytes());
        u[field::UDP_CHECKSUM..][..2].fill(0);
        Ok(())
    }
}
