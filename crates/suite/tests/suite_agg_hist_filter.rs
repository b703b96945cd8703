//! aggregate, histogram and filtering at quick scale: each verified against
//! its reference at 64, 512 and 1024 B packets (every size holds their
//! packets: none carries a header of its own beyond IP/UDP).

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
fn aggregate() {
    check("aggregate", examples::aggregate::run);
}

#[test]
fn histogram() {
    check("histogram", examples::histogram::run);
}

#[test]
fn filtering() {
    check("filtering", examples::filtering::run);
}
