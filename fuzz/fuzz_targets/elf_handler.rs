//! Arbitrary bytes as a handler image: ELF parsing, decoding, and (when it
//! loads and has a handler symbol in executable memory) one packet through
//! the engine with a small watchdog.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::EctxSpec;
use softspin_hpu::{ElfImage, Perm, Program, TimingModel};
use softspin_fuzz::{packet, run_engine, small_config};

fuzz_target!(|data: &[u8]| {
    let Ok(img) = ElfImage::parse(data) else { return };
    let cfg = small_config();
    if Program::decode(&img.code_ranges(), &cfg.hpu).is_err() {
        return;
    }
    let _ = Program::decode(&img.code_ranges(), &TimingModel::default());
    // A handler: the first symbol (by name) that points into code.
    let in_code = |a: u32| img.segments.iter().any(|s| s.perm.has(Perm::X) && a >= s.vaddr && (a as u64) < s.end());
    let Some(ph) = img.symbols.iter().find(|(n, a)| n.ends_with("_ph") && in_code(**a)).map(|(n, _)| n.clone()) else {
        return;
    };
    let mut spec = EctxSpec::new("fuzz", img);
    spec.ph = Some(ph);
    run_engine(cfg, spec, vec![packet(256, 0, true)]);
});
