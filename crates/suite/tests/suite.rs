//! Every example of the suite at quick scale, verified against its
//! independent reference at 64, 512 and 1024 B packets (each example's
//! packets fit 64 B: none carries more than IP/UDP and a small header),
//! with no drop and no handler error, with its handler built for plain
//! RV32IMAC and for CORE-V (the two must give the same, correct results).
//! One test per example, so they run in parallel and a failure names its
//! example.

use softspin_suite::{Ctx, SUITE};

fn check(name: &str) {
    let (_, run, _) = SUITE
        .iter()
        .find(|(n, _, _)| *n == name)
        .expect("example in SUITE");
    for isa in ["rv32imac", "corev"] {
        let ctx = Ctx::with_isa(true, Some(isa)).unwrap();
        for size in [64, 512, 1024] {
            let o = run(&ctx, size).unwrap();
            assert!(
                o.verified.is_ok(),
                "{name} ({isa}) at {size} B: {:?}",
                o.verified
            );
            assert_eq!(
                o.report.drops, 0,
                "{name} ({isa}) at {size} B dropped packets"
            );
            assert!(
                o.report.errors.is_empty(),
                "{name} ({isa}) at {size} B: handler errors {:?}",
                o.report.error_details
            );
            assert!(
                o.report.packets > 0,
                "{name} ({isa}) at {size} B processed no packet"
            );
        }
    }
}

macro_rules! suite_tests {
    ($($name:ident)*) => {
        $( #[test] fn $name() { check(stringify!($name)); } )*

        /// The tests above cover the whole suite.
        #[test]
        fn every_example_has_a_test() {
            let all: Vec<&str> = SUITE.iter().map(|(n, _, _)| *n).collect();
            assert_eq!(all, [$(stringify!($name)),*]);
        }
    };
}
suite_tests!(empty reduce accumulate broadcast_fwd pspin_compat aggregate histogram filtering kvstore strided_ddt raid_parity);
