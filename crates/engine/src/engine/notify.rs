//! Host notifications: requests a handler posts to the host and the host's
//! answers (the host software around the accelerator, seed 000 §4.2; PsPIN's
//! host interface is seed 001 §3.1).

use super::*;

/// Host notifications: posted requests (owned by the task that posted
/// them), the host's view of them (visible from their time on), and
/// answers on their way back.
pub(super) struct Notifier {
    /// Notifications on their way to or in the host's ring, oldest first.
    queue: VecDeque<Notification>,
    states: HashMap<u32, NotifyState, FastHash>,
    /// Answers crossing PCIe (one `Ev::NotifyResponse` each).
    responses: HashMap<u32, u64, FastHash>,
    next_id: u32,
}

impl Notifier {
    pub(super) fn new() -> Notifier {
        Notifier {
            queue: VecDeque::new(),
            states: HashMap::default(),
            responses: HashMap::default(),
            next_id: 1,
        }
    }

    /// Post a request of task (`hpu`, `gen`) of `ectx`: its id, or `None`
    /// when the ECTX has `ring` unanswered requests already.
    pub(super) fn post(&mut self, ectx: EctxId, hpu: usize, gen: u64, ring: u32) -> Option<u32> {
        let open = self
            .states
            .values()
            .filter(|n| n.ectx == ectx && !n.answered)
            .count();
        if open >= ring as usize {
            return None;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.states.insert(
            id,
            NotifyState {
                ectx,
                hpu,
                gen,
                answered: false,
                response: None,
            },
        );
        Some(id)
    }

    /// The posted request as the host will see it (from `n.time_ps` on).
    pub(super) fn publish(&mut self, n: Notification) {
        self.queue.push_back(n);
    }

    /// Notifications visible to the host by `now`, oldest first.
    pub(super) fn poll(&mut self, now: u64) -> Vec<Notification> {
        let n = self.queue.iter().take_while(|x| x.time_ps <= now).count();
        self.queue.drain(..n).collect()
    }

    /// The host answers `id`: true if it may (posted, not answered yet);
    /// the answer reaches the NIC with `deliver`.
    pub(super) fn answer(&mut self, id: u32, value: u64) -> Result<(), String> {
        match self.states.get_mut(&id) {
            Some(st) if !st.answered => {
                st.answered = true;
                self.responses.insert(id, value);
                Ok(())
            }
            Some(_) => Err(format!("notification {id} was already answered")),
            None => Err(format!("no notification {id}")),
        }
    }

    /// An answer arrived: (value, HPU, task generation) of the request
    /// it answers, if that request still exists.
    pub(super) fn deliver(&mut self, id: u32) -> Option<(u64, usize, u64)> {
        let value = self.responses.remove(&id)?;
        let st = self.states.get_mut(&id)?;
        st.response = Some(value);
        Some((value, st.hpu, st.gen))
    }

    /// The answer (if any yet) of request `id` when task (`hpu`, `gen`)
    /// of `ectx` posted it; `None`: no such request of that task.
    pub(super) fn owned_by(
        &self,
        id: u32,
        ectx: EctxId,
        hpu: usize,
        gen: u64,
    ) -> Option<Option<u64>> {
        self.states
            .get(&id)
            .filter(|n| n.ectx == ectx && n.hpu == hpu && n.gen == gen)
            .map(|n| n.response)
    }

    /// The request was collected (or its task is gone).
    pub(super) fn remove(&mut self, id: u32) {
        self.states.remove(&id);
    }

    /// Task (`hpu`, `gen`) ended: requests it never collected die with it.
    pub(super) fn purge(&mut self, hpu: usize, gen: u64) {
        self.states.retain(|_, n| !(n.hpu == hpu && n.gen == gen));
    }
}

impl Engine {
    /// Notifications that reached the host by now, oldest first.
    pub fn poll_notifications(&mut self) -> Vec<Notification> {
        self.notify.poll(self.core.now)
    }

    /// Answer a notification; the handler sees `value` one PCIe latency
    /// later. Frees its ring slot.
    pub fn respond(&mut self, id: u32, value: u64) -> Result<(), String> {
        self.notify.answer(id, value)?;
        let c = &mut self.core;
        let t = c.now + c.ns(c.cfg.host.latency_ns);
        c.at(t, Ev::NotifyResponse { id });
        Ok(())
    }

    // Rare next to the per-packet events: kept out of `Engine::step`.
    #[inline(never)]
    pub(super) fn on_notify_response(&mut self, id: u32) {
        let Some((value, h, gen)) = self.notify.deliver(id) else {
            return;
        };
        let Slot { hpu, ctl, .. } = &mut self.hpus[h];
        if ctl.gen == gen && ctl.state == HpuState::Blocked && ctl.wait_notify == Some(id) {
            ctl.wait_notify = None;
            ctl.notifies = ctl.notifies.saturating_sub(1);
            self.notify.remove(id);
            // spin_notify_wait: status 0, the answer in a1 (low) / a2 (high).
            resume(
                hpu,
                ctl,
                &mut self.core,
                &[0, value as u32, (value >> 32) as u32],
            );
        } else if ctl.gen != gen {
            self.notify.remove(id); // its task is gone
        }
    }
}

/// A posted request: owned by the task that posted it (ECTX, HPU and the
/// HPU's task generation); only that task may wait on or test it.
struct NotifyState {
    ectx: EctxId,
    hpu: usize,
    gen: u64,
    answered: bool,
    response: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_ring_limit_and_answers() {
        let mut n = Notifier::new();
        // Ids count from 1 (0 is never an id); a ring of 2 per ECTX.
        assert_eq!(n.post(0, 3, 1, 2), Some(1));
        assert_eq!(n.post(0, 3, 1, 2), Some(2));
        assert_eq!(n.post(0, 4, 1, 2), None, "ECTX 0's ring is full");
        assert_eq!(n.post(1, 4, 1, 2), Some(3), "another ECTX has its own");
        // Only the posting task (ECTX, HPU, generation) sees a request.
        assert_eq!(n.owned_by(1, 0, 3, 1), Some(None));
        assert_eq!(n.owned_by(1, 0, 3, 2), None);
        assert_eq!(n.owned_by(1, 1, 3, 1), None);
        // An answer frees its ring slot at once; it is delivered later.
        assert_eq!(n.answer(1, 0xdead_beef_0000_0001), Ok(()));
        assert!(n.answer(1, 5).unwrap_err().contains("already answered"));
        assert!(n.answer(9, 5).unwrap_err().contains("no notification 9"));
        assert_eq!(n.post(0, 4, 1, 2), Some(4));
        assert_eq!(n.owned_by(1, 0, 3, 1), Some(None));
        assert_eq!(n.deliver(1), Some((0xdead_beef_0000_0001, 3, 1)));
        assert_eq!(n.owned_by(1, 0, 3, 1), Some(Some(0xdead_beef_0000_0001)));
        assert_eq!(n.deliver(1), None, "delivered once");
        // A task that ends takes its uncollected requests with it.
        n.purge(3, 1);
        assert_eq!(n.owned_by(2, 0, 3, 1), None);
        assert_eq!(n.owned_by(4, 0, 4, 1), Some(None));
    }

    #[test]
    fn the_host_sees_notifications_from_their_time_on() {
        let mut n = Notifier::new();
        for (id, t) in [(1, 100), (2, 200)] {
            n.publish(Notification {
                id,
                ectx: 0,
                hpu: 0,
                time_ps: t,
                data: vec![],
                host_ref: 0,
            });
        }
        assert!(n.poll(99).is_empty());
        assert_eq!(n.poll(150).iter().map(|x| x.id).collect::<Vec<_>>(), [1]);
        assert_eq!(n.poll(1000).iter().map(|x| x.id).collect::<Vec<_>>(), [2]);
    }
}
