//! Frame building (seed 001 §3.4.2, PsPIN's `ip_hdr_t`/`udp_hdr_t` layout;
//! seed 000 §3.2.1 for the Ethernet frames FPsPIN receives): [`FrameKind`]
//! and [`build_frame`]. The formats are described in the module above.

use super::*;
use softspin_wire as wire;

/// Where a frame starts. PsPIN's examples expect IP first, FPsPIN's expect Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// PsPIN's host-order IP/UDP header layout (see the module doc).
    Ip,
    /// Ethernet II + IPv4 + UDP in wire format.
    Eth,
}

impl FrameKind {
    /// The frames a profile's handlers take: PsPIN's host-order IP-first
    /// layout, FPsPIN's Ethernet frames off the wire (seed 000 §3.2).
    pub fn of_profile(profile: &str) -> Option<FrameKind> {
        match profile {
            "pspin" => Some(FrameKind::Ip),
            "fpspin" => Some(FrameKind::Eth),
            _ => None,
        }
    }

    /// Bytes of headers before the UDP payload.
    pub fn header_len(self) -> usize {
        match self {
            FrameKind::Ip => wire::pspin::HEADER_LEN,
            FrameKind::Eth => {
                wire::ETHERNET_HEADER_LEN + wire::IPV4_HEADER_LEN + wire::UDP_HEADER_LEN
            }
        }
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameKind::Ip => "PsPIN IP/UDP",
            FrameKind::Eth => "Ethernet/IPv4/UDP",
        })
    }
}

/// Why a frame of `size` bytes of `kind` cannot be built, if it cannot.
pub(super) fn frame_size_problem(kind: FrameKind, size: usize) -> Option<String> {
    let min = kind.header_len();
    if size < min {
        Some(format!(
            "{size} B is too small: {kind} frames need at least {min} B of headers"
        ))
    } else if size > MAX_FRAME_SIZE {
        Some(format!("{size} B is too large: at most {MAX_FRAME_SIZE} B"))
    } else {
        None
    }
}

/// Build one frame: headers + payload bytes, total `size` bytes (error if
/// size is too small for the headers or above 65535). `payload(i)` gives UDP
/// payload byte `i`; it is called for i = 0, 1, 2, ... in order.
///
/// The headers are written by softspin-wire: Ethernet II + IPv4 + UDP with
/// the generator's defaults (`ipv4::Repr::new`: TTL 64, TOS 0, ident 0) and
/// no UDP checksum, or PsPIN's host-order layout (`wire::pspin`).
pub fn build_frame(
    kind: FrameKind,
    size: usize,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    sport: u16,
    dport: u16,
    mut payload: impl FnMut(usize) -> u8,
) -> Result<Vec<u8>, TrafficError> {
    if let Some(msg) = frame_size_problem(kind, size) {
        return Err(TrafficError::Param { param: "size", msg });
    }
    let mut f = vec![0u8; size];
    let (src, dst) = (wire::Ipv4Address(src_ip), wire::Ipv4Address(dst_ip));
    let hlen = kind.header_len();
    let payload_len = size - hlen;
    let emitted = match kind {
        FrameKind::Eth => {
            let eth = wire::ethernet::Repr {
                src_addr: wire::EthernetAddress(ETH_SRC_MAC),
                dst_addr: wire::EthernetAddress(ETH_DST_MAC),
                ethertype: wire::EtherType::Ipv4,
            };
            let ip = wire::ipv4::Repr::new(
                src,
                dst,
                wire::IpProtocol::Udp,
                wire::UDP_HEADER_LEN + payload_len,
            );
            let udp = wire::udp::Repr {
                src_port: sport,
                dst_port: dport,
            };
            let (ip_at, udp_at) = (
                wire::ETHERNET_HEADER_LEN,
                wire::ETHERNET_HEADER_LEN + wire::IPV4_HEADER_LEN,
            );
            eth.emit(&mut wire::ethernet::Packet::new_unchecked(&mut f[..]))
                .and_then(|()| ip.emit(&mut wire::ipv4::Packet::new_unchecked(&mut f[ip_at..])))
                .and_then(|()| {
                    let mut p = wire::udp::Packet::new_unchecked(&mut f[udp_at..]);
                    udp.emit(&mut p, src, dst, payload_len, |_| {}, wire::Checksum::Skip)
                })
        }
        FrameKind::Ip => {
            let r = wire::pspin::Repr {
                src_addr: src,
                dst_addr: dst,
                src_port: sport,
                dst_port: dport,
                payload_len,
            };
            r.emit(&mut wire::pspin::Packet::new_unchecked(&mut f[..]))
        }
    };
    // Unreachable after the size check; an error rather than a panic all the same.
    emitted.map_err(|e| TrafficError::Param {
        param: "size",
        msg: e.to_string(),
    })?;
    for (i, b) in f[hlen..].iter_mut().enumerate() {
        *b = payload(i);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::tests::*;
    use etherparse::{LinkSlice, NetSlice, SlicedPacket, TransportSlice};

    #[test]
    fn eth_frame_parses_back() {
        let size = 200;
        let a = gen(GenConfig {
            size,
            frame: FrameKind::Eth,
            src_ip: [192, 168, 1, 7],
            dst_ip: [172, 16, 0, 9],
            udp_src_port: 1234,
            udp_dst_port: 4321,
            ..Default::default()
        });
        let f = &a[0].frame;
        assert_eq!(f.len(), size);
        let p = SlicedPacket::from_ethernet(f).unwrap();
        let Some(LinkSlice::Ethernet2(eth)) = &p.link else {
            panic!("no ethernet")
        };
        assert_eq!(eth.destination(), ETH_DST_MAC);
        assert_eq!(eth.source(), ETH_SRC_MAC);
        assert_eq!(eth.ether_type(), etherparse::EtherType::IPV4);
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("no ipv4")
        };
        let h = ip.header();
        assert_eq!(h.source(), [192, 168, 1, 7]);
        assert_eq!(h.destination(), [172, 16, 0, 9]);
        assert_eq!(h.total_len() as usize, size - 14);
        assert_eq!(h.ihl(), 5);
        assert_eq!(h.ttl(), 64);
        assert_eq!(h.protocol(), etherparse::IpNumber::UDP);
        assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
        assert_eq!(ones_sum(&f[14..34]), 0xFFFF);
        let Some(TransportSlice::Udp(udp)) = &p.transport else {
            panic!("no udp")
        };
        assert_eq!(udp.source_port(), 1234);
        assert_eq!(udp.destination_port(), 4321);
        assert_eq!(udp.length() as usize, size - 34);
        assert_eq!(udp.payload().len(), size - 42);
        assert_eq!(udp.payload()[..3], [0, 1, 2]);
    }

    #[test]
    fn ip_frame_pspin_layout() {
        let size = 300usize;
        let a = gen(GenConfig {
            size,
            frame: FrameKind::Ip,
            udp_src_port: 0x1234,
            udp_dst_port: 0x5678,
            ..Default::default()
        });
        let f = &a[0].frame;
        assert_eq!(f.len(), size);
        assert_eq!(f[0], 0x54);
        // What PsPIN's GET_IP_UDP_PLD computes: ihl from the high nibble, length as host u16.
        let ihl = (f[0] >> 4) as usize;
        let length = u16::from_le_bytes([f[2], f[3]]) as usize;
        assert_eq!(ihl, 5);
        assert_eq!(length, size);
        assert_eq!(length - 20 - 8, size - 28);
        assert_eq!([f[2], f[3]], [(size & 0xFF) as u8, (size >> 8) as u8]);
        assert_eq!(f[8], 64);
        assert_eq!(f[9], 17);
        assert_eq!(ones_sum(&f[..20]), 0xFFFF);
        assert_eq!(
            u32::from_le_bytes(f[12..16].try_into().unwrap()),
            0x0A00_0001
        );
        assert_eq!(
            u32::from_le_bytes(f[16..20].try_into().unwrap()),
            0x0A00_0002
        );
        assert_eq!(u16::from_le_bytes([f[20], f[21]]), 0x1234);
        assert_eq!(u16::from_le_bytes([f[22], f[23]]), 0x5678);
        assert_eq!(u16::from_le_bytes([f[24], f[25]]) as usize, size - 20);
        assert_eq!(&f[ihl * 4 + 8..ihl * 4 + 12], &[0, 1, 2, 3]);
    }

    #[test]
    fn build_frame_size_errors_and_minimum() {
        let f = build_frame(FrameKind::Eth, 42, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2, |_| {
            0xAA
        })
        .unwrap();
        assert_eq!(f.len(), 42);
        let f = build_frame(FrameKind::Ip, 29, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2, |_| {
            0xAA
        })
        .unwrap();
        assert_eq!(f[28], 0xAA);
        let e = build_frame(FrameKind::Ip, 10, [0; 4], [0; 4], 1, 2, |_| 0).unwrap_err();
        assert!(e.to_string().contains("`size`"), "{e}");
    }
}
