//! One rank's program as its host runs it: the next thing to do, and the
//! requests completing. The replay's host actors and the reference's
//! progress check step programs through this one cursor, so both give
//! `wait` the same meaning.

use std::ops::Deref;

use super::program::{Program, Step};
use super::ti::Loc;

/// What a rank's host does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    Compute {
        flops: f64,
    },
    Sleep {
        secs: f64,
    },
    /// Issue request `req`: a send or a posted receive.
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
    /// In a wait whose requests have not all completed.
    Blocked,
    Finished,
}

/// A rank's position in its program: over `&Program` (the reference's
/// check) or an owning handle (a replay's host program, which outlives any
/// borrow the coupling could give it).
#[derive(Clone, Debug)]
pub struct Cursor<P: Deref<Target = Program>> {
    prog: P,
    pc: usize,
    complete: Vec<bool>,
}

impl<P: Deref<Target = Program>> Cursor<P> {
    pub fn new(prog: P) -> Cursor<P> {
        Cursor {
            complete: vec![false; prog.requests],
            prog,
            pc: 0,
        }
    }

    /// The next step (and past it), or `Blocked` at a wait not yet over.
    pub fn step(&mut self) -> Next {
        loop {
            let Some(s) = self.prog.steps.get(self.pc) else {
                return Next::Finished;
            };
            let n = match &s.step {
                Step::Compute { flops } => Next::Compute { flops: *flops },
                Step::Sleep { secs } => Next::Sleep { secs: *secs },
                Step::Send {
                    req,
                    to,
                    tag,
                    bytes,
                } => Next::Send {
                    req: *req,
                    to: *to,
                    tag: *tag,
                    bytes: *bytes,
                },
                Step::Recv {
                    req,
                    from,
                    tag,
                    bytes,
                } => Next::Recv {
                    req: *req,
                    from: *from,
                    tag: *tag,
                    bytes: *bytes,
                },
                Step::Wait { reqs } => {
                    if !reqs
                        .iter()
                        .all(|&q| self.complete.get(q).copied().unwrap_or(false))
                    {
                        return Next::Blocked;
                    }
                    self.pc += 1;
                    continue;
                }
            };
            self.pc += 1;
            return n;
        }
    }

    /// Request `req` completed; false if there is no such request or it
    /// had completed already (a message delivered twice).
    pub fn complete(&mut self, req: usize) -> bool {
        match self.complete.get_mut(req) {
            Some(c) if !*c => {
                *c = true;
                true
            }
            _ => false,
        }
    }

    pub fn finished(&self) -> bool {
        self.pc >= self.prog.steps.len()
    }

    /// The trace line of the step the cursor is at (where it waits).
    pub fn at(&self) -> Option<&Loc> {
        self.prog.steps.get(self.pc).map(|s| &s.at)
    }
}
