//! What softspin's tests share, defined once: the repository root, whether
//! the test runs as root, the `SKIPPED:` line `scripts/skips.py` collects,
//! scratch directories, commands that must succeed, third-party sources,
//! handler images, a seeded RNG (`rng`), frames built by hand (`frame`),
//! guards for the network namespaces of the live tests (`net`), pcap files
//! (`pcap`), the Internet checksum (`csum`) and the reference SLMP receiver
//! (`slmp_receiver`). A dev-dependency only: nothing here ships.

pub mod frame;
pub mod net;
pub mod pcap;
pub mod rng;
pub mod slmp_receiver;

pub use rng::Rng;

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// The repository's top directory (canonical: a crate may be reached
/// through a link).
pub fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .expect("the repository root")
    })
}

/// Whether the effective uid is 0 (namespaces, XDP, BPF need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Says that a test passes without running, and why, in the one format
/// `scripts/skips.py` collects (`SKIPPED: WHY` on the test's output).
pub fn skip(why: impl Display) {
    println!("SKIPPED: {why}");
}

/// True when running as root; otherwise says `SKIPPED: WHAT needs root
/// (BECAUSE)` and returns false: a test starts
/// `if !needs_root("...", "...") { return; }`.
pub fn needs_root(what: &str, because: &str) -> bool {
    let root = is_root();
    if !root {
        skip(format_args!("{what} needs root ({because})"));
    }
    root
}

/// `$TMPDIR/softspin-tests/PID/NAME`, created: one scratch directory per
/// name and test process (tests of one binary run in parallel, so give each
/// its own name when they write the same files). A test process cannot
/// clean up after itself (no hook runs when the harness exits), so the
/// first call in a process removes the directories of processes that are
/// gone.
pub fn scratch(name: &str) -> PathBuf {
    static SWEPT: OnceLock<()> = OnceLock::new();
    let base = std::env::temp_dir().join("softspin-tests");
    SWEPT.get_or_init(|| sweep_gone(&base));
    let d = base.join(std::process::id().to_string()).join(name);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    d
}

/// Remove the entries of `base` named by the PID of a process that is gone.
fn sweep_gone(base: &Path) {
    for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
        let pid = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// target/release, with libsoftspin and the `softspin` CLI up to date, for
/// tests that link or run them (`cargo test` in another profile, or of one
/// package, does not build them there). These are scripts/setup.sh's two
/// builds, apart: built together, softspin-cli's `jit` would reach
/// libsoftspin and rebuild it and the crates under it (~90 s), and the
/// next build would undo that.
pub fn release_dir() -> PathBuf {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        for args in [
            &["--workspace", "--exclude", "softspin-cli"][..],
            &["-p", "softspin-cli"][..],
        ] {
            let o = Command::new(env!("CARGO"))
                .args(["build", "--release"])
                .args(args)
                .current_dir(root())
                .output()
                .expect("run cargo");
            assert!(
                o.status.success(),
                "cargo build --release {}failed:\n{}",
                args.join(" ") + " ",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        root().join("target/release")
    })
    .clone()
}

/// The handler image of `srcs` (paths from the repository root) built with
/// the SDK's defaults into `scratch("handlers")/NAME.elf`, once per test
/// process and name (tests of one binary share it; the lock keeps them from
/// reading a half-written image).
pub fn handler_image(name: &str, srcs: &[&str]) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    built
        .entry(name.to_string())
        .or_insert_with(|| {
            let out = scratch("handlers").join(format!("{name}.elf"));
            let srcs: Vec<PathBuf> = srcs.iter().map(|s| root().join(s)).collect();
            softspin_sdk::build(&softspin_sdk::BuildOptions::handler(&srcs, &out))
                .unwrap_or_else(|e| panic!("building {srcs:?}: {e}"));
            out
        })
        .clone()
}

/// As `scratch`, emptied first: for a step that must not see an earlier
/// run's files.
pub fn fresh_scratch(name: &str) -> PathBuf {
    let d = scratch(name);
    let _ = std::fs::remove_dir_all(&d);
    scratch(name)
}

/// Status, stdout and stderr of a finished command, for assertion messages.
pub fn describe(o: &Output) -> String {
    format!(
        "status={:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `cmd` to completion; panics with its output unless it succeeded.
pub fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed:\n{}", describe(&o));
    o
}

/// A git repository holding the pinned commit of third-party sources, and
/// that commit.
pub struct Pinned {
    pub repo: PathBuf,
    pub commit: String,
}

impl Pinned {
    /// `paths` of the pinned commit (`git archive | tar -x`) into `dir`.
    pub fn extract<S: AsRef<std::ffi::OsStr>>(&self, paths: &[S], dir: &Path) {
        use std::io::Write;
        let archive = run(Command::new("git")
            .arg("-C")
            .arg(&self.repo)
            .args(["archive", &self.commit])
            .args(paths));
        let mut tar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("run tar");
        tar.stdin
            .take()
            .expect("tar's stdin")
            .write_all(&archive.stdout)
            .expect("feed tar");
        let st = tar.wait().expect("wait for tar");
        assert!(
            st.success(),
            "tar -x of {} into {}: {st}",
            self.repo.display(),
            dir.display()
        );
    }
}

/// Third-party sources NAME (pspin, fpspin, embench) where
/// `scripts/third-party.sh --where` finds them; None, having said SKIPPED
/// and how to get them, when they are nowhere.
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
            skip(String::from_utf8_lossy(&o.stderr).trim_end());
            None
        }
    }
}

/// The Internet checksum (RFC 1071) of `b`: written here apart from
/// `softspin-wire` and the SDK, so tests check those against it.
pub fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_holds_the_workspace() {
        assert!(root().join("crates/testkit/Cargo.toml").is_file());
    }

    #[test]
    fn csum_matches_rfc1071_example() {
        // RFC 1071 §3's bytes sum to 0xddf2; the checksum is its complement.
        assert_eq!(
            csum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        // An odd length pads with a zero byte.
        assert_eq!(csum(&[0xff]), !0xff00);
        // A header with its checksum in place sums to zero.
        let mut h = [
            0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let c = csum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(csum(&h), 0);
    }

    #[test]
    fn scratch_is_per_process_and_exists() {
        let d = scratch("testkit-self");
        assert!(d.is_dir());
        assert!(d.ends_with(format!(
            "softspin-tests/{}/testkit-self",
            std::process::id()
        )));
    }

    #[test]
    fn sweep_removes_only_the_directories_of_processes_that_are_gone() {
        let base = scratch("testkit-sweep");
        // PIDs above the kernel's limit (4,194,304) never run.
        let (gone, live, other) = (
            base.join("4999999"),
            base.join(std::process::id().to_string()),
            base.join("x1"),
        );
        for d in [&gone, &live, &other] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
        }
        sweep_gone(&base);
        assert!(!gone.exists());
        assert!(live.join("sub").is_dir() && other.join("sub").is_dir());
    }

    #[test]
    fn run_names_a_failing_command() {
        let e = std::panic::catch_unwind(|| {
            run(Command::new("sh").args(["-c", "echo oops >&2; exit 3"]))
        })
        .unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("status=Some(3)") && msg.contains("oops"),
            "{msg}"
        );
    }
}
