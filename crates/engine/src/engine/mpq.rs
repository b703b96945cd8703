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
    pub(super) active: bool,
    pub(super) gen: u64,
    pub(super) ectx: EctxId,
    pub(super) msg_id: u32,
    pub(super) hh: HhState,
    /// HERs waiting for their payload handler.
    pub(super) queue: VecDeque<Her>,
    /// The first packet, held for the header handler.
    pub(super) first: Option<Her>,
    pub(super) ph_inflight: u32,
    pub(super) eom: Option<Her>,
    pub(super) th_started: bool,
    pub(super) in_ready: bool,
    pub(super) last_activity: u64,
    /// This MPQ's entry in `Core::timers`.
    pub(super) timer: Option<u64>,
    /// What the message's record will say (arrivals always; errors and
    /// host writes only with the message log on).
    pub(super) rec: MessageRecord,
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

impl Core {
    /// The open message of (`ectx`, `msg_id`), to attach an error or a host
    /// write to its record; `None` when the message log is off or the
    /// message already ended.
    pub(super) fn message_record(
        &mut self,
        ectx: EctxId,
        msg_id: u32,
    ) -> Option<&mut MessageRecord> {
        if self.msg_log.is_none() {
            return None;
        }
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

    pub(super) fn record_message_error(&mut self, e: &HandlerError) {
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
        self.core.msg_log.get_or_insert_with(Vec::new);
    }

    /// Take the records of messages ended so far, in the order they ended.
    pub fn drain_message_log(&mut self) -> Vec<MessageRecord> {
        self.core
            .msg_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Records of the messages still open (no completion), e.g. when a run
    /// ended at `until_ps`.
    pub fn open_message_records(&self) -> Vec<MessageRecord> {
        let mut v: Vec<MessageRecord> = self
            .core
            .mpqs
            .iter()
            .filter(|q| q.active)
            .map(|q| q.rec.clone())
            .collect();
        v.sort_by_key(|r| (r.first_arrival_ps, r.msg_id));
        v
    }
}

impl Core {
    /// Make sure a TimeoutCheck event is queued for the earliest deadline.
    pub(super) fn arm_timer(&mut self) {
        if let Some(&(d, _)) = self.timers.first() {
            if self.timer_at.is_none_or(|t| d < t) {
                self.timer_at = Some(d);
                self.at(d, Ev::TimeoutCheck);
            }
        }
    }
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

impl Engine {
    /// Give a HER to its message's MPQ (allocating one for a new message);
    /// without a free MPQ it waits, behind earlier waiting messages.
    pub(super) fn enqueue_her(&mut self, her: Her) {
        let c = &mut self.core;
        let open = c.msg_map.get(&(her.ectx, her.msg_id)).copied();
        if open.is_none() && (!c.mpq_wait.is_empty() || c.free_mpqs.is_empty()) {
            c.mpq_wait_since.get_or_insert(c.now);
            c.mpq_wait.push(her);
            return;
        }
        self.enqueue_her_in(her, open);
    }

    pub(super) fn enqueue_her_now(&mut self, her: Her) {
        let open = self.core.msg_map.get(&(her.ectx, her.msg_id)).copied();
        self.enqueue_her_in(her, open);
    }

    /// `enqueue_her_now` with the message's MPQ looked up already (`open`:
    /// the MPQ of the open message, if it has one).
    fn enqueue_her_in(&mut self, her: Her, open: Option<usize>) {
        let c = &mut self.core;
        let key = (her.ectx, her.msg_id);
        let m = match open {
            Some(m) => m,
            None => {
                let m = c.free_mpqs.pop().expect("caller checked for a free MPQ");
                let e = c.ectxs[her.ectx].as_mut().unwrap();
                e.open_messages += 1;
                let has_hh = e.entries[0].is_some();
                let q = &mut c.mpqs[m];
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
                let arrival = c.slots[her.slot as usize].arrival_ps;
                q.rec = MessageRecord {
                    ectx: her.ectx,
                    msg_id: her.msg_id,
                    first_arrival_ps: arrival,
                    ..Default::default()
                };
                c.msg_map.insert(key, m);
                m
            }
        };
        let arrival = c.slots[her.slot as usize].arrival_ps;
        let rec = &mut c.mpqs[m].rec;
        rec.last_arrival_ps = arrival;
        rec.packets += 1;
        let e = c.ectx(her.ectx);
        let (has_hh, has_ph, has_th) = (
            e.entries[0].is_some(),
            e.entries[1].is_some(),
            e.entries[2].is_some(),
        );
        let timeout = e.spec.msg_timeout_ns;
        let q = &mut c.mpqs[m];
        let first = q.hh == HhState::Pending && q.first.is_none();
        let refs = (first && has_hh) as u32 + has_ph as u32 + (her.eom && has_th) as u32;
        c.slots[her.slot as usize].refs = refs;
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
            c.timers.insert((d, m));
            c.arm_timer();
        }
        if refs == 0 {
            self.release_ref(her.slot, self.core.now);
        }
        self.mark_ready(m);
        self.maybe_finish_message(m);
    }

    pub(super) fn runnable(&self, m: usize) -> bool {
        let c = &self.core;
        let q = &c.mpqs[m];
        if !q.active {
            return false;
        }
        match q.hh {
            HhState::Pending => q.first.is_some(),
            HhState::Running => false,
            HhState::Done => !q.queue.is_empty() || self.th_ready(m),
        }
    }

    pub(super) fn th_ready(&self, m: usize) -> bool {
        let c = &self.core;
        let q = &c.mpqs[m];
        q.hh == HhState::Done
            && q.eom.is_some()
            && q.queue.is_empty()
            && q.ph_inflight == 0
            && !q.th_started
            && c.ectx(q.ectx).entries[2].is_some()
    }

    pub(super) fn mark_ready(&mut self, m: usize) {
        if !self.core.mpqs[m].in_ready && self.runnable(m) {
            self.core.mpqs[m].in_ready = true;
            self.core.ready.push_back(m);
        }
        self.kick_scheduler();
    }

    /// A message without a completion handler is done when its last packet
    /// was seen and every handler of it finished: free its MPQ. (With a
    /// completion handler, that handler's completion frees it.)
    pub(super) fn maybe_finish_message(&mut self, m: usize) {
        let c = &self.core;
        let q = &c.mpqs[m];
        if !q.active
            || q.eom.is_none()
            || q.hh != HhState::Done
            || !q.queue.is_empty()
            || q.ph_inflight > 0
        {
            return;
        }
        if c.ectx(q.ectx).entries[2].is_some() {
            return;
        }
        self.free_mpq(m, true);
    }

    pub(super) fn free_mpq(&mut self, m: usize, completed: bool) {
        let c = &mut self.core;
        let q = &mut c.mpqs[m];
        if let Some(d) = q.timer.take() {
            c.timers.remove(&(d, m));
        }
        q.active = false;
        q.gen += 1;
        let key = (q.ectx, q.msg_id);
        let ectx = q.ectx;
        c.msg_map.remove(&key);
        if completed {
            c.stats.ectx_packets.entry(ectx).1 += 1;
            if c.keep_outbound {
                c.completions.push(MessageDone {
                    time_ps: c.now,
                    ectx,
                    msg_id: key.1,
                });
            }
        }
        if let Some(log) = &mut c.msg_log {
            let mut rec = std::mem::take(&mut c.mpqs[m].rec);
            rec.completion_ps = completed.then_some(c.now);
            log.push(rec);
        }
        if let Some(e) = c.ectxs[ectx].as_mut() {
            e.open_messages -= 1;
        }
        c.free_mpqs.push(m);
        // The oldest waiting message gets the queue, with all its packets.
        if let Some(mut hers) = c.mpq_wait.pop_message() {
            if c.mpq_wait.is_empty() {
                if let Some(s) = c.mpq_wait_since.take() {
                    c.stats.mpq_stall_ps += c.now - s;
                }
            }
            for x in hers.drain(..) {
                self.enqueue_her_now(x);
            }
            self.core.mpq_wait.give_back(hers);
        }
    }

    pub(super) fn on_timeout_check(&mut self) {
        let now = self.core.now;
        self.core.timer_at = None;
        while let Some(&(d, m)) = self.core.timers.first() {
            if d > now {
                break;
            }
            let c = &mut self.core;
            c.timers.pop_first();
            let timeout = c.ns(c.ectx(c.mpqs[m].ectx).spec.msg_timeout_ns);
            let q = &mut c.mpqs[m];
            q.timer = None;
            if q.eom.is_some() {
                continue; // complete, just still being processed
            }
            if q.last_activity + timeout > now {
                let d = q.last_activity + timeout;
                q.timer = Some(d);
                c.timers.insert((d, m));
                continue;
            }
            // The end of the message never came: reset the MPQ (seed 001
            // §3.2.3). Tasks not yet issued give up their packet references;
            // tasks in flight finish normally.
            let held: Vec<Her> = q.queue.drain(..).chain(q.first.take()).collect();
            let (ectx, msg) = (q.ectx, q.msg_id);
            c.stats.message_timeouts += 1;
            for h in held {
                self.core.slots[h.slot as usize].aborted = true;
                self.release_ref(h.slot, now);
            }
            self.core.record_error(
                now,
                ectx,
                msg,
                crate::stats::ErrorCause::MessageTimeout,
                None,
                None,
                None,
            );
            self.free_mpq(m, false);
        }
        self.core.arm_timer();
    }
}
