//! The decoder cache: a code image decoded once, shared by every HPU.
//!
//! Every 16-bit parcel of the executable range gets an [`Inst`] (so a jump
//! into the middle of a 32-bit instruction still decodes what the bits say),
//! and a [`BlockCost`]: how many instructions and static cycles remain from
//! that instruction to the end of its basic block. The interpreter charges
//! these once per block entry instead of counting per instruction.

use crate::isa::{decode16, decode32, inst_len, Inst, Op};
use crate::timing::TimingModel;

/// Instructions and static cycles from an instruction to its block's end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockCost {
    pub insts: u32,
    pub cycles: u32,
}

/// A decoded, immutable code image.
pub struct Program {
    pub(crate) base: u32,
    /// Bytes covered, a multiple of 2. `insts` has one extra sentinel entry.
    pub(crate) len: u32,
    pub(crate) insts: Vec<Inst>,
    pub(crate) cost: Vec<BlockCost>,
}

/// Largest executable span we decode (the decoder cache costs 20 bytes per
/// 2 bytes of code).
pub const MAX_CODE_SPAN: u32 = 64 << 20;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    #[error("no executable code")]
    Empty,
    #[error("executable segments span {0} bytes, more than the {MAX_CODE_SPAN}-byte limit")]
    TooLarge(u64),
    #[error("executable segment at 0x{0:08x} is not 2-byte aligned")]
    Misaligned(u32),
}

impl Program {
    /// Decode executable ranges `(address, bytes)`. Gaps between them are
    /// non-executable.
    pub fn decode(ranges: &[(u32, &[u8])], timing: &TimingModel) -> Result<Program, ProgramError> {
        let ranges: Vec<_> = ranges.iter().filter(|(_, b)| !b.is_empty()).collect();
        let lo = ranges.iter().map(|(a, _)| *a).min().ok_or(ProgramError::Empty)?;
        let hi = ranges.iter().map(|(a, b)| *a as u64 + b.len() as u64).max().unwrap();
        if let Some((a, _)) = ranges.iter().find(|(a, _)| a % 2 != 0) {
            return Err(ProgramError::Misaligned(*a));
        }
        let span = (hi - lo as u64 + 1) & !1;
        if span > MAX_CODE_SPAN as u64 {
            return Err(ProgramError::TooLarge(span));
        }
        let parcels = (span / 2) as usize;
        // Parcel view of the code; None where not executable.
        let mut code: Vec<Option<u16>> = vec![None; parcels];
        for (a, b) in &ranges {
            let first = ((a - lo) / 2) as usize;
            for (k, ch) in b.chunks(2).enumerate() {
                if ch.len() == 2 {
                    code[first + k] = Some(u16::from_le_bytes([ch[0], ch[1]]));
                }
            }
        }
        let mut insts = Vec::with_capacity(parcels + 1);
        for k in 0..parcels {
            let pc = lo + 2 * k as u32;
            insts.push(match code[k] {
                None => Inst::no_exec(),
                Some(p) if inst_len(p) == 2 => decode16(p, pc),
                Some(p) => match code.get(k + 1).copied().flatten() {
                    Some(h) => decode32(p as u32 | (h as u32) << 16, pc),
                    None => Inst::no_exec(), // truncated at the end of code
                },
            });
        }
        // Sentinel: running off the end is a fetch fault, and guarantees every
        // straight-line run meets a block end before the array ends.
        insts.push(Inst::no_exec());

        let mut cost = vec![BlockCost::default(); insts.len()];
        for k in (0..parcels).rev() {
            let i = insts[k];
            let mut c = timing.base_cost(i.op.class());
            let n = if matches!(i.op, Op::NoExec) { 0 } else { 1 };
            if i.op.ends_block() {
                cost[k] = BlockCost { insts: n, cycles: c };
                continue;
            }
            let next = k + i.size as usize;
            let nx = insts.get(next).copied().unwrap_or_else(Inst::no_exec);
            if let (Some(rd), Op::Lb | Op::Lh | Op::Lw | Op::Lbu | Op::Lhu) = (i.writes(), i.op) {
                let (a, b) = nx.reads();
                if a == Some(rd) || b == Some(rd) {
                    c += timing.load_use_stall;
                }
            }
            let rest = cost.get(next).copied().unwrap_or_default();
            cost[k] = BlockCost { insts: n + rest.insts, cycles: c.saturating_add(rest.cycles) };
        }
        Ok(Program { base: lo, len: (parcels * 2) as u32, insts, cost })
    }

    pub fn base(&self) -> u32 {
        self.base
    }

    /// One past the last code byte.
    pub fn end(&self) -> u32 {
        self.base + self.len
    }

    pub fn contains(&self, pc: u32) -> bool {
        pc.wrapping_sub(self.base) < self.len
    }

    /// The decoded instruction at `pc`, if `pc` is in the image.
    pub fn inst_at(&self, pc: u32) -> Option<&Inst> {
        self.contains(pc).then(|| &self.insts[(pc.wrapping_sub(self.base) / 2) as usize])
    }

    /// The block cost from `pc` to the end of its block.
    pub fn cost_at(&self, pc: u32) -> Option<BlockCost> {
        self.contains(pc).then(|| self.cost[(pc.wrapping_sub(self.base) / 2) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn block_costs_and_load_use() {
        // lw a0,0(a1); addi a0,a0,1; beq x0,x0,0 (self)
        let code = words(&[0x0005_A503, 0x0015_0513, 0x0000_0063]);
        let p = Program::decode(&[(0x100, &code)], &TimingModel::default()).unwrap();
        // lw (1 + 1 stall) + addi 1 + beq 1
        assert_eq!(p.cost_at(0x100), Some(BlockCost { insts: 3, cycles: 4 }));
        assert_eq!(p.cost_at(0x104), Some(BlockCost { insts: 2, cycles: 2 }));
        assert_eq!(p.inst_at(0x10c), None);
    }

    #[test]
    fn gaps_are_not_executable() {
        let a = words(&[0x0000_0013]);
        let p = Program::decode(&[(0x0, &a), (0x10, &a)], &TimingModel::default()).unwrap();
        assert_eq!(p.inst_at(0x8).unwrap().op, Op::NoExec);
        assert_eq!(p.cost_at(0x0).unwrap().insts, 1);
    }
}
