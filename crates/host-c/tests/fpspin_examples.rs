//! FPsPIN's demo code (spcl/FPsPIN) on softspin, unchanged: its four
//! handlers (ICMP ping, UDP ping, SLMP file transfer, datatypes) built with
//! `softspin build --profile fpspin`, and its host programs compiled against
//! libfpspin's API over libsoftspin (`softspin-fpspin.pc`, sdk/fpspin).
//! The ping and SLMP handlers run on known frames and their replies are
//! checked byte for byte against frames computed here; FPsPIN's `icmp-ping`
//! and `udp-ping` host programs run against the simulated NIC (handlers
//! built with DO_HOST=1, so every reply goes through the host program), and
//! `icmp-ping` answers the system `ping` on the live NIC (root only).
//!
//! FPsPIN's sources are not in this repository: the tests read them at the
//! commit `scripts/third-party.sh` pins, from `$SOFTSPIN_FPSPIN_REPO` (a
//! clone or mirror) or third_party/fpspin (that script fills it), and say
//! SKIPPED and how to get them without one.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{release_dir, sdk};
use softspin_testkit::frame::Frame;
use softspin_testkit::net::Topo;
use softspin_testkit::{csum, needs_root, pcap, run, scratch, third_party, Pinned};

/// FPsPIN's PsPIN tree, where its examples live.
const EX: &str = "fpga/app/pspin/deps/pspin/examples";

/// spcl/FPsPIN where `scripts/third-party.sh --where` finds it (else SKIPPED).
fn fpspin_repo() -> Option<Pinned> {
    third_party("fpspin")
}

/// The paths the tests need, extracted once per test into `dir`; returns
/// the examples directory.
fn extract(src: &Pinned, dir: &Path) -> PathBuf {
    let paths = [
        format!("{EX}/icmp_ping/handlers"),
        format!("{EX}/icmp_ping/host"),
        format!("{EX}/udp_ping/handlers"),
        format!("{EX}/udp_ping/host"),
        format!("{EX}/slmp/handlers"),
        format!("{EX}/slmp/host"),
        format!("{EX}/datatypes/handlers/datatypes.c"),
        format!("{EX}/datatypes/handlers/include"),
        format!("{EX}/datatypes/handlers/umm_malloc/src"),
        // handlers/include/dbglog.h is a link into it
        format!("{EX}/datatypes/handlers/umm_malloc/test/support"),
        format!("{EX}/datatypes/mpitypes/configure.ac"),
        format!("{EX}/datatypes/mpitypes/mpitypes.pc.in"),
        format!("{EX}/datatypes/mpitypes/src"),
        format!("{EX}/datatypes/typebuilder"),
        format!("{EX}/datatypes/include"),
        format!("{EX}/datatypes/host"),
    ];
    src.extract(&paths, dir);
    dir.join(EX)
}

fn softspin(dir: &Path, args: &[&str]) -> Output {
    Command::new(release_dir().join("softspin"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run softspin")
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// `softspin build --profile fpspin` as FPsPIN's Makefiles build each
/// handler (SPIN_APP_SRCS, its -I dirs, EXTRA_CFLAGS' -DDO_HOST).
fn build_handler(ex: &Path, name: &str, extra: &[&str], out: &Path) {
    let dir = ex.join(name);
    let mut args = vec!["build", "--profile", "fpspin"];
    args.extend_from_slice(extra);
    let out_s = out.to_str().unwrap().to_string();
    let srcs: Vec<String> = if name == "datatypes" {
        let mut v = vec!["handlers/datatypes.c".to_string()];
        let mut umm: Vec<String> = std::fs::read_dir(dir.join("handlers/umm_malloc/src"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| f.ends_with(".c"))
            .map(|f| format!("handlers/umm_malloc/src/{f}"))
            .collect();
        umm.sort();
        v.extend(umm);
        v
    } else {
        vec![format!("handlers/{name}.c")]
    };
    let mut all: Vec<&str> = args.clone();
    all.extend(srcs.iter().map(|s| s.as_str()));
    all.extend(["-o", &out_s]);
    ok(softspin(&dir, &all), &format!("building {name}"));
}

// ---- frames and their expected replies, computed independently ----

/// The peer (A) to the NIC (B): every request's addresses and fields.
fn to_nic() -> Frame {
    Frame {
        src_mac: [0x02, 0, 0, 0, 0, 0x0a],
        dst_mac: [0x02, 0, 0, 0, 0, 0x0b],
        src_ip: [10, 0, 0, 1],
        dst_ip: [10, 0, 0, 2],
        ident: 0x1234,
        ..Frame::default()
    }
}

fn eth_ip(proto: u8, l4: &[u8]) -> Vec<u8> {
    to_nic().ipv4(proto, l4)
}

/// How far apart the frames of the input pcaps are.
const GAP: Duration = Duration::from_micros(20);

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn icmp_request(seq: u16, len: usize) -> Vec<u8> {
    let mut m = vec![8, 0, 0, 0, 0x12, 0x34];
    m.extend(seq.to_be_bytes());
    m.extend(payload(len, seq as u8));
    let c = csum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    eth_ip(1, &m)
}

/// ICMP echo reply (RFC 792): addresses swapped, type 0, checksum over the
/// ICMP message.
fn icmp_reply(req: &[u8]) -> Vec<u8> {
    let mut r = req.to_vec();
    swap_eth_ip(&mut r);
    r[34] = 0;
    r[36..38].fill(0);
    let c = csum(&r[34..]);
    r[36..38].copy_from_slice(&c.to_be_bytes());
    r
}

fn swap_eth_ip(r: &mut [u8]) {
    let (d, s) = r.split_at_mut(6);
    d.swap_with_slice(&mut s[..6]);
    let (a, b) = r[26..34].split_at_mut(4);
    a.swap_with_slice(b);
}

fn udp(sport: u16, dport: u16, body: &[u8]) -> Vec<u8> {
    Frame {
        sport,
        dport,
        udp_checksum: 0xabcd, // one the echo must carry (or zero, host path)
        ..to_nic()
    }
    .udp(body)
}

/// UDP echo: MAC, IP addresses and ports swapped, all else as received.
fn udp_echo(req: &[u8]) -> Vec<u8> {
    let mut r = req.to_vec();
    swap_eth_ip(&mut r);
    let (a, b) = r[34..38].split_at_mut(2);
    a.swap_with_slice(b);
    r
}

/// udp-ping's host program on top: UDP checksum 0, IP checksum recomputed.
fn udp_echo_via_host(req: &[u8]) -> Vec<u8> {
    let mut r = udp_echo(req);
    r[40..42].fill(0);
    r[24..26].fill(0);
    let c = csum(&r[14..34]);
    r[24..26].copy_from_slice(&c.to_be_bytes());
    r
}

const SLMP_SYN: u16 = 0x4000;
const SLMP_EOM: u16 = 0x8000;
const SLMP_ACK: u16 = 0x2000;

fn slmp(flags: u16, msg_id: u32, off: u32, body: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend(flags.to_be_bytes());
    s.extend(msg_id.to_be_bytes());
    s.extend(off.to_be_bytes());
    s.extend(body);
    udp(40000, 9330, &s)
}

/// SLMP's ACK (docs/slmp.md): the headers turned around, IP total length 38
/// with its checksum, UDP length 18, checksum 0, flags ACK; 52 bytes.
fn slmp_ack(req: &[u8]) -> Vec<u8> {
    let mut r = udp_echo(&req[..52]);
    r[16..18].copy_from_slice(&38u16.to_be_bytes());
    r[24..26].fill(0);
    let c = csum(&r[14..34]);
    r[24..26].copy_from_slice(&c.to_be_bytes());
    r[38..40].copy_from_slice(&18u16.to_be_bytes());
    r[40..42].fill(0);
    r[42..44].copy_from_slice(&SLMP_ACK.to_be_bytes());
    r
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

fn hex(v: &[Vec<u8>]) -> String {
    v.iter()
        .map(|f| f.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect()
}

/// Run `image` under `softspin sim --profile fpspin` on `frames`; the
/// frames the handlers sent, sorted (HPUs finish out of order).
fn sim(
    dir: &Path,
    image: &Path,
    handlers: &[(&str, &str)],
    extra: &[&str],
    frames: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    pcap::write(&inp, frames, GAP);
    let mut args: Vec<&str> = vec![
        "sim",
        "--profile",
        "fpspin",
        "--image",
        image.to_str().unwrap(),
    ];
    for (k, v) in handlers {
        args.extend([*k, *v]);
    }
    args.extend([
        "--pcap",
        inp.to_str().unwrap(),
        "--pcap-out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    args.extend(extra);
    ok(softspin(dir, &args), "softspin sim");
    sorted(pcap::read(&out))
}

#[test]
fn fpspin_handlers_compile_unchanged() {
    let Some(repo) = fpspin_repo() else { return };
    let d = scratch("fpspin-compile");
    let ex = extract(&repo, &d);
    for (name, extra) in [
        ("icmp_ping", &["-DDO_HOST=0"][..]),
        ("icmp_ping", &["-DDO_HOST=1", "-DFROM_L2"][..]),
        ("udp_ping", &["-DDO_HOST=0"][..]),
        ("udp_ping", &["-DDO_HOST=1"][..]),
        ("slmp", &[][..]),
        // Their Makefile's -Ihandlers/include; mpitypes' dataloop headers
        // stand in for its installed include directory.
        (
            "datatypes",
            &["-Ihandlers/include", "-Impitypes/src/dataloop"][..],
        ),
    ] {
        build_handler(&ex, name, extra, &d.join(format!("{name}.elf")));
    }
    // The environment is FPsPIN's, not the SDK's PsPIN one: without the
    // profile the same source does not compile (no spin_host.h).
    let plain = softspin(
        &ex.join("icmp_ping"),
        &[
            "build",
            "-DDO_HOST=0",
            "handlers/icmp_ping.c",
            "-o",
            "x.elf",
        ],
    );
    assert!(
        !plain.status.success(),
        "icmp_ping.c compiled without --profile fpspin"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn fpspin_ping_and_slmp_handlers_reply_byte_exact() {
    let Some(repo) = fpspin_repo() else { return };
    let d = scratch("fpspin-replies");
    let ex = extract(&repo, &d);

    let icmp = d.join("icmp.elf");
    build_handler(&ex, "icmp_ping", &["-DDO_HOST=0"], &icmp);
    let reqs: Vec<Vec<u8>> = [(1u16, 56usize), (2, 0), (3, 1), (4, 1000)]
        .iter()
        .map(|&(s, n)| icmp_request(s, n))
        .collect();
    let want = sorted(reqs.iter().map(|r| icmp_reply(r)).collect());
    let got = sim(&d, &icmp, &[("--ph", "pingpong_ph")], &[], &reqs);
    assert_eq!(hex(&got), hex(&want), "ICMP echo replies");
    // The reference is a real ICMP checksum: each reply sums to zero.
    assert!(want.iter().all(|r| csum(&r[34..]) == 0));

    let udpi = d.join("udp.elf");
    build_handler(&ex, "udp_ping", &["-DDO_HOST=0"], &udpi);
    let reqs: Vec<Vec<u8>> = [(5000u16, 9000u16, 18usize), (1234, 7, 1400), (9, 9, 0)]
        .iter()
        .map(|&(s, dp, n)| udp(s, dp, &payload(n, n as u8)))
        .collect();
    let want = sorted(reqs.iter().map(|r| udp_echo(r)).collect());
    assert_eq!(
        hex(&sim(&d, &udpi, &[("--ph", "pingpong_ph")], &[], &reqs)),
        hex(&want),
        "UDP echoes"
    );

    // SLMP: each pcap frame is a one-packet message, so hh and ph run on
    // each; the th (a host request) is left out, no host answers here.
    let slmpi = d.join("slmp.elf");
    build_handler(&ex, "slmp", &[], &slmpi);
    let reqs = vec![
        slmp(SLMP_SYN | SLMP_EOM, 7, 0, &payload(100, 1)),
        slmp(SLMP_SYN | SLMP_EOM, 8, 0, &payload(1462, 2)),
        slmp(SLMP_EOM, 9, 0, &payload(10, 3)), // no SYN: no ACK
    ];
    let want = sorted(reqs[..2].iter().map(|r| slmp_ack(r)).collect());
    let got = sim(
        &d,
        &slmpi,
        &[("--hh", "slmp_hh"), ("--ph", "slmp_ph")],
        &["--host-size", "1048576"],
        &reqs,
    );
    assert_eq!(hex(&got), hex(&want), "SLMP ACKs");
    let _ = std::fs::remove_dir_all(d);
}

/// FPsPIN's host program `examples/NAME/host/SRC`, compiled as its Makefile
/// does (-D__FPSPIN_HOST__, __IMG__ = build/NAME) against softspin-fpspin.
fn compile_host(ex: &Path, name: &str, src: &str) -> PathBuf {
    let flags = run(Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", sdk("fpspin"))
        .args(["--cflags", "--libs", "softspin-fpspin"]));
    let flags = String::from_utf8(flags.stdout).unwrap();
    let out = ex.join(name).join("host_bin");
    run(Command::new("cc")
        .current_dir(ex.join(name).join("host"))
        .args([
            "-O2",
            "-Wall",
            "-D__FPSPIN_HOST__",
            &format!("-D__IMG__=\"build/{name}\""),
        ])
        .arg(src)
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&out));
    out
}

#[test]
fn fpspin_host_programs_compile_and_ping_through_the_host() {
    let Some(repo) = fpspin_repo() else { return };
    let d = scratch("fpspin-host");
    let ex = extract(&repo, &d);
    for (name, src) in [("icmp_ping", "icmp-ping.c"), ("udp_ping", "udp-ping.c")] {
        let bin = compile_host(&ex, name, src);
        let dir = ex.join(name);
        std::fs::create_dir_all(dir.join("build")).unwrap();
        build_handler(&ex, name, &["-DDO_HOST=1"], &dir.join("build").join(name));
        let reqs: Vec<Vec<u8>> = if name == "icmp_ping" {
            (1..=5).map(|s| icmp_request(s, 40 * s as usize)).collect()
        } else {
            (1..=5)
                .map(|s| udp(4000 + s, 5000, &payload(64 * s as usize, s as u8)))
                .collect()
        };
        let want = sorted(
            reqs.iter()
                .map(|r| {
                    if name == "icmp_ping" {
                        icmp_reply(r)
                    } else {
                        udp_echo_via_host(r)
                    }
                })
                .collect(),
        );
        pcap::write(&dir.join("in.pcap"), &reqs, GAP);
        // The simulated NIC: input from the pcap, sent frames to another;
        // libfpspin raises SIGINT when the input is done, which ends the
        // program's loop as on FPsPIN.
        let o = Command::new(&bin)
            .current_dir(&dir)
            .env("SOFTSPIN_FPSPIN_PCAP", "in.pcap")
            .env("SOFTSPIN_FPSPIN_PCAP_OUT", "out.pcap")
            .env_remove("SOFTSPIN_FPSPIN_IFACE")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name} host: {}\n{err}", o.status);
        // Every packet went through the host: DMA to it, its answer back.
        assert!(
            err.contains("errors             none"),
            "{name}: handler errors:\n{err}"
        );
        let host_writes = format!("{} host writes", reqs.len());
        assert!(
            err.contains(&host_writes),
            "{name}: expected {host_writes}:\n{err}"
        );
        assert_eq!(
            hex(&sorted(pcap::read(&dir.join("out.pcap")))),
            hex(&want),
            "{name}: replies via the host"
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn fpspin_slmp_host_program_receives_files() {
    let Some(repo) = fpspin_repo() else { return };
    let d = scratch("fpspin-slmp-host");
    let ex = extract(&repo, &d);
    let bin = compile_host(&ex, "slmp", "slmp.c");
    let dir = ex.join("slmp");
    std::fs::create_dir_all(dir.join("build")).unwrap();
    build_handler(&ex, "slmp", &[], &dir.join("build/slmp"));
    // One-packet files (a pcap frame is a one-packet message): hh checks
    // SYN at offset 0, ph DMAs the payload after the HPU pages and ACKs, th
    // asks the host, whose program writes the file. FPsPIN's handler puts
    // every file at the same host offset, so files are 1 ms apart: the host
    // has answered before the next one lands (as FPsPIN's sender waits).
    let files: Vec<Vec<u8>> = (1..=3).map(|i| payload(300 * i, i as u8)).collect();
    let reqs: Vec<Vec<u8>> = files
        .iter()
        .enumerate()
        .map(|(i, f)| slmp(SLMP_SYN | SLMP_EOM, i as u32 + 1, 0, f))
        .collect();
    pcap::write(&dir.join("in.pcap"), &reqs, Duration::from_millis(1));
    let prefix = dir.join("file");
    let o = Command::new(&bin)
        .current_dir(&dir)
        .args(["-p", prefix.to_str().unwrap()])
        .env("SOFTSPIN_FPSPIN_PCAP", "in.pcap")
        .env("SOFTSPIN_FPSPIN_PCAP_OUT", "out.pcap")
        .env_remove("SOFTSPIN_FPSPIN_IFACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "slmp host: {}\n{err}", o.status);
    assert!(
        err.contains("errors             none"),
        "slmp: handler errors:\n{err}"
    );
    for (i, f) in files.iter().enumerate() {
        let got = std::fs::read(dir.join(format!("file-{i}.out"))).unwrap();
        assert!(
            got == *f,
            "file {i}: {} bytes, expected {} (content differs)",
            got.len(),
            f.len()
        );
    }
    let want = sorted(reqs.iter().map(|r| slmp_ack(r)).collect());
    assert_eq!(
        hex(&sorted(pcap::read(&dir.join("out.pcap")))),
        hex(&want),
        "SLMP ACKs"
    );
    let _ = std::fs::remove_dir_all(d);
}

/// The C/C++ sources (by extension) of `dir`, sorted, as `prefix/NAME`.
fn sources(dir: &Path, prefix: &str, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(ext))
        .map(|f| format!("{prefix}/{f}"))
        .collect();
    v.sort();
    v
}

/// A tool the datatypes build needs (Debian's, from scripts/setup.sh --tests).
fn need_tool(t: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {t}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{t} not found: the datatypes host program needs MPI (mpich), OpenBLAS, \
         autoconf/automake, flex and bison; run scripts/setup.sh --tests"
    );
}

/// FPsPIN's datatypes host program (`datatypes/host/datatypes.c`, unchanged)
/// built as its Makefile links it (mpicc; -lfpspin -ltypebuilder -lmpitypes
/// -lopenblas), with softspin-fpspin for -lfpspin and mpitypes and
/// typebuilder built from FPsPIN's sources here; then run in verify mode
/// on the simulated NIC: one SLMP packet of a packed vector datatype goes
/// through FPsPIN's datatypes handlers (its DDT in the handler memory the
/// host program wrote), which unpack it into host memory; the host program
/// dumps the user buffer, which must be the unpacked layout computed here.
#[test]
fn fpspin_datatypes_host_program_builds_and_unpacks() {
    let Some(repo) = fpspin_repo() else { return };
    for t in ["mpicc", "mpicxx", "autoreconf", "bison", "flex", "make"] {
        need_tool(t);
    }
    let d = scratch("fpspin-datatypes-host");
    let ex = extract(&repo, &d);
    let dt = ex.join("datatypes");

    // mpitypes: FPsPIN keeps its configure.ac but not its Makefile.am (its
    // .gitignore drops Makefile*), so one is written for the sources it
    // has. mpitypes_debug.c is left out: it is MPICH-internal code (MPID_*
    // handles) that no public MPI compiles, and nothing calls it.
    let mt = dt.join("mpitypes");
    let mut srcs = sources(&mt.join("src/mpitypes"), "src/mpitypes", ".c");
    srcs.retain(|f| !f.ends_with("/mpitypes_debug.c"));
    srcs.extend(sources(&mt.join("src/dataloop"), "src/dataloop", ".c"));
    let mut hdrs = sources(&mt.join("src/mpitypes"), "src/mpitypes", ".h");
    hdrs.extend(sources(&mt.join("src/dataloop"), "src/dataloop", ".h"));
    std::fs::write(
        mt.join("Makefile.am"),
        format!(
            "lib_LIBRARIES = libmpitypes.a\n\
             libmpitypes_a_CPPFLAGS = -I$(srcdir)/src/mpitypes -I$(srcdir)/src/dataloop\n\
             libmpitypes_a_SOURCES = {}\n\
             include_HEADERS = {}\n\
             pkgconfigdir = $(libdir)/pkgconfig\n\
             pkgconfig_DATA = mpitypes.pc\n",
            srcs.join(" "),
            hdrs.join(" ")
        ),
    )
    .unwrap();
    run(Command::new("autoreconf").arg("-fi").current_dir(&mt));
    // Installed where datatypes_host.h includes it from
    // (../mpitypes/install/include).
    run(Command::new("./configure")
        .arg("-q")
        .arg(format!("--prefix={}", mt.join("install").display()))
        .current_dir(&mt));
    run(Command::new("make")
        .args(["-s", "-j2", "install"])
        .current_dir(&mt));

    // typebuilder as its compile.sh builds it: the ddtparser (bison, flex),
    // libtypebuilder.so and the `typebuilder` tool that writes a DDT file.
    let tb = dt.join("typebuilder");
    let pp = tb.join("ddtparser");
    run(Command::new("bison")
        .args(["-d", "-o", "parser.cpp", "parser.y"])
        .current_dir(&pp));
    run(Command::new("flex")
        .args(["-o", "lexer.c", "lexer.lex"])
        .current_dir(&pp));
    run(Command::new("mpicc")
        .args(["-c", "-o", "lexer.o", "lexer.c"])
        .current_dir(&pp));
    run(Command::new("mpicxx")
        .args(["-c", "-o", "parser.o", "parser.cpp"])
        .args(["-DHRT_ARCH=2", "-O3", "-I..", "-I./hrtimer"])
        .current_dir(&pp));
    run(Command::new("ar")
        .args(["rcs", "libddtparser.a", "parser.o", "lexer.o"])
        .current_dir(&pp));
    let tb_flags = [
        "-I../mpitypes/install/include",
        "-I../mpitypes/src/dataloop",
        "-Wno-address-of-packed-member",
        "-fpermissive",
        "-g",
    ];
    for f in ["typebuilder", "ddt_io_write", "ddt_io_read"] {
        run(Command::new("mpicxx")
            .args(tb_flags)
            .args(["-c", "-fpic", &format!("{f}.cc")])
            .current_dir(&tb));
    }
    run(Command::new("mpicxx")
        .args(["-shared", "-o", "libtypebuilder.so"])
        .args(["typebuilder.o", "ddt_io_write.o", "ddt_io_read.o"])
        .current_dir(&tb));
    run(Command::new("mpicxx")
        .args(tb_flags)
        .args(["typebuilder_main.cc", "ddt_io_read.cc", "ddt_io_write.cc"])
        .args(["typebuilder.cc", "ddtparser/libddtparser.a"])
        .args(["-o", "typebuilder"])
        .args(["-L../mpitypes/install/lib", "-lmpitypes"])
        .current_dir(&tb));

    // The host program: its Makefile's flags but -fsanitize=address and
    // -march=native, libfpspin from softspin-fpspin.pc.
    let host = dt.join("host");
    let pc = |what: &str| {
        let o = run(Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", sdk("fpspin"))
            .args([what, "softspin-fpspin"]));
        String::from_utf8(o.stdout).unwrap()
    };
    run(Command::new("mpicc")
        .args(["-O3", "-g", "-Wall", "-D__FPSPIN_HOST__"])
        .arg("-D__IMG__=\"build/datatypes\"")
        .args(pc("--cflags").split_whitespace())
        .args(["-c", "-o", "datatypes.o", "datatypes.c"])
        .current_dir(&host));
    run(Command::new("mpicc")
        .arg("datatypes.o")
        .args(["-L../typebuilder", "-L../mpitypes/install/lib"])
        .args(["-ltypebuilder", "-lmpitypes", "-lopenblas"])
        .args(pc("--libs").split_whitespace())
        .arg(format!("-Wl,-rpath,{}", tb.display()))
        .args(["-o", "datatypes"])
        .current_dir(&host));

    // Its handlers at __IMG__, relative to where it runs.
    std::fs::create_dir_all(host.join("build")).unwrap();
    build_handler(
        &ex,
        "datatypes",
        &["-Ihandlers/include", "-Impitypes/src/dataloop"],
        &host.join("build/datatypes"),
    );

    // Two elements of vec(8 3 5)[int]: 8 blocks of 3 ints, 5 ints apart.
    // Packed: 2 x 96 bytes; unpacked: extent 152 bytes per element.
    run(Command::new("./typebuilder")
        .args(["vec(8 3 5)[int]", "2"])
        .arg(host.join("ddt.bin"))
        .current_dir(&tb));
    let stream = payload(192, 5);
    let mut want = vec![0u8; 304];
    for e in 0..2 {
        for b in 0..8 {
            for j in 0..3 {
                let k = (e * 24 + b * 3 + j) * 4;
                let at = e * 152 + b * 20 + j * 4;
                want[at..at + 4].copy_from_slice(&stream[k..k + 4]);
            }
        }
    }
    // One packet, so SYN and EOM (a pcap frame is a one-packet message,
    // message id 0: FPsPIN's flow id, which picks the host buffer).
    let req = slmp(SLMP_SYN | SLMP_EOM, 0, 0, &stream);
    pcap::write(&host.join("in.pcap"), std::slice::from_ref(&req), GAP);
    // Verify mode: its RTS goes to 127.0.0.1 (no sender listens; the
    // message is the pcap's), then it dumps the user buffer and returns.
    let o = Command::new(host.join("datatypes"))
        .current_dir(&host)
        .args(["-v", "-o", "userbuf.bin", "-q", "127.0.0.1", "ddt.bin", "0"])
        .env("SOFTSPIN_FPSPIN_PCAP", "in.pcap")
        .env("SOFTSPIN_FPSPIN_PCAP_OUT", "out.pcap")
        .env_remove("SOFTSPIN_FPSPIN_IFACE")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "datatypes host: {}\n{out}\n{err}",
        o.status
    );
    assert!(
        out.contains("Userbuf size: 304") && out.contains("Streambuf size: 192"),
        "datatypes: DDT sizes:\n{out}"
    );
    assert!(
        err.contains("errors             none") && err.contains("1 host writes"),
        "datatypes: handler errors:\n{err}"
    );
    let got = std::fs::read(host.join("userbuf.bin")).unwrap();
    assert_eq!(hex(&[got]), hex(&[want]), "unpacked user buffer");
    assert_eq!(
        hex(&pcap::read(&host.join("out.pcap"))),
        hex(&[slmp_ack(&req)]),
        "SLMP ACK"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn fpspin_icmp_ping_host_program_on_the_live_nic() {
    let Some(repo) = fpspin_repo() else { return };
    if !needs_root("the live test", "network namespaces, XDP") {
        return;
    }
    let d = scratch("fpspin-live");
    let ex = extract(&repo, &d);
    let bin = compile_host(&ex, "icmp_ping", "icmp-ping.c");
    let dir = ex.join("icmp_ping");
    std::fs::create_dir_all(dir.join("build")).unwrap();
    build_handler(
        &ex,
        "icmp_ping",
        &["-DDO_HOST=1"],
        &dir.join("build/icmp_ping"),
    );
    let net = Topo::pair("fp", "10.78.0");
    let (nic_ns, peer_ns, nic_if) = (net.nic_ns(), net.peer_ns(), net.nic_if());
    // FPsPIN's program on the NIC's interface (-d), ending after 3 requests.
    let host = Command::new("ip")
        .args(["netns", "exec", &nic_ns])
        .arg(&bin)
        .args(["-d", &nic_if, "-e", "3"])
        .current_dir(&dir)
        .env_remove("SOFTSPIN_FPSPIN_PCAP")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let ping = Command::new("ip")
        .args([
            "netns",
            "exec",
            &peer_ns,
            "ping",
            "-c",
            "3",
            "-i",
            "0.3",
            "-W",
            "3",
            "10.78.0.1",
        ])
        .output()
        .unwrap();
    let o = host.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let ping_out = String::from_utf8_lossy(&ping.stdout);
    assert!(o.status.success(), "icmp-ping: {}\n{err}", o.status);
    assert!(
        ping_out.contains("3 received"),
        "ping:\n{ping_out}\nicmp-ping:\n{err}"
    );
    // The replies came from the handler through the host program, not from
    // the namespace's kernel.
    assert!(
        err.contains("3 host writes") && err.contains("errors             none"),
        "icmp-ping:\n{err}"
    );
    drop(net);
    let _ = std::fs::remove_dir_all(d);
}

/// libfpspin refuses bad input with a message naming it, returns false from
/// fpspin_init (FPsPIN's programs then call fpspin_exit, which must cope),
/// and needs no FPsPIN sources.
#[test]
fn fpspin_init_refuses_bad_input_by_name() {
    let d = scratch("fpspin-init-errors");
    std::fs::write(
        d.join("t.c"),
        r#"#include "fpspin/fpspin.h"
#include <string.h>
int main(int argc, char **argv) {
    fpspin_ctx_t ctx;
    fpspin_ruleset_t rs;
    fpspin_ruleset_udp(&rs);
    int pages = strcmp(argv[1], "pages") ? FPSPIN_HOSTDMA_PAGES_DEFAULT : 4;
    const char *img = strcmp(argv[1], "image") ? argv[2] : "no/such/image";
    const char *dev = strcmp(argv[1], "iface") ? "/dev/pspin0" : "nosuchif0";
    bool ok = fpspin_init(&ctx, dev, img, 0, &rs, 1, pages);
    fpspin_exit(&ctx);
    return ok ? 0 : 3;
}
"#,
    )
    .unwrap();
    std::fs::write(
        d.join("h.c"),
        "#include <handler.h>\n__handler__ void x_ph(handler_args_t *a) { (void)a; }\n",
    )
    .unwrap();
    ok(
        softspin(&d, &["build", "--profile", "fpspin", "h.c", "-o", "h.elf"]),
        "building h.c",
    );
    let flags = run(Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", sdk("fpspin"))
        .args(["--cflags", "--libs", "softspin-fpspin"]));
    let flags = String::from_utf8(flags.stdout).unwrap();
    run(Command::new("cc")
        .current_dir(&d)
        .arg("t.c")
        .args(flags.split_whitespace())
        .args(["-o", "t"]));
    let t = |case: &str| {
        let o = Command::new(d.join("t"))
            .current_dir(&d)
            .args([case, "h.elf"])
            .env_remove("SOFTSPIN_FPSPIN_IFACE")
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = t("good");
    assert_eq!(code, Some(0), "a good init failed:\n{err}");
    assert!(err.contains("handlers: hh -, ph x_ph, th -"), "{err}");
    for (case, msg) in [
        ("pages", "hostdma_pages 4: at least 16"),
        ("image", "cannot read handler image no/such/image"),
        ("iface", "attaching to the interface"),
    ] {
        let (code, err) = t(case);
        assert_eq!(code, Some(3), "{case}: fpspin_init succeeded:\n{err}");
        assert!(err.contains(msg), "{case}: expected `{msg}` in:\n{err}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn fpspin_slmp_host_program_on_the_live_nic() {
    let Some(repo) = fpspin_repo() else { return };
    if !needs_root("the live test", "network namespaces, XDP") {
        return;
    }
    let d = scratch("fpspin-live-slmp");
    let ex = extract(&repo, &d);
    let bin = compile_host(&ex, "slmp", "slmp.c");
    let dir = ex.join("slmp");
    std::fs::create_dir_all(dir.join("build")).unwrap();
    build_handler(&ex, "slmp", &[], &dir.join("build/slmp"));
    let file = payload(20000, 7);
    std::fs::write(d.join("file.bin"), &file).unwrap();
    let net = Topo::pair("fs", "10.80.0");
    let (nic_ns, peer_ns, nic_if) = (net.nic_ns(), net.peer_ns(), net.nic_if());
    // FPsPIN's receiver program, its ruleset_slmp on the interface, one file.
    let prefix = d.join("rx");
    let host = Command::new("ip")
        .args(["netns", "exec", &nic_ns])
        .arg(&bin)
        .args([
            "-d",
            &nic_if,
            "-e",
            "1",
            "-m",
            "65536",
            "-p",
            prefix.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .env_remove("SOFTSPIN_FPSPIN_PCAP")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    // softspin's SLMP sender (docs/slmp.md): 14 segments, each with SYN, so
    // FPsPIN's handler ACKs every one.
    let send = Command::new("ip")
        .args(["netns", "exec", &peer_ns])
        .arg(release_dir().join("softspin"))
        .args(["slmp", "send", "--to", "10.80.0.1", "--give-up-s", "5"])
        .arg(d.join("file.bin"))
        .output()
        .unwrap();
    let o = host.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let sent = String::from_utf8_lossy(&send.stdout);
    assert!(
        send.status.success(),
        "slmp send: {sent}{}\nslmp host:\n{err}",
        String::from_utf8_lossy(&send.stderr)
    );
    assert!(o.status.success(), "slmp host: {}\n{err}", o.status);
    assert!(err.contains("errors             none"), "slmp host:\n{err}");
    let got = std::fs::read(d.join("rx-0.out")).unwrap();
    assert!(
        got == file,
        "received {} bytes, sent {} (content differs)",
        got.len(),
        file.len()
    );
    drop(net);
    let _ = std::fs::remove_dir_all(d);
}
