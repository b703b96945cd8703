//! MPI trace replay (issue 29 §3, seed 004 §5.1): SMPI time-independent
//! traces (`ti`) turned into per-rank point-to-point programs (`program`),
//! and the reference the replay is checked against (`reference`): which
//! receive matches which send by MPI's ordering rule, whether the trace can
//! complete, and the bytes every message carries. docs/scale.md "Trace
//! replay".

pub mod driver;
pub mod mt;
pub mod program;
pub mod reference;
pub mod ti;
pub mod timing;

pub use program::{programs, Program, Step};
pub use reference::{reference, Matched, Reference};
pub use ti::{load, parse_str, Action, Loc, Trace, TraceError};
pub use timing::{completion, Matching, Model, Timing};

/// Tags the matching handler carries: 24 bits (examples/cluster/matching/
/// matching.h, UC_MT_TAG_MAX). The trace's own tags take the lower
/// quarter; the rest is the replay's: `sendRecv` (SMPI records no tag for
/// it) and the collectives' point-to-point messages.
pub const TAG_BITS: u32 = 24;
/// The largest tag a trace may use.
pub const TAG_USER_MAX: u32 = (1 << (TAG_BITS - 2)) - 1;
/// The tag of every `sendRecv`'s two messages.
pub const TAG_SENDRECV: u32 = TAG_USER_MAX + 1;
/// The first tag of the collectives' messages; the k-th collective phase
/// uses TAG_COLL + k mod COLL_TAGS (non-overtaking keeps reuse correct).
pub const TAG_COLL: u32 = TAG_SENDRECV + 1;
pub const COLL_TAGS: u32 = (1 << TAG_BITS) - TAG_COLL;
