//! RMA: remote memory access between NICs (DiAD, seed 003 §III "remote
//! memory" and §IV reliability; sPIN's put/get/atomics, seed 004 §3). One
//! request or response per UDP/IPv4 datagram to [`UDP_PORT`], each packet
//! self-contained (an initiator splits a large put into packets that each
//! carry their own offset). A 40-byte header at the start of the UDP
//! payload, every field in network byte order (big-endian), then the
//! payload (docs/rma.md has the table):
//!
//! | bytes | field    | meaning                                                |
//! |-------|----------|--------------------------------------------------------|
//! | 0     | version  | [`VERSION`]                                            |
//! | 1     | kind     | transport packet type: DATA, ACK, NACK, UNACK ([`Kind`]) |
//! | 2     | op       | operation ([`Op`]), bit 7 set in a response ([`RESPONSE`]) |
//! | 3     | status   | 0 in requests; the outcome in responses ([`Status`])  |
//! | 4-5   | src rank | sending node                                           |
//! | 6-7   | dst rank | receiving node                                         |
//! | 8-11  | seq      | per-destination sequence number (transport block)      |
//! | 12-15 | ack      | cumulative acknowledgement (transport block)           |
//! | 16-19 | txn      | transaction id, chosen by the initiator, echoed        |
//! | 20-23 | key      | memory key of the target's window                      |
//! | 24-31 | offset   | byte offset in the window                              |
//! | 32-35 | length   | bytes written / read; the width (4, 8) of an atomic    |
//! | 36-39 | reserved | sent as 0, ignored                                     |
//!
//! Payloads: a write request carries `length` data bytes, a read response
//! with status OK `length` bytes; an atomic request its operands (add, or
//! compare then swap) and an atomic response with status OK the old value,
//! each operand `length` bytes big-endian. Everything else has none.
//!
//! The window table ([`window`]) is the target NIC's list of exported host
//! windows that requests name by key; it lives in NIC memory, so it is
//! little-endian (RV32) and not a wire format, but its layout is RMA's and
//! is written down here once, as `sdk/include/spin_rma.h` is for C.

use core::fmt;

use crate::{be16, be32, need, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const VERSION: usize = 0;
    pub const KIND: usize = 1;
    pub const OP: usize = 2;
    pub const STATUS: usize = 3;
    pub const SRC_RANK: Field = 4..6;
    pub const DST_RANK: Field = 6..8;
    pub const SEQ: Field = 8..12;
    pub const ACK: Field = 12..16;
    pub const TXN: Field = 16..20;
    pub const KEY: Field = 20..24;
    pub const OFFSET: Field = 24..32;
    pub const LENGTH: Field = 32..36;
    pub const RESERVED: Field = 36..40;
    pub const PAYLOAD: usize = 40;
}

/// Bytes of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// The UDP port RMA is matched on ("SP" in ASCII).
pub const UDP_PORT: u16 = 0x5350;
/// The header version this module reads and writes.
pub const VERSION: u8 = 1;
/// Bit of the op byte that marks a response.
pub const RESPONSE: u8 = 0x80;
/// The IP MTU RMA packets are sized for (Ethernet's 1500 bytes): the live
/// NIC's, and sdk/include/spin_rma.h's RMA_MTU unless a build sets another
/// (`softspin netsim` does for its 4 KiB MTU; [`max_payload`] then gives
/// its segment). Everything in this crate is at this MTU.
pub const MTU: usize = 1500;
/// The smallest and largest MTU spin_rma.h builds with (IPv4's minimum
/// datagram, jumbo frames).
pub const MTU_RANGE: core::ops::RangeInclusive<usize> = 576..=9000;
/// The most payload bytes of one packet at [`MTU`]. A read asks for at
/// most this much (its response must fit).
pub const MAX_PAYLOAD: usize = max_payload(MTU);

/// The most payload bytes of one packet at IP MTU `mtu`: the MTU less the
/// IPv4, UDP and RMA headers (spin_rma.h's RMA_MAX_PAYLOAD).
pub const fn max_payload(mtu: usize) -> usize {
    mtu - crate::ipv4::HEADER_LEN - crate::udp::HEADER_LEN - HEADER_LEN
}

const LAYER: &str = "RMA";

macro_rules! byte_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $n:expr, $s:expr;)* } $field:expr, $limit:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $v = $n,)* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v),*];

            /// The value of a byte, or a [`Error::Malformed`] naming the field.
            pub fn from_byte(b: u8) -> Result<$name> {
                match b {
                    $($n => Ok($name::$v),)*
                    _ => Err(Error::Malformed { layer: LAYER, field: $field, value: u64::from(b), limit: $limit }),
                }
            }

            /// Short name, as the dissector shows it.
            pub const fn name(self) -> &'static str {
                match self { $($name::$v => $s,)* }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

byte_enum! {
    /// Transport packet type (DiAD's reliability, seed 003 §IV): DATA carries
    /// a request or response; the others are the transport block's own.
    Kind {
        Data = 0, "DATA";
        /// Everything up to `ack` arrived.
        Ack = 1, "ACK";
        /// `ack` is the next sequence number expected: resend from there.
        Nack = 2, "NACK";
        /// Request for acknowledgement: the sender asks for an ACK of
        /// what arrived (DiAD's third control type).
        Unack = 3, "UNACK";
    } "kind", "0 DATA, 1 ACK, 2 NACK, 3 UNACK"
}

byte_enum! {
    /// Operation of a DATA packet (the op byte without [`RESPONSE`]).
    Op {
        /// No operation: transport control packets (ACK, NACK, UNACK).
        None = 0, "none";
        Write = 1, "write";
        Read = 2, "read";
        FetchAdd32 = 3, "fadd32";
        FetchAdd64 = 4, "fadd64";
        CompareSwap32 = 5, "cas32";
        CompareSwap64 = 6, "cas64";
    } "op", "0-6 (bit 7: response)"
}

byte_enum! {
    /// Outcome of a request, in its response. Anything but OK means the
    /// target wrote nothing.
    Status {
        Ok = 0, "ok";
        /// No window is exported under the key.
        BadKey = 1, "bad key";
        /// offset + length is beyond the window (or overflows).
        OutOfWindow = 2, "out of window";
        /// The window does not allow the operation (R, W or atomic).
        Permission = 3, "permission denied";
        /// Lengths do not agree, or a read asks for more than a packet holds.
        Malformed = 4, "malformed";
        /// An atomic's offset is not a multiple of its width.
        Unaligned = 5, "unaligned atomic";
        /// The NIC could not carry it out (a DMA command failed).
        Failed = 6, "failed";
    } "status", "0-6"
}

impl Op {
    /// Bytes of an atomic's operand and result; None for write and read.
    pub const fn width(self) -> Option<usize> {
        match self {
            Op::FetchAdd32 | Op::CompareSwap32 => Some(4),
            Op::FetchAdd64 | Op::CompareSwap64 => Some(8),
            _ => None,
        }
    }

    /// Operands an atomic request carries (fetch-and-add 1, compare-and-swap 2).
    pub const fn operands(self) -> usize {
        match self {
            Op::FetchAdd32 | Op::FetchAdd64 => 1,
            Op::CompareSwap32 | Op::CompareSwap64 => 2,
            _ => 0,
        }
    }

    /// The window permission the operation needs.
    pub const fn permission(self) -> u32 {
        match self {
            Op::None => 0,
            Op::Write => window::PERM_WRITE,
            Op::Read => window::PERM_READ,
            _ => window::PERM_ATOMIC,
        }
    }
}

/// A view of an RMA packet (the UDP payload).
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

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// The raw kind byte ([`Kind::from_byte`] checks it).
    pub fn kind(&self) -> u8 {
        self.buffer.as_ref()[field::KIND]
    }

    /// The raw op byte, response bit included.
    pub fn op(&self) -> u8 {
        self.buffer.as_ref()[field::OP]
    }

    pub fn status(&self) -> u8 {
        self.buffer.as_ref()[field::STATUS]
    }

    pub fn src_rank(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_RANK.start)
    }

    pub fn dst_rank(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_RANK.start)
    }

    pub fn seq(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SEQ.start)
    }

    pub fn ack(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ACK.start)
    }

    pub fn txn(&self) -> u32 {
        be32(self.buffer.as_ref(), field::TXN.start)
    }

    pub fn key(&self) -> u32 {
        be32(self.buffer.as_ref(), field::KEY.start)
    }

    pub fn offset(&self) -> u64 {
        be64(self.buffer.as_ref(), field::OFFSET.start)
    }

    pub fn length(&self) -> u32 {
        be32(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn reserved(&self) -> u32 {
        be32(self.buffer.as_ref(), field::RESERVED.start)
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[HEADER_LEN.min(b.len())..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::VERSION] = v;
    }

    pub fn set_kind(&mut self, v: u8) {
        self.buffer.as_mut()[field::KIND] = v;
    }

    pub fn set_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::OP] = v;
    }

    pub fn set_status(&mut self, v: u8) {
        self.buffer.as_mut()[field::STATUS] = v;
    }

    pub fn set_src_rank(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_RANK].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_dst_rank(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_RANK].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_seq(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_ack(&mut self, v: u32) {
        self.buffer.as_mut()[field::ACK].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_txn(&mut self, v: u32) {
        self.buffer.as_mut()[field::TXN].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_key(&mut self, v: u32) {
        self.buffer.as_mut()[field::KEY].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_offset(&mut self, v: u64) {
        self.buffer.as_mut()[field::OFFSET].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_length(&mut self, v: u32) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_reserved(&mut self, v: u32) {
        self.buffer.as_mut()[field::RESERVED].copy_from_slice(&v.to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let b = self.buffer.as_mut();
        let start = HEADER_LEN.min(b.len());
        &mut b[start..]
    }
}

/// An RMA header as plain values. The data bytes of a write request or a
/// read response stay in the packet ([`Packet::payload`]); an atomic's
/// operands are parsed into `operands`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub kind: Kind,
    /// [`Op::None`] exactly when `kind` is not DATA.
    pub op: Op,
    pub response: bool,
    /// [`Status::Ok`] in every request.
    pub status: Status,
    pub src_rank: u16,
    pub dst_rank: u16,
    pub seq: u32,
    pub ack: u32,
    pub txn: u32,
    pub key: u32,
    pub offset: u64,
    pub length: u32,
    /// Atomic request: `[add, 0]` or `[compare, swap]`; atomic response
    /// with status OK: `[old, 0]`; otherwise `[0, 0]`.
    pub operands: [u64; 2],
}

impl Repr {
    /// A request or response header with the transport fields zero.
    pub const fn data(
        op: Op,
        response: bool,
        txn: u32,
        key: u32,
        offset: u64,
        length: u32,
    ) -> Repr {
        Repr {
            kind: Kind::Data,
            op,
            response,
            status: Status::Ok,
            src_rank: 0,
            dst_rank: 0,
            seq: 0,
            ack: 0,
            txn,
            key,
            offset,
            length,
            operands: [0; 2],
        }
    }

    /// How many atomic operands follow the header (0 for data payloads).
    pub fn operand_count(&self) -> usize {
        match (self.op.width(), self.response, self.status) {
            (None, ..) => 0,
            (Some(_), false, _) => self.op.operands(),
            (Some(_), true, Status::Ok) => 1,
            (Some(_), true, _) => 0,
        }
    }

    /// Payload bytes this header says follow it. Every value fits: `length`
    /// is 32-bit and operands are at most 16 bytes.
    pub fn payload_len(&self) -> usize {
        if let Some(w) = self.op.width() {
            return w * self.operand_count();
        }
        match (self.op, self.response, self.status) {
            (Op::Write, false, _) | (Op::Read, true, Status::Ok) => self.length as usize,
            _ => 0,
        }
    }

    /// Bytes of header and payload.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Whether the fields agree with each other (what `parse` and `emit`
    /// both require), apart from the payload's length.
    fn check(&self) -> Result<()> {
        let bad = |field, value: u64, limit| {
            Err(Error::Malformed {
                layer: LAYER,
                field,
                value,
                limit,
            })
        };
        if (self.kind == Kind::Data) == (self.op == Op::None) {
            return bad("op", self.op as u64, "an operation exactly in DATA packets");
        }
        if self.kind != Kind::Data {
            return Ok(());
        }
        if !self.response && self.status != Status::Ok {
            return bad("status", self.status as u64, "0 in a request");
        }
        let ok = self.status == Status::Ok;
        if let Some(w) = self.op.width() {
            // Error responses echo the request's length, whatever it was.
            if (!self.response || ok) && self.length as usize != w {
                return bad(
                    "length",
                    u64::from(self.length),
                    "the atomic's width (4 or 8)",
                );
            }
            for &v in &self.operands[..self.operand_count()] {
                if w == 4 && v > u64::from(u32::MAX) {
                    return bad("operand", v, "32 bits in a 32-bit atomic");
                }
            }
        } else if self.op == Op::Read
            && (!self.response || ok)
            && self.length as usize > MAX_PAYLOAD
        {
            return bad(
                "length",
                u64::from(self.length),
                "at most MAX_PAYLOAD (a response fits one packet)",
            );
        }
        if self.operands[self.operand_count()..]
            .iter()
            .any(|&v| v != 0)
        {
            return bad("operand", 0, "operands only where the operation has them");
        }
        Ok(())
    }

    /// Parse a packet: known version, kind, op and status, lengths that agree
    /// with each other and with the payload.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Unsupported {
                layer: LAYER,
                field: "version",
                value: u64::from(packet.version()),
            });
        }
        let mut r = Repr {
            kind: Kind::from_byte(packet.kind())?,
            op: Op::from_byte(packet.op() & !RESPONSE)?,
            response: packet.op() & RESPONSE != 0,
            status: Status::from_byte(packet.status())?,
            src_rank: packet.src_rank(),
            dst_rank: packet.dst_rank(),
            seq: packet.seq(),
            ack: packet.ack(),
            txn: packet.txn(),
            key: packet.key(),
            offset: packet.offset(),
            length: packet.length(),
            operands: [0; 2],
        };
        if r.kind != Kind::Data && r.response {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "op",
                value: u64::from(packet.op()),
                limit: "no response bit in transport control packets",
            });
        }
        // Before the operands are read: a forged length must not pick them.
        r.check()?;
        let (operands, width) = (r.operand_count(), r.op.width().unwrap_or(0));
        let payload = packet.payload();
        if payload.len() != r.payload_len() {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "length",
                value: u64::from(r.length),
                limit: "must agree with the payload's length",
            });
        }
        for (k, o) in r.operands[..operands].iter_mut().enumerate() {
            *o = payload[k * width..(k + 1) * width]
                .iter()
                .fold(0, |a, &b| (a << 8) | u64::from(b));
        }
        Ok(r)
    }

    /// Write the header and an atomic's operands; a write request's or read
    /// response's data is the caller's, in [`Packet::payload_mut`]. The
    /// buffer must hold [`Repr::buffer_len`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        self.check()?;
        need(LAYER, packet.buffer.as_ref().len(), self.buffer_len())?;
        packet.set_version(VERSION);
        packet.set_kind(self.kind as u8);
        packet.set_op(self.op as u8 | if self.response { RESPONSE } else { 0 });
        packet.set_status(self.status as u8);
        packet.set_src_rank(self.src_rank);
        packet.set_dst_rank(self.dst_rank);
        packet.set_seq(self.seq);
        packet.set_ack(self.ack);
        packet.set_txn(self.txn);
        packet.set_key(self.key);
        packet.set_offset(self.offset);
        packet.set_length(self.length);
        packet.set_reserved(0);
        let w = self.op.width().unwrap_or(0);
        let p = packet.payload_mut();
        for (k, &v) in self.operands[..self.operand_count()].iter().enumerate() {
            p[k * w..(k + 1) * w].copy_from_slice(&v.to_be_bytes()[8 - w..]);
        }
        Ok(())
    }
}

#[inline]
fn be64(bytes: &[u8], at: usize) -> u64 {
    (u64::from(be32(bytes, at)) << 32) | u64::from(be32(bytes, at + 4))
}

/// The window table in the target NIC's memory: [`WINDOWS`] entries of
/// [`ENTRY_LEN`] bytes, little-endian (the NIC's RV32 byte order), that the
/// RMA handlers read and the host fills (`Nic::export_window`). An entry
/// exports `size` bytes at `base` (an offset in the ECTX's host window)
/// under `key` with permissions `perms`; key 0 marks a free entry.
pub mod window {
    mod field {
        pub type Field = core::ops::Range<usize>;
        pub const KEY: Field = 0..4;
        pub const PERMS: Field = 4..8;
        pub const BASE: Field = 8..16;
        pub const SIZE: Field = 16..24;
    }

    /// Bytes of one entry.
    pub const ENTRY_LEN: usize = 24;
    /// Entries in the table.
    pub const WINDOWS: usize = 16;
    /// Symbol of the table in the RMA handlers' image.
    pub const SYMBOL: &str = "rma_windows";
    /// Reads (read requests) allowed.
    pub const PERM_READ: u32 = 1;
    /// Writes (write requests) allowed.
    pub const PERM_WRITE: u32 = 2;
    /// Atomics (fetch-and-add, compare-and-swap) allowed.
    pub const PERM_ATOMIC: u32 = 4;
    /// Every permission.
    pub const PERM_ALL: u32 = PERM_READ | PERM_WRITE | PERM_ATOMIC;
    /// The key of a free entry; no window can be exported under it.
    pub const KEY_FREE: u32 = 0;

    /// One exported window as plain values.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Window {
        pub key: u32,
        pub perms: u32,
        pub base: u64,
        pub size: u64,
    }

    impl Window {
        pub fn to_bytes(&self) -> [u8; ENTRY_LEN] {
            let mut b = [0u8; ENTRY_LEN];
            b[field::KEY].copy_from_slice(&self.key.to_le_bytes());
            b[field::PERMS].copy_from_slice(&self.perms.to_le_bytes());
            b[field::BASE].copy_from_slice(&self.base.to_le_bytes());
            b[field::SIZE].copy_from_slice(&self.size.to_le_bytes());
            b
        }

        pub fn from_bytes(b: &[u8; ENTRY_LEN]) -> Window {
            let u32_at = |f: Field| u32::from_le_bytes(b[f].try_into().unwrap_or_default());
            let u64_at = |f: Field| u64::from_le_bytes(b[f].try_into().unwrap_or_default());
            Window {
                key: u32_at(field::KEY),
                perms: u32_at(field::PERMS),
                base: u64_at(field::BASE),
                size: u64_at(field::SIZE),
            }
        }

        /// Byte offset of the key field, which the host writes last (and
        /// clears first) so a handler that finds a key finds its entry whole.
        pub const KEY_OFFSET: usize = field::KEY.start;
    }

    use field::Field;
}

/// The initiator's outstanding-transaction table (OTT, docs/rma.md
/// "Initiator"): one entry per operation a node's NIC has in flight, in NIC
/// memory in the RMA handlers' image (symbol [`txn::SYMBOL`]), little-endian
/// as [`window`]'s table. The host posts into entries `0..HOST_TXNS`,
/// handlers allocate `HOST_TXNS..TXNS`. `sdk/include/spin_rma_ops.h` has the
/// same layout for C (`rma_txn_t`), checked by `tests/rma_c_layout.rs`.
pub mod txn {
    mod field {
        pub type Field = core::ops::Range<usize>;
        pub const STATE: Field = 0..4;
        pub const TXN: Field = 4..8;
        pub const OP: Field = 8..10;
        pub const FLAGS: Field = 10..12;
        pub const RANK: Field = 12..16;
        pub const KEY: Field = 16..20;
        pub const LENGTH: Field = 20..24;
        pub const OFFSET: Field = 24..32;
        pub const LOCAL: Field = 32..40;
        pub const OPERAND0: Field = 40..48;
        pub const OPERAND1: Field = 48..56;
        pub const VALUE: Field = 56..64;
        pub const PACKETS: Field = 64..68;
        pub const ANSWERED: Field = 68..72;
        pub const REMAINING: Field = 72..76;
        pub const STATUS: Field = 76..80;
    }

    /// Bytes of one entry.
    pub const ENTRY_LEN: usize = 80;
    /// Entries in the table.
    pub const TXNS: usize = 64;
    /// Entries the host posts into (`0..HOST_TXNS`); handlers allocate the rest.
    pub const HOST_TXNS: usize = 32;
    /// Symbol of the table in the RMA handlers' image.
    pub const SYMBOL: &str = "rma_txns";
    /// Packets one entry sends at most (its `answered` bitmap's bits): a
    /// handler issues them in one call, so this bounds its instructions.
    pub const MAX_PACKETS: usize = 32;
    /// Bytes one entry moves at most.
    pub const MAX_LEN: usize = MAX_PACKETS * super::MAX_PAYLOAD;
    /// Entry states.
    pub const FREE: u32 = 0;
    /// Written whole by the host; its doorbell has not run yet.
    pub const POSTED: u32 = 1;
    /// Its requests are out; responses are being counted.
    pub const IN_FLIGHT: u32 = 2;
    /// Every packet answered (`status`, `value` final).
    pub const DONE: u32 = 3;
    /// The status of an operation whose destination the transport declared
    /// failed (after `super::Status`'s 0..=6).
    pub const STATUS_PEER_FAILED: u32 = 7;
    /// `flags`: `local` is a NIC address (put from device), not a host one.
    pub const FLAG_NIC_SRC: u16 = 1;
    /// The wire txn of entry `index` in generation `gen`: the response's
    /// txn names the entry and, by the generation, which use of it.
    pub const fn wire_txn(index: usize, gen: u16) -> u32 {
        (index as u32 & 0xffff) | ((gen as u32) << 16)
    }
    /// The entry index a wire txn names.
    pub const fn index_of(txn: u32) -> usize {
        (txn & 0xffff) as usize
    }
    /// The generation of a wire txn.
    pub const fn gen_of(txn: u32) -> u16 {
        (txn >> 16) as u16
    }

    /// The host's doorbell (docs/rma.md "Host posting"): a frame injected
    /// into the RMA ECTX's inbound path, not from the wire: Ethernet with
    /// [`DOORBELL_ETHERTYPE`], then [`DOORBELL_MAGIC`] and the posted
    /// entry's wire txn, both little-endian u32.
    pub const DOORBELL_ETHERTYPE: u16 = 0x88b5;
    /// "SSDB", little-endian.
    pub const DOORBELL_MAGIC: u32 = 0x4244_5353;
    /// Bytes of a doorbell frame.
    pub const DOORBELL_LEN: usize = 14 + 8;

    /// A doorbell frame for the entry with wire txn `txn`.
    pub fn doorbell(txn: u32) -> [u8; DOORBELL_LEN] {
        let mut f = [0u8; DOORBELL_LEN];
        f[12..14].copy_from_slice(&DOORBELL_ETHERTYPE.to_be_bytes());
        f[14..18].copy_from_slice(&DOORBELL_MAGIC.to_le_bytes());
        f[18..22].copy_from_slice(&txn.to_le_bytes());
        f
    }

    /// One entry as plain values.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Entry {
        pub state: u32,
        pub txn: u32,
        /// `super::Op` as a byte (Write for puts, Read for gets).
        pub op: u16,
        pub flags: u16,
        pub rank: u32,
        pub key: u32,
        pub length: u32,
        pub offset: u64,
        pub local: u64,
        pub operands: [u64; 2],
        pub value: u64,
        pub packets: u32,
        pub answered: u32,
        pub remaining: u32,
        pub status: u32,
    }

    impl Entry {
        pub fn to_bytes(&self) -> [u8; ENTRY_LEN] {
            let mut b = [0u8; ENTRY_LEN];
            let mut put = |f: Field, v: &[u8]| b[f].copy_from_slice(v);
            put(field::STATE, &self.state.to_le_bytes());
            put(field::TXN, &self.txn.to_le_bytes());
            put(field::OP, &self.op.to_le_bytes());
            put(field::FLAGS, &self.flags.to_le_bytes());
            put(field::RANK, &self.rank.to_le_bytes());
            put(field::KEY, &self.key.to_le_bytes());
            put(field::LENGTH, &self.length.to_le_bytes());
            put(field::OFFSET, &self.offset.to_le_bytes());
            put(field::LOCAL, &self.local.to_le_bytes());
            put(field::OPERAND0, &self.operands[0].to_le_bytes());
            put(field::OPERAND1, &self.operands[1].to_le_bytes());
            put(field::VALUE, &self.value.to_le_bytes());
            put(field::PACKETS, &self.packets.to_le_bytes());
            put(field::ANSWERED, &self.answered.to_le_bytes());
            put(field::REMAINING, &self.remaining.to_le_bytes());
            put(field::STATUS, &self.status.to_le_bytes());
            b
        }

        pub fn from_bytes(b: &[u8; ENTRY_LEN]) -> Entry {
            let u16_at = |f: Field| u16::from_le_bytes(b[f].try_into().unwrap_or_default());
            let u32_at = |f: Field| u32::from_le_bytes(b[f].try_into().unwrap_or_default());
            let u64_at = |f: Field| u64::from_le_bytes(b[f].try_into().unwrap_or_default());
            Entry {
                state: u32_at(field::STATE),
                txn: u32_at(field::TXN),
                op: u16_at(field::OP),
                flags: u16_at(field::FLAGS),
                rank: u32_at(field::RANK),
                key: u32_at(field::KEY),
                length: u32_at(field::LENGTH),
                offset: u64_at(field::OFFSET),
                local: u64_at(field::LOCAL),
                operands: [u64_at(field::OPERAND0), u64_at(field::OPERAND1)],
                value: u64_at(field::VALUE),
                packets: u32_at(field::PACKETS),
                answered: u32_at(field::ANSWERED),
                remaining: u32_at(field::REMAINING),
                status: u32_at(field::STATUS),
            }
        }

        /// Byte offset of the state field, which the host writes last when
        /// it posts (a doorbell finds the entry whole or not POSTED).
        pub const STATE_OFFSET: usize = field::STATE.start;
        /// Byte offset of the status field (the host sets it to 7 in a
        /// handler's entry to a destination the transport declared failed).
        pub const STATUS_OFFSET: usize = field::STATUS.start;
    }

    use field::Field;
}
