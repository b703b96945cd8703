//! Bad flags get a clear error naming the flag and its limit, exit code 2,
//! before any socket is opened (no root needed).

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_softspin-lossy"))
        .args(["--a", "nosuch0", "--b", "nosuch1"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_flags_name_the_field() {
    for (args, want) in [
        (
            &["--loss", "1.5"][..],
            "--loss = 1.5: a probability must be within [0, 1] (direction a2b)",
        ),
        (
            &["--dup", "0,-0.1"][..],
            "--dup = -0.1: a probability must be within [0, 1] (direction b2a)",
        ),
        (
            &["--reorder", "0.1,0.2,0.3"][..],
            "--reorder \"0.1,0.2,0.3\": give one value, or two as A2B,B2A",
        ),
        (
            &["--loss", "abc"][..],
            "--loss \"abc\": 'abc' is not a valid value",
        ),
        (
            &["--loss", "NaN"][..],
            "--loss \"NaN\": 'NaN' is not a valid value",
        ),
        (
            &["--reorder-gap", "0"][..],
            "--reorder-gap = 0: must be within 1..=10000 frames",
        ),
        (
            &["--delay-us", "20000000"][..],
            "--delay-us = 20000000 us: at most 10000000 us",
        ),
    ] {
        let (code, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: got {err:?}, want {want:?}");
    }
}

#[test]
fn missing_interface_is_named() {
    let (code, err) = run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nosuch0"), "{err}");
}
