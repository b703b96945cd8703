//! Issue 10, "Done when": every reproduction of its sections 1 and 2, run
//! the way a user ran it — the `softspin` CLI (sim, isa, build), the C host
//! API and the Python module — each in a child process under a 1 GB
//! address-space limit (`ulimit -v`) and a wall-clock limit. A case passes
//! when the process ends by itself with the documented status (never 101 =
//! Rust panic, 134 = abort, a signal or a timeout) and its output names the
//! field, argument or cause. Handlers: tests/handlers/repro_handlers.c and
//! crates/engine/tests/handlers/misbehave.c; C host program:
//! tests/host/repro_host.c.

use softspin_testkit::{root, scratch};
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The memory limit, in KiB as `ulimit -v` takes it.
const LIMIT_KB: u64 = 1_000_000;
/// Wall-clock limit of one child process.
const WALL: Duration = Duration::from_secs(60);
/// Bytes of each output stream kept for the checks.
const KEEP: u64 = 1 << 20;

fn cli() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_softspin"))
}

/// How a limited child process ended.
struct Run {
    cmd: String,
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    secs: f64,
    stdout: String,
    stderr: String,
}

impl Run {
    fn show(&self) -> String {
        let tail = |s: &str| {
            s.chars()
                .rev()
                .take(3000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<String>()
        };
        format!(
            "command: {}\nstatus={:?} signal={:?} timed_out={} secs={:.1}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
            self.cmd,
            self.code,
            self.signal,
            self.timed_out,
            self.secs,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }

    fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr).to_lowercase()
    }

    /// Ended by itself with one of `codes`, no panic text, and every one of
    /// `needles` (case-insensitive; `a|b`: either) in stdout or stderr.
    fn expect(&self, codes: &[i32], needles: &[&str]) {
        assert!(
            !self.timed_out,
            "killed after {WALL:?} (hang)\n{}",
            self.show()
        );
        assert!(self.signal.is_none(), "killed by a signal\n{}", self.show());
        let code = self.code.unwrap();
        assert!(code != 101, "Rust panic (exit 101)\n{}", self.show());
        assert!(code != 134, "abort (exit 134)\n{}", self.show());
        assert!(
            !self.text().contains("panicked at"),
            "panic message\n{}",
            self.show()
        );
        assert!(
            !self.text().contains("memory allocation of"),
            "allocation failure\n{}",
            self.show()
        );
        assert!(
            codes.contains(&code),
            "exit status {code}, expected one of {codes:?}\n{}",
            self.show()
        );
        for n in needles {
            assert!(
                n.split('|')
                    .any(|alt| self.text().contains(&alt.to_lowercase())),
                "output does not mention `{n}`\n{}",
                self.show()
            );
        }
    }
}

fn read_kept(p: &Path) -> String {
    let mut s = Vec::new();
    if let Ok(f) = std::fs::File::open(p) {
        f.take(KEEP).read_to_end(&mut s).unwrap();
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Run `prog args` under `ulimit -v LIMIT_KB`, killed after WALL.
fn limited<S: AsRef<std::ffi::OsStr>>(prog: &Path, args: &[S]) -> Run {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let (out, err) = (
        scratch("repro").join(format!("run{n}.out")),
        scratch("repro").join(format!("run{n}.err")),
    );
    let cmd = std::iter::once(prog.display().to_string())
        .chain(
            args.iter()
                .map(|a| format!("'{}'", a.as_ref().to_string_lossy())),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let start = Instant::now();
    // `exec` keeps one process: the one we kill on timeout is the program.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KB} && exec \"$@\""))
        .arg("sh")
        .arg(prog)
        .args(args)
        .current_dir(scratch("repro"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > WALL {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let secs = start.elapsed().as_secs_f64();
    let r = Run {
        cmd: format!("sh -c 'ulimit -v {LIMIT_KB}; {cmd}'"),
        code: status.code(),
        signal: status.signal(),
        timed_out,
        secs,
        stdout: read_kept(&out),
        stderr: read_kept(&err),
    };
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&err);
    eprintln!(
        "{} -> status={:?} signal={:?} timed_out={} in {:.1} s",
        r.cmd, r.code, r.signal, r.timed_out, r.secs
    );
    r
}

fn softspin(args: &[&str]) -> Run {
    limited(&cli(), args)
}

/// repro_handlers.c with the engine tests' misbehave.c, built by `softspin
/// build` (once per test process).
fn image() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = scratch("repro").join("repro_handlers.elf");
        let o = Command::new(cli())
            .arg("build")
            .arg(root().join("crates/cli/tests/handlers/repro_handlers.c"))
            .arg(root().join("crates/engine/tests/handlers/misbehave.c"))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "softspin build: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.display().to_string()
    })
}

fn sim(ph: &str, extra: &[&str]) -> Run {
    let mut a = vec!["sim", "--quiet", "--image", image(), "--ph", ph];
    a.extend_from_slice(extra);
    softspin(&a)
}

fn isa_handler(ph: &str, extra: &[&str]) -> Run {
    let mut a = vec!["isa", "handler", image(), "--handler", ph];
    a.extend_from_slice(extra);
    softspin(&a)
}

fn file(name: &str, body: &str) -> String {
    let p = scratch("repro").join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

/// Bad input: status 1 (or clap's 2 where the flag's type refuses it).
const BAD_INPUT: &[i32] = &[1, 2];

// -- section 1: sizes and times at the CLI boundary ---------------------------

#[test]
fn sim_scratchpad_4026531840() {
    sim("empty_ph", &["--scratchpad", "4026531840"]).expect(BAD_INPUT, &["scratchpad"]);
}

#[test]
fn sim_scratchpad_4294967295() {
    sim("empty_ph", &["--scratchpad", "4294967295"]).expect(BAD_INPUT, &["scratchpad"]);
}

#[test]
fn isa_handler_scratchpad_4026531840() {
    isa_handler("empty_ph", &["--scratchpad", "4026531840"]).expect(BAD_INPUT, &["scratchpad"]);
}

#[test]
fn sim_host_size_1e12() {
    sim("empty_ph", &["--host-size", "1000000000000"])
        .expect(BAD_INPUT, &["host-size|host window size", "4294967295"]);
}

#[test]
fn isa_handler_host_size_1e12() {
    isa_handler("empty_ph", &["--host-size", "1000000000000"])
        .expect(BAD_INPUT, &["host-size|host window size", "4294967295"]);
}

#[test]
fn sim_timeout_ns_wraps_ps() {
    sim("empty_ph", &["--timeout-ns", "18446744073709552"])
        .expect(BAD_INPUT, &["timeout-ns|msg_timeout_ns", "one hour"]);
}

/// Either refused, or a correct result: the one packet processed, no
/// spurious timeout.
#[test]
fn sim_until_ns_wraps_ps() {
    let r = sim("empty_ph", &["--until-ns", "18446744073709552", "--json"]);
    if r.code == Some(0) {
        let v: serde_json::Value =
            serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{}", r.show()));
        assert_eq!(v["packets"], 1, "{}", r.show());
    } else {
        r.expect(BAD_INPUT, &["until-ns"]);
    }
}

fn sim_config(name: &str, body: &str) -> Run {
    let cfg = file(name, body);
    sim("empty_ph", &["--config", &cfg])
}

#[test]
fn config_l1_pkt_buffer_4294967040() {
    sim_config(
        "l1.toml",
        "profile = \"pspin\"\nl1_pkt_buffer = 4294967040\n",
    )
    .expect(BAD_INPUT, &["l1_pkt_buffer"]);
}

#[test]
fn config_hpu_stack_size_536870912() {
    sim_config(
        "stack.toml",
        "profile = \"pspin\"\nhpu_stack_size = 536870912\n",
    )
    .expect(BAD_INPUT, &["hpu_stack_size"]);
}

#[test]
fn config_mpqs_100000000() {
    sim_config("mpqs.toml", "profile = \"pspin\"\nmpqs = 100000000\n").expect(BAD_INPUT, &["mpqs"]);
}

#[test]
fn config_host_latency_i64_max() {
    sim_config(
        "lat.toml",
        "profile = \"pspin\"\n[host]\nlatency_ns = 9223372036854775807\n",
    )
    .expect(BAD_INPUT, &["latency_ns"]);
}

#[test]
fn build_with_a_bad_config() {
    let cfg = file("build-mpqs.toml", "profile = \"pspin\"\nmpqs = 100000000\n");
    let out = scratch("repro").join("never.elf").display().to_string();
    let src = root()
        .join("crates/cli/tests/handlers/repro_handlers.c")
        .display()
        .to_string();
    softspin(&["build", &src, "-o", &out, "--config", &cfg]).expect(BAD_INPUT, &["mpqs"]);
}

#[test]
fn isa_handler_with_a_bad_config() {
    let cfg = file(
        "isa-stack.toml",
        "profile = \"pspin\"\nhpu_stack_size = 536870912\n",
    );
    isa_handler("empty_ph", &["--config", &cfg]).expect(BAD_INPUT, &["hpu_stack_size"]);
}

// -- section 1: files ---------------------------------------------------------

/// A bare-metal ELF whose entry point is odd must fault (or be refused), not run.
#[test]
fn bare_elf_with_an_odd_entry() {
    let src = file("bare.c", "int main(void) { return 0; }\n");
    let elf = scratch("repro").join("bare.elf");
    let o = Command::new(cli())
        .args(["build", "--bare", &src, "-o"])
        .arg(&elf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut b = std::fs::read(&elf).unwrap();
    // ELF32 e_entry: bytes 24..28, little-endian.
    let entry = u32::from_le_bytes(b[24..28].try_into().unwrap());
    b[24..28].copy_from_slice(&(entry | 1).to_le_bytes());
    let odd = scratch("repro").join("odd.elf");
    std::fs::write(&odd, b).unwrap();
    softspin(&["isa", "run", odd.to_str().unwrap()]).expect(&[1, 70], &["entry"]);
}

/// Issue 24: one loader rule for `isa run` and `sim`: a PT_LOAD whose
/// p_memsz (0x7fffffff) exceeds the memory map is refused before anything
/// is allocated (`isa run` aborted allocating 2 GiB).
#[test]
fn bare_elf_with_a_huge_segment() {
    let src = file("bare2.c", "int main(void) { return 0; }\n");
    let elf = scratch("repro").join("bare2.elf");
    let o = Command::new(cli())
        .args(["build", "--bare", &src, "-o"])
        .arg(&elf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut b = std::fs::read(&elf).unwrap();
    // ELF32: e_phoff at 28; the first program header (PT_LOAD) has p_memsz at +20.
    let phoff = u32::from_le_bytes(b[28..32].try_into().unwrap()) as usize;
    assert_eq!(
        u32::from_le_bytes(b[phoff..phoff + 4].try_into().unwrap()),
        1,
        "PT_LOAD first"
    );
    let vaddr = u32::from_le_bytes(b[phoff + 8..phoff + 12].try_into().unwrap());
    b[phoff + 20..phoff + 24].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let huge = scratch("repro").join("huge.elf");
    std::fs::write(&huge, b).unwrap();
    let h = huge.to_str().unwrap();
    let seg = format!("segment at 0x{vaddr:08x} (size 0x7fffffff) does not fit");
    softspin(&["isa", "run", h]).expect(&[1], &["huge.elf", &seg, "bare-metal ram"]);
    softspin(&["sim", "--quiet", "--image", h, "--ph", "main"])
        .expect(&[1], &["huge.elf", &seg, "program memory"]);
}

/// Issue 24: every file input is read with a cap. `/dev/zero`, a FIFO fed
/// forever and a 10 GiB sparse file end in an error naming the file and the
/// cap, quickly, under the 1 GB limit.
#[test]
fn endless_and_huge_input_files() {
    let sparse = scratch("repro").join("sparse.bin");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    let fifo = scratch("repro").join("endless.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let img = image();
    let mb256 = "268435456 bytes";
    let mb4 = "4194304 bytes";
    for f in [
        "/dev/zero",
        sparse.to_str().unwrap(),
        fifo.to_str().unwrap(),
    ] {
        let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
            (vec!["isa", "run", f], vec![mb256, "image"]),
            (
                vec!["sim", "--quiet", "--image", f, "--ph", "x_ph"],
                vec![mb256, "image"],
            ),
            (
                vec!["sim", "--quiet", "--scenario", f],
                vec![mb4, "scenario"],
            ),
            (
                vec![
                    "sim", "--quiet", "--config", f, "--image", img, "--ph", "empty_ph",
                ],
                vec![mb4, "nic configuration"],
            ),
            (
                vec![
                    "isa",
                    "handler",
                    img,
                    "--handler",
                    "empty_ph",
                    "--packet",
                    f,
                ],
                vec!["larger than 2048 bytes", "pkt_slot_size"],
            ),
            (
                vec![
                    "sim", "--quiet", "--image", img, "--ph", "empty_ph", "--trace", f,
                ],
                vec!["line longer than 65536 bytes"],
            ),
            (
                vec![
                    "nic", "--iface", "sshp0", "--rules", f, "--image", img, "--ph", "empty_ph",
                ],
                vec![mb4, "rules file"],
            ),
            (
                vec!["slmp", "send", f, "--to", "127.0.0.1:9"],
                vec!["slmp message|4 gib message limit"],
            ),
        ];
        for (args, needles) in cases {
            // A FIFO gets a writer that never ends (it dies with the reader).
            let mut feeder = (f == fifo.to_str().unwrap()).then(|| {
                Command::new("sh")
                    .arg("-c")
                    .arg(format!("exec cat /dev/zero > {f}"))
                    .spawn()
                    .unwrap()
            });
            let t = Instant::now();
            let r = softspin(&args);
            r.expect(BAD_INPUT, &needles);
            assert!(
                r.text().contains(&f.to_lowercase()),
                "error does not name the file\n{}",
                r.show()
            );
            assert!(t.elapsed() < Duration::from_secs(20), "slow\n{}", r.show());
            if let Some(c) = feeder.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

#[test]
fn garbage_image() {
    let bad = file("garbage.elf", "\x7fELF not really an ELF image");
    softspin(&["sim", "--quiet", "--image", &bad, "--ph", "x_ph"])
        .expect(BAD_INPUT, &["garbage.elf"]);
}

#[test]
fn scenario_with_more_scratchpads_than_clusters() {
    let img = image();
    let s = file("scratch.toml", &format!("[[ectx]]\nname = \"a\"\nimage = \"{img}\"\nph = \"empty_ph\"\nscratchpad = [64, 64, 64, 64, 64]\n"));
    softspin(&["sim", "--quiet", "--scenario", &s])
        .expect(BAD_INPUT, &["scratchpad", "4 clusters"]);
}

#[test]
fn scenario_with_two_ectxs_of_one_name() {
    let img = image();
    let s = file(
        "names.toml",
        &format!(
            "[[ectx]]\nname = \"twin\"\nimage = \"{img}\"\nph = \"empty_ph\"\nudp_dst_port = 9330\n\
             [[ectx]]\nname = \"twin\"\nimage = \"{img}\"\nph = \"empty_ph\"\nudp_dst_port = 7000\n"
        ),
    );
    softspin(&["sim", "--quiet", "--scenario", &s]).expect(BAD_INPUT, &["twin", "name"]);
}

#[test]
fn scenario_ectx_memory_overlap_names_the_link_flags() {
    let img = image();
    let s = file(
        "overlap.toml",
        &format!(
            "[[ectx]]\nname = \"a\"\nimage = \"{img}\"\nph = \"empty_ph\"\nudp_dst_port = 9330\n\
             [[ectx]]\nname = \"b\"\nimage = \"{img}\"\nph = \"empty_ph\"\nudp_dst_port = 7000\n"
        ),
    );
    softspin(&["sim", "--quiet", "--scenario", &s])
        .expect(BAD_INPUT, &["--code-base", "--data-base"]);
}

#[test]
fn missing_image_prints_the_os_error_once() {
    let r = softspin(&[
        "sim",
        "--quiet",
        "--image",
        "/nonexistent/h.elf",
        "--ph",
        "x_ph",
    ]);
    r.expect(BAD_INPUT, &["/nonexistent/h.elf"]);
    assert_eq!(r.stderr.matches("os error 2").count(), 1, "{}", r.show());
}

// -- section 1: handlers that flood or block -----------------------------------

/// Output the ring cannot hold is dropped, counted and reported.
fn expect_output_dropped(r: &Run) {
    r.expect(&[1, 3, 4, 5, 6], &["output"]);
    let t = r.text();
    assert!(
        t.contains("dropped") || t.contains("truncat"),
        "no word on the lost output\n{}",
        r.show()
    );
}

#[test]
fn printf_flood() {
    // A watchdog large enough that the loop ends: the lost output is the only fault.
    expect_output_dropped(&sim(
        "printf_flood_ph",
        &[
            "--messages",
            "20",
            "--size",
            "64",
            "--watchdog",
            "100000000",
        ],
    ));
}

/// 100 packets x 10,000 writes of 1 KiB = 1 GB of handler output.
#[test]
fn write_flood_of_one_gigabyte() {
    expect_output_dropped(&sim(
        "write_flood_ph",
        &["--messages", "100", "--size", "1024"],
    ));
}

#[test]
fn counter_flood() {
    sim(
        "counter_flood_ph",
        &[
            "--messages",
            "100",
            "--size",
            "64",
            "--watchdog",
            "10000000",
        ],
    )
    .expect(&[3], &["counters_per_ectx"]);
}

/// `--messages 100` of a handler that waits for an answer nobody gives.
#[test]
fn notify_wait_nobody_answers() {
    sim("wait_forever_ph", &["--messages", "100", "--size", "64"])
        .expect(&[3, 4], &["wait timeout", "wait_limit_ns"]);
}

/// Peak RSS in KiB of `softspin sim` over `n` packets of an empty handler.
fn long_run_rss(n: u64) -> u64 {
    let n = n.to_string();
    let exe = cli();
    let args = [
        exe.to_str().unwrap(),
        "sim",
        "--quiet",
        "--image",
        image(),
        "--ph",
        "empty_ph",
        "--messages",
        &n,
        "--size",
        "64",
        "--json",
    ];
    let r = limited(
        Path::new("/usr/bin/time"),
        &[&["-f", "maxrss_kb=%M"][..], &args[..]].concat(),
    );
    r.expect(&[0], &["maxrss_kb="]);
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{}", r.show()));
    assert_eq!(v["packets"].to_string(), n, "{}", r.show());
    r.stderr
        .split("maxrss_kb=")
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// 10^6 packets stay within the limit, and memory does not grow with the
/// run: 10^6 packets need at most 8 MB more than 10^5 (the issue measured
/// 6 MB vs 20 MB with every latency sample kept).
#[test]
fn long_run_memory_is_flat() {
    if !Path::new("/usr/bin/time").exists() {
        let r = sim("empty_ph", &["--messages", "1000000", "--size", "64"]);
        r.expect(&[0], &[]);
        return;
    }
    let small = long_run_rss(100_000);
    let big = long_run_rss(1_000_000);
    eprintln!("peak RSS: 10^5 packets {small} KiB, 10^6 packets {big} KiB");
    assert!(
        big <= small + 8 * 1024,
        "RSS grows with the run: {small} KiB for 10^5 packets, {big} KiB for 10^6"
    );
}

// -- section 2: honest results --------------------------------------------------

#[test]
fn sim_assert_is_a_handler_error() {
    sim("assert_ph", &["--size", "64"]).expect(&[3], &["abort", "pkt_mem_size == 12345"]);
}

#[test]
fn isa_handler_assert_is_a_handler_error() {
    isa_handler("assert_ph", &["--packet-size", "64"])
        .expect(&[3], &["abort", "pkt_mem_size == 12345"]);
}

#[test]
fn rejected_host_write_is_an_error_with_its_cause() {
    sim("outside_ph", &["--size", "64"]).expect(
        &[3],
        &[
            "rejected",
            "outside the host window",
            "outside_ph",
            "message 0",
        ],
    );
}

/// The first packet of a two-packet message, then nothing: a message
/// timeout, reported without sentinel values.
#[test]
fn message_timeout_has_no_sentinels() {
    let tr = file("half.trace", "0 1 256 0 7 0\n");
    let rec = scratch("repro").join("half.jsonl").display().to_string();
    let r = softspin(&[
        "sim",
        "--quiet",
        "--image",
        image(),
        "--ph",
        "empty_ph",
        "--trace",
        &tr,
        "--timeout-ns",
        "1000",
        "--records",
        &rec,
    ]);
    r.expect(&[4], &["timeout"]);
    let records = std::fs::read_to_string(&rec).unwrap_or_default();
    for bad in ["4294967295", "pc=0x00000000", "\"message 0\""] {
        assert!(
            !r.text().contains(bad) && !records.contains(bad),
            "sentinel {bad}\n{}\nrecords: {records}",
            r.show()
        );
    }
}

#[test]
fn unknown_handler_symbol_lists_the_images_handlers() {
    sim("no_such_ph", &[]).expect(BAD_INPUT, &["no_such_ph", "empty_ph"]);
}

#[test]
fn size_beyond_the_packet_slot_names_the_limit() {
    sim("empty_ph", &["--size", "4000"]).expect(BAD_INPUT, &["pkt_slot_size"]);
}

#[test]
fn stdout_is_prefixed_and_on_stdout() {
    let r = sim("hello_ph", &["--messages", "3", "--size", "64", "--stdout"]);
    r.expect(&[0], &[]);
    let lines: Vec<_> = r
        .stdout
        .lines()
        .filter(|l| l.contains("hello from msg"))
        .collect();
    assert_eq!(lines.len(), 3, "{}", r.show());
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with('[') && l.contains(" ns ")),
        "{}",
        r.show()
    );
}

// -- the C host API ---------------------------------------------------------------

/// tests/host/repro_host.c linked against the release libsoftspin.
fn c_host() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let lib = softspin_testkit::release_dir();
        let exe = scratch("repro").join("repro_host");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let o = Command::new(cc)
            .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror"])
            .arg(format!(
                "-I{}",
                root().join("crates/host-c/include").display()
            ))
            .arg(root().join("crates/cli/tests/host/repro_host.c"))
            .arg("-o")
            .arg(&exe)
            .arg(format!("-L{}", lib.display()))
            .arg("-lsoftspin")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "cc repro_host.c: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        exe
    })
}

#[test]
fn c_host_read_of_one_terabyte() {
    limited(c_host(), &["host_read"]).expect(&[0], &["1099511627776", "window"]);
}

#[test]
fn c_host_window_create_size_max() {
    limited(c_host(), &["window_create"]).expect(&[0], &["size", "MAX_HOST_WINDOW"]);
}

#[test]
fn c_install_with_a_forged_window_size() {
    limited(c_host(), &["forged_window", image()]).expect(&[0], &["host_window"]);
}

// -- Python -------------------------------------------------------------------------

/// Run `stmt` on a fresh `nic` in the project's venv: exit 3 with the
/// exception's type and text if softspin refused it, 0 if it was accepted.
fn python(stmt: &str) -> Run {
    let py = root().join(".venv/bin/python");
    assert!(
        py.exists(),
        "{} missing: run scripts/setup.sh --tests",
        py.display()
    );
    let script = format!(
        "import sys, softspin\nnic = softspin.Nic('pspin')\ntry:\n    {stmt}\nexcept softspin.Error as e:\n    \
         print(type(e).__name__ + ': ' + str(e), file=sys.stderr)\n    sys.exit(3)\nprint('accepted', file=sys.stderr)\n"
    );
    limited(&py, &["-c", &script])
}

#[test]
fn python_nic_read_beyond_u32() {
    let addr = softspin_hpu::abi::L2_HANDLER_BASE;
    python(&format!("nic.nic_read({addr}, 2**32 + 16)")).expect(&[3], &["4294967312", "32-bit"]);
}

#[test]
fn python_host_window_of_one_terabyte() {
    python("nic.host_window(10**12)").expect(&[3], &["size"]);
}

#[test]
fn python_host_read_of_one_terabyte() {
    python("w = nic.host_window(4096); nic.host_read(w.base, 2**40)")
        .expect(&[3], &["1099511627776", "window"]);
}

// -- issue 24: guest lengths and the cost of commands --------------------------

/// `softspin_ecall3(SOFTSPIN_SYS_DMA, pkt, pkt, 0xFFFFFFFF)` and the other
/// services with 4 GiB lengths: refused before the NIC allocates anything
/// (it aborted with 134 under the limit), each error naming its command
/// and range.
#[test]
fn huge_command_lengths_are_handler_errors() {
    sim("huge_len_ph", &["--size", "64"]).expect(
        &[3],
        &[
            "8 handler errors",
            "cluster dma source 0x10000000+4294967295 bytes",
            "send larger than the packet slot (4294967295 bytes",
            "host range 0x7f0000000000+4294967295 bytes",
        ],
    );
}

/// A handler looping on 64 KiB host writes hits its watchdog after bounded
/// host work: each command is charged 1 instruction per 4 bytes, so a
/// budget of W instructions buys at most W / 16384 + 1 of them.
#[test]
fn big_command_loop_hits_the_watchdog_after_bounded_work() {
    const WATCHDOG: u64 = 200_000;
    const PACKETS: u64 = 3;
    const CHUNK: u64 = 64 << 10;
    let w = WATCHDOG.to_string();
    let n = PACKETS.to_string();
    let r = sim(
        "dma_loop_ph",
        &["--size", "64", "--messages", &n, "--watchdog", &w, "--json"],
    );
    r.expect(&[3], &["--watchdog", "handler errors"]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}\n{}", r.show()));
    assert_eq!(
        v["errors"][0]["by_cause"]["watchdog: instruction budget exhausted"],
        PACKETS,
        "{}",
        r.show()
    );
    let per_packet = WATCHDOG / (CHUNK / 4) + 1;
    assert!(
        v["commands"].as_u64().unwrap() <= PACKETS * per_packet,
        "{}",
        r.show()
    );
    assert!(
        v["dma_to_host_bytes"].as_u64().unwrap() <= PACKETS * per_packet * CHUNK,
        "{}",
        r.show()
    );
}
