//! The replay's reference, computed from the programs alone (never from a
//! node): which receive each send matches, and that the trace can run to
//! its end under the replay's protocols.
//!
//! Matching follows MPI's non-overtaking rule: messages from one source to
//! one destination with one tag (one communicator: the replay has only
//! MPI_COMM_WORLD) match that destination's receives for that source and
//! tag in the order both were issued. A TI trace records every receive's
//! actual source and tag, so the k-th send on a (source, destination, tag)
//! channel is the k-th receive's, whatever the timing.
//!
//! Progress: an eager send (at most `eager_max` bytes) completes once
//! issued (the data travels to a posted receive or an unexpected slot); a
//! rendezvous send completes once its receive is posted (the receiver's
//! NIC gets the data); a receive completes once its send is issued. A
//! trace that is unsafe under these rules (two ranks both sending large
//! messages first) is refused with each blocked rank's wait named.

use std::collections::{HashMap, VecDeque};

use super::driver::{Cursor, Next};
use super::program::{Program, Step};
use super::ti::{Loc, TraceError};

/// One message: its send, its receive, its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    pub src: u32,
    pub send_req: usize,
    pub dst: u32,
    pub recv_req: usize,
    pub tag: u32,
    /// The sent size; the receive's buffer may be larger.
    pub bytes: u64,
    /// The receive's buffer size.
    pub capacity: u64,
    /// Its index on its (source, destination, tag) channel.
    pub seq: u64,
}

impl Matched {
    /// The seed of this message's bytes in a run seeded `run`: the sender
    /// fills its buffer with these bytes, the receiver's must equal them.
    pub fn seed(&self, run: u64) -> u64 {
        let mut h = run ^ 0x7472_6163_655f_7270; // "trace_rp"
        for v in [self.src as u64, self.dst as u64, self.tag as u64, self.seq] {
            h = (h ^ v).wrapping_mul(0x1000_0000_01b3).rotate_left(29);
        }
        h
    }
    pub fn rendezvous(&self, eager_max: u64) -> bool {
        self.bytes > eager_max
    }
}

/// The messages of a trace, found by either end.
#[derive(Clone, Debug, Default)]
pub struct Reference {
    pub messages: Vec<Matched>,
    by_send: HashMap<(u32, usize), usize>,
    by_recv: HashMap<(u32, usize), usize>,
}

impl Reference {
    pub fn of_send(&self, rank: u32, req: usize) -> Option<&Matched> {
        self.by_send.get(&(rank, req)).map(|&i| &self.messages[i])
    }
    pub fn of_recv(&self, rank: u32, req: usize) -> Option<&Matched> {
        self.by_recv.get(&(rank, req)).map(|&i| &self.messages[i])
    }
    pub fn total_bytes(&self) -> u64 {
        self.messages.iter().map(|m| m.bytes).sum()
    }
}

fn err(at: &Loc, msg: String) -> TraceError {
    TraceError {
        at: at.clone(),
        msg,
    }
}

/// Match every send with its receive and check the trace completes.
pub fn reference(progs: &[Program], eager_max: u64) -> Result<Reference, TraceError> {
    // Each channel's sends and receives, in issue order.
    type Chan = (u32, u32, u32);
    let mut sends: HashMap<Chan, VecDeque<(usize, u64, &Loc)>> = HashMap::new();
    let mut recvs: HashMap<Chan, VecDeque<(usize, u64, &Loc)>> = HashMap::new();
    for (r, p) in progs.iter().enumerate() {
        let r = r as u32;
        for s in &p.steps {
            match s.step {
                Step::Send {
                    req,
                    to,
                    tag,
                    bytes,
                } => sends
                    .entry((r, to, tag))
                    .or_default()
                    .push_back((req, bytes, &s.at)),
                Step::Recv {
                    req,
                    from,
                    tag,
                    bytes,
                } => recvs
                    .entry((from, r, tag))
                    .or_default()
                    .push_back((req, bytes, &s.at)),
                _ => {}
            }
        }
    }
    let mut out = Reference::default();
    let mut chans: Vec<Chan> = sends.keys().chain(recvs.keys()).copied().collect();
    chans.sort_unstable();
    chans.dedup();
    for c in chans {
        let (src, dst, tag) = c;
        let mut ss = sends.remove(&c).unwrap_or_default();
        let mut rs = recvs.remove(&c).unwrap_or_default();
        let mut seq = 0;
        loop {
            match (ss.pop_front(), rs.pop_front()) {
                (None, None) => break,
                (Some((_, b, at)), None) => {
                    return Err(err(at, format!(
                        "send of {b} bytes from rank {src} to {dst}, tag {tag} (message {seq} of that channel): rank {dst} never receives it"
                    )))
                }
                (None, Some((_, b, at))) => {
                    return Err(err(at, format!(
                        "receive of {b} bytes by rank {dst} from {src}, tag {tag} (message {seq} of that channel): rank {src} never sends it"
                    )))
                }
                (Some((sr, sb, sat)), Some((rr, rb, rat))) => {
                    if sb > rb {
                        return Err(err(rat, format!(
                            "receive buffer of {rb} bytes for a message of {sb} bytes sent at {sat}: truncated"
                        )));
                    }
                    let i = out.messages.len();
                    out.by_send.insert((src, sr), i);
                    out.by_recv.insert((dst, rr), i);
                    out.messages.push(Matched {
                        src,
                        send_req: sr,
                        dst,
                        recv_req: rr,
                        tag,
                        bytes: sb,
                        capacity: rb,
                        seq,
                    });
                    seq += 1;
                }
            }
        }
    }
    progress(progs, &out, eager_max)?;
    Ok(out)
}

/// Run the programs without time: does every rank reach its end?
fn progress(progs: &[Program], refr: &Reference, eager_max: u64) -> Result<(), TraceError> {
    let n = progs.len();
    let mut cur: Vec<Cursor<&Program>> = progs.iter().map(Cursor::new).collect();
    let mut issued: Vec<Vec<bool>> = progs.iter().map(|p| vec![false; p.requests]).collect();
    let mut queue: VecDeque<usize> = (0..n).collect();
    let mut queued = vec![true; n];
    let wake = |r: u32, queue: &mut VecDeque<usize>, queued: &mut Vec<bool>| {
        if !queued[r as usize] {
            queued[r as usize] = true;
            queue.push_back(r as usize);
        }
    };
    while let Some(r) = queue.pop_front() {
        queued[r] = false;
        loop {
            match cur[r].step() {
                Next::Compute { .. } | Next::Sleep { .. } => {}
                Next::Blocked | Next::Finished => break,
                Next::Send { req, .. } => {
                    issued[r][req] = true;
                    // (`reference` matched every send and receive)
                    let Some(m) = refr.of_send(r as u32, req) else {
                        continue;
                    };
                    let posted = issued[m.dst as usize][m.recv_req];
                    if !m.rendezvous(eager_max) || posted {
                        cur[r].complete(req);
                    }
                    if posted {
                        cur[m.dst as usize].complete(m.recv_req);
                        wake(m.dst, &mut queue, &mut queued);
                    }
                }
                Next::Recv { req, .. } => {
                    issued[r][req] = true;
                    let m = refr
                        .of_recv(r as u32, req)
                        .expect("every receive is matched");
                    if issued[m.src as usize][m.send_req] {
                        cur[r].complete(req);
                        if m.rendezvous(eager_max) {
                            cur[m.src as usize].complete(m.send_req);
                            wake(m.src, &mut queue, &mut queued);
                        }
                    }
                }
            }
        }
    }
    let blocked: Vec<usize> = (0..n).filter(|&r| !cur[r].finished()).collect();
    if let Some(&first) = blocked.first() {
        let at = cur[first].at().expect("not finished");
        let list: Vec<String> = blocked
            .iter()
            .take(8)
            .map(|&r| format!("rank {r} at {}", cur[r].at().expect("not finished")))
            .collect();
        return Err(err(at, format!(
            "the trace cannot complete: {} rank(s) wait forever ({}{}); a send larger than {eager_max} bytes waits for its receive (rendezvous)",
            blocked.len(),
            list.join(", "),
            if blocked.len() > 8 { ", ..." } else { "" }
        )));
    }
    Ok(())
}
