//! End-to-end tests through the `softspin` binary and the SDK toolchain
//! (clang-19 / ld.lld-19, installed by scripts/setup.sh):
//! - the riscv-tests-style ISA suite (tests/isa) passes on `softspin isa run`;
//! - the differential C programs (tests/diff) print exactly what their
//!   native (gcc) builds print;
//! - the runner's exit-status contract and `softspin build`'s error paths;
//! - SDK handler-side calls on the NIC model (`isa handler` and the engine),
//!   checked against values computed here.

use softspin_testkit::{describe, fresh_scratch, root, third_party};
use std::path::{Path, PathBuf};
use std::process::Command;

fn softspin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
}

/// The files in `dir` whose extension is `ext`, sorted.
fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// `softspin build` a bare-metal program.
fn build_bare(srcs: &[&Path], out: &Path, extra: &[&str]) {
    let o = softspin()
        .arg("build")
        .arg("--bare")
        .args(srcs)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "build failed: {}", describe(&o));
}

/// Split `softspin isa run` stdout into program output and the final
/// `exit=S instructions=N cycles=C` line, checking that line's format.
fn split_run(stdout: &[u8]) -> (String, i64, u64, u64) {
    let s = String::from_utf8_lossy(stdout).to_string();
    let (body, last) = match s.trim_end_matches('\n').rsplit_once('\n') {
        Some((b, l)) => (format!("{b}\n"), l.to_string()),
        None => (String::new(), s.trim_end().to_string()),
    };
    let f: Vec<&str> = last.split(' ').collect();
    assert_eq!(f.len(), 3, "last line {last:?}");
    let num = |k: usize, key: &str| {
        f[k].strip_prefix(key)
            .unwrap_or_else(|| panic!("{last:?}"))
            .to_string()
    };
    (
        body,
        num(0, "exit=").parse().unwrap(),
        num(1, "instructions=").parse().unwrap(),
        num(2, "cycles=").parse().unwrap(),
    )
}

#[test]
fn isa_suite_passes() {
    let out = fresh_scratch("test-isa");
    let b = Command::new("bash")
        .arg(root().join("tests/isa/build.sh"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        b.status.success(),
        "tests/isa/build.sh failed: {}",
        describe(&b)
    );
    let elfs = files_with_ext(&out, "elf");
    let suites = ["rv32ui", "rv32um", "rv32ua", "rv32uc"];
    for s in suites {
        assert!(
            elfs.iter()
                .any(|p| p.file_name().unwrap().to_str().unwrap().starts_with(s)),
            "no {s} tests were built"
        );
    }
    let mut failed = Vec::new();
    for e in &elfs {
        let o = softspin().args(["isa", "run"]).arg(e).output().unwrap();
        if !o.status.success() {
            failed.push(format!("{}: {}", e.display(), describe(&o)));
            continue;
        }
        let (_, exit, n, c) = split_run(&o.stdout);
        assert_eq!(exit, 0);
        assert!(n > 0 && c >= n, "{}: implausible counts", e.display());
    }
    assert!(
        failed.is_empty(),
        "{} of {} ISA tests failed:\n{}",
        failed.len(),
        elfs.len(),
        failed.join("\n")
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Every tests/diff program, built for plain RV32IMAC and for CORE-V,
/// prints exactly what its native (gcc) build prints; the CORE-V builds
/// must really use the extensions (counted by llvm-objdump-19) and retire
/// fewer instructions in all, or the comparison would prove nothing.
#[test]
fn differential_programs_match_native() {
    let out = fresh_scratch("test-diff");
    let srcs = files_with_ext(&root().join("tests/diff"), "c");
    assert!(
        srcs.len() >= 8,
        "expected the differential programs in tests/diff"
    );
    let mut both = BothIsas::default();
    for src in &srcs {
        let name = src.file_stem().unwrap().to_str().unwrap();
        let native = out.join(format!("{name}.native"));
        let cc = Command::new("gcc")
            .args(["-O2", "-w", "-o"])
            .arg(&native)
            .arg(src)
            .output()
            .unwrap();
        assert!(cc.status.success(), "gcc {name}: {}", describe(&cc));
        let want = Command::new(&native).output().unwrap();
        assert!(want.status.success(), "native {name} failed");
        let body = both.run(&out.join(name), &[src], &[]);
        assert!(
            body == String::from_utf8_lossy(&want.stdout),
            "{name}: RV32 output differs from native"
        );
    }
    assert!(
        both.using_corev * 2 >= srcs.len(),
        "only {} of {} CORE-V builds contain CORE-V code",
        both.using_corev,
        srcs.len()
    );
    both.check_fewer();
    let _ = std::fs::remove_dir_all(&out);
}

/// Builds of one program for plain RV32IMAC and for CORE-V, run on
/// `softspin isa run`; totals over every program run so far.
#[derive(Default)]
struct BothIsas {
    /// Retired instructions: RV32IMAC, CORE-V.
    instret: [u64; 2],
    /// CORE-V builds that contain CORE-V code.
    using_corev: usize,
}

impl BothIsas {
    /// Build `srcs` into `stem.ISA.elf` for both ISAs, run both (each must
    /// exit 0) and return the output, which must be the same for both.
    fn run(&mut self, stem: &Path, srcs: &[&Path], extra: &[&str]) -> String {
        let mut outputs = Vec::new();
        for (k, isa) in ["rv32imac", "corev"].into_iter().enumerate() {
            let elf = stem.with_extension(format!("{isa}.elf"));
            build_bare(srcs, &elf, &[&["--isa", isa][..], extra].concat());
            let got = softspin().args(["isa", "run"]).arg(&elf).output().unwrap();
            assert!(
                got.status.success(),
                "{} ({isa}) on softspin: {}",
                stem.display(),
                describe(&got)
            );
            let (body, exit, n, _) = split_run(&got.stdout);
            assert_eq!(exit, 0, "{} ({isa})", stem.display());
            outputs.push(body);
            self.instret[k] += n;
            if isa == "corev" && corev_instructions(&elf) > 0 {
                self.using_corev += 1;
            }
        }
        assert_eq!(
            outputs[0],
            outputs[1],
            "{}: output differs between RV32IMAC and CORE-V",
            stem.display()
        );
        outputs.pop().unwrap()
    }

    /// The extensions must show in the instruction count, or the
    /// comparison proves nothing about them.
    fn check_fewer(&self) {
        let [plain, corev] = self.instret;
        assert!(
            corev < plain,
            "CORE-V builds retired {corev} instructions, RV32IMAC {plain}"
        );
        println!("RV32IMAC {plain} instructions, CORE-V {corev}");
    }
}

/// Embench-IoT's integer programs (the set bench/hpu_bench.py times), built
/// with our board shim for RV32IMAC and for CORE-V: each must pass its own
/// `verify_benchmark` under both and retire the same output, and CORE-V
/// must show in the code and in fewer instructions. Embench-IoT's sources
/// are read at the commit `scripts/third-party.sh` pins, from
/// `$SOFTSPIN_EMBENCH_REPO` (a clone or mirror) or third_party/embench (that
/// script fills it); without them the test says SKIPPED, and how to get
/// them, and passes.
#[test]
fn embench_programs_agree_across_isas() {
    const PROGRAMS: [&str; 10] = [
        "aha-mont64",
        "crc32",
        "edn",
        "matmult-int",
        "md5sum",
        "nettle-aes",
        "nettle-sha256",
        "nsichneu",
        "picojpeg",
        "statemate",
    ];
    let Some(embench) = third_party("embench") else {
        return;
    };
    let tree = fresh_scratch("test-embench");
    embench.extract(&["src", "support"], &tree);
    let (sup, board) = (
        tree.join("support"),
        root().join("bench/embench/boardsupport.c"),
    );
    let mut both = BothIsas::default();
    for prog in PROGRAMS {
        let dir = tree.join("src").join(prog);
        let mut srcs = files_with_ext(&dir, "c");
        srcs.extend([sup.join("main.c"), sup.join("beebsc.c"), board.clone()]);
        let srcs: Vec<&Path> = srcs.iter().map(PathBuf::as_path).collect();
        let (i_sup, i_dir) = (
            format!("-I{}", sup.display()),
            format!("-I{}", dir.display()),
        );
        // A failed verify_benchmark exits non-zero: `run` fails on it.
        both.run(
            &tree.join(prog),
            &srcs,
            &["-DGLOBAL_SCALE_FACTOR=1", "-DWARMUP_HEAT=0", &i_sup, &i_dir],
        );
    }
    assert_eq!(
        both.using_corev,
        PROGRAMS.len(),
        "some CORE-V builds contain no CORE-V code"
    );
    both.check_fewer();
    let _ = std::fs::remove_dir_all(&tree);
}

/// Static count of CORE-V instructions (`cv.*`) in an image's code, as
/// llvm-objdump-19 disassembles it.
pub fn corev_instructions(elf: &Path) -> usize {
    let o = Command::new("llvm-objdump-19")
        .args(["-d", "--mattr=+m,+a,+c,+xcvmem,+xcvalu,+xcvbi,+xcvmac"])
        .arg(elf)
        .output()
        .expect("run llvm-objdump-19 (scripts/setup.sh installs llvm-19)");
    assert!(o.status.success(), "llvm-objdump-19: {}", describe(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.split('\t').nth(1).is_some_and(|m| m.starts_with("cv.")))
        .count()
}

#[test]
fn sdk_selftest_passes() {
    let out = fresh_scratch("test-selftest");
    let elf = out.join("selftest.elf");
    build_bare(&[&root().join("sdk/tests/sdk_selftest.c")], &elf, &[]);
    let o = softspin().args(["isa", "run"]).arg(&elf).output().unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn runner_exit_status_contract() {
    let out = fresh_scratch("test-exit");
    let write = |name: &str, body: &str| {
        let p = out.join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    // Normal exit with a status: process status = guest status, last line exact.
    let src = write(
        "e3.c",
        "#include <stdio.h>\nint main(void){ printf(\"hi\\n\"); return 3; }\n",
    );
    build_bare(&[&src], &out.join("e3.elf"), &[]);
    let o = softspin()
        .args(["isa", "run"])
        .arg(out.join("e3.elf"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let (body, exit, n, c) = split_run(&o.stdout);
    assert_eq!((body.as_str(), exit), ("hi\n", 3));
    assert!(n > 10 && c >= n);

    // A status whose low byte is 0 still fails.
    let src = write("e256.c", "int main(void){ return 256; }\n");
    build_bare(&[&src], &out.join("e256.elf"), &[]);
    let o = softspin()
        .args(["isa", "run"])
        .arg(out.join("e256.elf"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("exit=256 "),
        "{}",
        describe(&o)
    );

    // A fault: status 70 and a one-line diagnosis naming cause, pc and address.
    let src = write(
        "fault.c",
        "int main(void){ return *(volatile int *)0x40000000; }\n",
    );
    build_bare(&[&src], &out.join("fault.elf"), &[]);
    let o = softspin()
        .args(["isa", "run"])
        .arg(out.join("fault.elf"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(70));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("load access fault")
            && err.contains("pc=0x8")
            && err.contains("address=0x40000000"),
        "{err}"
    );

    // The watchdog ends an infinite loop.
    let src = write(
        "loop.c",
        "int main(void){ for(;;) { __asm__ volatile(\"\"); } }\n",
    );
    build_bare(&[&src], &out.join("loop.elf"), &[]);
    let o = softspin()
        .args(["isa", "run", "--max-instructions", "100000"])
        .arg(out.join("loop.elf"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(70));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("watchdog"),
        "{}",
        describe(&o)
    );

    // Bad ELF input: a clear error, no panic.
    let junk = write("junk.elf", "this is not an ELF file");
    let o = softspin().args(["isa", "run"]).arg(&junk).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a valid ELF file"),
        "{}",
        describe(&o)
    );
    let native = out.join("native");
    Command::new("gcc")
        .arg("-o")
        .arg(&native)
        .arg(&src)
        .output()
        .unwrap();
    let o = softspin()
        .args(["isa", "run"])
        .arg(&native)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a 32-bit little-endian RISC-V"),
        "{}",
        describe(&o)
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn build_passes_compiler_errors_through() {
    let out = fresh_scratch("test-builderr");
    let src = out.join("bad.c");
    std::fs::write(&src, "int main(void) { return undeclared_thing; }\n").unwrap();
    let o = softspin()
        .arg("build")
        .arg(&src)
        .arg("-o")
        .arg(out.join("bad.elf"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.c:1:") && err.contains("undeclared_thing"),
        "{err}"
    );
    let o = softspin()
        .arg("build")
        .arg(out.join("missing.c"))
        .arg("-o")
        .arg(out.join("x.elf"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such source file"));
    // An unknown --isa names the choices and fails.
    let o = softspin()
        .args(["build", "--bare", "--isa", "rv64gc"])
        .arg(&src)
        .arg("-o")
        .arg(out.join("x.elf"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("isa `rv64gc`: not defined")
            && err.contains("corev")
            && err.contains("rv32imac"),
        "{err}"
    );
    // -D and -I reach clang.
    std::fs::create_dir_all(out.join("inc")).unwrap();
    std::fs::write(out.join("inc/val.h"), "#define VAL (BASE + 2)\n").unwrap();
    let ok = out.join("ok.c");
    std::fs::write(&ok, "#include \"val.h\"\nint main(void) { return VAL; }\n").unwrap();
    let elf = out.join("ok.elf");
    build_bare(
        &[&ok],
        &elf,
        &["-I", out.join("inc").to_str().unwrap(), "-D", "BASE=5"],
    );
    let o = softspin().args(["isa", "run"]).arg(&elf).output().unwrap();
    assert_eq!(o.status.code(), Some(7));
    let _ = std::fs::remove_dir_all(&out);
}

fn fnv1a(b: &[u8]) -> u32 {
    b.iter()
        .fold(2166136261u32, |h, &x| (h ^ x as u32).wrapping_mul(16777619))
}

fn inet_checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| (c[0] as u32) << 8 | *c.get(1).unwrap_or(&0) as u32)
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn example_handler_reports_digest_to_host() {
    let out = fresh_scratch("test-digest");
    let elf = out.join("pd.elf");
    let o = softspin()
        .arg("build")
        .arg(root().join("examples/packet_digest/handler.c"))
        .arg("-o")
        .arg(&elf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let pkt: Vec<u8> = (0..1500u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(out.join("pkt.bin"), &pkt).unwrap();
    let o = softspin()
        .args(["isa", "handler"])
        .arg(&elf)
        .args(["--handler", "digest_ph", "--packet"])
        .arg(out.join("pkt.bin"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    // The host-direct write carries (checksum in network order) << 32 | fnv1a.
    let want = (inet_checksum(&pkt).to_be() as u64) << 32 | fnv1a(&pkt) as u64;
    assert!(
        s.contains(&format!("<- 0x{want:016x}")),
        "want 0x{want:016x} in:\n{s}"
    );
    assert!(s.contains("handler=digest_ph returned"), "{s}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn pspin_style_handler_builds_unchanged_and_runs() {
    use softspin_engine::ectx::DEFAULT_HOST_BASE;
    use softspin_engine::traffic::Arrival;
    use softspin_engine::{EctxSpec, Engine, NicConfig};
    use softspin_hpu::ElfImage;
    let out = fresh_scratch("test-pspin");
    let elf = out.join("h.elf");
    let o = softspin()
        .arg("build")
        .arg(root().join("sdk/tests/pspin_style_handler.c"))
        .arg("-o")
        .arg(&elf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));

    // PsPIN's packets: IP header whose `length` field GET_IP_UDP_PLD reads
    // raw (host order), version in the low nibble, then UDP, then payload.
    let payload: Vec<u8> = (0..200u32).map(|i| (i * i + 1) as u8).collect();
    let mut pkt = vec![0u8; 28];
    pkt[0] = 0x54;
    pkt[2..4].copy_from_slice(&((28 + payload.len()) as u16).to_le_bytes());
    pkt.extend_from_slice(&payload);

    // One one-packet message through the NIC model: header, payload and
    // completion handler in sPIN order.
    let image = ElfImage::load(&elf).unwrap();
    let bins_addr = image.symbol("bins").unwrap();
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let mut s = EctxSpec::new("pspin-style", image);
    (s.hh, s.ph, s.th) = (
        Some("histo_hh".into()),
        Some("histo_ph".into()),
        Some("histo_th".into()),
    );
    s.scratchpad = vec![4096; 4];
    s.host_window = (DEFAULT_HOST_BASE, 4096);
    let id = e.install(s).unwrap();
    e.add_host_region(DEFAULT_HOST_BASE, 4096).unwrap();
    e.activate(id).unwrap();
    e.inject(Arrival {
        time_ps: 0,
        frame: pkt.clone(),
        msg_id: 0,
        eom: true,
        origin: "test".into(),
        ectx: None,
    });
    e.run(None, |_| {}).unwrap();
    assert!(e.errors().is_empty(), "{:?}", e.errors());
    assert_eq!(e.report().packets, 1);

    let n = payload.len();
    let mut host = vec![0u8; 2 * n];
    e.host_memory().read(DEFAULT_HOST_BASE, &mut host);
    // The completion handler's host-direct write of 1 covers the first 8 bytes.
    assert_eq!(
        &host[..8],
        &1u64.to_le_bytes(),
        "host-direct write from the completion handler"
    );
    assert_eq!(
        &host[8..n],
        &payload[8..],
        "DMA to host via the L1 scratchpad"
    );
    assert_eq!(
        &host[n..2 * n],
        &payload[..],
        "DMA to host straight from the packet (NULL handle)"
    );
    assert_eq!(e.outbound().len(), 1);
    assert_eq!(e.outbound()[0].frame, pkt[..n]);
    let w: Vec<(u64, u64)> = e.host_writes().iter().map(|w| (w.addr, w.value)).collect();
    assert_eq!(w, vec![(DEFAULT_HOST_BASE, 1)]);
    let bins = e.read_nic(bins_addr, 256 * 4).unwrap();
    for v in 0..256usize {
        let want = payload.iter().filter(|&&b| b as usize == v).count() as u32;
        assert_eq!(
            u32::from_le_bytes(bins[v * 4..v * 4 + 4].try_into().unwrap()),
            want,
            "bin {v}"
        );
    }
    let text: String = e
        .output()
        .map(|r| String::from_utf8_lossy(&r.bytes).into_owned())
        .collect();
    assert!(
        text.contains("[pspin-style] message start on cluster 0 hpu 0")
            && text.contains("packets: 1"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn make_fragment_builds_the_same_handler() {
    let out = fresh_scratch("test-make");
    for f in ["handler.c", "Makefile"] {
        std::fs::copy(root().join("examples/packet_digest").join(f), out.join(f)).unwrap();
    }
    let o = Command::new("make")
        .arg("-C")
        .arg(&out)
        .arg(format!("SOFTSPIN_SDK={}", root().join("sdk").display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let o = softspin()
        .args(["isa", "handler"])
        .arg(out.join("packet_digest.elf"))
        .args(["--handler", "digest_ph"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("<- 0x000000ff840389c5"),
        "{}",
        describe(&o)
    );
    let _ = std::fs::remove_dir_all(&out);
}
