//! SLMP, the sPIN Lightweight Messaging Protocol (seed 000, §5.1.2 "The
//! solution"): a 10-byte big-endian header at the start of the UDP payload
//! that carries a message over Ethernet as a stream of segments:
//!
//! | bytes | field      | meaning                                          |
//! |-------|------------|--------------------------------------------------|
//! | 0-1   | flags      | EOM 0x8000, SYN 0x4000, ACK 0x2000; rest reserved |
//! | 2-5   | message id | unique id of the message                         |
//! | 6-9   | offset     | byte offset of the first payload byte in it      |
//!
//! A segment with SYN must be answered by the receiver with the same header
//! (ACK set) and no payload (§5.1.2, pluggable reliability). FPsPIN's matching
//! ruleset finds SLMP by UDP destination port [`UDP_PORT`] (seed 000, §3.2.1,
//! RULE_UDP_DPORT).

use core::fmt;

use crate::{be16, be32, need, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const FLAGS: Field = 0..2;
    pub const MSG_ID: Field = 2..6;
    pub const OFFSET: Field = 6..10;
    pub const PAYLOAD: usize = 10;
}

/// Bytes of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// The UDP port SLMP is matched on (seed 000, §3.2.1, RULE_UDP_DPORT = 9330).
pub const UDP_PORT: u16 = 9330;

const LAYER: &str = "SLMP";

/// The flags field. Reserved bits are kept as received (they belong to
/// future versions of the protocol, §5.1.2) and emitted as given.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u16);

impl Flags {
    /// End of message: the last segment (the tail handler runs after it).
    pub const EOM: Flags = Flags(0x8000);
    /// Synchronise: the receiver must acknowledge this segment.
    pub const SYN: Flags = Flags(0x4000);
    /// Acknowledgement of a SYN segment.
    pub const ACK: Flags = Flags(0x2000);
    pub const NONE: Flags = Flags(0);

    pub const fn bits(self) -> u16 {
        self.0
    }
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn eom(self) -> bool {
        self.contains(Self::EOM)
    }
    pub const fn syn(self) -> bool {
        self.contains(Self::SYN)
    }
    pub const fn ack(self) -> bool {
        self.contains(Self::ACK)
    }
    /// Bits outside EOM, SYN and ACK.
    pub const fn reserved(self) -> u16 {
        self.0 & !(Self::EOM.0 | Self::SYN.0 | Self::ACK.0)
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names = Vec::new();
        for (flag, name) in [(Self::EOM, "EOM"), (Self::SYN, "SYN"), (Self::ACK, "ACK")] {
            if self.contains(flag) {
                names.push(name);
            }
        }
        write!(
            f,
            "Flags({}",
            if names.is_empty() {
                "-".to_string()
            } else {
                names.join("|")
            }
        )?;
        if self.reserved() != 0 {
            write!(f, ", reserved 0x{:04x}", self.reserved())?;
        }
        f.write_str(")")
    }
}

/// A view of an SLMP segment (the UDP payload).
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

    pub fn check_len(&self) -> Result<()> {
        need(LAYER, self.buffer.as_ref().len(), HEADER_LEN)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn flags(&self) -> Flags {
        Flags(be16(self.buffer.as_ref(), field::FLAGS.start))
    }

    pub fn msg_id(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MSG_ID.start)
    }

    pub fn offset(&self) -> u32 {
        be32(self.buffer.as_ref(), field::OFFSET.start)
    }

    /// The segment's bytes of the message.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[HEADER_LEN.min(b.len())..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_flags(&mut self, f: Flags) {
        self.buffer.as_mut()[field::FLAGS].copy_from_slice(&f.0.to_be_bytes());
    }

    pub fn set_msg_id(&mut self, v: u32) {
        self.buffer.as_mut()[field::MSG_ID].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_offset(&mut self, v: u32) {
        self.buffer.as_mut()[field::OFFSET].copy_from_slice(&v.to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let b = self.buffer.as_mut();
        let start = HEADER_LEN.min(b.len());
        &mut b[start..]
    }
}

/// An SLMP header as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub flags: Flags,
    pub msg_id: u32,
    pub offset: u32,
}

impl Repr {
    /// Parse a segment. Its payload must end within the 4 GiB a 32-bit
    /// offset can address (§5.1.2: messages of up to 4 GB).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        let end = u64::from(packet.offset()) + packet.payload().len() as u64;
        if end > 1 << 32 {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "offset",
                value: u64::from(packet.offset()),
                limit: "offset + payload length must be at most 2^32 (4 GiB messages)",
            });
        }
        Ok(Repr {
            flags: packet.flags(),
            msg_id: packet.msg_id(),
            offset: packet.offset(),
        })
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header; the buffer must hold at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        packet.set_flags(self.flags);
        packet.set_msg_id(self.msg_id);
        packet.set_offset(self.offset);
        Ok(())
    }
}
