//! Arbitrary bytes as a pcap / pcapng capture, read to the end (or the first
//! error) at its timestamps and at a fixed line rate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::traffic::{PcapSource, Source};
use softspin_fuzz::scratch_file;

fuzz_target!(|data: &[u8]| {
    let path = scratch_file("pcap", data);
    for rate in [None, Some(400.0)] {
        let Ok(mut src) = PcapSource::open(&path, rate) else { continue };
        // A record takes at least 16 bytes: the input bounds the loop.
        for _ in 0..=data.len() {
            match src.next_arrival() {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
});
