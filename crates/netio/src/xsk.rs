//! AF_XDP sockets and the XDP port: the live NIC's path from the wire to the
//! engine and back (issue 11; FPsPIN seed 000 §3.2: the matching engine
//! hands matched packets to the cluster, the rest to the host stack).
//!
//! [`XdpPort::open`] attaches the XDP matcher ([`XdpMatcher`]) to the
//! interface and binds one AF_XDP socket per RX queue (copy mode: veth and
//! most drivers without XSK pool support have no zero-copy), each with its own
//! UMEM: the first half of the UMEM's frames feed the fill ring, the second
//! half carry TX frames. Matched frames are copied out of the UMEM and
//! classified again by the Rust [`Matcher`] (the XDP program only redirects;
//! ruleset, end-of-message and message id come from the reference code, as
//! in socket mode). Frames are never waited for longer than asked.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::num::NonZeroU32;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use xdpilone::xdp::{XdpDesc, XdpStatisticsV2};
use xdpilone::{DeviceQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig, User};

use crate::port::{poll_fds, Port, PortStats, RxFrame};
use crate::rules::{Matcher, Ruleset};
use crate::xdp::XdpMatcher;
use crate::NetError;

/// Sizes of each queue's UMEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XskConfig {
    /// Frames per UMEM (power of two, at least 2): half for RX, half for TX.
    pub frames: u32,
    /// Bytes per frame: 2048 or 4096 (the kernel's aligned-chunk sizes up to
    /// a page); also the largest frame the port can receive or send.
    pub frame_size: u32,
}

impl Default for XskConfig {
    fn default() -> Self {
        XskConfig {
            // 8192 RX frames hold 10 ms of a 0.8 Mpps flood: what the kernel
            // receives while the live NIC is descheduled for a time slice on
            // a loaded machine (docs/live.md, "Receive rate"); 2048 lost
            // frames as `fill_ring_empty`. 32 MiB per queue.
            frames: 16384,
            frame_size: 2048,
        }
    }
}

impl XskConfig {
    fn validate(&self) -> Result<(), NetError> {
        let bad = |what: String| NetError::Io {
            what,
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        };
        if !(self.frame_size == 2048 || self.frame_size == 4096) {
            return Err(bad(format!(
                "AF_XDP config: frame_size = {}: must be 2048 or 4096",
                self.frame_size
            )));
        }
        if !self.frames.is_power_of_two() || !(2..=1 << 20).contains(&self.frames) {
            return Err(bad(format!(
                "AF_XDP config: frames = {}: must be a power of two in 2..=1048576",
                self.frames
            )));
        }
        Ok(())
    }
}

/// An anonymous page-aligned mapping holding one UMEM.
struct Area {
    ptr: NonNull<u8>,
    len: usize,
}

impl Area {
    fn new(len: usize) -> std::io::Result<Area> {
        // SAFETY: anonymous private mapping, checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Area {
            ptr: NonNull::new(p.cast()).expect("mmap never returns NULL on success"),
            len,
        })
    }

    fn as_slice_ptr(&self) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(self.ptr, self.len)
    }

    /// Bytes `[addr, addr+len)`, if inside the area.
    fn bytes(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let end = addr.checked_add(u64::from(len))?;
        if end > self.len as u64 {
            return None;
        }
        // SAFETY: in bounds; the kernel writes a frame before publishing its
        // RX descriptor and does not touch it until it is back in the fill ring.
        Some(unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(addr as usize), len as usize)
        })
    }

    fn bytes_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let end = (addr as usize).checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds; TX frames we own (not in the TX ring) are ours alone.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(addr as usize), len) })
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the UMEM socket is closed by now
        // (fields drop in declaration order, Area last).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One RX queue's AF_XDP socket with its UMEM and rings. Field order is drop
/// order: rings, then the socket, then the memory.
struct Queue {
    id: u32,
    rx: RingRx,
    tx: RingTx,
    fq_cq: DeviceQueue,
    user: User,
    _umem: Umem,
    area: Area,
    frame_size: u32,
    /// RX frames (chunk addresses) waiting to go back to the fill ring.
    to_fill: Vec<u64>,
    /// TX frames (chunk addresses) free to carry a frame.
    tx_free: Vec<u64>,
    /// Frames in the TX ring not yet kicked with sendto.
    tx_unkicked: u32,
    fd: RawFd,
}

impl Queue {
    fn open(iface: &str, info: &IfInfo, cfg: XskConfig) -> Result<Queue, NetError> {
        let q = info.queue_id();
        let what = |s: &str| format!("AF_XDP on {iface} queue {q}: {s}");
        let errno = |s: &str, e: xdpilone::Errno| {
            NetError::io(
                what(s),
                std::io::Error::from_raw_os_error(e.get_raw().abs()),
            )
        };
        let area = Area::new(cfg.frames as usize * cfg.frame_size as usize)
            .map_err(|e| NetError::io(what("mmap UMEM"), e))?;
        let half = cfg.frames / 2;
        let ucfg = UmemConfig {
            fill_size: half.max(1).next_power_of_two(),
            complete_size: half.max(1).next_power_of_two(),
            frame_size: cfg.frame_size,
            headroom: 0,
            flags: 0,
        };
        // SAFETY: area is page aligned, frames*frame_size long and outlives the
        // Umem (dropped after it, see the field order of Queue).
        let umem = unsafe { Umem::new(ucfg, area.as_slice_ptr()) }.map_err(|e| {
            match e.get_raw().abs() {
                libc::EAFNOSUPPORT => {
                    NetError::Unsupported(format!("{}: this kernel has no AF_XDP", what("socket")))
                }
                _ => errno("register UMEM", e),
            }
        })?;
        let sock = Socket::with_shared(info, &umem).map_err(|e| errno("socket", e))?;
        let fq_cq = umem
            .fq_cq(&sock)
            .map_err(|e| errno("fill/completion rings", e))?;
        let ring = NonZeroU32::new(half.max(1).next_power_of_two());
        let user = umem
            .rx_tx(
                &sock,
                &SocketConfig {
                    rx_size: ring,
                    tx_size: ring,
                    bind_flags: SocketConfig::XDP_BIND_COPY,
                },
            )
            .map_err(|e| errno("RX/TX rings", e))?;
        let rx = user.map_rx().map_err(|e| errno("map RX ring", e))?;
        let tx = user.map_tx().map_err(|e| errno("map TX ring", e))?;
        umem.bind(&user).map_err(|e| errno("bind (copy mode)", e))?;
        let fs = u64::from(cfg.frame_size);
        let fd = user.as_raw_fd();
        let mut queue = Queue {
            id: q,
            rx,
            tx,
            fq_cq,
            user,
            _umem: umem,
            area,
            frame_size: cfg.frame_size,
            to_fill: (0..u64::from(half)).map(|i| i * fs).collect(),
            tx_free: (u64::from(half)..u64::from(cfg.frames))
                .map(|i| i * fs)
                .collect(),
            tx_unkicked: 0,
            fd,
        };
        queue.refill();
        Ok(queue)
    }

    /// Give every frame we hold for RX back to the kernel (keeps the fill ring full).
    fn refill(&mut self) {
        if self.to_fill.is_empty() {
            return;
        }
        let mut w = self.fq_cq.fill(self.to_fill.len() as u32);
        let n = w.insert(self.to_fill.iter().copied()) as usize;
        w.commit();
        drop(w);
        self.to_fill.drain(..n);
    }

    /// Take finished TX frames back from the completion ring.
    fn reclaim(&mut self) {
        let mask = !(u64::from(self.frame_size) - 1);
        let mut r = self.fq_cq.complete(u32::MAX >> 1);
        while let Some(addr) = r.read() {
            self.tx_free.push(addr & mask);
        }
        r.release();
    }

    fn stats(&self) -> Option<XdpStatisticsV2> {
        self.user.statistics_v2().ok()
    }
}

pub struct XdpPort {
    iface: String,
    // Sockets close before the program detaches (drop order).
    queues: Vec<Queue>,
    xdp: XdpMatcher,
    matcher: Matcher,
    cfg: XskConfig,
    /// Drops and counters kept in user space.
    drops: BTreeMap<String, u64>,
    tx_frames: u64,
    tx_bytes: u64,
    /// Frames still to be read that the XDP program may have redirected
    /// under the previous rulesets: ones the new matcher refuses are
    /// counted as `rules_changed_in_flight`, not as a disagreement.
    in_flight_after_change: u64,
    /// Frame vectors handed back (`Port::recycle`), refilled by `drain`.
    spare: Vec<Vec<u8>>,
}

/// Recycled frame vectors the port keeps at most (a few receive batches).
const MAX_SPARE: usize = 256;

// SAFETY: the raw pointers inside (UMEM area, ring mappings) are owned by the
// port alone and only used through `&mut self`; moving the port to another
// thread moves them all together.
unsafe impl Send for XdpPort {}
// ...and the rest of it is Send by itself (so the impl above hides nothing).
const _: fn() = || {
    fn is_send<T: Send>() {}
    is_send::<XdpMatcher>();
    is_send::<Matcher>();
};

impl XdpPort {
    /// Attach the XDP matcher to `iface` (no rulesets: every frame goes to
    /// the kernel) and bind an AF_XDP socket on each of its RX queues.
    pub fn open(iface: &str) -> Result<XdpPort, NetError> {
        XdpPort::open_with(iface, XskConfig::default())
    }

    pub fn open_with(iface: &str, cfg: XskConfig) -> Result<XdpPort, NetError> {
        cfg.validate()?;
        let name = CString::new(iface)
            .map_err(|_| NetError::NoSuchInterface(iface.escape_debug().to_string()))?;
        let mut base = IfInfo::invalid();
        if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || base.from_name(&name).is_err() {
            return Err(NetError::NoSuchInterface(iface.to_string()));
        }
        check_mtu(iface, cfg.frame_size)?;
        let mut xdp = XdpMatcher::attach(iface)?;
        let n = XdpMatcher::queues(iface)?;
        let mut queues = Vec::new();
        for q in 0..n {
            let mut info = base;
            info.set_queue(q);
            let queue = Queue::open(iface, &info, cfg)?;
            xdp.register_socket(q, queue.fd)?;
            queues.push(queue);
        }
        Ok(XdpPort {
            iface: iface.to_string(),
            queues,
            xdp,
            matcher: Matcher::default(),
            cfg,
            drops: BTreeMap::new(),
            tx_frames: 0,
            tx_bytes: 0,
            in_flight_after_change: 0,
            spare: Vec::new(),
        })
    }

    fn drop_frame(&mut self, cause: &str) {
        *self.drops.entry(cause.to_string()).or_default() += 1;
    }

    /// Take up to `max` frames off the RX rings without waiting.
    fn drain(&mut self, out: &mut Vec<RxFrame>, max: usize) -> usize {
        let mut got = 0;
        let mut disagree = 0u64;
        let mut changed = 0u64;
        let mut invalid = 0u64;
        let mask = !(u64::from(self.cfg.frame_size) - 1);
        for q in &mut self.queues {
            if got >= max {
                break;
            }
            // Read the clock only once frames are there: an empty poll (the
            // live NIC busy-polls) then costs no clock read.
            let mut at = None;
            let mut r = q.rx.receive((max - got).min(u32::MAX as usize) as u32);
            while let Some(XdpDesc { addr, len, .. }) = r.read() {
                let at = *at.get_or_insert_with(Instant::now);
                q.to_fill.push(addr & mask);
                let old_rules = self.in_flight_after_change > 0;
                self.in_flight_after_change = self.in_flight_after_change.saturating_sub(1);
                let Some(bytes) = q.area.bytes(addr, len) else {
                    invalid += 1;
                    continue;
                };
                match self.matcher.classify(bytes) {
                    Some(v) => {
                        let mut frame = self.spare.pop().unwrap_or_default();
                        frame.clear();
                        frame.extend_from_slice(bytes);
                        out.push(RxFrame {
                            frame,
                            ruleset: v.ruleset,
                            eom: v.eom,
                            msg_id: v.msg_id,
                            at,
                        });
                        got += 1;
                    }
                    None if old_rules => changed += 1,
                    None => disagree += 1,
                }
            }
            r.release();
            drop(r);
            q.refill();
        }
        if disagree > 0 {
            *self.drops.entry("matcher_disagrees".into()).or_default() += disagree;
        }
        if changed > 0 {
            *self
                .drops
                .entry("rules_changed_in_flight".into())
                .or_default() += changed;
        }
        if invalid > 0 {
            *self.drops.entry("rx_invalid_desc".into()).or_default() += invalid;
        }
        got
    }

    /// The interface's RX queues, each with one socket.
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }
}

/// Room the kernel keeps in front of a received frame in an AF_XDP frame
/// (XDP_PACKET_HEADROOM, include/uapi/linux/bpf.h).
const XDP_PACKET_HEADROOM: u32 = 256;
/// Ethernet header, not counted in the MTU.
const ETH_HEADER: u32 = 14;

/// The largest MTU whose frames fit an AF_XDP frame of `frame_size`.
pub fn max_mtu(frame_size: u32) -> u32 {
    frame_size - XDP_PACKET_HEADROOM - ETH_HEADER
}

/// Refuse an interface whose frames do not fit the UMEM's frames: the
/// kernel would refuse the attach with a bare ERANGE (veth) or drop the
/// larger frames without a count.
fn check_mtu(iface: &str, frame_size: u32) -> Result<(), NetError> {
    let path = format!("/sys/class/net/{iface}/mtu");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| NetError::io(format!("{iface}: reading its MTU ({path})"), e))?;
    let mtu: u32 = text
        .trim()
        .parse()
        .map_err(|_| NetError::Unsupported(format!("{iface}: unreadable MTU `{}`", text.trim())))?;
    let limit = max_mtu(frame_size);
    if mtu > limit {
        return Err(NetError::MtuTooLarge {
            iface: iface.to_string(),
            mtu,
            limit,
            frame_size,
            headroom: XDP_PACKET_HEADROOM,
        });
    }
    Ok(())
}

/// Bound on sendto kicks per flush: the kernel sends at most a small batch
/// per call in copy mode, so a full ring needs several, but never forever.
const MAX_KICKS: u32 = 256;

impl Port for XdpPort {
    fn set_rulesets(&mut self, rules: &[Ruleset]) -> Result<(), NetError> {
        self.xdp.set_rulesets(rules)?;
        self.matcher = Matcher {
            rulesets: rules.to_vec(),
        };
        // At most every RX buffer of every queue holds such a frame.
        self.in_flight_after_change = u64::from(self.cfg.frames) * self.queues.len() as u64;
        Ok(())
    }

    fn recv(
        &mut self,
        out: &mut Vec<RxFrame>,
        max: usize,
        timeout: Duration,
    ) -> Result<(), NetError> {
        if max == 0 {
            return Ok(());
        }
        // Frames waiting (a flood) or no wait asked (busy polling): no
        // clock read at all.
        if self.drain(out, max) > 0 || timeout.is_zero() {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            let fds: Vec<RawFd> = self.queues.iter().map(|q| q.fd).collect();
            if fds.is_empty() {
                std::thread::sleep(deadline - now);
                return Ok(());
            }
            if !poll_fds(&fds, deadline - now)
                .map_err(|e| NetError::io(format!("AF_XDP on {}: poll", self.iface), e))?
            {
                // Timed out (or a signal): one last look, then return.
                self.drain(out, max);
                return Ok(());
            }
            if self.drain(out, max) > 0 {
                return Ok(());
            }
        }
    }

    fn send(&mut self, frame: &[u8]) -> Result<(), NetError> {
        if frame.len() > self.cfg.frame_size as usize {
            self.drop_frame("tx_too_large");
            return Ok(());
        }
        let n = self.queues.len();
        if n == 0 {
            self.drop_frame("tx_no_queue");
            return Ok(());
        }
        for k in 0..n {
            // Queue 0 first, the others only when it is full: one queue
            // keeps the frames in the order the handlers sent them.
            let qi = k;
            let q = &mut self.queues[qi];
            q.reclaim();
            let Some(addr) = q.tx_free.pop() else {
                continue;
            };
            let buf = q
                .area
                .bytes_mut(addr, frame.len())
                .expect("TX frames lie inside the UMEM by construction");
            buf.copy_from_slice(frame);
            let mut w = q.tx.transmit(1);
            let ok = w.insert_once(XdpDesc {
                addr,
                len: frame.len() as u32,
                options: 0,
            });
            w.commit();
            drop(w);
            if !ok {
                q.tx_free.push(addr);
                continue;
            }
            q.tx_unkicked += 1;
            self.tx_frames += 1;
            self.tx_bytes += frame.len() as u64;
            return Ok(());
        }
        self.drop_frame("tx_ring_full");
        Ok(())
    }

    fn recycle(&mut self, frame: Vec<u8>) {
        if self.spare.len() < MAX_SPARE {
            self.spare.push(frame);
        }
    }

    fn flush(&mut self) -> Result<(), NetError> {
        for q in &mut self.queues {
            if q.tx_unkicked == 0 && q.tx.pending() == 0 {
                q.reclaim();
                continue;
            }
            q.tx_unkicked = 0;
            // Copy mode transmits in the sendto call, a bounded batch per call.
            for _ in 0..MAX_KICKS {
                // SAFETY: zero-length sendto on our own AF_XDP socket: the TX kick.
                let rc = unsafe {
                    libc::sendto(
                        q.fd,
                        std::ptr::null(),
                        0,
                        libc::MSG_DONTWAIT,
                        std::ptr::null(),
                        0,
                    )
                };
                if rc < 0 {
                    let e = std::io::Error::last_os_error();
                    match e.raw_os_error() {
                        // More to send, or the device is momentarily busy.
                        Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS)
                        | Some(libc::EINTR) => {}
                        // The link went down: the frames stay queued.
                        Some(libc::ENETDOWN) | Some(libc::ENXIO) => break,
                        _ => {
                            return Err(NetError::io(
                                format!(
                                    "AF_XDP on {} queue {}: sendto (TX kick)",
                                    self.iface, q.id
                                ),
                                e,
                            ))
                        }
                    }
                }
                q.reclaim();
                if q.tx.pending() == 0 {
                    break;
                }
            }
        }
        Ok(())
    }

    fn stats(&self) -> PortStats {
        let mut s = PortStats {
            tx_frames: self.tx_frames,
            tx_bytes: self.tx_bytes,
            drops: self.drops.clone(),
            ..Default::default()
        };
        if let Ok(x) = self.xdp.stats() {
            s.matched = x.matched.clone();
            s.passed_to_kernel = x.passed;
            s.fragments_matched = x.fragments_matched;
            s.fragments_passed = x.fragments_passed;
            s.rx_frames = x.matched.iter().sum::<u64>() + x.passed;
            if x.no_socket > 0 {
                s.drops.insert("no_socket".into(), x.no_socket);
            }
        }
        // The map has a slot per possible ruleset; report the installed ones,
        // and those that counted frames before being removed (stop_matching
        // clears the rulesets before the final statistics are read).
        let used = s.matched.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
        s.matched.resize(self.matcher.rulesets.len().max(used), 0);
        let mut add = |k: &str, v: u64| {
            if v > 0 {
                *s.drops.entry(k.into()).or_default() += v;
            }
        };
        for q in &self.queues {
            if let Some(st) = q.stats() {
                // The kernel counts a frame that found the fill ring empty in
                // both rx_dropped and rx_fill_ring_empty_descs: count it once.
                add("fill_ring_empty", st.rx_fill_ring_empty_descs);
                add(
                    "rx_dropped",
                    st.rx_dropped.saturating_sub(st.rx_fill_ring_empty_descs),
                );
                add("rx_invalid_descs", st.rx_invalid_descs);
                add("rx_ring_full", st.rx_ring_full);
                add("tx_invalid_descs", st.tx_invalid_descs);
            }
        }
        s
    }

    fn rx_capacity(&self) -> usize {
        (self.cfg.frames / 2) as usize * self.queues.len()
    }

    fn describe(&self) -> String {
        format!(
            "xdp on {} ({} queue{}, AF_XDP copy mode, {} frames of {} B per queue)",
            self.iface,
            self.queues.len(),
            if self.queues.len() == 1 { "" } else { "s" },
            self.cfg.frames,
            self.cfg.frame_size
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_limits() {
        assert!(XskConfig::default().validate().is_ok());
        let e = XskConfig {
            frames: 4096,
            frame_size: 1500,
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("frame_size = 1500"), "{e}");
        let e = XskConfig {
            frames: 1000,
            frame_size: 2048,
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("frames = 1000"), "{e}");
    }
}
