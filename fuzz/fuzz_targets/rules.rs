//! Arbitrary bytes as a matching-engine rules file and a frame: the text up
//! to the first NUL is the rules TOML (and a `--match` spec), the rest the
//! frame. A rules file that parses must give a matcher that classifies any
//! frame, and the verdict must name one of its rulesets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_netio::rules::{parse_rules, Matcher, Ruleset};

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (text, frame) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    let Ok(text) = std::str::from_utf8(text) else { return };
    let _ = Ruleset::from_spec(text);
    let Ok(rules) = parse_rules(text) else { return };
    let n = rules.len();
    let m = Matcher::new(rules).expect("parse_rules validates what it returns");
    if let Some(v) = m.classify(frame) {
        assert!(v.ruleset < n, "verdict names ruleset {} of {n}", v.ruleset);
    }
});
