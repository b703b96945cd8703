//! A host program (`Workload::host_program`, the trace replay's host
//! side) on 2 nodes running the broadcast handlers: node 0's host computes,
//! then sends node 1 the message; node 1's host waits for its NIC, which
//! wakes it on the message's completion and on the DMA into the watched
//! done word; it computes, rings its own NIC with the same frame (a
//! doorbell), waits again and finishes. Times are checked against the
//! parameters by hand.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use softspin_engine::Engine;
use softspin_netsim::workload::broadcast::{Broadcast, Mode};
use softspin_netsim::workload::{
    uc, HostProgram, HostSend, HostSignal, HostStep, NicProgram, Workload, HOST_BASE,
};
use softspin_netsim::{FatTree, NicKind};

const C0: f64 = 1e-6;
const C1: f64 = 0.5e-6;

/// What node 1's host saw: (now, signals) at each resume.
type Log = Rc<RefCell<Vec<(u64, Vec<HostSignal>)>>>;

struct Sender {
    at: usize,
    sends: Vec<HostSend>,
}

impl HostProgram for Sender {
    fn resume(&mut self, _: u64, _: Vec<HostSignal>, _: &mut Engine) -> Result<HostStep, String> {
        self.at += 1;
        Ok(match self.at {
            1 => HostStep::Compute(C0),
            2 => HostStep::Send(std::mem::take(&mut self.sends)),
            _ => HostStep::Finished,
        })
    }
}

struct Receiver {
    phase: usize,
    frame: Vec<u8>,
    done_word: u64,
    log: Log,
}

impl HostProgram for Receiver {
    fn watch(&self) -> Vec<std::ops::Range<u64>> {
        let w = self.done_word;
        std::iter::once(w..w + 8).collect()
    }
    fn resume(&mut self, now: u64, s: Vec<HostSignal>, _: &mut Engine) -> Result<HostStep, String> {
        let completed = s.iter().any(|s| matches!(s, HostSignal::Completed { .. }));
        self.log.borrow_mut().push((now, s));
        let (next, step) = match self.phase {
            1 | 4 if !completed => (self.phase, HostStep::Wait),
            0 | 3 => (self.phase + 1, HostStep::Wait),
            1 => (2, HostStep::Compute(C1)),
            2 => (3, HostStep::Doorbell(self.frame.clone())),
            _ => (5, HostStep::Finished),
        };
        self.phase = next;
        Ok(step)
    }
}

struct Programs {
    b: Broadcast,
    done_word: u64,
    log: Log,
}

impl Workload for Programs {
    fn name(&self) -> &str {
        "programs"
    }
    fn program(&self) -> &NicProgram {
        self.b.program()
    }
    fn host_sends(&self, _k: u32) -> Vec<HostSend> {
        Vec::new()
    }
    fn host_program(&self, k: u32) -> Option<Box<dyn HostProgram>> {
        let sends = self.b.host_sends(0);
        Some(match k {
            0 => Box::new(Sender { at: 0, sends }),
            _ => Box::new(Receiver {
                phase: 0,
                frame: sends[0].frame.clone(),
                done_word: self.done_word,
                log: self.log.clone(),
            }),
        })
    }
    fn expected_done(&self) -> u32 {
        2
    }
    fn node_done(&self, _k: u32, _e: &mut Engine) -> bool {
        unreachable!("nodes with a host program are done when it finishes")
    }
    fn verify(&self, k: u32, e: Option<&mut Engine>) -> bool {
        self.b.verify(k, e)
    }
}

#[test]
fn a_host_program_computes_sends_rings_its_nic_and_waits_for_it() {
    let (b, spec) = common::broadcast(2, 8, Mode::Store, NicKind::Integrated, 5, 1e-3);
    let p = spec.params.clone();
    let frame = b.host_sends(0)[0].frame.len() as u64;
    let log: Log = Rc::default();
    let w = Programs {
        b,
        done_word: HOST_BASE + uc("UC_DONE").unwrap(),
        log: log.clone(),
    };
    let out = softspin_netsim::run(spec, Box::new(w)).unwrap();
    assert!(out.verified && out.ended == "done", "{out:?}");
    // Only node 0's send crosses the network; the doorbell does not.
    assert_eq!(out.transfers, 1);
    assert_eq!(out.per_node[1].packets, 2);
    let o_ps = p.o_ns * 1e3;
    let close = |a: f64, b: f64, what: &str| {
        assert!((a - b).abs() <= 1.0, "{what}: {a} ps, by hand {b} ps")
    };
    close(
        out.per_node[0].done_ps.unwrap() as f64,
        C0 * 1e12 + o_ps,
        "node 0 finishes once its send is handed to the port",
    );
    let tree = FatTree::new(2, p.switch_ports);
    let arrival = C0 * 1e12 + o_ps + tree.transfer_s(&p, 0, 1, frame) * 1e12;
    close(
        out.per_node[1].first_arrival_ps.unwrap() as f64,
        arrival,
        "node 1's packet",
    );
    let log = log.borrow();
    assert!(log[0].1.is_empty() && log[0].0 == 0, "{log:?}");
    let completion = |i: usize| {
        log[i].1.iter().find_map(|s| match s {
            HostSignal::Completed { time_ps, .. } => Some(*time_ps),
            _ => None,
        })
    };
    let done_word = HOST_BASE + uc("UC_DONE").unwrap();
    // Woken by the done word's DMA (the tail handler writes it before it
    // returns), then by the message's completion, each when it happened.
    let wrote = log
        .iter()
        .position(|(now, s)| {
            s.iter().any(|s| matches!(s, HostSignal::Wrote { addr, time_ps, .. } if *addr == done_word && time_ps == now))
        })
        .unwrap_or_else(|| panic!("no write into the done word: {log:?}"));
    let c1 = (wrote..log.len())
        .find(|&i| completion(i).is_some())
        .unwrap_or_else(|| panic!("no completion: {log:?}"));
    let done1 = completion(c1).unwrap();
    assert_eq!(log[c1].0, done1, "woken at its NIC's completion, not later");
    assert!(log[wrote].0 <= done1 && done1 as f64 > arrival, "{log:?}");
    // The doorbell rings after the compute; its frame is handled again
    // (the handlers' second run of a message is not the first's twin:
    // 1.89 us, then 2.06 us here).
    let ring = done1 + (C1 * 1e12).round() as u64;
    assert_eq!(log[c1 + 1].0, ring, "{log:?}");
    let c2 = log.len() - 1;
    let done2 = completion(c2).unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(log[c2].0, done2, "{log:?}");
    let first = done1 as f64 - out.per_node[1].first_arrival_ps.unwrap() as f64;
    let again = (done2 - ring) as f64;
    assert!(
        again > 0.0 && again < 2.0 * first,
        "the message took {first} ps, the doorbell's {again} ps"
    );
    assert_eq!(out.per_node[1].done_ps, Some(done2));
}
