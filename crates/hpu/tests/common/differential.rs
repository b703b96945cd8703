//! The JIT-against-interpreter oracle (its programs: common/random.rs), shared by
//! tests/jit.rs (seeded programs) and the fuzz target
//! fuzz/fuzz_targets/jit_diff.rs (programs from the fuzz input, which
//! includes this file and `common` by path: it may use only
//! `crate::common` and softspin-hpu's public API).
//!
//! Random programs run both ways with every block compiled at its first
//! entry and Cranelift's verifier on.
#![allow(dead_code)]

pub use crate::common::random::*;
use crate::common::*;
use softspin_hpu::hpu::Stop;
use softspin_hpu::jit::{Jit, JitOptions};
use softspin_hpu::TimingModel;

/// Run to a stop other than a slice end, in slices of `slice` cycles.
pub fn run_sliced(m: &mut Machine, mut jit: Option<&mut Jit>, slice: u64) -> Stop {
    loop {
        let until = m.hpu.cycles.saturating_add(slice);
        let stop = match jit.as_deref_mut() {
            Some(j) => m.hpu.run_jit(&m.prog, j, &mut TestRt, until),
            None => m.hpu.run(&m.prog, &mut TestRt, until),
        };
        if stop != Stop::SliceEnd {
            return stop;
        }
    }
}

/// The JIT the comparisons use: Cranelift's verifier on, every region
/// compiled at its first entry.
pub fn verified_jit(m: &Machine) -> Jit {
    let options = JitOptions { verifier: true };
    Jit::with_options(&m.prog, &TimingModel::default(), options).compile_after(1)
}

/// The program of `seed` both ways (see [`compare_words`]); host-atomic
/// AMOs on the interpreter's side for odd seeds, on the JIT's for even.
pub fn compare(seed: u64, slice: u64) {
    let data_seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let label = format!("seed {seed}");
    compare_words(
        &label,
        &random_program(seed),
        data_seed,
        slice,
        seed % 2 == 1,
    );
}

/// Run `words` (on the data of `data_seed`) on the interpreter and on the
/// verified JIT, in slices of `slice` cycles, and panic (naming `label`)
/// unless stops, faults, registers, counts and memory agree. Host-atomic
/// AMOs on one side (`interp_atomic`: the interpreter's), plain ones on
/// the other: they must not differ either.
pub fn compare_words(label: &str, words: &[u32], data_seed: u64, slice: u64, interp_atomic: bool) {
    let mut a = machine_with(words, data_seed);
    a.hpu.mem.set_atomic_amos(interp_atomic);
    let sa = run_sliced(&mut a, None, slice);
    let mut b = machine_with(words, data_seed);
    b.hpu.mem.set_atomic_amos(!interp_atomic);
    let mut jit = verified_jit(&b);
    let sb = run_sliced(&mut b, Some(&mut jit), slice);
    assert!(jit.verifier(), "{label}: Cranelift's verifier is off");
    assert!(jit.compiled > 0, "{label}: nothing was compiled");
    assert!(
        jit.errors.is_empty(),
        "{label}: regions failed to compile: {:?}",
        jit.errors
    );
    assert_eq!(
        state(&a, sa),
        state(&b, sb),
        "{label}, slices of {slice} cycles"
    );
}
