//! The C host-API examples (examples/copy_to_host, copy_from_host,
//! host_direct): `make run` builds the handler and the host program and
//! runs it; the C program compares byte for byte and exits non-zero on a
//! mismatch. Each is also run with `--sabotage` (one wrong expected byte),
//! which must fail: the check really checks.

mod common;

use std::process::Command;

use common::release_dir;
use softspin_testkit::root;

fn example(name: &str, success_line: &str) {
    release_dir(); // library and CLI current before make looks at them
    let dir = root().join("examples").join(name);
    let make = |args: &[&str]| {
        Command::new("make")
            .arg("-C")
            .arg(&dir)
            .arg("run")
            .args(args)
            .output()
            .expect("run make")
    };

    let o = make(&[]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{name} failed:\n{out}\n{err}");
    assert!(
        out.contains(success_line),
        "{name}: no `{success_line}` in\n{out}"
    );
    println!("{out}");

    let o = make(&["ARGS=--sabotage"]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        !o.status.success(),
        "{name} --sabotage passed:\n{out}\n{err}"
    );
    assert!(
        err.contains("mismatch") && err.contains("FAILED"),
        "{name} --sabotage:\n{out}\n{err}"
    );
}

#[test]
fn copy_to_host() {
    example(
        "copy_to_host",
        "host buffer matches the 3 messages byte for byte",
    );
}

#[test]
fn copy_from_host() {
    example(
        "copy_from_host",
        "every reply matches host memory byte for byte",
    );
}

#[test]
fn host_direct() {
    example(
        "host_direct",
        "all 256 digests match the ones computed on the host",
    );
}
