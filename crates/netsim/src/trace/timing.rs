//! A trace's completion time in the LogGP model of seed 004 §5.1, with the
//! matching on the NIC or on the host CPU: the closed-form side of the
//! replay (as `loggp.rs` is for the broadcast), for the same parameters
//! (`NetParams`), computed without SimGrid or an engine.
//!
//! Model (docs/scale.md "Trace replay"), times in ns:
//! - A rank's CPU runs its program: `compute` takes flops / `host_flops`;
//!   issuing a send or posting a receive costs o; a wait ends when all of
//!   its requests have completed.
//! - The sender's NIC injects one message per g, at G per byte: an eager
//!   message (at most `eager_max` bytes) lands at the receiver's NIC L +
//!   s·G after injection, then in host memory a DMA later. A rendezvous
//!   send first sends its header (L).
//! - NIC matching: an eager message meeting its posted receive is written
//!   into the buffer (case I); one arriving first waits in an unexpected
//!   slot and the CPU copies it out when it waits for the receive (case
//!   III). A rendezvous is matched by the receiver's NIC when both header
//!   and receive are there: a get (L), the data (L + s·G, then DMA), and
//!   the FIN to the sender (L). No CPU takes part.
//! - Host matching: every message lands in a bounce buffer; the receiving
//!   CPU matches it (o) and copies it (eager) when it waits for the
//!   receive. A rendezvous needs both CPUs inside a wait: the receiver's
//!   sends a clear-to-send (o, L), the sender's then sends the data (o,
//!   L + s·G, DMA into the receive buffer). A CPU in a wait progresses all
//!   its requests; what arrives after it left is taken as it comes (an
//!   optimistic bound: real MPI would wait for the next call).
//! - Not modelled: contention (links, the NIC's DMA, HPUs), copies of one
//!   wait done one after the other, a rendezvous's data holding the
//!   sender's NIC. The SimGrid replay has them.
//! - Copies run at the host CPU's memory bandwidth, the integrated NIC's
//!   (seed 004 §4.3: "the same bandwidth as the main CPU").

use std::collections::VecDeque;

use super::program::{Program, Step};
use super::reference::Reference;
use super::ti::TraceError;
use crate::loggp::{dma_ns, FatTree};
use crate::params::{NetParams, NicKind};

/// Where messages are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matching {
    Nic,
    Host,
}

/// The model's inputs besides the programs.
#[derive(Clone, Debug)]
pub struct Model<'a> {
    pub params: &'a NetParams,
    pub nic: NicKind,
    pub matching: Matching,
    pub eager_max: u64,
    /// Host speed for `compute` actions, flop/s.
    pub host_flops: f64,
}

/// What the model gives: every rank's end and the trace's completion.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub rank_end_ns: Vec<f64>,
    pub completion_ns: f64,
}

#[derive(Clone, Copy, Default)]
struct Req {
    /// CPU time after issuing (o paid).
    issued: Option<f64>,
    /// The NIC put it on the wire (sends).
    injected: Option<f64>,
    /// The CPU entered a wait that includes it.
    waiting: Option<f64>,
    done: Option<f64>,
}

/// The host CPU's copy of `bytes` (an unexpected message out of its slot
/// or bounce buffer), at the CPU's memory bandwidth: the integrated NIC's
/// (seed 004 §4.3: "the same bandwidth as the main CPU").
pub fn copy_ns(p: &NetParams, bytes: u64) -> f64 {
    bytes as f64 * 1e9 / (p.integrated.bandwidth_gib_s * (1u64 << 30) as f64)
}

/// Completion time of a trace whose reference (`reference`) succeeded.
pub fn completion(progs: &[Program], refr: &Reference, m: &Model) -> Result<Timing, TraceError> {
    let p = m.params;
    let n = progs.len();
    if !(m.host_flops.is_finite() && m.host_flops > 0.0) {
        return Err(TraceError {
            at: progs.first().and_then(|p| p.steps.first()).map_or_else(
                || super::ti::Loc {
                    file: std::path::Path::new("trace").into(),
                    line: 0,
                },
                |s| s.at.clone(),
            ),
            msg: format!("host speed {} flop/s: must be positive", m.host_flops),
        });
    }
    let tree = FatTree::for_nodes(p.switch_ports, n as u32);
    let lat = |a: u32, b: u32| tree.hops(a, b).latency_ns(p);
    let g_byte = p.link_ps_per_byte() / 1000.0;
    let dma = |b: u64| dma_ns(p.dma(m.nic), b);
    let copy = |b: u64| copy_ns(p, b);

    let mut reqs: Vec<Vec<Req>> = progs
        .iter()
        .map(|pr| vec![Req::default(); pr.requests])
        .collect();
    let mut cpu = vec![0.0f64; n];
    let mut nic_free = vec![0.0f64; n];
    let mut pc = vec![0usize; n];
    // Work until no rank moves (each pass advances every rank as far as it
    // can; a rank blocked in a wait is retried after the others moved).
    // Issued requests whose CPU has not yet been in a wait since.
    let mut unwaited: Vec<Vec<usize>> = vec![Vec::new(); n];
    // Ranks to run: all at first, then those whose peers learnt something
    // they may wait for (an issue, a wait begun).
    let mut queue: VecDeque<usize> = (0..n).collect();
    let mut queued = vec![true; n];
    let peer = |r: usize, q: usize| -> Option<u32> {
        refr.of_send(r as u32, q)
            .map(|m| m.dst)
            .or_else(|| refr.of_recv(r as u32, q).map(|m| m.src))
    };
    let wake = |to: Option<u32>, queue: &mut VecDeque<usize>, queued: &mut [bool]| {
        if let Some(t) = to {
            if !queued[t as usize] {
                queued[t as usize] = true;
                queue.push_back(t as usize);
            }
        }
    };
    while let Some(r) = queue.pop_front() {
        queued[r] = false;
        while pc[r] < progs[r].steps.len() {
            let at = &progs[r].steps[pc[r]];
            match &at.step {
                Step::Compute { flops } => cpu[r] += flops / m.host_flops * 1e9,
                Step::Sleep { secs } => cpu[r] += secs * 1e9,
                Step::Send { req, bytes, .. } => {
                    cpu[r] += p.o_ns;
                    let inj = cpu[r].max(nic_free[r]);
                    let wire = if *bytes > m.eager_max { 0 } else { *bytes };
                    nic_free[r] = inj + p.g_ns.max(wire as f64 * g_byte);
                    let q = &mut reqs[r][*req];
                    q.issued = Some(cpu[r]);
                    q.injected = Some(inj);
                    unwaited[r].push(*req);
                    wake(peer(r, *req), &mut queue, &mut queued);
                }
                Step::Recv { req, .. } => {
                    cpu[r] += p.o_ns;
                    reqs[r][*req].issued = Some(cpu[r]);
                    unwaited[r].push(*req);
                    wake(peer(r, *req), &mut queue, &mut queued);
                }
                Step::Wait { reqs: list } => {
                    // Inside a wait the CPU progresses every request it
                    // has issued (MPI's progress engine), not only the
                    // awaited ones.
                    for q in std::mem::take(&mut unwaited[r]) {
                        reqs[r][q].waiting = Some(cpu[r]);
                        wake(peer(r, q), &mut queue, &mut queued);
                    }
                    let mut end = cpu[r];
                    let mut all = true;
                    for &q in list {
                        let t = match reqs[r][q].done {
                            Some(t) => Some(t),
                            None => finish(r as u32, q, &reqs, refr, m, &lat, g_byte, &dma, &copy),
                        };
                        match t {
                            Some(t) => {
                                reqs[r][q].done = Some(t);
                                end = end.max(t);
                            }
                            None => all = false,
                        }
                    }
                    if !all {
                        break;
                    }
                    cpu[r] = end;
                }
            }
            pc[r] += 1;
        }
    }
    if let Some(r) = (0..n).find(|&r| pc[r] < progs[r].steps.len()) {
        return Err(TraceError {
            at: progs[r].steps[pc[r]].at.clone(),
            msg: format!(
                "rank {r} waits forever in the timing model ({:?} matching)",
                m.matching
            ),
        });
    }
    let completion_ns = cpu.iter().copied().fold(0.0, f64::max);
    Ok(Timing {
        rank_end_ns: cpu,
        completion_ns,
    })
}

/// When request `q` of rank `r` completes, if that is known yet.
#[allow(clippy::too_many_arguments)]
fn finish(
    r: u32,
    q: usize,
    reqs: &[Vec<Req>],
    refr: &Reference,
    m: &Model,
    lat: &dyn Fn(u32, u32) -> f64,
    g_byte: f64,
    dma: &dyn Fn(u64) -> f64,
    copy: &dyn Fn(u64) -> f64,
) -> Option<f64> {
    let o = m.params.o_ns;
    let me = reqs[r as usize][q];
    if let Some(msg) = refr.of_send(r, q) {
        let s = msg.bytes;
        if !msg.rendezvous(m.eager_max) {
            return me.issued; // buffered: done once handed to the NIC
        }
        let l = lat(msg.src, msg.dst);
        let rx = reqs[msg.dst as usize][msg.recv_req];
        let rts = me.injected? + l;
        match m.matching {
            // get request, data, FIN
            Matching::Nic => Some(rts.max(rx.issued?) + l + (l + s as f64 * g_byte) + l),
            Matching::Host => {
                let cts = rts.max(rx.waiting?) + o + l;
                Some(cts.max(me.waiting?) + o + s as f64 * g_byte)
            }
        }
    } else if let Some(msg) = refr.of_recv(r, q) {
        let s = msg.bytes;
        let l = lat(msg.src, msg.dst);
        let tx = reqs[msg.src as usize][msg.send_req];
        let wait = me.waiting?;
        if !msg.rendezvous(m.eager_max) {
            let landed = tx.injected? + l + s as f64 * g_byte + dma(s);
            return Some(match m.matching {
                Matching::Nic if landed >= me.issued? => landed,
                Matching::Nic => landed.max(wait) + copy(s),
                Matching::Host => landed.max(wait) + o + copy(s),
            });
        }
        let rts = tx.injected? + l;
        match m.matching {
            Matching::Nic => Some(rts.max(me.issued?) + l + l + s as f64 * g_byte + dma(s)),
            Matching::Host => {
                let cts = rts.max(wait) + o + l;
                Some(cts.max(tx.waiting?) + o + l + s as f64 * g_byte + dma(s))
            }
        }
    } else {
        None
    }
}
