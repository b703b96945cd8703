//! TEMPORARY: the initiator API contract (rma-api35.md) until branch `init`
//! lands; removed at the merge.
#![allow(missing_docs)]

use crate::{Ectx, Error, Nic, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RmaOp {
    Put { local: u64, len: u64 },
    Get { local: u64, len: u64 },
    FetchAdd { width: u8, addend: u64 },
    Cas { width: u8, compare: u64, swap: u64 },
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RmaRequest {
    pub rank: u16,
    pub key: u32,
    pub offset: u64,
    #[serde(flatten)]
    pub op: RmaOp,
}
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct RmaHandle(pub u64);
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RmaCompletion {
    pub handle: RmaHandle,
    pub status: u8,
    pub value: u64,
}
impl Nic {
    pub fn rma_post(&mut self, _e: Ectx, _r: &RmaRequest) -> Result<RmaHandle> {
        Err(Error::Invalid("rma_post: not yet".into()))
    }
    pub fn rma_completions(&mut self, _e: Ectx) -> Vec<RmaCompletion> {
        Vec::new()
    }
    pub fn rma_outstanding(&self, _e: Ectx) -> usize {
        0
    }
}
