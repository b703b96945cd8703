//! Helpers shared by the C tests: the release build the C programs link
//! against, handler builds, C compiles.
#![allow(dead_code)] // each test crate uses a part of them

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// target/release, with libsoftspin and the `softspin` CLI up to date
/// (`cargo test` in another profile, or of this package alone, does not
/// build them there; cargo is a no-op when they are current).
pub fn release_dir() -> PathBuf {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        let o = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "-p",
                "softspin-c",
                "-p",
                "softspin-cli",
            ])
            .current_dir(root())
            .output()
            .expect("run cargo");
        assert!(
            o.status.success(),
            "cargo build --release failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        root().join("target/release")
    })
    .clone()
}

/// A scratch directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-c-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if !o.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    o
}

/// Build a handler image with `softspin build`.
pub fn build_handler(src: &Path, out: &Path) {
    run(Command::new(release_dir().join("softspin"))
        .arg("build")
        .arg(src)
        .arg("-o")
        .arg(out));
}

/// A git repository holding the pinned commit of third-party sources, and
/// that commit.
pub struct Pinned {
    pub repo: PathBuf,
    pub commit: String,
}

/// Third-party sources NAME where `scripts/third-party.sh --where` finds
/// them; None, having said SKIPPED and how to get them, when they are
/// nowhere.
pub fn third_party(name: &str) -> Option<Pinned> {
    let o = Command::new(root().join("scripts/third-party.sh"))
        .args(["--where", name])
        .output()
        .expect("run scripts/third-party.sh");
    let out = String::from_utf8_lossy(&o.stdout);
    match out.trim_end().split_once('\t') {
        Some((repo, commit)) if o.status.success() => Some(Pinned {
            repo: repo.into(),
            commit: commit.into(),
        }),
        _ => {
            println!("SKIPPED: {}", String::from_utf8_lossy(&o.stderr).trim_end());
            None
        }
    }
}
