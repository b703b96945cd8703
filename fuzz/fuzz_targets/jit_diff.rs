//! Differential: the block JIT against the interpreter. The input drives
//! the seeded JIT test's program generator (crates/hpu/tests/common/
//! differential.rs, included by path) in place of its RNG; the program
//! runs on both, with every region compiled at its first entry and
//! Cranelift's verifier on, and stops, faults, registers, instruction and
//! cycle counts, access counts and memory must agree.
//!
//! Input: a flags byte (bits 0-1: slice length, bit 2: faulting accesses
//! allowed, bit 3: which side uses host-atomic AMOs), 8 bytes seeding the
//! data window, then the generator's choices (1-4 bytes each; zeros past
//! the end, so every input is a program).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/hpu/tests/common/mod.rs"]
mod common;
#[path = "../../crates/hpu/tests/common/differential.rs"]
mod differential;

use differential::{compare_words, random_program_from, Bytes, Choices};

/// Slice lengths in cycles: one run, and the short slices of the seeded
/// test (a slice end inside a compiled region).
const SLICES: [u64; 4] = [u64::MAX, 1, 7, 100];

fuzz_target!(|data: &[u8]| {
    let mut g = Bytes(data);
    let flags = g.below(256);
    let data_seed = g.next() << 32 | g.next();
    let slice = SLICES[(flags & 3) as usize];
    let words = random_program_from(&mut g, flags & 4 != 0);
    compare_words("fuzz input", &words, data_seed, slice, flags & 8 != 0);
});
