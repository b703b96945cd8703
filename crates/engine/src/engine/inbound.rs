//! The NIC inbound engine (seed 001 §3.1 "Receiving data", §3.2): packet
//! arrivals from the traffic source or the host, matching to an execution
//! context, L2 packet-buffer slots with back-pressure or drops when full, and
//! the HERs it hands to the MPQ engine.

use super::*;

/// References to a packet slot still outstanding (tasks yet to complete).
pub(super) struct SlotState {
    refs: u32,
    arrival_ps: u64,
    len: u32,
    /// Its message was reset: freeing the slot does not count as processed.
    aborted: bool,
    /// A handler on it failed (fault, abort, wait timeout, rejected
    /// command): processed, but not goodput.
    failed: bool,
}

/// Frame vectors kept for reuse at most (a burst's worth; the host takes
/// injected ones back at every step).
const MAX_SPARE_FRAMES: usize = 256;

/// What became of a packet offered to the packet buffer.
pub(super) enum Admit {
    /// In a slot: its HER goes to the MPQ engine.
    Her(Her),
    /// Unmatched or dropped (buffer full, `BufferFull::Drop`).
    Gone,
    /// Waiting for a slot (back-pressure), at the head of the waiting line
    /// or its tail.
    Blocked,
}

/// The inbound engine and the L2 packet buffer: where packets come from
/// (a traffic source or the host), the slots they occupy until their last
/// task completes, and the packets waiting for a slot.
pub(super) struct PacketBuffer {
    /// Per slot handed out so far (grown on first use).
    slots: Vec<SlotState>,
    free_slots: FreeIds,
    source: Option<Box<dyn Source>>,
    /// Vectors of frames copied into the packet buffer (or lost), kept for
    /// the host to refill (`Engine::take_spare_frame`) and for a source's
    /// frames built into one (`built`): no vector allocated per frame.
    spare_frames: Vec<Vec<u8>>,
    /// The source's packet whose `Ev::Arrival` is queued.
    pending: Option<Packet>,
    /// Host-injected packets, each with an `Ev::Inject` queued.
    injected: VecDeque<Arrival>,
    last_inject_ps: u64,
    unblock_queued: bool,
    /// Packets waiting for a packet-buffer slot (back-pressure).
    blocked: VecDeque<Arrival>,
    blocked_since: Option<u64>,
    /// Back-pressure so far: the source's packets arrive this much later.
    delay_ps: u64,
}

impl PacketBuffer {
    /// `l2_pkt_size / pkt_slot_size` empty slots, the lowest handed out first.
    pub(super) fn new(cfg: &NicConfig) -> PacketBuffer {
        let nslots = cfg.l2_pkt_size / cfg.pkt_slot_size;
        PacketBuffer {
            slots: Vec::new(),
            free_slots: FreeIds::new(nslots),
            source: None,
            spare_frames: Vec::new(),
            pending: None,
            injected: VecDeque::new(),
            last_inject_ps: 0,
            unblock_queued: false,
            blocked: VecDeque::new(),
            blocked_since: None,
            delay_ps: 0,
        }
    }

    /// A frame is in the packet buffer (or lost): its vector is kept for a
    /// later frame.
    pub(super) fn recycle(&mut self, mut frame: Vec<u8>) {
        if self.spare_frames.len() < MAX_SPARE_FRAMES {
            frame.clear();
            self.spare_frames.push(frame);
        }
    }

    pub(super) fn take_spare_frame(&mut self) -> Option<Vec<u8>> {
        self.spare_frames.pop()
    }

    pub(super) fn set_source(&mut self, source: Box<dyn Source>) {
        self.source = Some(source);
        self.pending = None;
    }

    /// Queue the source's next packet (one at a time: `Ev::Arrival`).
    pub(super) fn pull_arrival(&mut self, c: &mut Core) -> Result<(), SimError> {
        if self.pending.is_some() {
            return Ok(());
        }
        let Some(src) = self.source.as_mut() else {
            return Ok(());
        };
        match src.next_packet()? {
            Some(p) => {
                let t = (p.time_ps() + self.delay_ps).max(c.now);
                self.pending = Some(p);
                c.at(t, Ev::Arrival);
            }
            None => self.source = None,
        }
        Ok(())
    }

    pub(super) fn take_pending(&mut self) -> Option<Packet> {
        self.pending.take()
    }

    /// The frame of the source's packet `p` built into a vector, for the
    /// ways that need it in hand (`Engine::arrive_in_place`).
    fn built(&mut self, p: PacketInfo) -> Arrival {
        let src = self.source.as_ref().expect("a pending packet's source");
        let frame = self.spare_frames.pop().unwrap_or_default();
        p.into_arrival(src, frame)
    }

    /// Packets wait for a slot (back-pressure): the source waits too.
    pub(super) fn is_blocked(&self) -> bool {
        !self.blocked.is_empty()
    }

    /// Count a packet in; `Some`: it may take a slot now (`admit`), `None`:
    /// it waits behind the packets already waiting.
    pub(super) fn accept(&mut self, c: &mut Core, a: Arrival) -> Result<Option<Arrival>, SimError> {
        count_in(c, &a.origin, a.frame.len())?;
        if !self.blocked.is_empty() {
            self.blocked.push_back(a); // behind the packets already waiting
            return Ok(None);
        }
        Ok(Some(a))
    }

    /// A packet arriving now would find no slot and be dropped.
    pub(super) fn would_drop(&self, c: &Core) -> bool {
        self.free_slots.is_empty() && c.cfg.buffer_full == BufferFull::Drop
    }

    /// Match a packet and give it a packet-buffer slot, or queue it for one
    /// (back-pressure; at the front when it came from the front).
    pub(super) fn admit(&mut self, c: &mut Core, a: Arrival, front: bool) -> Admit {
        let Some(ectx) = match_ectx(&c.ectxs, a.ectx, &a.frame) else {
            c.stats.unmatched += 1;
            self.recycle(a.frame);
            return Admit::Gone;
        };
        let now = c.now;
        let Some(slot) = self.free_slots.pop() else {
            match c.cfg.buffer_full {
                BufferFull::Drop => {
                    c.stats.drops += 1;
                    self.recycle(a.frame);
                }
                BufferFull::Backpressure => {
                    self.blocked_since.get_or_insert(now);
                    if front {
                        self.blocked.push_front(a);
                    } else {
                        self.blocked.push_back(a);
                    }
                    return Admit::Blocked;
                }
            }
            return Admit::Gone;
        };
        let off = slot * c.cfg.pkt_slot_size;
        c.mem.l2_pkt.write(off as usize, &a.frame);
        let her = self.occupy(c, slot, a.frame.len(), a.msg_id, ectx, a.eom);
        self.recycle(a.frame);
        Admit::Her(her)
    }

    /// Slot `slot` now holds a packet of `len` bytes of `ectx`'s message:
    /// its record (arrived now) and the HER for the MPQ engine.
    fn occupy(
        &mut self,
        c: &mut Core,
        slot: u32,
        len: usize,
        msg_id: u32,
        ectx: EctxId,
        eom: bool,
    ) -> Her {
        let state = SlotState {
            refs: 0,
            arrival_ps: c.now,
            len: len as u32,
            aborted: false,
            failed: false,
        };
        if slot as usize == self.slots.len() {
            self.slots.push(state);
        } else {
            self.slots[slot as usize] = state;
        }
        c.stats.ectx_packets.entry(ectx).0 += 1;
        Her {
            slot,
            len: len as u32,
            msg_id,
            ectx,
            eom,
        }
    }

    /// The queued `Ev::Unblock` is due: a later release queues another.
    pub(super) fn unblock_due(&mut self) {
        self.unblock_queued = false;
    }

    /// The oldest packet waiting for a slot.
    pub(super) fn next_blocked(&mut self) -> Option<Arrival> {
        self.blocked.pop_front()
    }

    /// Every waiting packet got a slot: the back-pressure time is counted
    /// and delays the source's later packets.
    pub(super) fn unblocked(&mut self, c: &mut Core) {
        if let Some(since) = self.blocked_since.take() {
            c.stats.backpressure_ps += c.now - since;
            self.delay_ps += c.now - since;
        }
    }

    /// Hand a packet in from the host side: it arrives at `a.time_ps` or
    /// now, whichever is later, and after every packet injected before it.
    pub(super) fn inject(&mut self, c: &mut Core, mut a: Arrival) {
        a.time_ps = a.time_ps.max(c.now).max(self.last_inject_ps);
        self.last_inject_ps = a.time_ps;
        let t = a.time_ps;
        self.injected.push_back(a);
        c.at(t, Ev::Inject);
    }

    pub(super) fn next_injected(&mut self) -> Option<Arrival> {
        self.injected.pop_front()
    }

    pub(super) fn next_inject_ps(&self, now: u64) -> u64 {
        now.max(self.last_inject_ps)
    }

    /// Injected but not arrived, waiting for a slot, or in a slot.
    pub(super) fn held(&self) -> u64 {
        (self.injected.len() + self.blocked.len()) as u64 + self.free_slots.in_use() as u64
    }

    pub(super) fn arrival_ps(&self, slot: u32) -> u64 {
        self.slots[slot as usize].arrival_ps
    }

    /// The tasks that will hold the slot (header, payload, completion).
    pub(super) fn set_refs(&mut self, slot: u32, refs: u32) {
        self.slots[slot as usize].refs = refs;
    }

    pub(super) fn mark_failed(&mut self, slot: u32) {
        self.slots[slot as usize].failed = true;
    }

    pub(super) fn mark_aborted(&mut self, slot: u32) {
        self.slots[slot as usize].aborted = true;
    }

    /// Drop `n` task references to a slot; the last one frees it (counted
    /// as processed unless its message was reset) and lets a packet held
    /// by back-pressure in.
    pub(super) fn release(&mut self, c: &mut Core, slot: u32, n: u32) {
        let now = c.now;
        let s = &mut self.slots[slot as usize];
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
        self.free_slots.push(slot);
        // A packet held by back-pressure can come in now.
        if !self.blocked.is_empty() && !self.unblock_queued {
            self.unblock_queued = true;
            c.at(now, Ev::Unblock);
        }
    }
}

/// A packet of `len` bytes comes in: it must fit a slot (a source's larger
/// packet is an error: its file or generator settings are wrong); counted.
fn count_in(c: &mut Core, origin: &str, len: usize) -> Result<(), SimError> {
    if len > c.cfg.pkt_slot_size as usize {
        return Err(SimError::PacketTooLarge {
            origin: origin.to_string(),
            len,
            slot: c.cfg.pkt_slot_size,
        });
    }
    c.stats.packets_in += 1;
    c.stats.bytes_in += len as u64;
    c.stats.first_arrival_ps.get_or_insert(c.now);
    c.stats.last_arrival_ps = c.now;
    c.stats.last_arrival_len = len as u64;
    Ok(())
}

/// The active ECTX a packet (`frame`) belongs to: `chosen`, the one a
/// matching engine in front of the NIC chose, else the first (in install
/// order) whose rule matches.
pub(super) fn match_ectx(
    ectxs: &[Option<Ectx>],
    chosen: Option<EctxId>,
    frame: &[u8],
) -> Option<EctxId> {
    if let Some(id) = chosen {
        // Chosen by a matching engine in front of the NIC (live rulesets).
        return ectxs
            .get(id)
            .and_then(Option::as_ref)
            .filter(|e| e.active)
            .map(|_| id);
    }
    let mut port: Option<Option<u16>> = None;
    for (id, e) in ectxs.iter().enumerate() {
        let Some(e) = e else { continue };
        if !e.active {
            continue;
        }
        let hit = match e.spec.matching {
            MatchRule::All => true,
            MatchRule::UdpDstPort(p) => {
                let dport = *port.get_or_insert_with(|| udp_dst_port(frame));
                dport == Some(p)
            }
        };
        if hit {
            return Some(id);
        }
    }
    None
}

impl Engine {
    /// Feed packets from `source` (replacing any previous source).
    pub fn set_source(&mut self, source: Box<dyn Source>) -> Result<(), SimError> {
        self.pkt.set_source(source);
        self.pkt.pull_arrival(&mut self.core)
    }

    pub(super) fn on_arrival(&mut self) -> Result<(), SimError> {
        match self.pkt.take_pending() {
            Some(Packet::Built(a)) => self.accept(a)?,
            Some(Packet::Later(p)) => self.arrive_in_place(p)?,
            None => return Ok(()),
        }
        // With back-pressure on, the source waits until the buffer drains.
        if !self.pkt.is_blocked() {
            self.pkt.pull_arrival(&mut self.core)?;
        }
        Ok(())
    }

    /// A source's packet whose frame is not built yet: arrival and
    /// admission in one step, the source writing the frame straight into
    /// the free packet-buffer slot it takes. What needs the frame in hand
    /// (packets already waiting for a slot, no free slot, the RMA block's
    /// look at it) gets it built into a vector and goes `accept`'s way.
    fn arrive_in_place(&mut self, p: PacketInfo) -> Result<(), SimError> {
        let (c, pkt) = (&mut self.core, &mut self.pkt);
        let slot = match pkt.free_slots.peek() {
            Some(slot) if c.rma.is_none() && pkt.blocked.is_empty() => slot,
            _ => {
                let a = pkt.built(p);
                return self.accept(a);
            }
        };
        count_in(c, &p.origin, p.len)?;
        let src = pkt.source.as_ref().expect("a pending packet's source");
        let off = (slot * c.cfg.pkt_slot_size) as usize;
        // Written into the slot before it is matched: an unmatched frame
        // leaves its bytes in a free slot, which no handler's window shows.
        // SAFETY: no guest runs during the write, and a source does not
        // reach the NIC's memory.
        let ectx = unsafe {
            c.mem.l2_pkt.write_in_place(off, p.len, |frame| {
                src.write_frame(p.frame_id, frame);
                match_ectx(&c.ectxs, None, frame)
            })
        };
        let Some(ectx) = ectx else {
            c.stats.unmatched += 1;
            return Ok(());
        };
        pkt.free_slots.pop();
        let her = pkt.occupy(c, slot, p.len, p.msg_id, ectx, p.eom);
        self.enqueue_her(her);
        Ok(())
    }

    fn accept(&mut self, a: Arrival) -> Result<(), SimError> {
        // With the RMA transport block, a frame the full packet buffer
        // would drop is dropped before the block sees it: lost as on the
        // wire, so the block does not acknowledge (and the sender resends)
        // what no handler will get.
        if self.core.rma.is_some()
            && self.pkt.would_drop(&self.core)
            && super::transport::is_block_frame(&a.frame)
        {
            // Counted in as any arrival, then dropped as admit would.
            if self.pkt.accept(&mut self.core, a)?.is_some() {
                self.core.stats.drops += 1;
            }
            return Ok(());
        }
        if !super::transport::from_wire(&mut self.core, &mut self.cu.links, &a.frame) {
            return Ok(());
        }
        if let Some(a) = self.pkt.accept(&mut self.core, a)? {
            self.admit(a, false);
        }
        Ok(())
    }

    /// Give a packet a slot and its HER to the MPQ engine. Returns false if
    /// it had to wait for a slot (back-pressure); it is then queued.
    fn admit(&mut self, a: Arrival, front: bool) -> bool {
        match self.pkt.admit(&mut self.core, a, front) {
            Admit::Her(her) => {
                self.enqueue_her(her);
                true
            }
            Admit::Gone => true,
            Admit::Blocked => false,
        }
    }

    /// Slots freed: let waiting packets in, in order.
    pub(super) fn on_unblock(&mut self) -> Result<(), SimError> {
        self.pkt.unblock_due();
        while let Some(a) = self.pkt.next_blocked() {
            if !self.admit(a, true) {
                return Ok(());
            }
        }
        self.pkt.unblocked(&mut self.core);
        self.pkt.pull_arrival(&mut self.core)
    }

    pub(super) fn on_inject(&mut self) -> Result<(), SimError> {
        match self.pkt.next_injected() {
            // The embedder's frame (from a network, a live port) cannot fit
            // a slot: lost as on a link with a smaller MTU, and counted,
            // rather than ending the run (a source's is an error: its file
            // or generator settings are wrong).
            Some(a) if a.frame.len() > self.core.cfg.pkt_slot_size as usize => {
                self.core.stats.too_large += 1;
                self.pkt.recycle(a.frame);
                Ok(())
            }
            Some(a) => self.accept(a),
            None => Ok(()),
        }
    }

    /// The earliest time a packet injected now would arrive: now, or after
    /// the last packet injected, whichever is later.
    pub fn next_inject_ps(&self) -> u64 {
        self.pkt.next_inject_ps(self.core.now)
    }

    /// Feed an arrival (embedding API, see the crate docs): a frame, its
    /// message, and optionally the ECTX a matching engine in front of the
    /// NIC chose. It arrives at `a.time_ps` or now, whichever is later, and
    /// after every packet injected before it. A frame longer than a packet
    /// slot (`pkt_slot_size`) is dropped then and counted
    /// (`Stats::too_large`, `Report::too_large`).
    pub fn inject(&mut self, a: Arrival) {
        self.pkt.inject(&mut self.core, a);
    }

    /// Drop one task's reference to a packet slot; the last one frees it.
    pub(super) fn release_ref(&mut self, slot: u32) {
        self.pkt.release(&mut self.core, slot, 1);
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

#[cfg(test)]
mod buffer_tests {
    use super::super::test_util::{core, drain_events, ectx};
    use super::*;

    const LEN: usize = 100;

    fn arrival(msg_id: u32) -> Arrival {
        Arrival {
            time_ps: 0,
            frame: vec![msg_id as u8; LEN],
            msg_id,
            eom: true,
            origin: "test".into(),
            ectx: None,
        }
    }

    /// A packet buffer of `slots` slots and its context, one ECTX matching all.
    fn setup(slots: u32, full: BufferFull) -> (Core, PacketBuffer) {
        let cfg = NicConfig {
            l2_pkt_size: slots * 2048,
            pkt_slot_size: 2048,
            buffer_full: full,
            ..NicConfig::default()
        };
        let mut c = core(cfg);
        c.ectxs.push(Some(ectx([false, true, false], 0)));
        let p = PacketBuffer::new(&c.cfg);
        (c, p)
    }

    /// Offer a packet as the engine does; the slot it got, if any.
    fn offer(p: &mut PacketBuffer, c: &mut Core, a: Arrival) -> Option<Option<u32>> {
        let a = p.accept(c, a).expect("fits a slot")?;
        Some(match p.admit(c, a, false) {
            Admit::Her(h) => Some(h.slot),
            Admit::Gone | Admit::Blocked => None,
        })
    }

    #[test]
    fn slots_are_counted_and_back_pressure_holds_packets_in_order() {
        let (mut c, mut p) = setup(4, BufferFull::Backpressure);
        for k in 0..4 {
            assert_eq!(
                offer(&mut p, &mut c, arrival(k)),
                Some(Some(k)),
                "lowest slot first"
            );
        }
        // The packet was written to its slot in L2.
        let (b, o) = c
            .mem
            .block(abi::L2_PKT_BASE + 3 * 2048, LEN as u32)
            .unwrap();
        assert_eq!(b.to_vec(o, LEN), vec![3u8; LEN]);
        // Full: the next waits for a slot, the one after it waits behind it.
        c.now = 1_000;
        assert_eq!(offer(&mut p, &mut c, arrival(4)), Some(None));
        assert!(p.is_blocked());
        assert_eq!(offer(&mut p, &mut c, arrival(5)), None);
        assert_eq!(p.held(), 6);
        assert_eq!(c.stats.packets_in, 6);
        assert_eq!(c.stats.drops, 0);
        // Slot 2 is freed by its second task's release only.
        p.set_refs(2, 2);
        c.now = 3_000;
        p.release(&mut c, 2, 1);
        assert!(drain_events(&mut c).is_empty());
        assert_eq!(c.stats.packets_done, 0);
        p.release(&mut c, 2, 1);
        assert_eq!(c.stats.packets_done, 1);
        assert_eq!(c.stats.bytes_done, LEN as u64);
        assert_eq!(
            c.stats.latency.summary_ns().max,
            3.0,
            "arrived at 0, done at 3 ns"
        );
        assert_eq!(drain_events(&mut c), [(3_000, "Unblock".to_string())]);
        // Unblock: the oldest waiting packet takes the slot, the next waits
        // at the head of the line.
        p.unblock_due();
        let a = p.next_blocked().unwrap();
        assert_eq!(a.msg_id, 4);
        assert!(matches!(p.admit(&mut c, a, true), Admit::Her(h) if h.slot == 2));
        let a = p.next_blocked().unwrap();
        assert!(matches!(p.admit(&mut c, a, true), Admit::Blocked));
        assert_eq!(p.next_blocked().map(|a| a.msg_id), Some(5));
    }

    #[test]
    fn a_full_buffer_drops_and_unmatched_packets_are_counted() {
        let (mut c, mut p) = setup(1, BufferFull::Drop);
        assert_eq!(offer(&mut p, &mut c, arrival(0)), Some(Some(0)));
        assert_eq!(offer(&mut p, &mut c, arrival(1)), Some(None));
        assert_eq!(c.stats.drops, 1);
        assert!(!p.is_blocked());
        c.ectxs[0].as_mut().unwrap().active = false;
        assert_eq!(offer(&mut p, &mut c, arrival(2)), Some(None));
        assert_eq!(c.stats.unmatched, 1);
        assert_eq!(p.held(), 1);
        // Larger than a slot: an error naming the packet.
        let mut big = arrival(3);
        big.frame = vec![0; 2049];
        assert!(matches!(
            p.accept(&mut c, big),
            Err(SimError::PacketTooLarge {
                len: 2049,
                slot: 2048,
                ..
            })
        ));
    }

    #[test]
    fn injected_packets_arrive_in_order_not_before_now() {
        let (mut c, mut p) = setup(4, BufferFull::Drop);
        c.now = 5_000;
        let mut a = arrival(0);
        a.time_ps = 9_000;
        p.inject(&mut c, a);
        // Asked for earlier than the one before: it comes after it.
        let mut b = arrival(1);
        b.time_ps = 2_000;
        p.inject(&mut c, b);
        assert_eq!(p.next_inject_ps(c.now), 9_000);
        assert_eq!(
            drain_events(&mut c),
            [(9_000, "Inject".to_string()), (9_000, "Inject".to_string())]
        );
        assert_eq!(p.next_injected().map(|a| a.msg_id), Some(0));
        assert_eq!(p.held(), 1);
    }
}
