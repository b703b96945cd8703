//! accumulate, broadcast_fwd and pspin_compat at quick scale: each verified
//! against its reference at 64, 512 and 1024 B packets (all fit 64 B: their
//! packets carry a 4-byte header and at least one item).

use softspin_suite::{examples, Ctx, Outcome};
use std::sync::Mutex;

/// Ctx's work directory is per process and removed on drop: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check(name: &str, run: fn(&Ctx, usize) -> anyhow::Result<Outcome>) {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = Ctx::new(true).unwrap();
    for size in [64, 512, 1024] {
        let o = run(&ctx, size).unwrap();
        assert!(o.verified.is_ok(), "{name} at {size} B: {:?}", o.verified);
        assert_eq!(o.report.drops, 0, "{name} at {size} B dropped packets");
        assert!(o.report.errors.is_empty(), "{name} at {size} B: handler errors {:?}", o.report.error_details);
    }
}

#[test]
fn accumulate() {
    check("accumulate", examples::accumulate::run);
}

#[test]
fn broadcast_fwd() {
    check("broadcast_fwd", examples::broadcast_fwd::run);
}

#[test]
fn pspin_compat() {
    check("pspin_compat", examples::pspin_compat::run);
}
