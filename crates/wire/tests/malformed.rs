//! Frames come from the wire: no byte string may make a view or a parser
//! panic, and each kind of malformation is an error naming its field.

use softspin_testkit::Rng;
use softspin_wire::*;

/// A valid Ethernet/IPv4/UDP/SLMP frame with a full UDP checksum.
fn slmp_frame(payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (Ipv4Address::new(10, 0, 0, 1), Ipv4Address::new(10, 0, 0, 2));
    let udp_len = UDP_HEADER_LEN + SLMP_HEADER_LEN + payload.len();
    let mut f = vec![0u8; ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + udp_len];
    let eth = ethernet::Repr {
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        ethertype: EtherType::Ipv4,
    };
    eth.emit(&mut ethernet::Packet::new_unchecked(&mut f[..]))
        .unwrap();
    let ip = ipv4::Repr::new(src, dst, IpProtocol::Udp, udp_len);
    ip.emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]))
        .unwrap();
    let seg = slmp::Repr {
        flags: slmp::Flags::EOM,
        msg_id: 3,
        offset: 4096,
    };
    let fill = |b: &mut [u8]| {
        seg.emit(&mut slmp::Packet::new_unchecked(&mut *b)).unwrap();
        b[SLMP_HEADER_LEN..].copy_from_slice(payload);
    };
    udp::Repr {
        src_port: 1000,
        dst_port: SLMP_UDP_PORT,
    }
    .emit(
        &mut udp::Packet::new_unchecked(&mut f[34..]),
        src,
        dst,
        udp_len - 8,
        fill,
        Checksum::Full,
    )
    .unwrap();
    f
}

/// Every view and parser, as the engine or a live NIC would use them.
fn exercise(bytes: &[u8]) {
    for ck in [Checksum::Full, Checksum::Skip] {
        if let Ok(e) = ethernet::Packet::new_checked(bytes) {
            let _ = (
                e.src_addr(),
                e.dst_addr(),
                e.ethertype(),
                ethernet::Repr::parse(&e),
            );
            exercise_ip(e.payload(), ck);
        }
        exercise_ip(bytes, ck);
        if let Ok(p) = pspin::Packet::new_checked(bytes) {
            let _ = (
                p.version(),
                p.total_len(),
                p.ttl(),
                p.protocol(),
                p.src_addr(),
                p.dst_addr(),
            );
            let _ = (
                p.src_port(),
                p.dst_port(),
                p.udp_len(),
                p.payload(),
                p.verify_checksum(),
            );
            if let Ok(r) = pspin::Repr::parse(&p) {
                assert!(r.payload_len <= bytes.len());
            }
        }
        exercise_slmp(bytes);
        exercise_rma(bytes);
        if let Ok(m) = icmp::Packet::new_checked(bytes) {
            let _ = (
                m.msg_type(),
                m.code(),
                m.rest_of_header(),
                m.data(),
                icmp::Repr::parse(&m, ck),
            );
        }
    }
}

fn exercise_ip(bytes: &[u8], ck: Checksum) {
    let Ok(ip) = ipv4::Packet::new_checked(bytes) else {
        return;
    };
    let _ = (
        ip.version(),
        ip.tos(),
        ip.ident(),
        ip.dont_frag(),
        ip.more_frags(),
        ip.frag_offset(),
        ip.ttl(),
    );
    let _ = (
        ip.checksum(),
        ip.verify_checksum(),
        ip.src_addr(),
        ip.dst_addr(),
    );
    let repr = ipv4::Repr::parse(&ip, ck);
    if let Ok(r) = repr {
        assert_eq!(r.payload_len, ip.payload().len());
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    match ip.protocol() {
        IpProtocol::Icmp => {
            if let Ok(m) = icmp::Packet::new_checked(ip.payload()) {
                if let Ok(r) = icmp::Repr::parse(&m, ck) {
                    assert_eq!(r.buffer_len(), ip.payload().len());
                }
            }
        }
        _ => {
            if let Ok(u) = udp::Packet::new_checked(ip.payload()) {
                let _ = (
                    u.src_port(),
                    u.dst_port(),
                    u.length(),
                    u.verify_checksum(src, dst),
                    udp::Repr::parse(&u, src, dst, ck),
                );
                exercise_slmp(u.payload());
                exercise_rma(u.payload());
            }
        }
    }
}

fn exercise_slmp(bytes: &[u8]) {
    if let Ok(s) = slmp::Packet::new_checked(bytes) {
        let _ = (
            s.flags(),
            format!("{:?}", s.flags()),
            s.msg_id(),
            s.offset(),
            s.payload(),
            slmp::Repr::parse(&s),
        );
    }
}

fn exercise_rma(bytes: &[u8]) {
    if let Ok(p) = rma::Packet::new_checked(bytes) {
        let _ = (
            p.version(),
            p.kind(),
            p.op(),
            p.status(),
            p.src_rank(),
            p.dst_rank(),
            p.seq(),
            p.ack(),
            p.txn(),
            p.key(),
            p.offset(),
            p.length(),
            p.reserved(),
        );
        if let Ok(r) = rma::Repr::parse(&p) {
            assert_eq!(r.buffer_len(), bytes.len());
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(1);
    let mut buf = [0u8; 160];
    for _ in 0..50_000 {
        let len = (rng.next_u64() % 161) as usize;
        for b in &mut buf[..len] {
            *b = rng.next_u64() as u8;
        }
        // Steer some inputs past the first checks, where the deeper bugs hide.
        if len > 34 && rng.next_u64() & 1 == 0 {
            buf[12..14].copy_from_slice(&[0x08, 0x00]);
            buf[14] = 0x40 | (buf[14] & 0x0F);
            buf[23] = [1, 17][(rng.next_u64() % 2) as usize];
        }
        exercise(&buf[..len]);
    }
}

#[test]
fn mutated_and_truncated_real_frames_never_panic() {
    let mut rng = Rng::new(2);
    let good = slmp_frame(b"payload bytes");
    for cut in 0..=good.len() {
        exercise(&good[..cut]);
    }
    for _ in 0..50_000 {
        let mut f = good.clone();
        for _ in 0..1 + rng.next_u64() % 4 {
            let i = (rng.next_u64() as usize) % f.len();
            f[i] = rng.next_u64() as u8;
        }
        let cut = f.len() - (rng.next_u64() as usize % 8).min(f.len());
        exercise(&f[..cut]);
    }
}

#[test]
fn setters_cannot_make_payload_accessors_panic() {
    let mut f = slmp_frame(b"x");
    let mut ip = ipv4::Packet::new_checked(&mut f[14..]).unwrap();
    ip.set_header_len(60);
    ip.set_total_len(u16::MAX);
    let _ = (
        ip.payload().len(),
        ip.payload_mut().len(),
        ip.verify_checksum(),
    );
    ip.fill_checksum();
    let mut u = udp::Packet::new_checked(&mut f[34..]).unwrap();
    u.set_len(0);
    let _ = u.payload();
    let _ = u.payload_mut().len();
    u.set_len(u16::MAX);
    let _ = (
        u.payload(),
        u.verify_checksum(Ipv4Address::default(), Ipv4Address::default()),
    );
}

#[test]
fn each_malformation_is_named() {
    let good = slmp_frame(b"abc");
    let ip_at = |f: &[u8]| ipv4::Packet::new_checked(f[14..].to_vec());

    assert_eq!(
        ethernet::Packet::new_checked(&good[..13]).unwrap_err(),
        Error::Truncated {
            layer: "Ethernet",
            len: 13,
            need: 14
        }
    );

    let mut f = good.clone();
    f[14] = 0x65;
    let p = ip_at(&f).unwrap();
    assert_eq!(
        ipv4::Repr::parse(&p, Checksum::Skip).unwrap_err(),
        Error::BadVersion(6)
    );

    f[14] = 0x44;
    let e = ip_at(&f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Malformed {
                field: "ihl",
                value: 4,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "IPv4: malformed `ihl` = 4: at least 5 (20 B)"
    );

    let mut f = good.clone();
    f[16..18].copy_from_slice(&1000u16.to_be_bytes());
    assert!(matches!(
        ip_at(&f).unwrap_err(),
        Error::Truncated {
            layer: "IPv4",
            need: 1000,
            ..
        }
    ));
    f[16..18].copy_from_slice(&19u16.to_be_bytes());
    assert!(matches!(
        ip_at(&f).unwrap_err(),
        Error::Malformed {
            field: "total length",
            value: 19,
            ..
        }
    ));

    let mut f = good.clone();
    f[20] = 0x20; // more fragments
    let p = ip_at(&f).unwrap();
    assert!(matches!(
        ipv4::Repr::parse(&p, Checksum::Skip).unwrap_err(),
        Error::Unsupported { layer: "IPv4", .. }
    ));
    assert!(matches!(
        ipv4::Repr::parse(&p, Checksum::Full).unwrap_err(),
        Error::Unsupported { .. }
    ));
    f[20] = 0;
    f[22] ^= 1; // TTL
    let p = ip_at(&f).unwrap();
    assert!(matches!(
        ipv4::Repr::parse(&p, Checksum::Full).unwrap_err(),
        Error::BadChecksum { layer: "IPv4", .. }
    ));
    assert!(ipv4::Repr::parse(&p, Checksum::Skip).is_ok());

    let mut f = good.clone();
    f[38..40].copy_from_slice(&7u16.to_be_bytes());
    assert!(matches!(
        udp::Packet::new_checked(&f[34..]).unwrap_err(),
        Error::Malformed {
            layer: "UDP",
            field: "length",
            value: 7,
            ..
        }
    ));
    f[38..40].copy_from_slice(&100u16.to_be_bytes());
    assert!(matches!(
        udp::Packet::new_checked(&f[34..]).unwrap_err(),
        Error::Truncated {
            layer: "UDP",
            need: 100,
            ..
        }
    ));
    let mut f = good.clone();
    let last = f.len() - 1;
    f[last] ^= 0x55;
    let (src, dst) = (Ipv4Address::new(10, 0, 0, 1), Ipv4Address::new(10, 0, 0, 2));
    let u = udp::Packet::new_checked(&f[34..]).unwrap();
    assert!(matches!(
        udp::Repr::parse(&u, src, dst, Checksum::Full).unwrap_err(),
        Error::BadChecksum { layer: "UDP", .. }
    ));

    assert_eq!(
        slmp::Packet::new_checked(&[0u8; 9][..]).unwrap_err(),
        Error::Truncated {
            layer: "SLMP",
            len: 9,
            need: 10
        }
    );
    let mut seg = [0u8; 12];
    seg[6..10].copy_from_slice(&u32::MAX.to_be_bytes());
    let s = slmp::Packet::new_checked(&seg[..]).unwrap();
    assert!(matches!(
        slmp::Repr::parse(&s).unwrap_err(),
        Error::Malformed {
            field: "offset",
            ..
        }
    ));
    assert!(
        slmp::Repr::parse(&slmp::Packet::new_checked(&seg[..11]).unwrap()).is_ok(),
        "one byte at 2^32 - 1 fits"
    );
}

#[test]
fn emit_refuses_what_the_fields_cannot_hold() {
    let a = Ipv4Address::default();
    let mut buf = vec![0u8; 70_000];
    let e = ipv4::Repr::new(a, a, IpProtocol::Udp, 65_516)
        .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Malformed {
                layer: "IPv4",
                field: "total length",
                value: 65_536,
                ..
            }
        ),
        "{e}"
    );
    assert!(ipv4::Repr::new(a, a, IpProtocol::Udp, 65_515)
        .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]))
        .is_ok());
    let r = udp::Repr {
        src_port: 1,
        dst_port: 2,
    };
    let e = r
        .emit(
            &mut udp::Packet::new_unchecked(&mut buf[..]),
            a,
            a,
            65_528,
            |_| {},
            Checksum::Full,
        )
        .unwrap_err();
    assert!(matches!(
        e,
        Error::Malformed {
            layer: "UDP",
            field: "length",
            ..
        }
    ));
    let e = r
        .emit(
            &mut udp::Packet::new_unchecked(&mut buf[..10]),
            a,
            a,
            3,
            |_| {},
            Checksum::Full,
        )
        .unwrap_err();
    assert_eq!(
        e,
        Error::Truncated {
            layer: "UDP",
            len: 10,
            need: 11
        }
    );
    let e = ipv4::Repr::new(a, a, IpProtocol::Udp, 0)
        .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..19]))
        .unwrap_err();
    assert_eq!(
        e,
        Error::Truncated {
            layer: "IPv4",
            len: 19,
            need: 20
        }
    );
    let echo = icmp::Repr::EchoRequest {
        ident: 1,
        seq_no: 2,
        data: b"abc",
    };
    assert!(echo
        .emit(&mut icmp::Packet::new_unchecked(&mut buf[..12]))
        .is_err());
    assert!(echo
        .emit(&mut icmp::Packet::new_unchecked(&mut buf[..11]))
        .is_ok());
    assert!(slmp::Repr {
        flags: slmp::Flags::ACK,
        msg_id: 1,
        offset: 2
    }
    .emit(&mut slmp::Packet::new_unchecked(&mut buf[..9]))
    .is_err());
}

/// PsPIN's layout is the wire layout with byte 0's nibbles swapped and every
/// 16/32-bit field except the IP checksum byte-reversed; derive one from the
/// other to check both.
#[test]
fn pspin_layout_is_the_wire_layout_in_host_order() {
    let (src, dst) = (Ipv4Address::new(10, 0, 0, 1), Ipv4Address::new(10, 0, 1, 2));
    for payload_len in [0usize, 1, 100, 65507] {
        let mut ps = vec![0xAAu8; pspin::HEADER_LEN + payload_len];
        let repr = pspin::Repr {
            src_addr: src,
            dst_addr: dst,
            src_port: 0x1234,
            dst_port: 9330,
            payload_len,
        };
        repr.emit(&mut pspin::Packet::new_unchecked(&mut ps[..]))
            .unwrap();
        let p = pspin::Packet::new_checked(&ps[..]).unwrap();
        assert_eq!(pspin::Repr::parse(&p).unwrap(), repr);
        assert!(p.verify_checksum());
        assert_eq!(ps[0], 0x54);
        assert_eq!(
            &ps[12..16],
            &[1, 0, 0, 10],
            "10.0.0.1 read as the u32 0x0A000001"
        );

        let mut wire = vec![0u8; 28];
        ipv4::Repr::new(src, dst, IpProtocol::Udp, 8 + payload_len)
            .emit(&mut ipv4::Packet::new_unchecked(&mut wire[..]))
            .unwrap();
        let mut u = udp::Packet::new_unchecked(&mut wire[20..]);
        u.set_src_port(0x1234);
        u.set_dst_port(9330);
        u.set_len((8 + payload_len) as u16);
        let mut swapped = wire.clone();
        swapped[0] = wire[0].rotate_left(4);
        for r in [2..4, 12..16, 16..20, 20..22, 22..24, 24..26] {
            swapped[r.clone()].reverse();
        }
        swapped[10..12].fill(0);
        let c = checksum::checksum(&swapped[..20]);
        swapped[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(&ps[..28], &swapped[..]);
    }
    let mut ps = [0u8; 40];
    pspin::Repr {
        src_addr: src,
        dst_addr: dst,
        src_port: 1,
        dst_port: 2,
        payload_len: 12,
    }
    .emit(&mut pspin::Packet::new_unchecked(&mut ps[..]))
    .unwrap();
    let e = pspin::Packet::new_checked(&ps[..39]).unwrap_err();
    assert_eq!(
        e,
        Error::Truncated {
            layer: "PsPIN IP/UDP",
            len: 39,
            need: 40
        }
    );
    ps[24] = 11; // UDP length
    let e = pspin::Repr::parse(&pspin::Packet::new_checked(&ps[..]).unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Malformed {
                field: "UDP length",
                value: 11,
                ..
            }
        ),
        "{e}"
    );
    ps[2] = 27; // total length below the headers
    let e = pspin::Packet::new_checked(&ps[..]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Malformed {
                field: "total length",
                value: 27,
                ..
            }
        ),
        "{e}"
    );

    let e = pspin::Repr {
        src_addr: src,
        dst_addr: dst,
        src_port: 1,
        dst_port: 2,
        payload_len: 65_508,
    }
    .emit(&mut pspin::Packet::new_unchecked(vec![0u8; 28]))
    .unwrap_err();
    assert!(matches!(
        e,
        Error::Malformed {
            field: "total length",
            ..
        }
    ));
}
