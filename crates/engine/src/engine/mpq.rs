//! Handler execution requests and the MPQ engine (seed 001 §3.2.1, §3.2.3):
//! one message processing queue per message keeps sPIN's ordering (header
//! handler alone and first, payload handlers in parallel, completion handler
//! last), issues ready messages round-robin, and resets idle messages on
//! timeout.

use super::*;

/// A handler execution request: one packet in the L2 packet buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Her {
    pub(super) slot: u32,
    pub(super) len: u32,
    pub(super) msg_id: u32,
    pub(super) ectx: EctxId,
    pub(super) eom: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum HhState {
    Pending,
    Running,
    Done,
}

/// A message processing queue (seed 001 §3.2.1).
pub(super) struct Mpq {
    active: bool,
    pub(super) gen: u64,
    pub(super) ectx: EctxId,
    msg_id: u32,
    hh: HhState,
    /// HERs waiting for their payload handler.
    queue: VecDeque<Her>,
    /// The first packet, held for the header handler.
    first: Option<Her>,
    ph_inflight: u32,
    eom: Option<Her>,
    th_started: bool,
    in_ready: bool,
    last_activity: u64,
    /// This MPQ's deadline in `MpqEngine::timers`.
    timer: Option<u64>,
    /// What the message's record will say (arrivals always; errors and
    /// host writes only with the message log on).
    rec: MessageRecord,
}

impl Mpq {
    /// A free MPQ, made when one is first needed.
    fn new() -> Mpq {
        Mpq {
            active: false,
            gen: 0,
            ectx: 0,
            msg_id: 0,
            hh: HhState::Done,
            queue: VecDeque::new(),
            first: None,
            ph_inflight: 0,
            eom: None,
            th_started: false,
            in_ready: false,
            last_activity: 0,
            timer: None,
            rec: MessageRecord::default(),
        }
    }
}

/// Most errors and host writes a message record lists (the totals count
/// every one): keeps a record's memory bounded whatever handlers do.
pub const MAX_RECORD_ITEMS: usize = 256;

/// One message from its first packet to its end, for per-message results
/// (`Engine::enable_message_log`, `softspin sim --records`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MessageRecord {
    #[serde(skip)]
    pub ectx: EctxId,
    pub msg_id: u32,
    /// When its first and last packets got a packet-buffer slot (ps).
    pub first_arrival_ps: u64,
    pub last_arrival_ps: u64,
    pub packets: u32,
    /// When its last handler finished; `None` if the message was reset
    /// (timeout) or the run ended first.
    pub completion_ps: Option<u64>,
    /// Handler and message errors, in order (at most [`MAX_RECORD_ITEMS`]).
    pub errors: Vec<HandlerError>,
    pub errors_total: u64,
    /// Host-direct writes (address, value), in order (at most [`MAX_RECORD_ITEMS`]).
    pub host_writes: Vec<(u64, u64)>,
    pub host_writes_total: u64,
}

/// HERs waiting for a free MPQ, by message: messages in the order of their
/// first waiting HER, each with its HERs in arrival order. Freeing an MPQ
/// hands the oldest waiting message all its HERs at once, in time
/// independent of how many other messages wait.
#[derive(Default)]
pub(super) struct MpqWait {
    order: VecDeque<(EctxId, u32)>,
    hers: HashMap<(EctxId, u32), VecDeque<Her>, FastHash>,
    /// Emptied queues of messages that got an MPQ, reused for the next
    /// waiting messages (when every packet is a message, one per packet).
    spare: Vec<VecDeque<Her>>,
}

/// Emptied HER queues `MpqWait` keeps at most.
const MAX_SPARE_QUEUES: usize = 64;

impl MpqWait {
    pub(super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn push(&mut self, her: Her) {
        let key = (her.ectx, her.msg_id);
        match self.hers.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut().push_back(her),
            std::collections::hash_map::Entry::Vacant(v) => {
                self.order.push_back(key);
                let mut q = self.spare.pop().unwrap_or_default();
                q.push_back(her);
                v.insert(q);
            }
        }
    }

    /// The oldest waiting message's HERs.
    fn pop_message(&mut self) -> Option<VecDeque<Her>> {
        let key = self.order.pop_front()?;
        self.hers.remove(&key)
    }

    /// Take back a queue `pop_message` returned, once emptied.
    fn give_back(&mut self, q: VecDeque<Her>) {
        if q.is_empty() && self.spare.len() < MAX_SPARE_QUEUES {
            self.spare.push(q);
        }
    }
}

/// The MPQ engine: one MPQ per open message, the HERs waiting for a free
/// MPQ, message deadlines, the ready queue the scheduler takes tasks from
/// (round-robin), and the records of ended messages.
pub(super) struct MpqEngine {
    /// Per MPQ handed out so far (grown on first use).
    mpqs: Vec<Mpq>,
    free: FreeIds,
    msg_map: HashMap<(EctxId, u32), usize, FastHash>,
    wait: MpqWait,
    wait_since: Option<u64>,
    /// Message deadlines (deadline, MPQ), checked lazily: an entry is only
    /// re-examined when due, so packets do not touch the set.
    timers: BTreeSet<(u64, usize)>,
    timer_at: Option<u64>,
    /// Messages with a task to issue, round-robin.
    ready: VecDeque<usize>,
    /// Records of ended messages (`Engine::enable_message_log`).
    log: Option<Vec<MessageRecord>>,
}

/// A message the MPQ engine reset (its deadline passed, seed 001 §3.2.3).
pub(super) struct Expired {
    pub(super) mpq: usize,
    pub(super) ectx: EctxId,
    pub(super) msg_id: u32,
    /// HERs never issued: they give up their packet references.
    pub(super) held: Vec<Her>,
}

impl MpqEngine {
    /// `n` free MPQs, the lowest handed out first.
    pub(super) fn new(n: u32) -> MpqEngine {
        MpqEngine {
            mpqs: Vec::new(),
            free: FreeIds::new(n),
            msg_map: HashMap::default(),
            wait: MpqWait::default(),
            wait_since: None,
            timers: BTreeSet::new(),
            timer_at: None,
            ready: VecDeque::new(),
            log: None,
        }
    }

    pub(super) fn mpq(&self, m: usize) -> &Mpq {
        &self.mpqs[m]
    }

    /// The MPQ of an open message.
    pub(super) fn open(&self, ectx: EctxId, msg_id: u32) -> Option<usize> {
        self.msg_map.get(&(ectx, msg_id)).copied()
    }

    /// Park a HER of a new message when no MPQ is free (or older messages
    /// wait for one already); false: it can have an MPQ now.
    pub(super) fn park(&mut self, her: Her, open: Option<usize>, now: u64) -> bool {
        if open.is_none() && (!self.wait.is_empty() || self.free.is_empty()) {
            self.wait_since.get_or_insert(now);
            self.wait.push(her);
            return true;
        }
        false
    }

    /// Put a HER in its message's MPQ (`open`), or open one for it; returns
    /// the MPQ and how many tasks will reference the packet (header handler
    /// for a first packet, payload handler, completion handler for the last).
    /// Arms the message's deadline.
    pub(super) fn add(
        &mut self,
        c: &mut Core,
        her: Her,
        open: Option<usize>,
        arrival_ps: u64,
    ) -> (usize, u32) {
        let key = (her.ectx, her.msg_id);
        let m = match open {
            Some(m) => m,
            None => {
                let m = self.free.pop().expect("caller checked for a free MPQ") as usize;
                if m == self.mpqs.len() {
                    self.mpqs.push(Mpq::new());
                }
                let e = c.ectxs[her.ectx].as_mut().unwrap();
                e.open_messages += 1;
                let has_hh = e.entries[0].is_some();
                let q = &mut self.mpqs[m];
                q.active = true;
                q.gen += 1;
                q.ectx = her.ectx;
                q.msg_id = her.msg_id;
                q.hh = if has_hh {
                    HhState::Pending
                } else {
                    HhState::Done
                };
                q.queue.clear();
                q.first = None;
                q.ph_inflight = 0;
                q.eom = None;
                q.th_started = false;
                q.timer = None;
                q.rec = MessageRecord {
                    ectx: her.ectx,
                    msg_id: her.msg_id,
                    first_arrival_ps: arrival_ps,
                    ..Default::default()
                };
                self.msg_map.insert(key, m);
                m
            }
        };
        let rec = &mut self.mpqs[m].rec;
        rec.last_arrival_ps = arrival_ps;
        rec.packets += 1;
        let e = c.ectx(her.ectx);
        let (has_hh, has_ph, has_th) = (
            e.entries[0].is_some(),
            e.entries[1].is_some(),
            e.entries[2].is_some(),
        );
        let timeout = e.spec.msg_timeout_ns;
        let q = &mut self.mpqs[m];
        let first = q.hh == HhState::Pending && q.first.is_none();
        let refs = (first && has_hh) as u32 + has_ph as u32 + (her.eom && has_th) as u32;
        if first {
            q.first = Some(her);
        }
        if has_ph {
            q.queue.push_back(her);
        }
        if her.eom {
            q.eom = Some(her);
        }
        q.last_activity = c.now;
        if timeout > 0 && q.timer.is_none() {
            let d = c.now + crate::units::Ns(timeout).to_ps_saturating().0;
            q.timer = Some(d);
            self.timers.insert((d, m));
            self.arm_timer(c);
        }
        (m, refs)
    }

    /// sPIN's ordering: the header handler alone and first, then payload
    /// handlers (in parallel), the completion handler last.
    pub(super) fn runnable(&self, m: usize, ectxs: &[Option<Ectx>]) -> bool {
        let q = &self.mpqs[m];
        if !q.active {
            return false;
        }
        match q.hh {
            HhState::Pending => q.first.is_some(),
            HhState::Running => false,
            HhState::Done => !q.queue.is_empty() || self.th_ready(m, ectxs),
        }
    }

    fn th_ready(&self, m: usize, ectxs: &[Option<Ectx>]) -> bool {
        let q = &self.mpqs[m];
        q.hh == HhState::Done
            && q.eom.is_some()
            && q.queue.is_empty()
            && q.ph_inflight == 0
            && !q.th_started
            && ectxs[q.ectx].as_ref().expect("live ECTX").entries[2].is_some()
    }

    /// Put a runnable message in the ready queue (once).
    pub(super) fn mark_ready(&mut self, m: usize, ectxs: &[Option<Ectx>]) {
        if !self.mpqs[m].in_ready && self.runnable(m, ectxs) {
            self.mpqs[m].in_ready = true;
            self.ready.push_back(m);
        }
    }

    pub(super) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    pub(super) fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// The next message in round-robin order, out of the ready queue.
    pub(super) fn pop_ready(&mut self) -> Option<usize> {
        let m = self.ready.pop_front()?;
        self.mpqs[m].in_ready = false;
        Some(m)
    }

    /// Back in the ready queue: at its end (its turn passed) or its front
    /// (no cluster could take its task; it goes first next time).
    pub(super) fn requeue(&mut self, m: usize, front: bool) {
        self.mpqs[m].in_ready = true;
        if front {
            self.ready.push_front(m);
        } else {
            self.ready.push_back(m);
        }
    }

    /// The task a runnable message issues next.
    pub(super) fn next_task(&self, m: usize) -> (HandlerKind, Her) {
        let q = &self.mpqs[m];
        match q.hh {
            HhState::Pending => (HandlerKind::Header, q.first.unwrap()),
            _ if !q.queue.is_empty() => (HandlerKind::Payload, *q.queue.front().unwrap()),
            _ => (HandlerKind::Completion, q.eom.unwrap()),
        }
    }

    /// The task `next_task` named went to a cluster.
    pub(super) fn issued(&mut self, m: usize, kind: HandlerKind) {
        let q = &mut self.mpqs[m];
        match kind {
            HandlerKind::Header => {
                q.hh = HhState::Running;
                q.first = None;
            }
            HandlerKind::Payload => {
                q.queue.pop_front();
                q.ph_inflight += 1;
            }
            HandlerKind::Completion => q.th_started = true,
        }
    }

    /// A task of MPQ `m` (of generation `gen`) completed; false if the
    /// message was reset meanwhile (the MPQ may serve another by now).
    pub(super) fn task_done(&mut self, m: usize, gen: u64, kind: HandlerKind) -> bool {
        let q = &mut self.mpqs[m];
        if !(q.active && q.gen == gen) {
            return false;
        }
        match kind {
            HandlerKind::Header => q.hh = HhState::Done,
            HandlerKind::Payload => q.ph_inflight -= 1,
            HandlerKind::Completion => {}
        }
        true
    }

    /// A message without a completion handler is done when its last packet
    /// was seen and every handler of it finished. (With a completion
    /// handler, that handler's completion ends it.)
    pub(super) fn finished(&self, m: usize, ectxs: &[Option<Ectx>]) -> bool {
        let q = &self.mpqs[m];
        if !q.active
            || q.eom.is_none()
            || q.hh != HhState::Done
            || !q.queue.is_empty()
            || q.ph_inflight > 0
        {
            return false;
        }
        ectxs[q.ectx].as_ref().expect("live ECTX").entries[2].is_none()
    }

    /// Free MPQ `m`: the message ended (`completed`) or was reset. Returns
    /// the HERs of the oldest message waiting for an MPQ, which gets it
    /// now (the caller enqueues them, then gives the queue back).
    pub(super) fn free(
        &mut self,
        c: &mut Core,
        m: usize,
        completed: bool,
    ) -> Option<VecDeque<Her>> {
        let q = &mut self.mpqs[m];
        if let Some(d) = q.timer.take() {
            self.timers.remove(&(d, m));
        }
        q.active = false;
        q.gen += 1;
        let key = (q.ectx, q.msg_id);
        let ectx = q.ectx;
        self.msg_map.remove(&key);
        if completed {
            c.stats.ectx_packets.entry(ectx).1 += 1;
            c.outputs.completion(MessageDone {
                time_ps: c.now,
                ectx,
                msg_id: key.1,
            });
        }
        if let Some(log) = &mut self.log {
            let mut rec = std::mem::take(&mut self.mpqs[m].rec);
            rec.completion_ps = completed.then_some(c.now);
            log.push(rec);
        }
        if let Some(e) = c.ectxs[ectx].as_mut() {
            e.open_messages -= 1;
        }
        self.free.push(m as u32);
        let hers = self.wait.pop_message()?;
        if self.wait.is_empty() {
            if let Some(s) = self.wait_since.take() {
                c.stats.mpq_stall_ps += c.now - s;
            }
        }
        Some(hers)
    }

    /// Take back a queue `free` returned, once emptied.
    pub(super) fn give_back(&mut self, q: VecDeque<Her>) {
        self.wait.give_back(q);
    }

    /// Make sure a TimeoutCheck event is queued for the earliest deadline.
    pub(super) fn arm_timer(&mut self, c: &mut Core) {
        if let Some(&(d, _)) = self.timers.first() {
            if self.timer_at.is_none_or(|t| d < t) {
                self.timer_at = Some(d);
                c.at(d, Ev::TimeoutCheck);
            }
        }
    }

    /// Nothing is due at `t` (the message of the deadline ended): a
    /// TimeoutCheck then is dropped without advancing time.
    pub(super) fn nothing_due(&self, t: u64) -> bool {
        self.timers.first().is_none_or(|f| f.0 > t)
    }

    /// A TimeoutCheck at `t` was dropped: re-arm for the next deadline.
    pub(super) fn check_dropped(&mut self, c: &mut Core, t: u64) {
        if self.timer_at == Some(t) {
            self.timer_at = None;
            self.arm_timer(c);
        }
    }

    /// A TimeoutCheck is being processed.
    pub(super) fn check_due(&mut self) {
        self.timer_at = None;
    }

    /// The next message whose deadline passed by `now` without its last
    /// packet; deadlines of messages active since move on.
    pub(super) fn next_expired(&mut self, c: &Core, now: u64) -> Option<Expired> {
        while let Some(&(d, m)) = self.timers.first() {
            if d > now {
                break;
            }
            self.timers.pop_first();
            let timeout = c.ns(c.ectx(self.mpqs[m].ectx).spec.msg_timeout_ns);
            let q = &mut self.mpqs[m];
            q.timer = None;
            if q.eom.is_some() {
                continue; // complete, just still being processed
            }
            if q.last_activity + timeout > now {
                let d = q.last_activity + timeout;
                q.timer = Some(d);
                self.timers.insert((d, m));
                continue;
            }
            let held: Vec<Her> = q.queue.drain(..).chain(q.first.take()).collect();
            return Some(Expired {
                mpq: m,
                ectx: q.ectx,
                msg_id: q.msg_id,
                held,
            });
        }
        None
    }

    pub(super) fn enable_log(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    pub(super) fn logging(&self) -> bool {
        self.log.is_some()
    }

    pub(super) fn drain_log(&mut self) -> Vec<MessageRecord> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub(super) fn open_records(&self) -> Vec<MessageRecord> {
        let mut v: Vec<MessageRecord> = self
            .mpqs
            .iter()
            .filter(|q| q.active)
            .map(|q| q.rec.clone())
            .collect();
        v.sort_by_key(|r| (r.first_arrival_ps, r.msg_id));
        v
    }

    /// The open message of (`ectx`, `msg_id`), to attach an error or a host
    /// write to its record; `None` when the message log is off or the
    /// message already ended.
    fn message_record(&mut self, ectx: EctxId, msg_id: u32) -> Option<&mut MessageRecord> {
        self.log.as_ref()?;
        let m = *self.msg_map.get(&(ectx, msg_id))?;
        Some(&mut self.mpqs[m].rec)
    }

    pub(super) fn record_host_write(&mut self, ectx: EctxId, msg_id: u32, addr: u64, value: u64) {
        if let Some(r) = self.message_record(ectx, msg_id) {
            r.host_writes_total += 1;
            if r.host_writes.len() < MAX_RECORD_ITEMS {
                r.host_writes.push((addr, value));
            }
        }
    }

    pub(super) fn record_error(&mut self, e: &HandlerError) {
        if let Some(r) = self.message_record(e.ectx, e.msg_id) {
            r.errors_total += 1;
            if r.errors.len() < MAX_RECORD_ITEMS {
                r.errors.push(e.clone());
            }
        }
    }
}

impl Engine {
    /// Keep a [`MessageRecord`] for every message that ends (completes or is
    /// reset), to be taken with [`Engine::drain_message_log`].
    pub fn enable_message_log(&mut self) {
        self.mpq.enable_log();
    }

    /// Take the records of messages ended so far, in the order they ended.
    pub fn drain_message_log(&mut self) -> Vec<MessageRecord> {
        self.mpq.drain_log()
    }

    /// Records of the messages still open (no completion), e.g. when a run
    /// ended at `until_ps`.
    pub fn open_message_records(&self) -> Vec<MessageRecord> {
        self.mpq.open_records()
    }

    /// Give a HER to its message's MPQ (allocating one for a new message);
    /// without a free MPQ it waits, behind earlier waiting messages.
    pub(super) fn enqueue_her(&mut self, her: Her) {
        let open = self.mpq.open(her.ectx, her.msg_id);
        if self.mpq.park(her, open, self.core.now) {
            return;
        }
        self.enqueue_her_in(her, open);
    }

    fn enqueue_her_in(&mut self, her: Her, open: Option<usize>) {
        let arrival = self.pkt.arrival_ps(her.slot);
        let (m, refs) = self.mpq.add(&mut self.core, her, open, arrival);
        self.pkt.set_refs(her.slot, refs);
        if refs == 0 {
            self.release_ref(her.slot);
        }
        self.mark_ready(m);
        self.maybe_finish_message(m);
    }

    pub(super) fn mark_ready(&mut self, m: usize) {
        self.mpq.mark_ready(m, &self.core.ectxs);
        self.kick_scheduler();
    }

    pub(super) fn maybe_finish_message(&mut self, m: usize) {
        if self.mpq.finished(m, &self.core.ectxs) {
            self.free_mpq(m, true);
        }
    }

    pub(super) fn free_mpq(&mut self, m: usize, completed: bool) {
        // The oldest waiting message gets the queue, with all its packets.
        if let Some(mut hers) = self.mpq.free(&mut self.core, m, completed) {
            for x in hers.drain(..) {
                let open = self.mpq.open(x.ectx, x.msg_id);
                self.enqueue_her_in(x, open);
            }
            self.mpq.give_back(hers);
        }
    }

    // Rare next to the per-packet events: kept out of `Engine::step`.
    #[inline(never)]
    pub(super) fn on_timeout_check(&mut self) {
        let now = self.core.now;
        self.mpq.check_due();
        while let Some(x) = self.mpq.next_expired(&self.core, now) {
            // The end of the message never came: reset the MPQ (seed 001
            // §3.2.3). Tasks not yet issued give up their packet references;
            // tasks in flight finish normally.
            self.core.stats.message_timeouts += 1;
            for h in x.held {
                self.pkt.mark_aborted(h.slot);
                self.release_ref(h.slot);
            }
            self.core.record_error(
                &mut self.mpq,
                now,
                x.ectx,
                x.msg_id,
                crate::stats::ErrorCause::MessageTimeout,
                None,
                None,
                None,
            );
            self.free_mpq(x.mpq, false);
        }
        self.mpq.arm_timer(&mut self.core);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{core, drain_events, ectx};
    use super::*;

    fn her(slot: u32, msg_id: u32, eom: bool) -> Her {
        Her {
            slot,
            len: 64,
            msg_id,
            ectx: 0,
            eom,
        }
    }

    /// Add a HER as the engine does (an MPQ must be free or open).
    fn add(q: &mut MpqEngine, c: &mut Core, h: Her) -> (usize, u32) {
        let open = q.open(h.ectx, h.msg_id);
        assert!(!q.park(h, open, c.now), "an MPQ is free");
        q.add(c, h, open, c.now)
    }

    /// Issue `m`'s next task as the dispatcher does; returns its kind and packet.
    fn issue(q: &mut MpqEngine, m: usize) -> (HandlerKind, u32) {
        let (kind, h) = q.next_task(m);
        q.issued(m, kind);
        (kind, h.slot)
    }

    #[test]
    fn header_alone_and_first_payloads_in_parallel_completion_last() {
        let mut c = core(NicConfig::default());
        c.ectxs.push(Some(ectx([true, true, true], 0)));
        let mut q = MpqEngine::new(4);
        // Three packets: the first is referenced by the header and payload
        // handlers, the middle by its payload handler, the last by its
        // payload and the completion handler.
        let (m, r0) = add(&mut q, &mut c, her(0, 7, false));
        assert_eq!(r0, 2);
        assert_eq!(add(&mut q, &mut c, her(1, 7, false)), (m, 1));
        assert_eq!(add(&mut q, &mut c, her(2, 7, true)), (m, 2));
        assert_eq!(c.ectx(0).open_messages, 1);
        let gen = q.mpq(m).gen;

        assert!(q.runnable(m, &c.ectxs));
        assert_eq!(issue(&mut q, m), (HandlerKind::Header, 0));
        // Alone: nothing else runs while the header handler does.
        assert!(!q.runnable(m, &c.ectxs));
        assert!(q.task_done(m, gen, HandlerKind::Header));
        // Payload handlers one after the other without waiting for each other.
        for slot in 0..3 {
            assert!(q.runnable(m, &c.ectxs));
            assert_eq!(issue(&mut q, m), (HandlerKind::Payload, slot));
        }
        // The completion handler waits for every payload handler.
        assert!(!q.runnable(m, &c.ectxs));
        for k in 0..3 {
            assert!(q.task_done(m, gen, HandlerKind::Payload));
            assert_eq!(q.runnable(m, &c.ectxs), k == 2, "after payload {k}");
        }
        assert_eq!(issue(&mut q, m), (HandlerKind::Completion, 2));
        assert!(!q.runnable(m, &c.ectxs));
        // With a completion handler, only its completion ends the message.
        assert!(!q.finished(m, &c.ectxs));
        assert!(q.free(&mut c, m, true).is_none());
        assert_eq!(q.open(0, 7), None);
        assert_eq!(c.ectx(0).open_messages, 0);
        assert_eq!(c.outputs.completions.len(), 1);
        // A task of the ended message completing late changes nothing.
        assert!(!q.task_done(m, gen, HandlerKind::Payload));
    }

    #[test]
    fn payload_only_message_finishes_when_its_last_handler_does() {
        let mut c = core(NicConfig::default());
        c.ectxs.push(Some(ectx([false, true, false], 0)));
        let mut q = MpqEngine::new(1);
        let (m, r) = add(&mut q, &mut c, her(0, 3, true));
        assert_eq!(r, 1);
        let gen = q.mpq(m).gen;
        assert_eq!(issue(&mut q, m), (HandlerKind::Payload, 0));
        assert!(!q.finished(m, &c.ectxs));
        q.task_done(m, gen, HandlerKind::Payload);
        assert!(q.finished(m, &c.ectxs));
    }

    #[test]
    fn ready_queue_is_round_robin_among_messages() {
        let mut c = core(NicConfig::default());
        c.ectxs.push(Some(ectx([false, true, false], 0)));
        let mut q = MpqEngine::new(4);
        // Messages 10, 11, 12 with 3, 1 and 2 packets, all arrived.
        let mut slot = 0;
        for (msg, n) in [(10, 3), (11, 1), (12, 2)] {
            for k in 0..n {
                let (m, _) = add(&mut q, &mut c, her(slot, msg, k == n - 1));
                q.mark_ready(m, &c.ectxs);
                slot += 1;
            }
        }
        // The dispatcher's loop: one task per turn, the message goes to the
        // back while it has more.
        let mut order = Vec::new();
        while let Some(m) = q.pop_ready() {
            let (_, h) = q.next_task(m);
            order.push(h.msg_id);
            q.issued(m, HandlerKind::Payload);
            if q.runnable(m, &c.ectxs) {
                q.requeue(m, false);
            }
        }
        assert_eq!(order, [10, 11, 12, 10, 12, 10]);
    }

    #[test]
    fn new_messages_wait_for_a_free_mpq_in_arrival_order() {
        let mut c = core(NicConfig::default());
        c.ectxs.push(Some(ectx([false, true, false], 0)));
        let mut q = MpqEngine::new(1);
        let (m, _) = add(&mut q, &mut c, her(0, 1, true));
        // Messages 2 then 3 wait; 2's second packet waits with it.
        c.now = 1000;
        for (slot, msg, eom) in [(1, 2, false), (2, 3, true), (3, 2, true)] {
            let h = her(slot, msg, eom);
            assert!(q.park(h, q.open(0, msg), c.now));
        }
        c.now = 5000;
        let hers = q.free(&mut c, m, true).expect("message 2 gets the MPQ");
        let got: Vec<(u32, u32)> = hers.iter().map(|h| (h.msg_id, h.slot)).collect();
        assert_eq!(got, [(2, 1), (2, 3)]);
        // Message 3 still waits: the stall is not over yet.
        assert_eq!(c.stats.mpq_stall_ps, 0);
        q.give_back(hers);
        let (m2, _) = q.add(&mut c, her(1, 2, false), None, 1000);
        c.now = 9000;
        let hers = q.free(&mut c, m2, true).expect("then message 3");
        assert_eq!(hers.iter().map(|h| h.msg_id).collect::<Vec<_>>(), [3]);
        assert_eq!(c.stats.mpq_stall_ps, 9000 - 1000);
    }

    #[test]
    fn an_idle_message_is_reset_at_its_deadline() {
        let timeout_ns = 500;
        let mut c = core(NicConfig::default());
        c.ectxs.push(Some(ectx([true, true, false], timeout_ns)));
        let mut q = MpqEngine::new(2);
        c.now = 1_000;
        let (m, _) = add(&mut q, &mut c, her(0, 4, false));
        // Activity at 1.2 us moves the deadline (checked lazily, at the old one).
        c.now = 1_200;
        add(&mut q, &mut c, her(1, 4, false));
        let deadline = 1_000 + timeout_ns * 1000;
        let events = drain_events(&mut c);
        assert_eq!(events, [(deadline, "TimeoutCheck".to_string())]);
        q.check_due();
        assert!(q.next_expired(&c, deadline).is_none(), "moved on");
        q.arm_timer(&mut c);
        let later = 1_200 + timeout_ns * 1000;
        assert_eq!(drain_events(&mut c), [(later, "TimeoutCheck".to_string())]);
        q.check_due();
        let x = q.next_expired(&c, later).expect("expired");
        assert_eq!((x.mpq, x.msg_id), (m, 4));
        // Its packets not yet issued: both payloads and the header's packet.
        let mut held: Vec<u32> = x.held.iter().map(|h| h.slot).collect();
        held.sort();
        assert_eq!(held, [0, 0, 1]);
    }
}
