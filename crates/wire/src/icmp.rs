//! ICMPv4 (RFC 792): FPsPIN's ICMP ping-pong demo answers echo requests in a
//! handler (seed 000, §6.3.1). The message is the whole IPv4 payload and the
//! checksum covers all of it.

use crate::{be16, checksum, need, Checksum, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    /// Type-specific: echo identifier and sequence number, or unused / MTU.
    pub const REST: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const NEXT_HOP_MTU: Field = 6..8;
    pub const DATA: usize = 8;
}

/// Bytes of the header: type, code, checksum and 4 type-specific bytes.
pub const HEADER_LEN: usize = field::DATA;

/// Message types this crate gives a [`Repr`] variant of their own.
pub mod msg_type {
    pub const ECHO_REPLY: u8 = 0;
    pub const DST_UNREACHABLE: u8 = 3;
    pub const ECHO_REQUEST: u8 = 8;
}

const LAYER: &str = "ICMP";

/// A view of an ICMPv4 message.
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

    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// The 4 type-specific header bytes.
    pub fn rest_of_header(&self) -> [u8; 4] {
        self.buffer.as_ref()[field::REST].try_into().unwrap()
    }

    pub fn echo_ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ECHO_IDENT.start)
    }

    pub fn echo_seq_no(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ECHO_SEQNO.start)
    }

    /// Next-hop MTU of a "fragmentation needed" message (RFC 1191).
    pub fn next_hop_mtu(&self) -> u16 {
        be16(self.buffer.as_ref(), field::NEXT_HOP_MTU.start)
    }

    /// Whether the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.buffer.as_ref()) == 0xFFFF
    }

    pub fn data(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[HEADER_LEN.min(b.len())..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }

    pub fn set_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_rest_of_header(&mut self, v: [u8; 4]) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&v);
    }

    /// Compute and store the checksum over the whole message.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        let b = self.buffer.as_mut();
        let start = HEADER_LEN.min(b.len());
        &mut b[start..]
    }
}

/// An ICMPv4 message as plain values, borrowing its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    /// `data` is the offending datagram's IP header and first 8 payload bytes.
    DstUnreachable {
        code: u8,
        next_hop_mtu: u16,
        data: &'a [u8],
    },
    /// Any other type (or an echo with a non-zero code), kept as is.
    Other {
        msg_type: u8,
        code: u8,
        rest_of_header: [u8; 4],
        data: &'a [u8],
    },
}

impl<'a> Repr<'a> {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
        checksum: Checksum,
    ) -> Result<Repr<'a>> {
        packet.check_len()?;
        if checksum == Checksum::Full && !packet.verify_checksum() {
            return Err(Error::BadChecksum {
                layer: LAYER,
                found: packet.checksum(),
            });
        }
        // Through T, so the data borrows the buffer ('a), not the view.
        let buf: &'a [u8] = <T as AsRef<[u8]>>::as_ref(packet.buffer);
        let data = &buf[HEADER_LEN..];
        let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
        Ok(match (packet.msg_type(), packet.code()) {
            (msg_type::ECHO_REQUEST, 0) => Repr::EchoRequest {
                ident,
                seq_no,
                data,
            },
            (msg_type::ECHO_REPLY, 0) => Repr::EchoReply {
                ident,
                seq_no,
                data,
            },
            (msg_type::DST_UNREACHABLE, code) => Repr::DstUnreachable {
                code,
                next_hop_mtu: packet.next_hop_mtu(),
                data,
            },
            (msg_type, code) => Repr::Other {
                msg_type,
                code,
                rest_of_header: packet.rest_of_header(),
                data,
            },
        })
    }

    pub fn data(&self) -> &'a [u8] {
        match *self {
            Repr::EchoRequest { data, .. }
            | Repr::EchoReply { data, .. }
            | Repr::DstUnreachable { data, .. }
            | Repr::Other { data, .. } => data,
        }
    }

    /// Bytes of the whole message.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Write the message and its checksum (always: it is mandatory). The
    /// buffer is the message: exactly [`Repr::buffer_len`] bytes, as the
    /// checksum covers all of it.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let len = packet.buffer.as_ref().len();
        if len != self.buffer_len() {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "message length",
                value: len as u64,
                limit: "must equal the header (8 B) plus the data",
            });
        }
        let (t, c, rest) = match *self {
            Repr::EchoRequest { ident, seq_no, .. } => {
                (msg_type::ECHO_REQUEST, 0, echo_rest(ident, seq_no))
            }
            Repr::EchoReply { ident, seq_no, .. } => {
                (msg_type::ECHO_REPLY, 0, echo_rest(ident, seq_no))
            }
            Repr::DstUnreachable {
                code, next_hop_mtu, ..
            } => {
                let m = next_hop_mtu.to_be_bytes();
                (msg_type::DST_UNREACHABLE, code, [0, 0, m[0], m[1]])
            }
            Repr::Other {
                msg_type,
                code,
                rest_of_header,
                ..
            } => (msg_type, code, rest_of_header),
        };
        packet.set_msg_type(t);
        packet.set_code(c);
        packet.set_rest_of_header(rest);
        packet.data_mut().copy_from_slice(self.data());
        packet.fill_checksum();
        Ok(())
    }
}

fn echo_rest(ident: u16, seq_no: u16) -> [u8; 4] {
    let (i, s) = (ident.to_be_bytes(), seq_no.to_be_bytes());
    [i[0], i[1], s[0], s[1]]
}
