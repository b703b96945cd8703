//! Host notifications: requests a handler posts to the host and the host's
//! answers (the host software around the accelerator, seed 000 §4.2; PsPIN's
//! host interface is seed 001 §3.1).

use super::*;

impl Engine {
    /// Notifications that reached the host by now, oldest first.
    pub fn poll_notifications(&mut self) -> Vec<Notification> {
        let c = &mut self.core;
        let n = c.notify_q.iter().take_while(|x| x.time_ps <= c.now).count();
        c.notify_q.drain(..n).collect()
    }

    /// Answer a notification; the handler sees `value` one PCIe latency
    /// later. Frees its ring slot.
    pub fn respond(&mut self, id: u32, value: u64) -> Result<(), String> {
        let c = &mut self.core;
        match c.notify.get_mut(&id) {
            Some(st) if !st.answered => {
                st.answered = true;
                let t = c.now + c.ns(c.cfg.host.latency_ns);
                c.pending_responses.insert(id, value);
                c.at(t, Ev::NotifyResponse { id });
                Ok(())
            }
            Some(_) => Err(format!("notification {id} was already answered")),
            None => Err(format!("no notification {id}")),
        }
    }

    pub(super) fn on_notify_response(&mut self, id: u32) {
        let c = &mut self.core;
        let Some(value) = c.pending_responses.remove(&id) else {
            return;
        };
        let Some(st) = c.notify.get_mut(&id) else {
            return;
        };
        st.response = Some(value);
        let (h, gen) = (st.hpu, st.gen);
        let Slot { hpu, ctl, .. } = &mut self.hpus[h];
        if ctl.gen == gen && ctl.state == HpuState::Blocked && ctl.wait_notify == Some(id) {
            ctl.wait_notify = None;
            ctl.notifies = ctl.notifies.saturating_sub(1);
            c.notify.remove(&id);
            // spin_notify_wait: status 0, the answer in a1 (low) / a2 (high).
            resume(hpu, ctl, c, &[0, value as u32, (value >> 32) as u32]);
        } else if ctl.gen != gen {
            c.notify.remove(&id); // its task is gone
        }
    }
}

/// A posted request: owned by the task that posted it (ECTX, HPU and the
/// HPU's task generation); only that task may wait on or test it.
pub(super) struct NotifyState {
    pub(super) ectx: EctxId,
    pub(super) hpu: usize,
    pub(super) gen: u64,
    pub(super) answered: bool,
    pub(super) response: Option<u64>,
}
