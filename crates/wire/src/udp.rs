//! UDP header (RFC 768): FPsPIN matches SLMP traffic on the destination port
//! at frame bytes 36-37 (seed 000, §3.2.1 "Ingress", packet matching
//! engine). The checksum covers the IPv4 pseudo-header; 0 means none.

use crate::ipv4::Ipv4Address;
use crate::{be16, checksum, need, Checksum, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
    pub const PAYLOAD: usize = 8;
}

/// Bytes of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;

const LAYER: &str = "UDP";
const PROTOCOL_UDP: u8 = 17;

/// A view of a UDP datagram.
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

    /// Whether the header and the length it states are within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        need(LAYER, len, HEADER_LEN)?;
        let stated = usize::from(self.length());
        if stated < HEADER_LEN {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "length",
                value: stated as u64,
                limit: "at least 8 (the header)",
            });
        }
        need(LAYER, len, stated)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT.start)
    }

    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT.start)
    }

    /// The length field: header + payload bytes.
    pub fn length(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// Whether the checksum verifies against the IPv4 pseudo-header; a zero
    /// checksum (none sent) verifies.
    pub fn verify_checksum(&self, src: Ipv4Address, dst: Ipv4Address) -> bool {
        self.checksum() == 0 || self.sum(src, dst) == 0xFFFF
    }

    fn sum(&self, src: Ipv4Address, dst: Ipv4Address) -> u16 {
        let b = self.buffer.as_ref();
        let len = self.length();
        let end = usize::from(len).clamp(HEADER_LEN.min(b.len()), b.len());
        checksum::combine(&[
            checksum::pseudo_header_v4(src.0, dst.0, PROTOCOL_UDP, len),
            checksum::sum(&b[..end]),
        ])
    }

    /// The payload up to the length field (clamped to the buffer).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.length()).min(b.len());
        &b[HEADER_LEN.min(end)..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Compute and store the checksum (over header, payload and pseudo-header).
    pub fn fill_checksum(&mut self, src: Ipv4Address, dst: Ipv4Address) {
        self.set_checksum(0);
        // A computed 0 is sent as 0xFFFF: 0 means "no checksum" (RFC 768).
        let c = match !self.sum(src, dst) {
            0 => 0xFFFF,
            c => c,
        };
        self.set_checksum(c);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.length());
        let b = self.buffer.as_mut();
        let end = len.min(b.len());
        &mut b[HEADER_LEN.min(end)..end]
    }
}

/// A UDP header as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl Repr {
    /// Parse, verifying a non-zero checksum under [`Checksum::Full`].
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        checksum: Checksum,
    ) -> Result<Repr> {
        packet.check_len()?;
        if checksum == Checksum::Full && !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum {
                layer: LAYER,
                found: packet.checksum(),
            });
        }
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write header and payload: `emit_payload` fills the `payload_len`
    /// payload bytes, then the checksum is computed ([`Checksum::Full`]) or
    /// left 0 ([`Checksum::Skip`]). The buffer must hold header and payload.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
        checksum: Checksum,
    ) -> Result<()> {
        let total = HEADER_LEN
            .checked_add(payload_len)
            .filter(|&t| t <= usize::from(u16::MAX))
            .ok_or(Error::Malformed {
                layer: LAYER,
                field: "length",
                value: payload_len.saturating_add(HEADER_LEN) as u64,
                limit: "at most 65535",
            })?;
        need(LAYER, packet.buffer.as_ref().len(), total)?;
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(total as u16);
        packet.set_checksum(0);
        emit_payload(packet.payload_mut());
        if checksum == Checksum::Full {
            packet.fill_checksum(src, dst);
        }
        Ok(())
    }
}
