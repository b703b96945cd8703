//! Ethernet II header: what FPsPIN's packet matching engine sees first (seed
//! 000, §3.2.1 "Ingress": EtherType at bytes 12-13). Frames here carry no
//! FCS (the MAC strips it, pcap omits it) and no 802.1Q tag.

use core::fmt;

use crate::{be16, need, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// Bytes of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;

const LAYER: &str = "Ethernet";

/// A 48-bit MAC address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// The address from the first 6 bytes of `b`, if there are 6.
    pub fn from_bytes(b: &[u8]) -> Option<EthernetAddress> {
        Some(EthernetAddress(b.get(..6)?.try_into().ok()?))
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }
    /// Group bit (I/G) set: multicast or broadcast.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// The EtherType field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    Ipv6,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        match v {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86DD => EtherType::Ipv6,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(t: EtherType) -> u16 {
        match t {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86DD,
            EtherType::Unknown(v) => v,
        }
    }
}

/// A view of an Ethernet II frame.
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

    /// Wrap after checking that the header is there.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Whether the buffer holds a whole header.
    pub fn check_len(&self) -> Result<()> {
        need(LAYER, self.buffer.as_ref().len(), HEADER_LEN)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress(self.buffer.as_ref()[field::DESTINATION].try_into().unwrap())
    }

    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress(self.buffer.as_ref()[field::SOURCE].try_into().unwrap())
    }

    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(self.buffer.as_ref(), field::ETHERTYPE.start))
    }

    /// Everything after the header (padding to the 60 B minimum included).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_dst_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }

    pub fn set_src_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }

    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(t).to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// An Ethernet II header as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub src_addr: EthernetAddress,
    pub dst_addr: EthernetAddress,
    pub ethertype: EtherType,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            ethertype: packet.ethertype(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header; the buffer must hold at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        packet.set_dst_addr(self.dst_addr);
        packet.set_src_addr(self.src_addr);
        packet.set_ethertype(self.ethertype);
        Ok(())
    }
}
