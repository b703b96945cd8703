//! A trace's ranks as point-to-point programs: what a host actor of the
//! replay executes. Blocking operations become a nonblocking one and its
//! wait; `sendRecv` two of them and a wait; the collectives SMPI emits are
//! decomposed into binomial trees of messages (the textbook MPICH shape,
//! the same on every rank, so all ranks agree on who sends what).

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::ti::{Action, Loc, Trace, TraceError};
use super::{COLL_TAGS, TAG_COLL, TAG_SENDRECV};

/// Steps of all ranks' programs at most: a few lines of collectives on
/// many ranks make many messages (an alltoall: n (n - 1)).
pub const MAX_STEPS: usize = 1 << 22;

/// One step of a rank's program. `req` numbers the rank's requests from 0.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The host computes `flops` (the replay divides by the host's speed).
    Compute { flops: f64 },
    /// The host sleeps.
    Sleep { secs: f64 },
    Send {
        req: usize,
        to: u32,
        tag: u32,
        bytes: u64,
    },
    Recv {
        req: usize,
        from: u32,
        tag: u32,
        bytes: u64,
    },
    /// Until every listed request has completed.
    Wait { reqs: Vec<usize> },
}

/// A step and the trace line it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct At {
    pub step: Step,
    pub at: Loc,
}

/// One rank's program.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub steps: Vec<At>,
    /// Requests issued (`req` < this).
    pub requests: usize,
}

/// A rank's open requests: found by SMPI's key in O(log n), drained in
/// issue order (a trace of millions of requests must not take quadratic
/// time).
#[derive(Default)]
struct Open {
    by_key: HashMap<(u32, u32, bool), VecDeque<usize>>,
    all: BTreeSet<usize>,
}

impl Open {
    fn push(&mut self, req: usize, key: (u32, u32, bool)) {
        self.by_key.entry(key).or_default().push_back(req);
        self.all.insert(req);
    }
    fn take(&mut self, key: (u32, u32, bool)) -> Option<usize> {
        let q = self.by_key.get_mut(&key)?;
        let r = q.pop_front()?;
        if q.is_empty() {
            self.by_key.remove(&key);
        }
        self.all.remove(&r);
        Some(r)
    }
    fn drain(&mut self) -> Vec<usize> {
        self.by_key.clear();
        std::mem::take(&mut self.all).into_iter().collect()
    }
}

struct Builder<'a> {
    rank: u32,
    n: u32,
    prog: Program,
    /// Issued, not yet waited for: request, peer (source or destination
    /// for `wait`), tag, is a send.
    /// (oldest first per key: peer, tag, is a send; and in issue order).
    open: Open,
    coll_seq: u32,
    at: &'a Loc,
}

impl Builder<'_> {
    fn push(&mut self, step: Step) {
        self.prog.steps.push(At {
            step,
            at: self.at.clone(),
        });
    }
    fn send(&mut self, to: u32, tag: u32, bytes: u64) -> usize {
        let req = self.prog.requests;
        self.prog.requests += 1;
        self.push(Step::Send {
            req,
            to,
            tag,
            bytes,
        });
        req
    }
    fn recv(&mut self, from: u32, tag: u32, bytes: u64) -> usize {
        let req = self.prog.requests;
        self.prog.requests += 1;
        self.push(Step::Recv {
            req,
            from,
            tag,
            bytes,
        });
        req
    }
    fn wait(&mut self, reqs: Vec<usize>) {
        if !reqs.is_empty() {
            self.push(Step::Wait { reqs });
        }
    }
    fn coll_tag(&mut self) -> u32 {
        let t = TAG_COLL + self.coll_seq % COLL_TAGS;
        self.coll_seq = self.coll_seq.wrapping_add(1);
        t
    }

    /// Binomial broadcast from `root`: receive from the parent, then send
    /// to the children, farthest first.
    fn bcast(&mut self, root: u32, bytes: u64) {
        let tag = self.coll_tag();
        let (n, v) = (self.n, (self.rank + self.n - root) % self.n);
        let mut mask = 1u32;
        while mask < n {
            if v & mask != 0 {
                let parent = (v - mask + root) % n;
                let r = self.recv(parent, tag, bytes);
                self.wait(vec![r]);
                break;
            }
            mask <<= 1;
        }
        let mut reqs = Vec::new();
        mask >>= 1;
        while mask > 0 {
            if v + mask < n {
                reqs.push(self.send((v + mask + root) % n, tag, bytes));
            }
            mask >>= 1;
        }
        self.wait(reqs);
    }

    /// Binomial reduction to `root`: receive from each child, nearest
    /// first, then send to the parent.
    fn reduce(&mut self, root: u32, bytes: u64) {
        let tag = self.coll_tag();
        let (n, v) = (self.n, (self.rank + self.n - root) % self.n);
        let mut mask = 1u32;
        while mask < n {
            if v & mask == 0 {
                if v | mask < n {
                    let r = self.recv(((v | mask) + root) % n, tag, bytes);
                    self.wait(vec![r]);
                }
            } else {
                let s = self.send((v - mask + root) % n, tag, bytes);
                self.wait(vec![s]);
                break;
            }
            mask <<= 1;
        }
    }

    fn action(&mut self, a: &Action) -> Result<(), TraceError> {
        match *a {
            Action::Init | Action::Finalize | Action::Comm => {}
            Action::Compute { flops } => self.push(Step::Compute { flops }),
            Action::Sleep { secs } => self.push(Step::Sleep { secs }),
            Action::Send {
                to,
                tag,
                bytes,
                blocking,
            } => {
                let r = self.send(to, tag, bytes);
                if blocking {
                    self.wait(vec![r]);
                } else {
                    self.open.push(r, (to, tag, true));
                }
            }
            Action::Recv {
                from,
                tag,
                bytes,
                blocking,
            } => {
                let r = self.recv(from, tag, bytes);
                if blocking {
                    self.wait(vec![r]);
                } else {
                    self.open.push(r, (from, tag, false));
                }
            }
            Action::Wait { src, dst, tag } => {
                // SMPI keys a request by (source, destination, tag): ours
                // is a send when the source is this rank. The oldest open
                // one with that key.
                let (peer, is_send) = if src == self.rank {
                    (dst, true)
                } else {
                    (src, false)
                };
                let r = self
                    .open
                    .take((peer, tag, is_send))
                    .ok_or_else(|| TraceError {
                        at: self.at.clone(),
                        msg: format!("`wait {src} {dst} {tag}`: no such outstanding isend/irecv"),
                    })?;
                self.wait(vec![r]);
            }
            Action::WaitAll => {
                let reqs = self.open.drain();
                self.wait(reqs);
            }
            Action::SendRecv {
                to,
                send_bytes,
                from,
                recv_bytes,
            } => {
                let s = self.send(to, TAG_SENDRECV, send_bytes);
                let r = self.recv(from, TAG_SENDRECV, recv_bytes);
                self.wait(vec![s, r]);
            }
            Action::Barrier => {
                self.reduce(0, 0);
                self.bcast(0, 0);
            }
            Action::Bcast { bytes, root } => self.bcast(root, bytes),
            Action::Reduce { bytes, flops, root } => {
                self.reduce(root, bytes);
                self.push(Step::Compute { flops });
            }
            Action::Gather {
                send_bytes,
                recv_bytes,
                root,
            } => {
                // linear: the root posts a receive per rank, then waits
                let tag = self.coll_tag();
                if self.rank == root {
                    let reqs = (0..self.n)
                        .filter(|&p| p != root)
                        .map(|p| self.recv(p, tag, recv_bytes))
                        .collect();
                    self.wait(reqs);
                } else {
                    let s = self.send(root, tag, send_bytes);
                    self.wait(vec![s]);
                }
            }
            Action::Scatter {
                send_bytes,
                recv_bytes,
                root,
            } => {
                let tag = self.coll_tag();
                if self.rank == root {
                    let reqs = (0..self.n)
                        .filter(|&p| p != root)
                        .map(|p| self.send(p, tag, send_bytes))
                        .collect();
                    self.wait(reqs);
                } else {
                    let r = self.recv(root, tag, recv_bytes);
                    self.wait(vec![r]);
                }
            }
            Action::AllGather {
                send_bytes,
                recv_bytes,
            } => {
                // a ring: n - 1 steps, each passing one block to the right
                let tag = self.coll_tag();
                let (left, right) = ((self.rank + self.n - 1) % self.n, (self.rank + 1) % self.n);
                for step in 1..self.n {
                    // first this rank's own block, then the ones received
                    let b = if step == 1 { send_bytes } else { recv_bytes };
                    let r = self.recv(left, tag, recv_bytes);
                    let s = self.send(right, tag, b);
                    self.wait(vec![r, s]);
                }
            }
            Action::AllToAll {
                send_bytes,
                recv_bytes,
            } => {
                // pairwise: every receive posted, every send issued, one wait
                let tag = self.coll_tag();
                let mut reqs = Vec::with_capacity(2 * self.n as usize);
                for j in 1..self.n {
                    reqs.push(self.recv((self.rank + self.n - j) % self.n, tag, recv_bytes));
                }
                for j in 1..self.n {
                    reqs.push(self.send((self.rank + j) % self.n, tag, send_bytes));
                }
                self.wait(reqs);
            }
            Action::AllReduce { bytes, flops } => {
                self.reduce(0, bytes);
                self.bcast(0, bytes);
                self.push(Step::Compute { flops });
            }
        }
        Ok(())
    }
}

/// Every rank's program. Collectives must be the same on every rank (in
/// kind, size and root, in the same order); requests still open at the end
/// are waited for there (`finalize` completes them).
pub fn programs(trace: &Trace) -> Result<Vec<Program>, TraceError> {
    let n = trace.ranks.len() as u32;
    // The collectives' sequence, checked against rank 0's.
    let colls = |r: usize| trace.ranks[r].iter().filter(|a| a.action.is_collective());
    for r in 1..trace.ranks.len() {
        let mut theirs = colls(0);
        for mine in colls(r) {
            match theirs.next() {
                Some(t) if t.action == mine.action => {}
                Some(t) => {
                    return Err(TraceError {
                        at: mine.at.clone(),
                        msg: format!(
                            "collective {:?} of rank {r} differs from rank 0's {:?} ({})",
                            mine.action, t.action, t.at
                        ),
                    })
                }
                None => {
                    return Err(TraceError {
                        at: mine.at.clone(),
                        msg: format!(
                            "collective {:?}: rank 0 has no such collective",
                            mine.action
                        ),
                    })
                }
            }
        }
        if let Some(t) = theirs.next() {
            return Err(TraceError {
                at: t.at.clone(),
                msg: format!(
                    "collective {:?} of rank 0: rank {r} does not call it",
                    t.action
                ),
            });
        }
    }
    let mut out = Vec::with_capacity(trace.ranks.len());
    let mut steps = 0;
    for (r, acts) in trace.ranks.iter().enumerate() {
        let Some(last) = acts.last() else {
            return Ok(out);
        };
        let mut b = Builder {
            rank: r as u32,
            n,
            prog: Program::default(),
            open: Open::default(),
            coll_seq: 0,
            at: &last.at,
        };
        for a in acts {
            b.at = &a.at;
            b.action(&a.action)?;
            if steps + b.prog.steps.len() > MAX_STEPS {
                return Err(TraceError {
                    at: a.at.clone(),
                    msg: format!("the trace makes more than {MAX_STEPS} point-to-point steps (collectives included)"),
                });
            }
        }
        b.at = &last.at;
        let rest = b.open.drain();
        b.wait(rest);
        steps += b.prog.steps.len();
        out.push(b.prog);
    }
    Ok(out)
}
