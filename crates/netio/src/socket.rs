//! The socket port: the live NIC without XDP (issue 11, `--mode socket`).
//!
//! FPsPIN's matching engine (seed 000 §3.2.1) sees whole Ethernet frames; a
//! plain UDP socket sees only payloads. This port binds one UDP socket per
//! `udp:PORT` ruleset, rebuilds the Ethernet/IPv4/UDP frame a handler would
//! have seen on the wire (with the addresses and ports as received), and runs
//! the reference [`Matcher`] on it so that ruleset, end-of-message and message
//! id come from the same code as in XDP mode. Replies are parsed back to
//! address + payload and sent with `sendto`. Needs no privileges; the kernel
//! keeps every other packet, so nothing is "passed to the kernel" here.

use std::ffi::CString;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use softspin_wire::{ethernet, ipv4, udp, Checksum, EtherType, EthernetAddress, IpProtocol};

use crate::port::{poll_fds, Port, PortStats, RxFrame};
use crate::rules::{Matcher, Ruleset};
use crate::NetError;

/// Source MAC of synthesised frames: a locally administered unicast address
/// (the sender's real MAC is not visible to a UDP socket).
pub const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// Largest UDP payload over IPv4 (65535 - 20 - 8).
const MAX_UDP_PAYLOAD: usize = 65507;

const HEADERS_LEN: usize = softspin_wire::ETHERNET_HEADER_LEN
    + softspin_wire::IPV4_HEADER_LEN
    + softspin_wire::UDP_HEADER_LEN;

/// A bound UDP socket of one `udp:PORT` ruleset's port.
struct PortSocket {
    port: u16,
    fd: OwnedFd,
}

pub struct SocketPort {
    iface: String,
    mac: [u8; 6],
    addrs: Vec<Ipv4Addr>,
    matcher: Matcher,
    sockets: Vec<PortSocket>,
    /// Every port bound so far, first-bound order: the description after
    /// the run (when the sockets are closed) names the ports served.
    served: Vec<u16>,
    /// Bound with SO_BINDTODEVICE to 0.0.0.0 (else to the first address).
    bound_to_device: bool,
    stats: PortStats,
    buf: Vec<u8>,
}

impl SocketPort {
    /// Learn `iface`'s MAC and IPv4 addresses; binds nothing until
    /// [`Port::set_rulesets`].
    pub fn open(iface: &str) -> Result<SocketPort, NetError> {
        let (mac, addrs) = iface_info(iface)?;
        Ok(SocketPort {
            iface: iface.to_string(),
            mac,
            addrs,
            matcher: Matcher::default(),
            sockets: Vec::new(),
            served: Vec::new(),
            bound_to_device: false,
            stats: PortStats::default(),
            buf: vec![0; MAX_UDP_PAYLOAD + 1],
        })
    }

    /// The interface's MAC address (destination MAC of received frames).
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The interface's IPv4 addresses.
    pub fn addrs(&self) -> &[Ipv4Addr] {
        &self.addrs
    }

    /// UDP ports bound, in ruleset order (duplicates bound once).
    pub fn ports(&self) -> Vec<u16> {
        self.sockets.iter().map(|s| s.port).collect()
    }

    fn drop_frame(&mut self, cause: &str) {
        *self.stats.drops.entry(cause.to_string()).or_default() += 1;
    }

    fn bind_port(&mut self, port: u16) -> Result<PortSocket, NetError> {
        let what = |s: &str| format!("socket port on {}: udp:{port}: {s}", self.iface);
        // SAFETY: plain socket(2); the fd is owned right away.
        let raw = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(NetError::io(
                what("socket"),
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: raw is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        setsockopt_int(raw, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)
            .map_err(|e| NetError::io(what("IP_PKTINFO"), e))?;
        // Binding 0.0.0.0 to the device receives on all of its addresses; where
        // that is not permitted, the interface's first address is the fallback.
        let name = CString::new(self.iface.as_str())
            .expect("interface names have no NUL (checked at open)");
        // SAFETY: name outlives the call; length includes the NUL.
        let dev_ok = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_BINDTODEVICE,
                name.as_ptr().cast(),
                name.as_bytes_with_nul().len() as libc::socklen_t,
            )
        } == 0;
        let addr = if dev_ok {
            Ipv4Addr::UNSPECIFIED
        } else {
            *self.addrs.first().ok_or_else(|| {
                NetError::Unsupported(format!(
                    "socket port on {}: the interface has no IPv4 address",
                    self.iface
                ))
            })?
        };
        self.bound_to_device = dev_ok;
        let sa = sockaddr_in(addr, port);
        // SAFETY: sa is a valid sockaddr_in of the given length.
        let rc = unsafe {
            libc::bind(
                raw,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(NetError::io(
                what(&format!("bind {addr}:{port}")),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(PortSocket { port, fd })
    }

    /// Read one datagram from `fd` without waiting; `None` when none is queued.
    fn recv_one(&mut self, idx: usize) -> Result<Option<Vec<u8>>, NetError> {
        let fd = self.sockets[idx].fd.as_raw_fd();
        let port = self.sockets[idx].port;
        // SAFETY: sockaddr_in and msghdr are plain C structs; all zeroes is
        // a valid value of each.
        let mut peer: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: self.buf.as_mut_ptr().cast(),
            iov_len: self.buf.len(),
        };
        // Room for one in_pktinfo control message (u64 for alignment).
        let mut cbuf = [0u64; 16];
        // SAFETY: as for `peer`.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut peer as *mut libc::sockaddr_in).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        // SAFETY: every pointer in msg points at live locals/self.buf of the stated sizes.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                // An ICMP error queued on the socket (e.g. port unreachable
                // from an earlier send): counted, not fatal.
                Some(libc::ECONNREFUSED) | Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) => {
                    self.drop_frame("rx_icmp_error");
                    Ok(None)
                }
                _ => Err(NetError::io(
                    format!("socket port on {}: recvmsg udp:{port}", self.iface),
                    e,
                )),
            };
        }
        let n = n as usize;
        if msg.msg_flags & libc::MSG_TRUNC != 0 {
            self.drop_frame("rx_truncated");
            return Ok(None);
        }
        // The datagram's destination address: from IP_PKTINFO.
        let mut local = self.addrs.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED);
        // SAFETY: standard cmsg walk over the control buffer the kernel filled.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_PKTINFO {
                    let info: libc::in_pktinfo =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    local = Ipv4Addr::from(u32::from_be(info.ipi_addr.s_addr));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let src = Ipv4Addr::from(u32::from_be(peer.sin_addr.s_addr));
        let sport = u16::from_be(peer.sin_port);
        let frame = synthesise_frame(PEER_MAC, self.mac, src, local, sport, port, &self.buf[..n])
            .map_err(|e| {
            NetError::Unsupported(format!("socket port: cannot build frame: {e}"))
        })?;
        Ok(Some(frame))
    }
}

/// The Ethernet/IPv4/UDP frame that carried `payload` from `src:sport` to
/// `dst:dport`: valid IPv4 header checksum, UDP checksum 0 (optional over
/// IPv4; the kernel already verified the datagram).
pub fn synthesise_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Result<Vec<u8>, softspin_wire::Error> {
    let mut frame = vec![0u8; HEADERS_LEN + payload.len()];
    let eth = ethernet::Repr {
        src_addr: EthernetAddress(src_mac),
        dst_addr: EthernetAddress(dst_mac),
        ethertype: EtherType::Ipv4,
    };
    let mut ep = ethernet::Packet::new_checked(&mut frame[..])?;
    eth.emit(&mut ep)?;
    let ip_bytes = ep.payload_mut();
    let ip = ipv4::Repr::new(
        src.into(),
        dst.into(),
        IpProtocol::Udp,
        softspin_wire::UDP_HEADER_LEN + payload.len(),
    );
    let mut ipp = ipv4::Packet::new_unchecked(&mut ip_bytes[..]);
    ip.emit(&mut ipp)?;
    let udp_bytes = &mut ip_bytes[softspin_wire::IPV4_HEADER_LEN..];
    let u = udp::Repr {
        src_port: sport,
        dst_port: dport,
    };
    u.emit(
        &mut udp::Packet::new_unchecked(udp_bytes),
        src.into(),
        dst.into(),
        payload.len(),
        |p| p.copy_from_slice(payload),
        Checksum::Skip,
    )?;
    Ok(frame)
}

/// A UDP datagram carried by an Ethernet/IPv4 frame, as `sendto` needs it.
#[derive(Debug, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub payload: &'a [u8],
}

/// Parse an Ethernet/IPv4/UDP frame; `None` for anything else (or malformed).
/// Checksums are not verified: the kernel writes its own headers.
pub fn parse_udp_frame(frame: &[u8]) -> Option<UdpDatagram<'_>> {
    let eth = ethernet::Packet::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    // Slices of `frame` (not of the views) so the payload outlives them.
    let ip_bytes = frame.get(softspin_wire::ETHERNET_HEADER_LEN..)?;
    let ip = ipv4::Packet::new_checked(ip_bytes).ok()?;
    let ipr = ipv4::Repr::parse(&ip, Checksum::Skip).ok()?;
    if ipr.protocol != IpProtocol::Udp {
        return None;
    }
    let udp_bytes = ip_bytes.get(ip.header_len()..usize::from(ip.total_len()))?;
    let u = udp::Packet::new_checked(udp_bytes).ok()?;
    Some(UdpDatagram {
        src: ipr.src_addr.into(),
        dst: ipr.dst_addr.into(),
        sport: u.src_port(),
        dport: u.dst_port(),
        payload: udp_bytes.get(softspin_wire::UDP_HEADER_LEN..usize::from(u.length()))?,
    })
}

/// The port of a `udp:PORT` ruleset (what `Ruleset::from_spec("udp:PORT")`
/// gives), recognised by its units: a candidate port is read from every
/// 16-bit half of every unit's `start`, and the ruleset is `udp:PORT` when
/// `from_spec` of that candidate has the same mode and units. This needs no
/// knowledge of how the rules helper encodes the spec.
pub fn udp_port_of(r: &Ruleset) -> Option<u16> {
    r.units
        .iter()
        .flat_map(|u| [(u.start >> 16) as u16, u.start as u16])
        .find(|&p| {
            Ruleset::from_spec(&format!("udp:{p}"))
                .into_iter()
                .next()
                .is_some_and(|s| s.mode == r.mode && s.units == r.units)
        })
}

impl Port for SocketPort {
    fn set_rulesets(&mut self, rules: &[Ruleset]) -> Result<(), NetError> {
        let mut ports = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let p = udp_port_of(r).ok_or_else(|| {
                NetError::Rules(format!(
                    "ruleset {i} (`{}`): socket mode takes only udp:PORT rules (UDP destination port, exact); use --mode xdp for others",
                    r.name
                ))
            })?;
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        // Close the old sockets first so the same ports can be bound again;
        // if a bind fails the port is left with no rulesets at all.
        self.sockets.clear();
        self.matcher = Matcher::default();
        let mut sockets = Vec::new();
        for p in ports {
            sockets.push(self.bind_port(p)?);
            if !self.served.contains(&p) {
                self.served.push(p);
            }
        }
        self.sockets = sockets;
        self.matcher = Matcher {
            rulesets: rules.to_vec(),
        };
        if self.stats.matched.len() < rules.len() {
            self.stats.matched.resize(rules.len(), 0);
        }
        Ok(())
    }

    fn recv(
        &mut self,
        out: &mut Vec<RxFrame>,
        max: usize,
        timeout: Duration,
    ) -> Result<(), NetError> {
        if self.sockets.is_empty() || max == 0 {
            if !timeout.is_zero() {
                std::thread::sleep(timeout);
            }
            return Ok(());
        }
        let fds: Vec<RawFd> = self.sockets.iter().map(|s| s.fd.as_raw_fd()).collect();
        if !poll_fds(&fds, timeout)
            .map_err(|e| NetError::io(format!("socket port on {}: poll", self.iface), e))?
        {
            return Ok(());
        }
        let mut got = 0;
        // Round-robin over the sockets so one busy port cannot starve another.
        loop {
            let mut any = false;
            for i in 0..self.sockets.len() {
                if got >= max {
                    return Ok(());
                }
                let Some(frame) = self.recv_one(i)? else {
                    continue;
                };
                any = true;
                let at = Instant::now();
                self.stats.rx_frames += 1;
                match self.matcher.classify(&frame) {
                    Some(v) => {
                        if let Some(m) = self.stats.matched.get_mut(v.ruleset) {
                            *m += 1;
                        }
                        out.push(RxFrame {
                            frame,
                            ruleset: v.ruleset,
                            eom: v.eom,
                            msg_id: v.msg_id,
                            at,
                        });
                        got += 1;
                    }
                    None => self.drop_frame("matcher_disagrees"),
                }
            }
            if !any {
                return Ok(());
            }
        }
    }

    fn send(&mut self, frame: &[u8]) -> Result<(), NetError> {
        let Some(d) = parse_udp_frame(frame) else {
            self.drop_frame("tx_not_udp");
            return Ok(());
        };
        // A reply to one of our own ports would come straight back in and
        // loop forever (a handler that does not swap addresses).
        let to_self = d.dst.is_loopback() || self.addrs.contains(&d.dst);
        if to_self && self.sockets.iter().any(|s| s.port == d.dport) {
            self.drop_frame("tx_to_own_port");
            return Ok(());
        }
        let Some(sock) = self
            .sockets
            .iter()
            .find(|s| s.port == d.sport)
            .or_else(|| self.sockets.first())
        else {
            self.drop_frame("tx_no_socket");
            return Ok(());
        };
        let sa = sockaddr_in(d.dst, d.dport);
        // SAFETY: payload and sa are valid for the stated lengths.
        let n = unsafe {
            libc::sendto(
                sock.fd.as_raw_fd(),
                d.payload.as_ptr().cast(),
                d.payload.len(),
                libc::MSG_DONTWAIT,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if n < 0 {
            let cause = match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => "tx_socket_full",
                Some(libc::EMSGSIZE) => "tx_too_large",
                _ => "tx_send_error",
            };
            self.drop_frame(cause);
            return Ok(());
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        // sendto already handed each datagram to the kernel.
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.stats.clone()
    }

    fn describe(&self) -> String {
        let ports: Vec<String> = self.served.iter().map(|p| p.to_string()).collect();
        format!(
            "socket on {} (UDP ports [{}], {})",
            self.iface,
            ports.join(", "),
            if self.bound_to_device {
                "bound to the device"
            } else {
                "bound to its address"
            }
        )
    }
}

fn sockaddr_in(addr: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: v lives across the call; length matches.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `iface`'s MAC (all zero for loopback) and IPv4 addresses.
pub fn iface_info(iface: &str) -> Result<([u8; 6], Vec<Ipv4Addr>), NetError> {
    let name = CString::new(iface)
        .map_err(|_| NetError::NoSuchInterface(iface.escape_debug().to_string()))?;
    if iface.is_empty()
        || iface.len() >= libc::IFNAMSIZ
        // SAFETY: name is a valid C string.
        || unsafe { libc::if_nametoindex(name.as_ptr()) } == 0
    {
        return Err(NetError::NoSuchInterface(iface.to_string()));
    }
    let mac_text = std::fs::read_to_string(format!("/sys/class/net/{iface}/address"))
        .map_err(|e| NetError::io(format!("{iface}: reading its MAC address"), e))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = mac_text.trim().split(':').collect();
    if parts.len() != 6 {
        return Err(NetError::Unsupported(format!(
            "{iface}: not an Ethernet interface (address `{}`)",
            mac_text.trim()
        )));
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| {
            NetError::Unsupported(format!(
                "{iface}: unreadable MAC address `{}`",
                mac_text.trim()
            ))
        })?;
    }
    let mut addrs = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills ifap; freed below.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return Err(NetError::io(
            format!("{iface}: getifaddrs"),
            std::io::Error::last_os_error(),
        ));
    }
    let mut p = ifap;
    while !p.is_null() {
        // SAFETY: p walks the list getifaddrs returned.
        unsafe {
            let a = &*p;
            let sa = a.ifa_addr;
            if !sa.is_null()
                && (*sa).sa_family as libc::c_int == libc::AF_INET
                && std::ffi::CStr::from_ptr(a.ifa_name).to_bytes() == iface.as_bytes()
            {
                let sin = &*(sa as *const libc::sockaddr_in);
                addrs.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
            p = a.ifa_next;
        }
    }
    // SAFETY: ifap came from getifaddrs.
    unsafe { libc::freeifaddrs(ifap) };
    Ok((mac, addrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip() {
        let payload: Vec<u8> = (0..200u8).collect();
        let f = synthesise_frame(
            PEER_MAC,
            [2, 3, 4, 5, 6, 7],
            [10, 0, 0, 2].into(),
            [10, 0, 0, 1].into(),
            5555,
            7,
            &payload,
        )
        .unwrap();
        assert_eq!(f.len(), HEADERS_LEN + payload.len());
        // IPv4 header checksum verifies (independently: ones' complement sum of the header is 0xffff).
        assert_eq!(softspin_wire::checksum::sum(&f[14..34]), 0xffff);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(f[23], 17);
        assert_eq!(&f[34..36], &5555u16.to_be_bytes());
        assert_eq!(&f[36..38], &7u16.to_be_bytes());
        let d = parse_udp_frame(&f).unwrap();
        assert_eq!(d.payload, &payload[..]);
        assert_eq!((d.sport, d.dport), (5555, 7));
        assert_eq!(d.dst, Ipv4Addr::new(10, 0, 0, 1));
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(parse_udp_frame(&arp).is_none());
        assert!(parse_udp_frame(&f[..30]).is_none());
    }

    #[test]
    fn no_such_interface() {
        assert!(matches!(
            SocketPort::open("nonexistent0"),
            Err(NetError::NoSuchInterface(_))
        ));
        assert!(matches!(
            SocketPort::open("a\0b"),
            Err(NetError::NoSuchInterface(_))
        ));
    }
}
