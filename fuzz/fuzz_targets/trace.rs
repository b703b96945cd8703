//! Arbitrary bytes as a PsPIN-style text trace, read to the end (or the
//! first error) as IP and as Ethernet frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::traffic::{FrameKind, Source, TraceSource};
use softspin_fuzz::scratch_file;

fuzz_target!(|data: &[u8]| {
    let path = scratch_file("trace", data);
    for kind in [FrameKind::Ip, FrameKind::Eth] {
        let Ok(mut src) = TraceSource::open(&path, kind) else { continue };
        // One arrival per line at most: the input bounds the loop.
        for _ in 0..=data.len() {
            match src.next_arrival() {
                Ok(Some(a)) => assert!(!a.frame.is_empty()),
                _ => break,
            }
        }
    }
});
