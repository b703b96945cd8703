//! `softspin isa run --gdb` under Debian's gdb-multiarch in batch mode: the
//! stop at the program's entry, a breakpoint, registers, an argument and a
//! local, steps, `finish` with the function's result, memory writes and
//! errors outside the program, detach, kill. Expected values come from the
//! C source (tests/handlers/isa_gdb_test.c: the sum of the squares 1..6 is
//! 91) and from gdb's own reading of the ELF, not from the stub. Runs under
//! the debugger must print and exit as runs without it. Says SKIPPED
//! without gdb-multiarch.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// squares(6) = 1 + 4 + 9 + 16 + 25 + 36, the program's exit status.
const SUM: u32 = 91;

fn have_gdb() -> bool {
    let ok = Command::new("gdb-multiarch")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: gdb-multiarch not installed (scripts/setup.sh --tests installs it)");
    }
    ok
}

/// The test program, built bare-metal with -g and -O0 (every local in memory).
fn program() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("softspin-isa-gdb-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let out = d.join("isa_gdb_test.elf");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/handlers/isa_gdb_test.c");
        let o = Command::new(env!("CARGO_BIN_EXE_softspin"))
            .args(["build", "--bare", "-g", "--cflag=-O0"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

/// A run waiting for gdb, and the port it listens on (read from its stderr).
struct Run {
    child: Child,
    port: u16,
    stderr: std::thread::JoinHandle<String>,
}

fn start() -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(["isa", "run", "--gdb", "127.0.0.1:0", &program()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let port = line
        .split("waiting for gdb on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    let stderr = std::thread::spawn(move || {
        let mut rest = line;
        err.read_to_string(&mut rest).unwrap();
        rest
    });
    Run {
        child,
        port,
        stderr,
    }
}

impl Run {
    /// Wait (at most a minute) for the exit: (exit code, stdout, stderr).
    fn finish(mut self) -> (Option<i32>, String, String) {
        let end = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                self.child.kill().unwrap();
                panic!("isa run --gdb hangs");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        (status.code(), out, self.stderr.join().unwrap())
    }
}

/// gdb-multiarch in batch mode on the program, connected to `port`.
fn gdb(port: u16, cmds: &[&str]) -> String {
    let target = format!("target remote 127.0.0.1:{port}");
    let mut c = Command::new("timeout");
    c.args(["60", "gdb-multiarch", "-nx", "-batch"]);
    c.args([
        "-ex",
        "set confirm off",
        "-ex",
        &format!("file {}", program()),
    ]);
    c.args(["-ex", &target]);
    for x in cmds {
        c.args(["-ex", x]);
    }
    let o = c.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The plain run: (exit code, stdout).
fn plain() -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(["isa", "run", &program()])
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8(o.stdout).unwrap())
}

/// The hex number after `what` in `text`.
fn hex_after(text: &str, what: &str) -> u32 {
    let rest = text
        .split_once(what)
        .unwrap_or_else(|| panic!("no {what:?} in:\n{text}"))
        .1;
    let h = rest.trim_start().trim_start_matches("0x");
    let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
    u32::from_str_radix(&h[..end], 16).unwrap()
}

#[test]
fn entry_breakpoint_locals_steps_finish_and_exit_status() {
    if !have_gdb() {
        return;
    }
    let plain = plain();
    assert_eq!(plain.0, Some(SUM as i32), "{plain:?}");
    let run = start();
    let out = gdb(
        run.port,
        &[
            "info registers pc",
            "break squares",
            "continue",
            "info registers pc",
            "print n",
            // Two lines on: `sum = 0`, then into the loop's body.
            "next",
            "next",
            "print i",
            "step",
            "stepi",
            "finish",
            // Writes: the program's data yes, code no (read-only to it).
            "set var last_sum = 77",
            "print last_sum",
            "print *(int *)0",
            "set var *(int *)$pc = 0",
            "continue",
        ],
    );
    let (code, stdout, err) = run.finish();
    // gdb names the entry from the ELF's symbols.
    assert!(out.contains("<_start>"), "{out}");
    let bp = hex_after(&out, "Breakpoint 1 at ");
    assert!(out.contains("Breakpoint 1, squares (n=6)"), "{out}");
    let pcs: Vec<_> = out
        .split("\npc ")
        .skip(1)
        .map(|r| hex_after(r, "0x"))
        .collect();
    assert_eq!(pcs.get(1), Some(&bp), "{out}");
    assert!(out.contains("$1 = 6\n"), "{out}");
    assert!(out.contains("sum += i * i;"), "{out}");
    assert!(out.contains("$2 = 1\n"), "{out}");
    assert!(
        out.contains(&format!("Value returned is $3 = {SUM}\n")),
        "{out}"
    );
    assert!(out.contains("in main ("), "{out}");
    assert!(out.contains("$4 = 77\n"), "{out}");
    assert_eq!(out.matches("Cannot access memory").count(), 2, "{out}");
    // gdb learns the exit status (gdb prints it in octal).
    assert!(
        out.contains(&format!("exited with code 0{:o}", SUM)),
        "{out}"
    );
    // Stopped, stepped, written to (last_sum is not what is printed or
    // returned): the output and status are the plain run's.
    assert_eq!((code, stdout), plain, "{err}");
}

#[test]
fn continue_and_detach_give_the_plain_run() {
    if !have_gdb() {
        return;
    }
    let plain = plain();
    let run = start();
    let out = gdb(run.port, &["continue"]);
    let (code, stdout, err) = run.finish();
    assert!(out.contains("exited with code"), "{out}");
    assert_eq!((code, stdout), plain, "{err}");

    let run = start();
    let out = gdb(run.port, &["break squares", "continue", "detach"]);
    let (code, stdout, err) = run.finish();
    assert!(out.contains("detached"), "{out}");
    assert_eq!((code, stdout), plain, "{err}");
}

#[test]
fn kill_from_gdb_ends_the_run_with_an_error() {
    if !have_gdb() {
        return;
    }
    let run = start();
    let out = gdb(run.port, &["break squares", "continue", "kill"]);
    let (code, stdout, err) = run.finish();
    assert_ne!(code, Some(0), "a killed run must not succeed\ngdb:\n{out}");
    assert_ne!(code, Some(SUM as i32), "{out}");
    assert!(err.contains("killed from gdb"), "{err}");
    assert!(!stdout.contains("exit="), "no result line: {stdout}");
}

#[test]
fn bad_gdb_address_is_a_clear_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(["isa", "run", "--gdb", "nonsense", &program()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--gdb nonsense: expected [HOST]:PORT"));
}
