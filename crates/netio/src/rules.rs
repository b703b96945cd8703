//! FPsPIN's matching engine (seed 000 §3.2.1) as data and as the reference
//! matcher. OWNER: rules helper -- the types below are the contract others
//! code against; keep their names and meaning.

use serde::{Deserialize, Serialize};

/// One matching unit: true when `start <= (be32(frame[4*index..4*index+4]) & mask) <= end`.
/// A word that lies (partly) beyond the frame makes the unit false.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchUnit {
    pub index: u32,
    pub mask: u32,
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RulesetMode {
    #[default]
    And,
    Or,
}

/// Where a matched frame's message id comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MsgIdField {
    /// `size` (1, 2 or 4) bytes, big-endian, at byte `offset` of the frame
    /// (SLMP's: offset 44, size 4). Missing bytes read as 0.
    Field { offset: u32, size: u8 },
    /// Numbered by the receiver in arrival order (each ruleset its own count).
    Sequence,
}

/// A ruleset: its match units combined by `mode`; `eom` marks a message's
/// last packet; `msg_id` says where the message id is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ruleset {
    pub name: String,
    pub mode: RulesetMode,
    pub units: Vec<MatchUnit>,
    pub eom: MatchUnit,
    pub msg_id: MsgIdField,
}

/// Which ruleset a frame matched, and what it says about the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub ruleset: usize,
    pub eom: bool,
    pub msg_id: Option<u32>,
}

/// The reference matcher: rulesets in priority order (the first that
/// matches wins).
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    pub rulesets: Vec<Ruleset>,
}

impl Matcher {
    pub fn classify(&self, frame: &[u8]) -> Option<Verdict> {
        let _ = frame;
        todo!("rules helper")
    }
}
