//! softspin-wire: the frames a sPIN NIC receives and sends, as typed views
//! over byte slices.
//!
//! FPsPIN (seed 000, §3.2.1 packet matching engine and §5.1 "SLMP") feeds
//! handlers whole Ethernet frames carrying IPv4/UDP, and SLMP messages inside
//! UDP; PsPIN (seed 001) feeds them the IP datagram. This crate is the one
//! place those layouts are written down, for the traffic generator, the
//! engine's matching and the live NIC:
//!
//! - [`ethernet`]: Ethernet II header (no FCS, no VLAN tag);
//! - [`ipv4`]: IPv4 header with header checksum;
//! - [`udp`]: UDP header with the IPv4 pseudo-header checksum;
//! - [`icmp`]: ICMPv4 (echo, destination unreachable, others kept raw);
//! - [`slmp`]: the sPIN Lightweight Messaging Protocol header;
//! - [`rma`]: remote memory access requests and responses between NICs
//!   (docs/rma.md), and the layout of the target's window table;
//! - [`pspin`]: PsPIN's host-order `ip_hdr_t`/`udp_hdr_t` layout, which is
//!   *not* a wire format but is what PsPIN's handlers read.
//!
//! Each protocol has a `Packet<T: AsRef<[u8]>>` view: `new_checked`
//! validates the lengths once, after which no accessor can index out of
//! bounds (setters live on `T: AsMut<[u8]>`), and a `Repr` with `parse` and
//! `emit` converting to and from plain values. Frames come from the wire, so
//! nothing here panics on any input: malformed bytes are an [`Error`] that
//! names the layer, the field and its limit.

pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod pspin;
pub mod rma;
pub mod slmp;
pub mod udp;

pub use ethernet::{EtherType, EthernetAddress};
pub use ipv4::{IpProtocol, Ipv4Address};

/// Bytes of an Ethernet II header (no FCS, no VLAN tag).
pub const ETHERNET_HEADER_LEN: usize = ethernet::HEADER_LEN;
/// Bytes of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = ipv4::HEADER_LEN;
/// Bytes of a UDP header.
pub const UDP_HEADER_LEN: usize = udp::HEADER_LEN;
/// Bytes of an ICMPv4 header (type, code, checksum and 4 type-specific bytes).
pub const ICMP_HEADER_LEN: usize = icmp::HEADER_LEN;
/// Bytes of an SLMP header.
pub const SLMP_HEADER_LEN: usize = slmp::HEADER_LEN;
pub use slmp::UDP_PORT as SLMP_UDP_PORT;
/// Bytes of an RMA header.
pub const RMA_HEADER_LEN: usize = rma::HEADER_LEN;
pub use rma::UDP_PORT as RMA_UDP_PORT;

/// Why bytes are not a valid packet of a layer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fewer bytes than the layer (or a length field in it) needs.
    #[error("{layer}: truncated: {len} B, need at least {need} B")]
    Truncated {
        layer: &'static str,
        len: usize,
        need: usize,
    },
    /// A field holds a value the layer forbids.
    #[error("{layer}: malformed `{field}` = {value}: {limit}")]
    Malformed {
        layer: &'static str,
        field: &'static str,
        value: u64,
        limit: &'static str,
    },
    /// The IPv4 version nibble is not 4.
    #[error("IPv4: bad `version` = {0}: must be 4")]
    BadVersion(u8),
    /// A checksum does not verify.
    #[error("{layer}: bad checksum 0x{found:04x}")]
    BadChecksum { layer: &'static str, found: u16 },
    /// Well-formed, but something this crate does not parse (another
    /// EtherType or IP protocol, an IP fragment).
    #[error("{layer}: unsupported `{field}` = {value}")]
    Unsupported {
        layer: &'static str,
        field: &'static str,
        value: u64,
    },
}

/// Result of this crate's parsers.
pub type Result<T> = core::result::Result<T, Error>;

/// Whether `emit` computes optional checksums and `parse` verifies checksums.
///
/// The IPv4 header and ICMP checksums are mandatory and always emitted; the
/// UDP checksum is optional over IPv4 (0 = none), and the generator's frames
/// carry none. A NIC with checksum offload may hand over frames whose
/// checksums were already checked, or not yet filled in: parse those with
/// [`Checksum::Skip`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checksum {
    /// Emit every checksum; verify every checksum present.
    #[default]
    Full,
    /// Emit no UDP checksum (0); verify nothing.
    Skip,
}

/// The RFC 1071 Internet checksum: ones' complement sums, with an odd
/// trailing byte padded with zero.
pub mod checksum {
    /// Ones' complement sum of `data` as big-endian 16-bit words, folded to 16 bits.
    pub fn sum(data: &[u8]) -> u16 {
        let mut acc: u32 = 0;
        let mut words = data.chunks_exact(2);
        for w in &mut words {
            acc += u32::from(u16::from_be_bytes([w[0], w[1]]));
            // Fold often enough that a 64 KiB+ slice cannot overflow.
            if acc > 0xFFFF_0000 {
                acc = (acc & 0xFFFF) + (acc >> 16);
            }
        }
        if let [last] = words.remainder() {
            acc += u32::from(*last) << 8;
        }
        fold(acc)
    }

    /// Ones' complement sum of partial sums.
    pub fn combine(sums: &[u16]) -> u16 {
        fold(sums.iter().map(|&s| u32::from(s)).sum())
    }

    /// The checksum to store: the complement of the sum.
    pub fn checksum(data: &[u8]) -> u16 {
        !sum(data)
    }

    /// Sum of the IPv4 pseudo-header (RFC 768) of a transport segment.
    pub fn pseudo_header_v4(src: [u8; 4], dst: [u8; 4], protocol: u8, length: u16) -> u16 {
        let mut ph = [0u8; 12];
        ph[0..4].copy_from_slice(&src);
        ph[4..8].copy_from_slice(&dst);
        ph[9] = protocol;
        ph[10..12].copy_from_slice(&length.to_be_bytes());
        sum(&ph)
    }

    fn fold(mut acc: u32) -> u16 {
        while acc > 0xFFFF {
            acc = (acc & 0xFFFF) + (acc >> 16);
        }
        acc as u16
    }
}

/// A big-endian u16 at `bytes[at..at + 2]`; callers index within a checked length.
#[inline]
pub(crate) fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

#[inline]
pub(crate) fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

pub(crate) fn need(layer: &'static str, len: usize, need: usize) -> Result<()> {
    if len < need {
        Err(Error::Truncated { layer, len, need })
    } else {
        Ok(())
    }
}
