//! SimGrid SMPI's time-independent (TI) trace format, as `smpirun -trace-ti`
//! (SimGrid 3.32) writes it: one action per line, `RANK ACTION ARGS...`.
//! What each action's arguments mean follows SMPI's own replay
//! (`smpi_replay.cpp`); counts are in elements of a datatype whose id is
//! the optional last argument (docs/scale.md "Trace replay").
//!
//! Input is hostile: every error names the file and line, nothing panics.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Ranks at most (a trace names ranks; a node is simulated per rank).
pub const MAX_RANKS: u32 = 1 << 16;
/// Bytes of one message at most (a send's count × its datatype's size).
pub const MAX_MESSAGE: u64 = 1 << 30;
/// Lines of one file at most, and bytes of one line: a trace is text.
pub const MAX_LINES: usize = 1 << 22;
pub const MAX_LINE_LEN: usize = 1 << 16;

/// The datatypes SMPI can replay, by the id 3.32 writes for them, and
/// their sizes in bytes (ids measured: examples/traces/src/datatypes.c).
pub const DATATYPES: [(u32, &str, u64); 7] = [
    (0, "MPI_DOUBLE", 8),
    (1, "MPI_INT", 4),
    (2, "MPI_CHAR", 1),
    (3, "MPI_SHORT", 2),
    (4, "MPI_LONG", 8),
    (5, "MPI_FLOAT", 4),
    (6, "MPI_BYTE", 1),
];

/// How SMPI 3.32 records MPI_ANY_SOURCE and MPI_ANY_TAG (its values of
/// them; the actual source and tag are not recorded).
pub const ANY_SOURCE: &str = "-333";
pub const ANY_TAG: &str = "-444";
const WILDCARD: &str =
    "a wildcard receive (MPI_ANY_SOURCE -333 or MPI_ANY_TAG -444) is not supported: \
     the trace does not record which message it got, and that depends on timing";

/// A position in the input, for errors and for the replay's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// Shared: every step of a replay carries its line.
    pub file: Arc<Path>,
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// An error in a trace: where, and what.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {msg}")]
pub struct TraceError {
    pub at: Loc,
    pub msg: String,
}

/// One action of one rank. Sizes are in bytes (count × datatype size).
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Init,
    Finalize,
    /// `compute FLOPS`: the host computes.
    Compute {
        flops: f64,
    },
    /// `sleep SECONDS`.
    Sleep {
        secs: f64,
    },
    /// `send`/`isend DST TAG COUNT [TYPE]`.
    Send {
        to: u32,
        tag: u32,
        bytes: u64,
        blocking: bool,
    },
    /// `recv`/`irecv SRC TAG COUNT [TYPE]`.
    Recv {
        from: u32,
        tag: u32,
        bytes: u64,
        blocking: bool,
    },
    /// `wait SRC DST TAG`: the outstanding request with these ranks and tag.
    Wait {
        src: u32,
        dst: u32,
        tag: u32,
    },
    /// `waitall N`: every outstanding request.
    WaitAll,
    /// `sendRecv SCOUNT DST RCOUNT SRC [STYPE RTYPE]` (SMPI records no tags).
    SendRecv {
        to: u32,
        send_bytes: u64,
        from: u32,
        recv_bytes: u64,
    },
    Barrier,
    /// `bcast COUNT [ROOT [TYPE]]`.
    Bcast {
        bytes: u64,
        root: u32,
    },
    /// `reduce COUNT FLOPS [ROOT [TYPE]]`.
    Reduce {
        bytes: u64,
        flops: f64,
        root: u32,
    },
    /// `allreduce COUNT FLOPS [TYPE]`.
    AllReduce {
        bytes: u64,
        flops: f64,
    },
    /// `gather SCOUNT RCOUNT [ROOT [STYPE [RTYPE]]]`: each rank's block to
    /// the root (counts per rank).
    Gather {
        send_bytes: u64,
        recv_bytes: u64,
        root: u32,
    },
    /// `scatter SCOUNT RCOUNT [ROOT [STYPE [RTYPE]]]`: a block from the root
    /// to each rank.
    Scatter {
        send_bytes: u64,
        recv_bytes: u64,
        root: u32,
    },
    /// `allgather SCOUNT RCOUNT [STYPE [RTYPE]]`.
    AllGather {
        send_bytes: u64,
        recv_bytes: u64,
    },
    /// `alltoall SCOUNT RCOUNT [STYPE [RTYPE]]`: a block from every rank
    /// to every other.
    AllToAll {
        send_bytes: u64,
        recv_bytes: u64,
    },
    /// `comm_size`, `comm_split`, `comm_dup`: SMPI's replay ignores them too.
    Comm,
}

impl Action {
    /// A collective: every rank calls the same ones in the same order.
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            Action::Barrier
                | Action::Bcast { .. }
                | Action::Reduce { .. }
                | Action::AllReduce { .. }
                | Action::Gather { .. }
                | Action::Scatter { .. }
                | Action::AllGather { .. }
                | Action::AllToAll { .. }
        )
    }
}

/// The actions SMPI writes that the replay does not take (yet), refused by
/// name: the collectives without a decomposition here, and `test`, whose
/// outcome depends on the recorded run's timing.
pub const UNSUPPORTED: [&str; 7] = [
    "test",
    "gatherv",
    "allgatherv",
    "scatterv",
    "alltoallv",
    "reducescatter",
    "location",
];

pub const SUPPORTED: &str = "init, finalize, compute, sleep, send, isend, recv, irecv, wait, \
     waitall, sendRecv, barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall, \
     comm_size, comm_split, comm_dup";

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    pub action: Action,
    pub at: Loc,
}

/// A whole trace: each rank's actions, in order.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub ranks: Vec<Vec<Located>>,
}

struct Line<'a> {
    at: Loc,
    words: Vec<&'a str>,
}

impl Line<'_> {
    fn err(&self, msg: impl Into<String>) -> TraceError {
        TraceError {
            at: self.at.clone(),
            msg: msg.into(),
        }
    }

    fn arg(&self, i: usize, what: &str) -> Result<&str, TraceError> {
        self.words
            .get(i)
            .copied()
            .ok_or_else(|| match self.words.get(1) {
                Some(a) if i > 1 => {
                    self.err(format!("`{a}` needs its {what} (argument {})", i - 1))
                }
                _ => self.err(format!("no {what}")),
            })
    }

    fn rank(&self, i: usize, what: &str) -> Result<u32, TraceError> {
        let s = self.arg(i, what)?;
        if s == ANY_SOURCE {
            return Err(self.err(WILDCARD));
        }
        match s.parse::<u32>() {
            Ok(r) if r < MAX_RANKS => Ok(r),
            _ => Err(self.err(format!("{what} `{s}` is not a rank (0..{MAX_RANKS})"))),
        }
    }

    fn tag(&self, i: usize) -> Result<u32, TraceError> {
        let s = self.arg(i, "tag")?;
        if s == ANY_TAG {
            return Err(self.err(WILDCARD));
        }
        match s.parse::<u32>() {
            Ok(t) if t <= super::TAG_USER_MAX => Ok(t),
            _ => Err(self.err(format!(
                "tag `{s}` is not a tag the replay carries (0..={})",
                super::TAG_USER_MAX
            ))),
        }
    }

    /// A non-negative finite number (SMPI parses counts and flops as doubles).
    fn number(&self, i: usize, what: &str) -> Result<f64, TraceError> {
        let s = self.arg(i, what)?;
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(self.err(format!("{what} `{s}` is not a non-negative number"))),
        }
    }

    /// COUNT elements of the datatype at argument `ty` (default MPI_BYTE,
    /// as SMPI's replay after a bare `init`), in bytes.
    fn bytes(&self, count: usize, ty: usize) -> Result<u64, TraceError> {
        let c = self.number(count, "count")?;
        if c.fract() != 0.0 {
            return Err(self.err(format!(
                "count `{}` is not a whole number",
                self.words[count]
            )));
        }
        let size = match self.words.get(ty) {
            None => 1,
            Some(s) => DATATYPES
                .iter()
                .find(|(id, _, _)| s.parse::<u32>() == Ok(*id))
                .map(|d| d.2)
                .ok_or_else(|| {
                    self.err(format!(
                        "datatype id `{s}` is not one SMPI replays (0..=6: {})",
                        DATATYPES.map(|d| d.1).join(", ")
                    ))
                })?,
        };
        let b = c * size as f64;
        if b > MAX_MESSAGE as f64 {
            return Err(self.err(format!("message of {b} bytes: more than {MAX_MESSAGE}")));
        }
        Ok(b as u64)
    }

    fn at_most(&self, n: usize) -> Result<(), TraceError> {
        if self.words.len() > n {
            return Err(self.err(format!(
                "`{}` takes at most {} arguments, has {}",
                self.words[1],
                n - 2,
                self.words.len() - 2
            )));
        }
        Ok(())
    }
}

/// Parse one line's action (`None`: blank). `rank` is the line's rank.
fn parse_line(line: &Line) -> Result<Action, TraceError> {
    let name = line.words[1];
    let a = match name {
        "init" => {
            line.at_most(3)?;
            // `init 1`: an MPE trace, counts without a datatype are doubles.
            // smpirun never writes it; refusing beats guessing sizes.
            if line.words.len() == 3 {
                return Err(
                    line.err("`init` with a default datatype (MPE traces) is not supported")
                );
            }
            Action::Init
        }
        "finalize" => {
            line.at_most(2)?;
            Action::Finalize
        }
        "compute" => {
            line.at_most(3)?;
            Action::Compute {
                flops: line.number(2, "flops")?,
            }
        }
        "sleep" => {
            line.at_most(3)?;
            Action::Sleep {
                secs: line.number(2, "seconds")?,
            }
        }
        "send" | "isend" => {
            line.at_most(6)?;
            Action::Send {
                to: line.rank(2, "destination")?,
                tag: line.tag(3)?,
                bytes: line.bytes(4, 5)?,
                blocking: name == "send",
            }
        }
        "recv" | "irecv" => {
            line.at_most(6)?;
            Action::Recv {
                from: line.rank(2, "source")?,
                tag: line.tag(3)?,
                bytes: line.bytes(4, 5)?,
                blocking: name == "recv",
            }
        }
        "wait" => {
            line.at_most(5)?;
            Action::Wait {
                src: line.rank(2, "source")?,
                dst: line.rank(3, "destination")?,
                tag: line.tag(4)?,
            }
        }
        "waitall" => {
            line.at_most(3)?;
            Action::WaitAll
        }
        "sendRecv" => {
            line.at_most(8)?;
            Action::SendRecv {
                send_bytes: line.bytes(2, 6)?,
                to: line.rank(3, "destination")?,
                recv_bytes: line.bytes(4, 7)?,
                from: line.rank(5, "source")?,
            }
        }
        "barrier" => {
            line.at_most(2)?;
            Action::Barrier
        }
        "bcast" => {
            line.at_most(5)?;
            let root = if line.words.len() > 3 {
                line.rank(3, "root")?
            } else {
                0
            };
            Action::Bcast {
                bytes: line.bytes(2, 4)?,
                root,
            }
        }
        "reduce" => {
            line.at_most(6)?;
            let root = if line.words.len() > 4 {
                line.rank(4, "root")?
            } else {
                0
            };
            Action::Reduce {
                bytes: line.bytes(2, 5)?,
                flops: line.number(3, "flops")?,
                root,
            }
        }
        "allreduce" => {
            line.at_most(5)?;
            Action::AllReduce {
                bytes: line.bytes(2, 4)?,
                flops: line.number(3, "flops")?,
            }
        }
        "gather" | "scatter" => {
            line.at_most(7)?;
            let root = if line.words.len() > 4 {
                line.rank(4, "root")?
            } else {
                0
            };
            let (send_bytes, recv_bytes) = (line.bytes(2, 5)?, line.bytes(3, 6)?);
            if name == "gather" {
                Action::Gather {
                    send_bytes,
                    recv_bytes,
                    root,
                }
            } else {
                Action::Scatter {
                    send_bytes,
                    recv_bytes,
                    root,
                }
            }
        }
        "allgather" | "alltoall" => {
            line.at_most(6)?;
            let (send_bytes, recv_bytes) = (line.bytes(2, 4)?, line.bytes(3, 5)?);
            if name == "allgather" {
                Action::AllGather {
                    send_bytes,
                    recv_bytes,
                }
            } else {
                Action::AllToAll {
                    send_bytes,
                    recv_bytes,
                }
            }
        }
        "comm_size" | "comm_split" | "comm_dup" => Action::Comm,
        other if UNSUPPORTED.contains(&other) => {
            return Err(line.err(format!(
                "action `{other}` is not supported by the replay (supported: {SUPPORTED})"
            )))
        }
        other => return Err(line.err(format!("unknown action `{other}` (supported: {SUPPORTED})"))),
    };
    Ok(a)
}

/// Parse the text of one action file into `trace` (ranks grow as needed).
pub fn parse_into(trace: &mut Trace, file: &Path, text: &str) -> Result<(), TraceError> {
    let file: Arc<Path> = Arc::from(file);
    for (i, raw) in text.lines().enumerate() {
        let at = Loc {
            file: file.clone(),
            line: i + 1,
        };
        if i >= MAX_LINES {
            return Err(TraceError {
                at,
                msg: format!("more than {MAX_LINES} lines"),
            });
        }
        if raw.len() > MAX_LINE_LEN {
            return Err(TraceError {
                at,
                msg: format!("line longer than {MAX_LINE_LEN} bytes"),
            });
        }
        let words: Vec<&str> = raw.split_whitespace().collect();
        if words.is_empty() || words[0].starts_with('#') {
            continue;
        }
        let line = Line { at, words };
        let rank = line.rank(0, "rank")?;
        line.arg(1, "action")?;
        let action = parse_line(&line)?;
        let r = rank as usize;
        if trace.ranks.len() <= r {
            trace.ranks.resize_with(r + 1, Vec::new);
        }
        trace.ranks[r].push(Located {
            action,
            at: line.at,
        });
    }
    Ok(())
}

/// Parse and check one file's text holding every rank's actions (`name`
/// appears in errors).
pub fn parse_str(name: &str, text: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    parse_into(&mut trace, Path::new(name), text)?;
    check(
        &trace,
        &Loc {
            file: Arc::from(Path::new(name)),
            line: 0,
        },
    )?;
    Ok(trace)
}

/// Whether a file is an index (smpirun's `tracing/filename`: one action
/// file per line) rather than actions: its first word is not a rank.
fn is_index(text: &str) -> bool {
    text.split_whitespace()
        .next()
        .is_some_and(|w| w.parse::<u32>().is_err())
}

fn read(path: &Path, from: Option<&Loc>) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|e| TraceError {
        at: from.cloned().unwrap_or(Loc {
            file: Arc::from(path),
            line: 0,
        }),
        msg: format!("reading {}: {e}", path.display()),
    })
}

/// Load a trace: a directory (every `*.txt` in it is an action file), an
/// index file as smpirun writes it (paths relative to its directory), or
/// one action file holding every rank's lines. Then check it (`check`).
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let top = Loc {
        file: Arc::from(path),
        line: 0,
    };
    let mut trace = Trace::default();
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| TraceError {
                at: top.clone(),
                msg: format!("listing: {e}"),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "txt") && p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(TraceError {
                at: top,
                msg: "no *.txt action files in the directory".into(),
            });
        }
        for f in files {
            let text = read(&f, None)?;
            parse_into(&mut trace, &f, &text)?;
        }
    } else {
        let text = read(path, None)?;
        if is_index(&text) {
            let dir = path.parent().unwrap_or(Path::new("."));
            for (i, l) in text.lines().enumerate() {
                let l = l.trim();
                if l.is_empty() {
                    continue;
                }
                let at = Loc {
                    file: Arc::from(path),
                    line: i + 1,
                };
                let f = dir.join(l);
                let t = read(&f, Some(&at))?;
                if is_index(&t) {
                    return Err(TraceError {
                        at,
                        msg: format!("{}: an index, not actions", f.display()),
                    });
                }
                parse_into(&mut trace, &f, &t)?;
            }
        } else {
            parse_into(&mut trace, path, &text)?;
        }
    }
    check(&trace, &top)?;
    Ok(trace)
}

/// What holds for a trace the replay takes: ranks 0..N without a gap,
/// N >= 2, peers among them and not the rank itself, every rank starting
/// with `init`, nothing after `finalize`.
pub fn check(trace: &Trace, top: &Loc) -> Result<(), TraceError> {
    let n = trace.ranks.len();
    if n < 2 {
        return Err(TraceError {
            at: top.clone(),
            msg: format!("{n} rank(s): a replay needs at least 2"),
        });
    }
    for (r, acts) in trace.ranks.iter().enumerate() {
        let Some(first) = acts.first() else {
            return Err(TraceError {
                at: top.clone(),
                msg: format!("rank {r} has no actions (ranks must be 0..{n} without a gap)"),
            });
        };
        if first.action != Action::Init {
            return Err(TraceError {
                at: first.at.clone(),
                msg: format!("rank {r} does not start with `init`"),
            });
        }
        let mut finalized = false;
        for a in acts {
            if finalized {
                return Err(TraceError {
                    at: a.at.clone(),
                    msg: "an action after `finalize`".into(),
                });
            }
            let err = |m: String| {
                Err(TraceError {
                    at: a.at.clone(),
                    msg: m,
                })
            };
            let peer = |p: u32, what: &str| -> Result<(), TraceError> {
                if p as usize >= n {
                    return err(format!("{what} {p} is not a rank of this trace (0..{n})"));
                }
                if p as usize == r {
                    return err(format!(
                        "{what} {p} is the rank itself (self messages are not replayed)"
                    ));
                }
                Ok(())
            };
            match &a.action {
                Action::Init if !std::ptr::eq(a, first) => return err("a second `init`".into()),
                Action::Finalize => finalized = true,
                Action::Send { to, .. } => peer(*to, "destination")?,
                Action::Recv { from, .. } => peer(*from, "source")?,
                Action::SendRecv { to, from, .. } => {
                    peer(*to, "destination")?;
                    peer(*from, "source")?;
                }
                Action::Wait { src, dst, .. } => {
                    if *src as usize != r && *dst as usize != r {
                        return err(format!(
                            "`wait {src} {dst}` names a request not of rank {r}"
                        ));
                    }
                    peer(if *src as usize == r { *dst } else { *src }, "peer")?;
                }
                Action::Bcast { root, .. }
                | Action::Reduce { root, .. }
                | Action::Gather { root, .. }
                | Action::Scatter { root, .. }
                    if *root as usize >= n =>
                {
                    return err(format!("root {root} is not a rank of this trace (0..{n})"));
                }
                _ => {}
            }
        }
    }
    Ok(())
}
