//! Real frames, captured here on loopback and written down byte for byte:
//!
//! ```text
//! tcpdump -i lo -w cap.pcap -c 6 'udp or icmp' &
//! python3 -c 'import socket,struct; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);
//!   s.sendto(b"sPIN over UDP",("127.0.0.1",9330));
//!   s.sendto(struct.pack(">HII",0xC000,7,1024)+b"slmp",("127.0.0.1",9330))'
//! ping -c 1 -s 8 -p 73706e21 127.0.0.1
//! tcpdump -r cap.pcap -xx
//! ```
//!
//! Nothing listened on 9330, so the kernel answered each datagram with an
//! ICMP port unreachable. Loopback leaves UDP checksums to "offload": the
//! captured field holds only the pseudo-header sum (CHECKSUM_PARTIAL), which
//! is what a live NIC with checksum offload can hand over too.
//!
//! Every parse is checked against the values tcpdump printed, every emit
//! against the captured bytes, and every checksum against etherparse.

use etherparse::{IcmpEchoHeader, Icmpv4Header, Icmpv4Type, IpNumber, Ipv4Header, UdpHeader};
use softspin_testkit::Rng;
use softspin_wire::*;
const UDP_DATAGRAM: [u8; 55] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x29, 0x9a, 0xa3, 0x40, 0x00, 0x40, 0x11, 0xa2, 0x1e, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00,
    0x00, 0x01, 0xea, 0xd9, 0x24, 0x72, 0x00, 0x15, 0xfe, 0x28, 0x73, 0x50, 0x49, 0x4e, 0x20, 0x6f,
    0x76, 0x65, 0x72, 0x20, 0x55, 0x44, 0x50,
];
const ICMP_PORT_UNREACHABLE_UDP: [u8; 83] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0xc0,
    0x00, 0x45, 0x94, 0x99, 0x00, 0x00, 0x40, 0x01, 0xe7, 0x5c, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00,
    0x00, 0x01, 0x03, 0x03, 0x84, 0x9a, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x29, 0x9a, 0xa3,
    0x40, 0x00, 0x40, 0x11, 0xa2, 0x1e, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00, 0x00, 0x01, 0xea, 0xd9,
    0x24, 0x72, 0x00, 0x15, 0xfe, 0x28, 0x73, 0x50, 0x49, 0x4e, 0x20, 0x6f, 0x76, 0x65, 0x72, 0x20,
    0x55, 0x44, 0x50,
];
const SLMP_SEGMENT: [u8; 56] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x2a, 0x9a, 0xa4, 0x40, 0x00, 0x40, 0x11, 0xa2, 0x1c, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00,
    0x00, 0x01, 0xea, 0xd9, 0x24, 0x72, 0x00, 0x16, 0xfe, 0x29, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x07,
    0x00, 0x00, 0x04, 0x00, 0x73, 0x6c, 0x6d, 0x70,
];
const ICMP_ECHO_REQUEST: [u8; 50] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x24, 0x94, 0x9e, 0x40, 0x00, 0x40, 0x01, 0xa8, 0x38, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00,
    0x00, 0x01, 0x08, 0x00, 0xec, 0x51, 0x2a, 0x1b, 0x00, 0x01, 0x73, 0x70, 0x6e, 0x21, 0x00, 0x00,
    0x00, 0x00,
];
const ICMP_ECHO_REPLY: [u8; 50] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x24, 0x94, 0x9f, 0x00, 0x00, 0x40, 0x01, 0xe8, 0x37, 0x7f, 0x00, 0x00, 0x01, 0x7f, 0x00,
    0x00, 0x01, 0x00, 0x00, 0xf4, 0x51, 0x2a, 0x1b, 0x00, 0x01, 0x73, 0x70, 0x6e, 0x21, 0x00, 0x00,
    0x00, 0x00,
];

const LO: Ipv4Address = Ipv4Address::new(127, 0, 0, 1);
const ETH: ethernet::Repr = ethernet::Repr {
    src_addr: EthernetAddress([0; 6]),
    dst_addr: EthernetAddress([0; 6]),
    ethertype: EtherType::Ipv4,
};

/// Split a captured frame into its Ethernet and IPv4 views (both checked).
fn ip_of(frame: &[u8]) -> ipv4::Packet<&[u8]> {
    let eth = ethernet::Packet::new_checked(frame).unwrap();
    assert_eq!(ethernet::Repr::parse(&eth).unwrap(), ETH);
    ipv4::Packet::new_checked(&frame[ETHERNET_HEADER_LEN..]).unwrap()
}

/// etherparse's IPv4 header for `repr` (its own checksum code).
fn etherparse_ipv4(repr: &ipv4::Repr) -> Ipv4Header {
    let mut h = Ipv4Header::new(
        repr.payload_len as u16,
        repr.ttl,
        IpNumber(u8::from(repr.protocol)),
        repr.src_addr.0,
        repr.dst_addr.0,
    )
    .unwrap();
    h.identification = repr.ident;
    h.dont_fragment = repr.dont_frag;
    h.dscp = etherparse::Ipv4Dscp::try_new(repr.tos >> 2).unwrap();
    h.ecn = etherparse::Ipv4Ecn::try_new(repr.tos & 3).unwrap();
    h.header_checksum = h.calc_header_checksum();
    h
}

/// Emit Ethernet + IPv4 headers for `ip` into a zeroed frame of `len` bytes.
fn emit_eth_ip(ip: &ipv4::Repr, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    ETH.emit(&mut ethernet::Packet::new_unchecked(&mut f[..]))
        .unwrap();
    ip.emit(&mut ipv4::Packet::new_unchecked(
        &mut f[ETHERNET_HEADER_LEN..],
    ))
    .unwrap();
    assert_eq!(
        &f[ETHERNET_HEADER_LEN..][..IPV4_HEADER_LEN],
        &etherparse_ipv4(ip).to_bytes()[..]
    );
    f
}

#[test]
fn udp_datagram_parses_as_tcpdump_printed() {
    let ip = ip_of(&UDP_DATAGRAM);
    let repr = ipv4::Repr::parse(&ip, Checksum::Full).unwrap();
    assert_eq!(
        repr,
        ipv4::Repr {
            src_addr: LO,
            dst_addr: LO,
            protocol: IpProtocol::Udp,
            payload_len: 21,
            ttl: 64,
            tos: 0,
            ident: 0x9aa3,
            dont_frag: true
        }
    );
    let udp = udp::Packet::new_checked(ip.payload()).unwrap();
    assert_eq!(
        (udp.src_port(), udp.dst_port(), udp.length()),
        (60121, SLMP_UDP_PORT, 21)
    );
    assert_eq!(udp.payload(), b"sPIN over UDP");
    // The offloaded checksum holds the pseudo-header sum only: it does not
    // verify, and is exactly what our pseudo-header code computes.
    assert_eq!(
        udp.checksum(),
        checksum::pseudo_header_v4(LO.0, LO.0, 17, 21)
    );
    assert!(matches!(
        udp::Repr::parse(&udp, LO, LO, Checksum::Full),
        Err(Error::BadChecksum {
            layer: "UDP",
            found: 0xfe28
        })
    ));
    let urepr = udp::Repr::parse(&udp, LO, LO, Checksum::Skip).unwrap();
    assert_eq!(
        urepr,
        udp::Repr {
            src_port: 60121,
            dst_port: 9330
        }
    );
}

#[test]
fn udp_datagram_emits_the_captured_bytes() {
    let ip = ipv4::Repr::parse(&ip_of(&UDP_DATAGRAM), Checksum::Full).unwrap();
    let pl = b"sPIN over UDP";
    let mut f = emit_eth_ip(&ip, UDP_DATAGRAM.len());
    let urepr = udp::Repr {
        src_port: 60121,
        dst_port: 9330,
    };
    let mut up = udp::Packet::new_unchecked(&mut f[34..]);
    urepr
        .emit(
            &mut up,
            LO,
            LO,
            pl.len(),
            |b| b.copy_from_slice(pl),
            Checksum::Full,
        )
        .unwrap();
    // A full checksum, as etherparse computes it, and one that verifies.
    let reference = UdpHeader::with_ipv4_checksum(60121, 9330, &etherparse_ipv4(&ip), pl).unwrap();
    assert_eq!(&f[34..42], &reference.to_bytes());
    assert!(udp::Packet::new_checked(&f[34..])
        .unwrap()
        .verify_checksum(LO, LO));
    // Everything else is the captured frame.
    f[40..42].copy_from_slice(&UDP_DATAGRAM[40..42]);
    assert_eq!(f, UDP_DATAGRAM);
    // Checksum::Skip leaves the field 0 ("none"), which verifies.
    let mut up = udp::Packet::new_unchecked(&mut f[34..]);
    urepr
        .emit(
            &mut up,
            LO,
            LO,
            pl.len(),
            |b| b.copy_from_slice(pl),
            Checksum::Skip,
        )
        .unwrap();
    assert_eq!(up.checksum(), 0);
    assert!(up.verify_checksum(LO, LO));
}

#[test]
fn slmp_segment_round_trips() {
    let ip = ip_of(&SLMP_SEGMENT);
    let repr = ipv4::Repr::parse(&ip, Checksum::Full).unwrap();
    assert_eq!((repr.ident, repr.payload_len), (0x9aa4, 22));
    let udp = udp::Packet::new_checked(ip.payload()).unwrap();
    assert_eq!(udp.dst_port(), slmp::UDP_PORT);
    let seg = slmp::Packet::new_checked(udp.payload()).unwrap();
    let s = slmp::Repr::parse(&seg).unwrap();
    assert_eq!(
        s,
        slmp::Repr {
            flags: slmp::Flags::EOM | slmp::Flags::SYN,
            msg_id: 7,
            offset: 1024
        }
    );
    assert!(s.flags.eom() && s.flags.syn() && !s.flags.ack() && s.flags.reserved() == 0);
    assert_eq!(seg.payload(), b"slmp");
    assert_eq!(format!("{:?}", s.flags), "Flags(EOM|SYN)");

    let mut f = emit_eth_ip(&repr, SLMP_SEGMENT.len());
    let mut up = udp::Packet::new_unchecked(&mut f[34..]);
    let body = |b: &mut [u8]| {
        s.emit(&mut slmp::Packet::new_unchecked(&mut *b)).unwrap();
        b[SLMP_HEADER_LEN..].copy_from_slice(b"slmp");
    };
    udp::Repr {
        src_port: 60121,
        dst_port: 9330,
    }
    .emit(&mut up, LO, LO, 14, body, Checksum::Skip)
    .unwrap();
    f[40..42].copy_from_slice(&SLMP_SEGMENT[40..42]);
    assert_eq!(f, SLMP_SEGMENT);
}

#[test]
fn icmp_echo_request_and_reply_round_trip() {
    let data = [0x73, 0x70, 0x6e, 0x21, 0, 0, 0, 0];
    for (frame, want) in [
        (
            &ICMP_ECHO_REQUEST,
            icmp::Repr::EchoRequest {
                ident: 0x2a1b,
                seq_no: 1,
                data: &data,
            },
        ),
        (
            &ICMP_ECHO_REPLY,
            icmp::Repr::EchoReply {
                ident: 0x2a1b,
                seq_no: 1,
                data: &data,
            },
        ),
    ] {
        let ip = ip_of(frame);
        let repr = ipv4::Repr::parse(&ip, Checksum::Full).unwrap();
        assert_eq!((repr.protocol, repr.payload_len), (IpProtocol::Icmp, 16));
        let msg = icmp::Packet::new_checked(ip.payload()).unwrap();
        let got = icmp::Repr::parse(&msg, Checksum::Full).unwrap();
        assert_eq!(got, want);

        let mut f = emit_eth_ip(&repr, frame.len());
        got.emit(&mut icmp::Packet::new_unchecked(&mut f[34..]))
            .unwrap();
        assert_eq!(&f[..], &frame[..]);
        // etherparse computes the same ICMP header and checksum.
        let t = match got {
            icmp::Repr::EchoRequest { ident, seq_no, .. } => {
                Icmpv4Type::EchoRequest(IcmpEchoHeader {
                    id: ident,
                    seq: seq_no,
                })
            }
            icmp::Repr::EchoReply { ident, seq_no, .. } => Icmpv4Type::EchoReply(IcmpEchoHeader {
                id: ident,
                seq: seq_no,
            }),
            _ => unreachable!(),
        };
        assert_eq!(
            &f[34..42],
            &Icmpv4Header::with_checksum(t, &data).to_bytes()[..]
        );
    }
}

#[test]
fn icmp_port_unreachable_round_trips_and_quotes_the_datagram() {
    let ip = ip_of(&ICMP_PORT_UNREACHABLE_UDP);
    let repr = ipv4::Repr::parse(&ip, Checksum::Full).unwrap();
    assert_eq!(
        (repr.tos, repr.dont_frag, repr.payload_len),
        (0xc0, false, 49)
    );
    let msg = icmp::Packet::new_checked(ip.payload()).unwrap();
    let got = icmp::Repr::parse(&msg, Checksum::Full).unwrap();
    let icmp::Repr::DstUnreachable {
        code: 3,
        next_hop_mtu: 0,
        data,
    } = got
    else {
        panic!("{got:?}")
    };
    // The quoted datagram is the UDP one, whole (it is short).
    assert_eq!(data, &UDP_DATAGRAM[14..]);
    let mut f = emit_eth_ip(&repr, ICMP_PORT_UNREACHABLE_UDP.len());
    got.emit(&mut icmp::Packet::new_unchecked(&mut f[34..]))
        .unwrap();
    assert_eq!(&f[..], &ICMP_PORT_UNREACHABLE_UDP[..]);
    let reference = Icmpv4Header::with_checksum(
        Icmpv4Type::DestinationUnreachable(etherparse::icmpv4::DestUnreachableHeader::Port),
        data,
    );
    assert_eq!(&f[34..42], &reference.to_bytes()[..]);
}

/// Frames of every size class, emitted by us and by etherparse, must agree
/// byte for byte; etherparse must also parse ours back.
#[test]
fn eth_ipv4_udp_emit_matches_etherparse() {
    let mut rng = Rng::new(0x5EED);
    for len in [
        0usize, 1, 2, 3, 9, 10, 17, 255, 256, 1000, 1472, 9000, 65507,
    ] {
        let seed = rng.next_u64();
        let pl: Vec<u8> = (0..len)
            .map(|i| (seed >> (i % 57)) as u8 ^ i as u8)
            .collect();
        let (src, dst) = (
            Ipv4Address((seed as u32).to_be_bytes()),
            Ipv4Address(((seed >> 32) as u32).to_be_bytes()),
        );
        let (sport, dport) = ((seed >> 7) as u16, (seed >> 23) as u16);
        let ip = ipv4::Repr {
            ttl: (seed >> 40) as u8,
            tos: (seed >> 48) as u8,
            ident: (seed >> 3) as u16,
            dont_frag: seed & 1 == 0,
            ..ipv4::Repr::new(src, dst, IpProtocol::Udp, 8 + len)
        };
        let mut f = emit_eth_ip(&ip, 42 + len);
        let mut up = udp::Packet::new_unchecked(&mut f[34..]);
        udp::Repr {
            src_port: sport,
            dst_port: dport,
        }
        .emit(
            &mut up,
            src,
            dst,
            len,
            |b| b.copy_from_slice(&pl),
            Checksum::Full,
        )
        .unwrap();

        let mut reference = Vec::new();
        etherparse::Ethernet2Header {
            source: [0; 6],
            destination: [0; 6],
            ether_type: etherparse::EtherType::IPV4,
        }
        .write(&mut reference)
        .unwrap();
        let eip = etherparse_ipv4(&ip);
        eip.write(&mut reference).unwrap();
        UdpHeader::with_ipv4_checksum(sport, dport, &eip, &pl)
            .unwrap()
            .write(&mut reference)
            .unwrap();
        reference.extend_from_slice(&pl);
        assert_eq!(f, reference, "payload {len} B");

        let sliced = etherparse::SlicedPacket::from_ethernet(&f).unwrap();
        let Some(etherparse::TransportSlice::Udp(u)) = sliced.transport else {
            panic!()
        };
        assert_eq!(
            (u.source_port(), u.destination_port(), u.payload()),
            (sport, dport, &pl[..])
        );
        // And our own parser verifies both checksums.
        let ipp = ipv4::Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(ipv4::Repr::parse(&ipp, Checksum::Full).unwrap(), ip);
        let up = udp::Packet::new_checked(ipp.payload()).unwrap();
        assert_eq!(
            udp::Repr::parse(&up, src, dst, Checksum::Full).unwrap(),
            udp::Repr {
                src_port: sport,
                dst_port: dport
            }
        );
    }
}

#[test]
fn checksum_sum_matches_etherparse_on_odd_and_long_slices() {
    let data: Vec<u8> = (0..140_001u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for len in [0, 1, 2, 3, 19, 20, 21, 1499, 65535, 65536, 140_001] {
        let ours = checksum::checksum(&data[..len]);
        let theirs = etherparse::checksum::Sum16BitWords::new()
            .add_slice(&data[..len])
            .ones_complement();
        // etherparse sums native-endian words: compare the bytes as stored.
        assert_eq!(ours.to_be_bytes(), theirs.to_ne_bytes(), "{len} B");
    }
    // All 0xFF bytes: the sum folds to 0xFFFF, never overflowing.
    assert_eq!(checksum::sum(&vec![0xFF; 1 << 20]), 0xFFFF);
}

#[test]
fn header_lengths_are_the_wire_lengths() {
    assert_eq!(
        (
            ETHERNET_HEADER_LEN,
            IPV4_HEADER_LEN,
            UDP_HEADER_LEN,
            ICMP_HEADER_LEN,
            SLMP_HEADER_LEN
        ),
        (
            etherparse::Ethernet2Header::LEN,
            Ipv4Header::MIN_LEN,
            UdpHeader::LEN,
            8,
            10
        )
    );
    // FPsPIN's RULE_UDP_DPORT matches 0x2472 at frame bytes 36-37 (seed 000, §3.2.1).
    assert_eq!(SLMP_UDP_PORT, 0x2472);
    assert_eq!(ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + 2, 36);
}
