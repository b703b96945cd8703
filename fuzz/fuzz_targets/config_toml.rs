//! Arbitrary text as a NIC configuration TOML: parse and validate, build the
//! engine it describes, and run one packet through the empty handler on it
//! (a configuration that validates must give a working NIC).
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::{EctxSpec, NicConfig};
use softspin_fuzz::{handler, packet, run_engine};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cfg) = NicConfig::from_toml(text, "fuzz.toml") else { return };
    let mut spec = EctxSpec::new("fuzz", handler(0));
    spec.ph = Some("empty_ph".into());
    spec.scratchpad = vec![64; cfg.clusters.min(64) as usize];
    run_engine(cfg, spec, vec![packet(128, 0, true)]);
});
