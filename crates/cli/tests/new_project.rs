//! `softspin new NAME [--live]` (issue 26 item 6): the project it writes
//! passes its own check as written (build with make, `softspin sim` on the
//! test pcap, every reply byte against Python's computation), the check
//! fails when the handler is wrong, an existing directory is never
//! overwritten, and `--live` answers from the live NIC (root only, in
//! namespaces prefixed `sgun`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_softspin");

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-new-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn new(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("new")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn make_check(proj: &Path) -> Output {
    Command::new("make")
        .args(["-C", proj.to_str().unwrap(), "check"])
        .arg(format!("SOFTSPIN={BIN}"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_new_project_passes_its_check_as_written_and_the_check_can_fail() {
    let d = dir("check");
    let o = new(&d, &["kv"]);
    assert!(o.status.success(), "{}", text(&o));
    let proj = d.join("kv");
    for f in ["handler.c", "Makefile", "test.pcap", "check.py"] {
        assert!(proj.join(f).is_file(), "{f} missing");
    }
    assert!(!proj.join("live.sh").exists(), "live.sh without --live");
    let o = make_check(&proj);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ok: 3 replies"), "{}", text(&o));

    // Sabotage: the handler no longer changes the case; the check notices.
    let h = proj.join("handler.c");
    let src = std::fs::read_to_string(&h).unwrap();
    let bad = src.replace("text[i] -= 'a' - 'A';", "text[i] -= 0;");
    assert_ne!(bad, src, "the sabotage did not apply");
    std::fs::write(&h, bad).unwrap();
    let o = make_check(&proj);
    assert!(!o.status.success(), "a wrong handler passed: {}", text(&o));
    assert!(text(&o).contains("unexpected reply"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn new_never_overwrites_and_names_must_be_c_identifiers() {
    let d = dir("refuse");
    std::fs::create_dir(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/handler.c"), "my work").unwrap();
    let o = new(&d, &["mine"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("already exists"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(d.join("mine/handler.c")).unwrap(),
        "my work"
    );
    for bad in ["9lives", "my-handler", "a b"] {
        let o = new(&d, &[bad]);
        assert_eq!(o.status.code(), Some(1), "{bad}: {}", text(&o));
        assert!(text(&o).contains("C identifier"), "{}", text(&o));
        assert!(!d.join(bad).exists(), "{bad} was created");
    }
    let o = new(&d, &["no/such/parent/x"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("no such directory"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(d);
}

/// Root (the effective uid, from /proc/self/status) and iproute2.
fn live_possible() -> Result<(), String> {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = s
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2));
    if euid != Some("0") {
        return Err("not root".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("no `ip` (iproute2)".into()),
    }
}

#[test]
fn new_live_answers_from_the_live_nic() {
    if let Err(why) = live_possible() {
        println!("SKIPPED: the live check of softspin new needs root and iproute2 ({why})");
        return;
    }
    let d = dir("live");
    let o = new(&d, &["live_echo", "--live"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = Command::new(d.join("live_echo/live.sh"))
        .env("SOFTSPIN", BIN)
        .env("SS_NS_PREFIX", "sgun")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ok: 3 live replies"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(d);
}
