//! `softspin sim --gdb` under Debian's gdb-multiarch in batch mode: a
//! breakpoint in a handler, registers, an argument, packet memory, steps,
//! `finish` with the function's result, `info threads` = HPUs, errors
//! outside the ECTX's memory, detach, kill, a client that vanishes
//! mid-packet or sends garbage. Expected values come from the traffic
//! generator's payload rule (`sim --payload seq`: byte i of packet n is
//! (i + 7n) mod 256) and from gdb's own reading of the ELF, not from the
//! stub. Runs under the debugger must give the same `--json` as runs
//! without it (NIC time stands still while stopped; only `hpu_engine`
//! differs: the JIT is not used under gdb). Says SKIPPED without
//! gdb-multiarch.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-gdb-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(args)
        .output()
        .unwrap()
}

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

/// The test handler, built with -g and -O0 (every local in memory).
fn image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = dir().join("gdb_test.elf");
        let src = root().join("crates/cli/tests/handlers/gdb_test.c");
        let o = softspin(&[
            "build",
            "-g",
            "--cflag=-O0",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

/// The traffic of every run here.
const TRAFFIC: [&str; 4] = ["--messages", "4", "--packets", "3"];

fn sim_args(extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["sim", "--image", &image(), "--ph", "gdb_ph", "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(TRAFFIC.iter().chain(extra).map(|s| s.to_string()));
    a
}

/// A sim waiting for gdb, and the port it listens on (read from its stderr).
struct Sim {
    child: Child,
    port: u16,
    stderr: std::thread::JoinHandle<String>,
}

fn start(extra: &[&str]) -> Sim {
    let mut args = sim_args(extra);
    args.extend(["--gdb".to_string(), "127.0.0.1:0".to_string()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(&args)
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
    Sim {
        child,
        port,
        stderr,
    }
}

impl Sim {
    /// Wait (at most a minute) for the exit: (success, stdout, stderr).
    fn finish(mut self) -> (bool, String, String) {
        let end = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                self.child.kill().unwrap();
                panic!("sim --gdb hangs");
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
        (status.success(), out, self.stderr.join().unwrap())
    }
}

/// gdb-multiarch in batch mode on the image, connected to `port`.
fn gdb(port: u16, cmds: &[&str]) -> String {
    let target = format!("target remote 127.0.0.1:{port}");
    let mut c = Command::new("timeout");
    c.args([
        "60",
        "gdb-multiarch",
        "-nx",
        "-batch",
        "-ex",
        "set confirm off",
    ]);
    c.args(["-ex", &format!("file {}", image()), "-ex", &target]);
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

/// The run's `--json` without a debugger.
fn plain_json() -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(sim_args(&[]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// A `--json` report without `hpu_engine`: under gdb handlers are
/// interpreted, without it they run through the default JIT, and every
/// other key must be the same.
fn results(json: &str) -> serde_json::Value {
    let mut j: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json:?}"));
    j.as_object_mut()
        .unwrap_or_else(|| panic!("not an object: {json:?}"))
        .remove("hpu_engine");
    j
}

/// The hex number after `what` in `text`.
fn hex_after(text: &str, what: &str) -> u32 {
    let rest = text
        .split(what)
        .nth(1)
        .unwrap_or_else(|| panic!("no {what:?} in:\n{text}"));
    let h = rest.trim_start().trim_start_matches("0x");
    let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
    u32::from_str_radix(&h[..end], 16).unwrap()
}

#[test]
fn breakpoint_registers_arguments_memory_steps_and_finish() {
    if !have_gdb() {
        return;
    }
    let sim = start(&[]);
    let out = gdb(
        sim.port,
        &[
            "break add_up",
            "continue",
            "info registers pc",
            "print n",
            "print/x p[4]",
            "print/x p[15]",
            "step",
            "stepi",
            "info threads",
            // Other packets' HPUs would hit it before `finish` returns.
            "delete",
            "finish",
            "print *(int *)0",
            // Writes: handler memory yes, code no (read-only to the HPU).
            "set var last_sum = 77",
            "print last_sum",
            "set var *(int *)$pc = 0",
            "detach",
        ],
    );
    let (ok, json, err) = sim.finish();
    assert!(ok, "sim failed: {err}\ngdb:\n{out}");
    // The breakpoint gdb placed (from the ELF's line table) is where the
    // HPU stopped.
    let bp = hex_after(&out, "Breakpoint 1 at ");
    assert!(out.contains("hit Breakpoint 1, add_up"), "{out}");
    assert_eq!(hex_after(&out, "\npc "), bp, "{out}");
    // The argument, and packet 0's payload bytes 4 and 15 (seq: byte i = i).
    assert!(out.contains("$1 = 16\n"), "{out}");
    assert!(out.contains("$2 = 0x4\n"), "{out}");
    assert!(out.contains("$3 = 0xf\n"), "{out}");
    // `step` reaches the loop's line; `stepi` moves one instruction.
    assert!(out.contains("for (uint32_t i = 0; i < n; i++)"), "{out}");
    // Every HPU is a thread (pspin: 4 clusters x 8), the stopped one runs ECTX 0.
    let threads = out.lines().filter(|l| l.contains("(HPU ")).count();
    assert_eq!(threads, 32, "{out}");
    assert!(out.contains("HPU 0 cluster 0: ECTX 0"), "{out}");
    // `finish` returns to the handler with the sum of payload bytes 0..16.
    let sum: u32 = (0..16).sum();
    assert!(
        out.contains(&format!("Value returned is $4 = {sum}\n")),
        "{out}"
    );
    assert!(out.contains("in gdb_ph ("), "{out}");
    // Outside the ECTX's memory: an error, and the run goes on.
    assert!(out.contains("Cannot access memory at address 0x0"), "{out}");
    assert!(out.contains("$5 = 77\n"), "{out}");
    assert_eq!(out.matches("Cannot access memory").count(), 2, "{out}");
    assert!(out.contains("detached"), "{out}");
    // Stopped, stepped and detached: the results are the plain run's.
    assert_eq!(results(&json), results(&plain_json()));
}

#[test]
fn continue_only_gives_the_same_results() {
    if !have_gdb() {
        return;
    }
    let sim = start(&[]);
    let out = gdb(sim.port, &["info threads", "continue"]);
    let (ok, json, err) = sim.finish();
    assert!(ok, "sim failed: {err}\ngdb:\n{out}");
    // The sim's exit status reaches gdb.
    assert!(out.contains("exited normally"), "{out}");
    assert_eq!(results(&json), results(&plain_json()));
}

#[test]
fn gdb_break_stops_at_the_handler_entry() {
    if !have_gdb() {
        return;
    }
    let sim = start(&["--gdb-break", "gdb_ph"]);
    let out = gdb(sim.port, &["continue", "info registers pc", "detach"]);
    let (ok, json, err) = sim.finish();
    assert!(ok, "sim failed: {err}\ngdb:\n{out}");
    // gdb names the pc itself, from the ELF's symbols.
    assert!(out.contains("<gdb_ph>"), "{out}");
    assert_eq!(results(&json), results(&plain_json()));
}

#[test]
fn kill_from_gdb_ends_the_run_with_an_error() {
    if !have_gdb() {
        return;
    }
    let sim = start(&["--gdb-break", "gdb_ph"]);
    let out = gdb(sim.port, &["continue", "kill"]);
    let (ok, json, err) = sim.finish();
    assert!(!ok, "a killed run must not succeed\ngdb:\n{out}");
    assert!(err.contains("killed from gdb"), "{err}");
    assert!(json.is_empty(), "no results of a killed run: {json}");
}

#[test]
fn a_client_that_vanishes_mid_packet_does_not_hang_the_run() {
    // No gdb needed: a raw client.
    let sim = start(&[]);
    let mut c = std::net::TcpStream::connect(("127.0.0.1", sim.port)).unwrap();
    c.write_all(b"$qSupported:multiprocess+;swbre").unwrap();
    drop(c);
    let (ok, json, err) = sim.finish();
    assert!(ok, "{err}");
    assert!(err.contains("connection lost"), "{err}");
    assert_eq!(results(&json), results(&plain_json()));
}

#[test]
fn bad_gdb_flags_are_clear_errors() {
    let img = image();
    let base = ["sim", "--image", img.as_str(), "--ph", "gdb_ph"];
    let o = softspin(&[&base[..], &["--gdb", "nonsense"]].concat());
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--gdb nonsense: expected [HOST]:PORT"));
    let o = softspin(
        &[
            &base[..],
            &["--gdb", ":0", "--gdb-break", "no_such_handler"],
        ]
        .concat(),
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--gdb-break no_such_handler: no such symbol")
    );
    let o = softspin(&[&base[..], &["--gdb-break", "gdb_ph"]].concat());
    assert!(!o.status.success(), "--gdb-break needs --gdb");
}

#[test]
fn build_g_adds_debug_information() {
    let src = root().join("crates/cli/tests/handlers/gdb_test.c");
    let has_dwarf = |flags: &[&str], name: &str| {
        let out = dir().join(name);
        let mut a = vec!["build", src.to_str().unwrap(), "-o", out.to_str().unwrap()];
        a.extend(flags);
        let o = softspin(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let elf = std::fs::read(&out).unwrap();
        elf.windows(11).any(|w| w == b".debug_info")
    };
    assert!(has_dwarf(&["-g"], "g.elf"));
    assert!(!has_dwarf(&[], "plain.elf"));
}

#[test]
fn garbage_from_the_client_ends_the_session_not_the_run() {
    // Packet-like noise: '$', '#', checksums, binary, interrupts (0x03).
    for seed in 1..=8u64 {
        let sim = start(&[]);
        let mut c = std::net::TcpStream::connect(("127.0.0.1", sim.port)).unwrap();
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut bytes = Vec::new();
        for _ in 0..4096 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push(match x % 8 {
                0 => b'$',
                1 => b'#',
                2 => b"0123456789abcdef"[(x >> 8) as usize % 16],
                3 => b"qgmMcszZ?vTH"[(x >> 8) as usize % 12],
                _ => (x >> 16) as u8,
            });
        }
        // The stub may close first (a fatal packet): then writing fails.
        let _ = c.write_all(&bytes);
        drop(c);
        let (ok, json, err) = sim.finish();
        assert!(ok, "seed {seed}: {err}");
        assert_eq!(results(&json), results(&plain_json()), "seed {seed}");
    }
}
