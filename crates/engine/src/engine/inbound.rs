//! The NIC inbound engine (seed 001 §3.1 "Receiving data", §3.2): packet
//! arrivals from the traffic source or the host, matching to an execution
//! context, L2 packet-buffer slots with back-pressure or drops when full, and
//! the HERs it hands to the MPQ engine.

use super::*;

/// References to a packet slot still outstanding (tasks yet to complete).
pub(super) struct SlotState {
    pub(super) refs: u32,
    pub(super) arrival_ps: u64,
    pub(super) len: u32,
    /// Its message was reset: freeing the slot does not count as processed.
    pub(super) aborted: bool,
    /// A handler on it failed (fault, abort, wait timeout, rejected
    /// command): processed, but not goodput.
    pub(super) failed: bool,
}

/// Injected frames' vectors kept for reuse at most (a burst's worth; the
/// host takes them back at every step).
const MAX_SPARE_FRAMES: usize = 256;

impl Core {
    /// A frame is in the packet buffer (or lost): its vector goes back to
    /// the traffic source for a later packet.
    fn recycle(&mut self, mut frame: Vec<u8>) {
        if let Some(src) = self.source.as_mut() {
            src.recycle(frame);
        } else if self.spare_frames.len() < MAX_SPARE_FRAMES {
            frame.clear();
            self.spare_frames.push(frame);
        }
    }
}

impl Engine {
    /// Feed packets from `source` (replacing any previous source).
    pub fn set_source(&mut self, source: Box<dyn Source>) -> Result<(), SimError> {
        self.core.source = Some(source);
        self.core.pending = None;
        self.pull_arrival()
    }

    pub(super) fn pull_arrival(&mut self) -> Result<(), SimError> {
        let c = &mut self.core;
        if c.pending.is_some() {
            return Ok(());
        }
        let Some(src) = c.source.as_mut() else {
            return Ok(());
        };
        match src.next_arrival()? {
            Some(a) => {
                let t = (a.time_ps + c.delay_ps).max(c.now);
                c.pending = Some(a);
                c.at(t, Ev::Arrival);
            }
            None => c.source = None,
        }
        Ok(())
    }

    pub(super) fn match_ectx(&self, a: &Arrival) -> Option<EctxId> {
        if let Some(id) = a.ectx {
            // Chosen by a matching engine in front of the NIC (live rulesets).
            return self
                .core
                .ectxs
                .get(id)
                .and_then(Option::as_ref)
                .filter(|e| e.active)
                .map(|_| id);
        }
        let mut port: Option<Option<u16>> = None;
        for (id, e) in self.core.ectxs.iter().enumerate() {
            let Some(e) = e else { continue };
            if !e.active {
                continue;
            }
            let hit = match e.spec.matching {
                MatchRule::All => true,
                MatchRule::UdpDstPort(p) => {
                    let dport = *port.get_or_insert_with(|| udp_dst_port(&a.frame));
                    dport == Some(p)
                }
            };
            if hit {
                return Some(id);
            }
        }
        None
    }

    pub(super) fn on_arrival(&mut self) -> Result<(), SimError> {
        let Some(a) = self.core.pending.take() else {
            return Ok(());
        };
        self.accept(a)?;
        // With back-pressure on, the source waits until the buffer drains.
        if self.core.blocked.is_empty() {
            self.pull_arrival()?;
        }
        Ok(())
    }

    pub(super) fn accept(&mut self, a: Arrival) -> Result<(), SimError> {
        let c = &mut self.core;
        let len = a.frame.len();
        if len > c.cfg.pkt_slot_size as usize {
            return Err(SimError::PacketTooLarge {
                origin: a.origin.into_owned(),
                len,
                slot: c.cfg.pkt_slot_size,
            });
        }
        c.stats.packets_in += 1;
        c.stats.bytes_in += len as u64;
        c.stats.first_arrival_ps.get_or_insert(c.now);
        c.stats.last_arrival_ps = c.now;
        c.stats.last_arrival_len = len as u64;
        if !c.blocked.is_empty() {
            c.blocked.push_back(a); // behind the packets already waiting
            return Ok(());
        }
        self.admit(a, false);
        Ok(())
    }

    /// Match a packet and give it a packet-buffer slot. Returns false if it
    /// had to wait for a slot (back-pressure); it is then queued.
    pub(super) fn admit(&mut self, a: Arrival, front: bool) -> bool {
        let Some(ectx) = self.match_ectx(&a) else {
            self.core.stats.unmatched += 1;
            self.core.recycle(a.frame);
            return true;
        };
        let c = &mut self.core;
        let now = c.now;
        let Some(slot) = c.free_slots.pop() else {
            match c.cfg.buffer_full {
                BufferFull::Drop => {
                    c.stats.drops += 1;
                    c.recycle(a.frame);
                }
                BufferFull::Backpressure => {
                    c.blocked_since.get_or_insert(now);
                    if front {
                        c.blocked.push_front(a);
                    } else {
                        c.blocked.push_back(a);
                    }
                    return false;
                }
            }
            return true;
        };
        let len = a.frame.len();
        let off = slot * c.cfg.pkt_slot_size;
        c.l2_pkt.write(off as usize, &a.frame);
        c.recycle(a.frame);
        let her = Her {
            slot,
            len: len as u32,
            msg_id: a.msg_id,
            ectx,
            eom: a.eom,
        };
        c.slots[slot as usize] = SlotState {
            refs: 0,
            arrival_ps: now,
            len: len as u32,
            aborted: false,
            failed: false,
        };
        c.stats.ectx_packets.entry(ectx).0 += 1;
        self.enqueue_her(her);
        true
    }

    /// Slots freed: let waiting packets in, in order.
    pub(super) fn on_unblock(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.core.blocked.pop_front() {
            if !self.admit(a, true) {
                return Ok(());
            }
        }
        let c = &mut self.core;
        if let Some(since) = c.blocked_since.take() {
            c.stats.backpressure_ps += c.now - since;
            c.delay_ps += c.now - since;
        }
        self.pull_arrival()
    }

    pub(super) fn on_inject(&mut self) -> Result<(), SimError> {
        match self.core.injected.pop_front() {
            Some(a) => self.accept(a),
            None => Ok(()),
        }
    }

    /// The earliest time a packet injected now would arrive: now, or after
    /// the last packet injected, whichever is later.
    pub fn next_inject_ps(&self) -> u64 {
        self.core.now.max(self.core.last_inject_ps)
    }

    /// Hand a packet to the NIC from the host side (single packets and
    /// messages of the host API). It arrives at `a.time_ps` or now,
    /// whichever is later, and after every packet injected before it.
    pub fn inject(&mut self, mut a: Arrival) {
        let c = &mut self.core;
        a.time_ps = a.time_ps.max(c.now).max(c.last_inject_ps);
        c.last_inject_ps = a.time_ps;
        let t = a.time_ps;
        c.injected.push_back(a);
        c.at(t, Ev::Inject);
    }

    /// Drop one task's reference to a packet slot; the last one frees it.
    pub(super) fn release_ref(&mut self, slot: u32, now: u64) {
        self.drop_refs(slot, 1, now);
    }

    pub(super) fn drop_refs(&mut self, slot: u32, n: u32, now: u64) {
        let c = &mut self.core;
        let s = &mut c.slots[slot as usize];
        debug_assert!(
            s.refs >= n || (s.refs == 0 && n == 1),
            "slot {slot}: refs {} - {n}",
            s.refs
        );
        s.refs = s.refs.saturating_sub(n);
        if s.refs > 0 {
            return;
        }
        if !s.aborted {
            c.stats.packets_done += 1;
            c.stats.bytes_done += s.len as u64;
            c.stats.latency.record(now - s.arrival_ps);
            if !s.failed {
                c.stats.good_packets += 1;
                c.stats.good_bytes += s.len as u64;
            }
            c.stats.last_done_ps = c.stats.last_done_ps.max(now);
        }
        c.free_slots.push(slot);
        // A packet held by back-pressure can come in now.
        if !c.blocked.is_empty() && !c.unblock_queued {
            c.unblock_queued = true;
            c.at(now, Ev::Unblock);
        }
    }
}

/// UDP destination port of an Ethernet frame or a PsPIN-layout IP-first
/// datagram (the engine is not told which; Ethernet is tried first). Lengths
/// are checked by softspin-wire's views, so a frame whose IP or UDP length
/// runs past its end matches no port; checksums are not checked (FPsPIN's
/// matching engine does not either, seed 000 §3.2.1).
pub(super) fn udp_dst_port(f: &[u8]) -> Option<u16> {
    use softspin_wire::{ethernet, ipv4, pspin, udp, EtherType, IpProtocol};
    if let Ok(eth) = ethernet::Packet::new_checked(f) {
        if eth.ethertype() == EtherType::Ipv4 {
            if let Ok(ip) = ipv4::Packet::new_checked(eth.payload()) {
                if ip.version() == 4 {
                    if ip.protocol() != IpProtocol::Udp {
                        return None;
                    }
                    return udp::Packet::new_checked(ip.payload())
                        .ok()
                        .map(|u| u.dst_port());
                }
            }
        }
    }
    // Not Ethernet/IPv4: a PsPIN datagram can start with what reads as an
    // Ethernet header (source 10.0.0.8 puts 0x0800 at bytes 12-13).
    let p = pspin::Packet::new_checked(f).ok()?;
    (p.version() == 4 && p.protocol() == IpProtocol::Udp).then(|| p.dst_port())
}

#[cfg(test)]
mod tests {
    use super::udp_dst_port;
    use crate::traffic::{build_frame, FrameKind};

    #[test]
    fn udp_dst_port_reads_both_frame_kinds_and_refuses_short_ones() {
        // Source 10.0.0.8 makes a PsPIN datagram read 0x0800 at bytes 12-13,
        // as if it were an Ethernet/IPv4 frame: it must still match as PsPIN.
        for kind in [FrameKind::Eth, FrameKind::Ip] {
            let f = build_frame(kind, 100, [10, 0, 0, 8], [10, 0, 0, 2], 1, 4000, |i| {
                i as u8
            })
            .unwrap();
            assert_eq!(udp_dst_port(&f), Some(4000), "{kind}");
            // Shorter than its IP total length: no port (the bytes past it are not the datagram).
            assert_eq!(udp_dst_port(&f[..99]), None, "{kind}");
        }
        let mut icmp = build_frame(
            FrameKind::Eth,
            100,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            1,
            4000,
            |_| 0,
        )
        .unwrap();
        icmp[23] = 1; // IP protocol: ICMP
        assert_eq!(udp_dst_port(&icmp), None);
        assert_eq!(udp_dst_port(&[]), None);
    }
}
