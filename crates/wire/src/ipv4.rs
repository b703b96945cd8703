//! IPv4 header (RFC 791): what FPsPIN's matching rules test at bytes 23
//! (protocol) and 26-33 (addresses) of a frame (seed 000, §3.2.1 "Ingress",
//! packet matching engine). Options are accepted on parse and skipped; emit
//! writes none.

use core::fmt;

use crate::{be16, checksum, need, Checksum, Error, Result};

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Bytes of a header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;
/// Largest total length the 16-bit field can state.
pub const MAX_TOTAL_LEN: usize = u16::MAX as usize;

const LAYER: &str = "IPv4";
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1FFF;

/// An IPv4 address, in network order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv4Address(pub [u8; 4]);

impl Ipv4Address {
    pub const fn new(a: u8, b: u8, c: u8, d: u8) -> Ipv4Address {
        Ipv4Address([a, b, c, d])
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<[u8; 4]> for Ipv4Address {
    fn from(b: [u8; 4]) -> Self {
        Ipv4Address(b)
    }
}

impl From<std::net::Ipv4Addr> for Ipv4Address {
    fn from(a: std::net::Ipv4Addr) -> Self {
        Ipv4Address(a.octets())
    }
}

impl From<Ipv4Address> for std::net::Ipv4Addr {
    fn from(a: Ipv4Address) -> Self {
        a.0.into()
    }
}

impl fmt::Display for Ipv4Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// The protocol field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    Icmp,
    Tcp,
    Udp,
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(v: u8) -> Self {
        match v {
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(p: IpProtocol) -> u8 {
        match p {
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Unknown(v) => v,
        }
    }
}

/// A view of an IPv4 datagram.
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

    /// Whether the header, its options and the total length stated in it are
    /// all within the buffer (bytes after the total length, such as Ethernet
    /// padding, are allowed and ignored).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        need(LAYER, len, HEADER_LEN)?;
        let hlen = self.header_len();
        if hlen < HEADER_LEN {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "ihl",
                value: (hlen / 4) as u64,
                limit: "at least 5 (20 B)",
            });
        }
        need(LAYER, len, hlen)?;
        let total = usize::from(self.total_len());
        if total < hlen {
            return Err(Error::Malformed {
                layer: LAYER,
                field: "total length",
                value: total as u64,
                limit: "at least the header length (ihl * 4)",
            });
        }
        need(LAYER, len, total)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header bytes, options included (ihl * 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0F) * 4
    }

    /// The type-of-service byte (DSCP and ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT.start)
    }

    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF.start) & FLAG_DF != 0
    }

    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF.start) & FLAG_MF != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), field::FLG_OFF.start) & OFFSET_MASK) << 3
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    pub fn src_addr(&self) -> Ipv4Address {
        Ipv4Address(self.buffer.as_ref()[field::SRC_ADDR].try_into().unwrap())
    }

    pub fn dst_addr(&self) -> Ipv4Address {
        Ipv4Address(self.buffer.as_ref()[field::DST_ADDR].try_into().unwrap())
    }

    /// Whether the header checksum verifies (over the options too).
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let end = self.header_len().clamp(HEADER_LEN, b.len());
        checksum::sum(&b[..end]) == 0xFFFF
    }

    /// The bytes between the header and the total length. Clamped to the
    /// buffer, so even a header a setter made inconsistent cannot panic here.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(b.len());
        &b[self.header_len().min(end)..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0F) | (v << 4);
    }

    /// Set ihl from a header length in bytes (a multiple of 4, 20..=60).
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xF0) | ((len / 4) as u8 & 0x0F);
    }

    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Flags and fragment offset (in bytes, a multiple of 8).
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let v = if dont_frag { FLAG_DF } else { 0 }
            | if more_frags { FLAG_MF } else { 0 }
            | ((offset >> 3) & OFFSET_MASK);
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = p.into();
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_src_addr(&mut self, a: Ipv4Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.0);
    }

    pub fn set_dst_addr(&mut self, a: Ipv4Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.0);
    }

    /// Compute and store the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let end = self.header_len().clamp(HEADER_LEN, b.len());
        let c = checksum::checksum(&b[..end]);
        self.set_checksum(c);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, total) = (self.header_len(), usize::from(self.total_len()));
        let b = self.buffer.as_mut();
        let end = total.min(b.len());
        &mut b[start.min(end)..end]
    }
}

/// An IPv4 header (without options) as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub src_addr: Ipv4Address,
    pub dst_addr: Ipv4Address,
    pub protocol: IpProtocol,
    /// Bytes after the header (total length - header length).
    pub payload_len: usize,
    pub ttl: u8,
    /// DSCP and ECN.
    pub tos: u8,
    pub ident: u16,
    pub dont_frag: bool,
}

impl Repr {
    /// A header with the defaults the traffic generator uses: TTL 64, TOS 0,
    /// ident 0, fragmentation allowed.
    pub fn new(
        src_addr: Ipv4Address,
        dst_addr: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
    ) -> Repr {
        Repr {
            src_addr,
            dst_addr,
            protocol,
            payload_len,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: false,
        }
    }

    /// Parse an unfragmented datagram; fragments are [`Error::Unsupported`]
    /// (a sPIN handler sees one whole UDP datagram per packet).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>, checksum: Checksum) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::BadVersion(packet.version()));
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::Unsupported {
                layer: LAYER,
                field: "fragment offset / more fragments",
                value: u64::from(
                    be16(packet.buffer.as_ref(), field::FLG_OFF.start) & (FLAG_MF | OFFSET_MASK),
                ),
            });
        }
        if checksum == Checksum::Full && !packet.verify_checksum() {
            return Err(Error::BadChecksum {
                layer: LAYER,
                found: packet.checksum(),
            });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            tos: packet.tos(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header with its checksum (always: it is mandatory). The
    /// buffer must hold the header; the payload is the caller's.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        need(LAYER, packet.buffer.as_ref().len(), HEADER_LEN)?;
        let total = HEADER_LEN
            .checked_add(self.payload_len)
            .filter(|&t| t <= MAX_TOTAL_LEN)
            .ok_or(Error::Malformed {
                layer: LAYER,
                field: "total length",
                value: self.payload_len.saturating_add(HEADER_LEN) as u64,
                limit: "at most 65535",
            })?;
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_tos(self.tos);
        packet.set_total_len(total as u16);
        packet.set_ident(self.ident);
        packet.set_frag(self.dont_frag, false, 0);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
        Ok(())
    }
}
