//! Accumulate (seed 004 §4.4.2, Fig. 3d), the live use case
//! examples/cluster/accumulate on simulated NICs: node 0's host sends an
//! array of complex doubles to the node at the far side of the fat tree
//! (the last); there each payload handler DMA-reads its slice of the host's
//! array at UC_RX, multiplies element-wise (dst = dst * src) and writes it
//! back; the completion handler then puts the round's seq into node 0's
//! UC_DONE (an RMA put), which completes the run.
//!
//! Verified bit-exact against a product computed here in f64, each
//! operation rounded as the handler's (re = dr sr - di si, im = dr si +
//! di sr; Rust never fuses these into a multiply-add).

use softspin_engine::{EctxId, Engine, NicConfig};

use super::pingpong::{UcConsts, SEQ};
use super::{uc, HostSend, NicProgram, Workload, HOST_BASE};

/// Bytes of one element (a complex double).
const ELEM: usize = 16;

pub struct Accumulate {
    dst: u32,
    size: usize,
    /// The destination's array before, the sender's array.
    d: Vec<u8>,
    s: Vec<u8>,
    /// What the destination must hold after (the product; sabotage flips a bit).
    reference: Vec<u8>,
    program: NicProgram,
    c: UcConsts,
    mode_word: u16,
}

/// `n` doubles from splitmix64, as little-endian bytes: random signs and
/// mantissas, exponents within 2^±30 (products round, none overflows or
/// is a NaN, whose bits two correct implementations may spell apart), every
/// 17th element zero.
pub fn seeded_doubles(seed: u64, n: usize) -> Vec<u8> {
    let raw = super::seeded_bytes(seed, n * 8);
    let mut out = Vec::with_capacity(n * 8);
    for (i, c) in raw.chunks_exact(8).enumerate() {
        let r = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        let mant = r & ((1 << 52) - 1);
        let exp = 1023 - 30 + (r >> 52) % 61;
        let sign = r >> 63;
        let bits = if i % 17 == 0 {
            0
        } else {
            sign << 63 | exp << 52 | mant
        };
        out.extend_from_slice(&bits.to_le_bytes());
    }
    out
}

/// dst * src element-wise over arrays of complex doubles (LE bytes).
pub fn complex_product(d: &[u8], s: &[u8]) -> Vec<u8> {
    let f =
        |b: &[u8], i: usize| f64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    let mut out = Vec::with_capacity(d.len());
    for e in 0..d.len() / ELEM {
        let (dr, di, sr, si) = (f(d, 2 * e), f(d, 2 * e + 1), f(s, 2 * e), f(s, 2 * e + 1));
        let re = dr * sr - di * si;
        let im = dr * si + di * sr;
        out.extend_from_slice(&re.to_le_bytes());
        out.extend_from_slice(&im.to_le_bytes());
    }
    out
}

impl Accumulate {
    /// Arrays of `size` bytes (a multiple of 16) from `seed`; node 0 to
    /// node `nodes - 1`; `sabotage` flips one bit of the reference.
    pub fn new(
        nodes: u32,
        size: usize,
        cfg: &NicConfig,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<Accumulate, String> {
        let c = UcConsts::read()?;
        let max = uc("UC_MAX_SIZE")? as usize;
        if size == 0 || size > max || !size.is_multiple_of(ELEM) {
            return Err(format!(
                "--size {size}: accumulate takes complex doubles, a multiple of {ELEM} bytes up to {max} (uc.h UC_MAX_SIZE)"
            ));
        }
        if nodes < 2 {
            return Err(format!("--nodes {nodes}: an accumulate needs at least 2"));
        }
        let d = seeded_doubles(seed, size / 8);
        let s = seeded_doubles(seed ^ 0x5eed_5eed, size / 8);
        let mut reference = complex_product(&d, &s);
        if sabotage {
            reference[size / 2] ^= 1;
        }
        let program = NicProgram::usecase(
            "accumulate",
            cfg,
            build_dir,
            UcConsts::rules_with_rma()?,
            c.port,
            c.window,
        )?;
        Ok(Accumulate {
            dst: nodes - 1,
            size,
            d,
            s,
            reference,
            program,
            c,
            mode_word: uc("UC_MODE_ACC")? as u16,
        })
    }

    /// The node whose host array is multiplied.
    pub fn dst(&self) -> u32 {
        self.dst
    }
}

impl Workload for Accumulate {
    fn name(&self) -> &str {
        "accumulate"
    }

    fn program(&self) -> &NicProgram {
        &self.program
    }

    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        if k != 0 {
            return Vec::new();
        }
        self.c.message(0, self.dst, self.mode_word, &self.s)
    }

    fn setup_engine(&self, k: u32, e: &mut Engine, ectx: EctxId) -> Result<(), String> {
        self.c.setup_rma(k, e, ectx, &self.program)?;
        if k == self.dst && !e.host_memory().write(HOST_BASE + self.c.rx, &self.d) {
            return Err(format!("node {k}: the array does not fit its host window"));
        }
        Ok(())
    }

    fn expected_done(&self) -> u32 {
        1
    }

    fn node_done(&self, k: u32, engine: &mut Engine) -> bool {
        k == 0 && self.c.word(engine, self.c.done) == Some(SEQ as u64)
    }

    fn verify(&self, k: u32, engine: Option<&mut Engine>) -> bool {
        if k != 0 && k != self.dst {
            return engine.is_none();
        }
        let Some(e) = engine else {
            return false;
        };
        if k == 0 {
            return self.c.word(e, self.c.done) == Some(SEQ as u64);
        }
        self.c.bytes(e, self.c.rx, self.size) == Some(self.reference.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference against numbers worked by hand: (1 + 2i)(3 + 4i) =
    /// -5 + 10i; (0.1 + 0i)(0.2 + 0i) rounds as f64 does.
    #[test]
    fn the_product_is_the_handlers() {
        let le = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let p = complex_product(&le(&[1.0, 2.0, 0.1, 0.0]), &le(&[3.0, 4.0, 0.2, 0.0]));
        assert_eq!(p, le(&[-5.0, 10.0, 0.020000000000000004, 0.0]));
    }

    #[test]
    fn seeded_doubles_are_finite_with_zeros() {
        let b = seeded_doubles(4, 1000);
        let v: Vec<f64> = b
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert!(v.iter().all(|x| x.is_finite()));
        assert!(v
            .iter()
            .all(|x| *x == 0.0 || (1e-10..1e10).contains(&x.abs())));
        assert_eq!(
            v.iter().filter(|x| **x == 0.0).count(),
            1000usize.div_ceil(17)
        );
        assert!(v.iter().any(|x| *x < 0.0));
    }
}
