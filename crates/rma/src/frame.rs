//! Where the RMA header sits in an Ethernet/IPv4/UDP frame, and the two
//! edits the transport makes to frames: stamping `seq`/`ack` (then the UDP
//! checksum, which covers them) and building header-only control packets.

use softspin_wire::ethernet::{self, EtherType};
use softspin_wire::ipv4::{self, IpProtocol, Ipv4Address};
use softspin_wire::{rma, udp};

/// Offsets of an RMA frame's layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub ip: usize,
    pub udp: usize,
    pub rma: usize,
}

/// Find the RMA header of an Ethernet frame: IPv4, UDP to or from
/// [`rma::UDP_PORT`], a header of the known version. Lengths come from
/// softspin-wire's checked views, so a forged length cannot reach past the
/// frame.
pub(crate) fn locate(frame: &[u8]) -> Result<Layout, String> {
    let eth = ethernet::Packet::new_checked(frame).map_err(|e| e.to_string())?;
    if eth.ethertype() != EtherType::Ipv4 {
        return Err(format!("not IPv4 (EtherType {:?})", eth.ethertype()));
    }
    let ip = ipv4::Packet::new_checked(eth.payload()).map_err(|e| e.to_string())?;
    if ip.protocol() != IpProtocol::Udp {
        return Err(format!("not UDP (IP protocol {:?})", ip.protocol()));
    }
    let udp_off = ethernet::HEADER_LEN + ip.header_len();
    let u = udp::Packet::new_checked(ip.payload()).map_err(|e| e.to_string())?;
    if u.dst_port() != rma::UDP_PORT && u.src_port() != rma::UDP_PORT {
        return Err(format!("UDP port {} is not RMA's", u.dst_port()));
    }
    let h = rma::Packet::new_checked(u.payload()).map_err(|e| e.to_string())?;
    if h.version() != rma::VERSION {
        return Err(format!("RMA version {}", h.version()));
    }
    Ok(Layout {
        ip: ethernet::HEADER_LEN,
        udp: udp_off,
        rma: udp_off + udp::HEADER_LEN,
    })
}

pub(crate) fn header(frame: &[u8], at: Layout) -> rma::Packet<&[u8]> {
    rma::Packet::new_unchecked(&frame[at.rma..])
}

/// Set `seq` and `ack` and refresh the UDP checksum (left 0 if the sender
/// sent none).
pub(crate) fn stamp(frame: &mut [u8], at: Layout, seq: u32, ack: u32) {
    {
        let mut h = rma::Packet::new_unchecked(&mut frame[at.rma..]);
        h.set_seq(seq);
        h.set_ack(ack);
    }
    fix_udp_checksum(frame, at);
}

fn fix_udp_checksum(frame: &mut [u8], at: Layout) {
    let (src, dst) = {
        let ip = ipv4::Packet::new_unchecked(&frame[at.ip..]);
        (ip.src_addr(), ip.dst_addr())
    };
    let ip_end = at.ip + usize::from(ipv4::Packet::new_unchecked(&frame[at.ip..]).total_len());
    let mut u = udp::Packet::new_unchecked(&mut frame[at.udp..ip_end]);
    if u.checksum() != 0 {
        u.fill_checksum(src, dst);
    }
}

/// The Ethernet/IPv4/UDP headers of a frame turned towards its sender
/// (addresses and ports swapped): the start of control packets to it.
pub(crate) fn reply_template(frame: &[u8], at: Layout) -> Vec<u8> {
    let mut t = frame[..at.rma].to_vec();
    t[0..6].copy_from_slice(&frame[6..12]);
    t[6..12].copy_from_slice(&frame[0..6]);
    let mut ip = ipv4::Packet::new_unchecked(&mut t[at.ip..at.udp]);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    let mut u = udp::Packet::new_unchecked(&mut t[at.udp..at.rma]);
    let (sp, dp) = (u.src_port(), u.dst_port());
    u.set_src_port(dp);
    u.set_dst_port(sp);
    t
}

/// The headers of a frame this node sends: already addressed to the peer.
pub(crate) fn send_template(frame: &[u8], at: Layout) -> Vec<u8> {
    frame[..at.rma].to_vec()
}

/// A header-only ACK, NACK or UNACK on `template`'s addresses.
pub(crate) fn control(
    template: &[u8],
    kind: rma::Kind,
    src_rank: u16,
    dst_rank: u16,
    seq: u32,
    ack: u32,
) -> Vec<u8> {
    let at_udp = template.len() - udp::HEADER_LEN;
    let mut f = template.to_vec();
    f.resize(template.len() + rma::HEADER_LEN, 0);
    {
        let mut h = rma::Packet::new_unchecked(&mut f[template.len()..]);
        h.set_version(rma::VERSION);
        h.set_kind(kind as u8);
        h.set_src_rank(src_rank);
        h.set_dst_rank(dst_rank);
        h.set_seq(seq);
        h.set_ack(ack);
    }
    let udp_len = (udp::HEADER_LEN + rma::HEADER_LEN) as u16;
    let (src, dst): (Ipv4Address, Ipv4Address);
    {
        let mut ip = ipv4::Packet::new_unchecked(&mut f[ethernet::HEADER_LEN..]);
        ip.set_total_len((at_udp - ethernet::HEADER_LEN) as u16 + udp_len);
        ip.fill_checksum();
        (src, dst) = (ip.src_addr(), ip.dst_addr());
    }
    let mut u = udp::Packet::new_unchecked(&mut f[at_udp..]);
    u.set_len(udp_len);
    // Control packets always carry a checksum: they are ours.
    u.fill_checksum(src, dst);
    f
}
