//! The C API from C: tests/api_test.c, compiled against include/softspin.h
//! and the built library, checks every error path and a success path (see
//! that file); here it is built and run, linked both ways.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::{build_handler, release_dir};
use softspin_testkit::{root, run, scratch, skip};

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn handlers() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let out = scratch("handlers").join("api_handlers.elf");
        build_handler(
            &root().join("crates/host-c/tests/handlers/api_handlers.c"),
            &out,
        );
        out
    })
    .clone()
}

/// examples/ping_pong's handlers for the live NIC's default profile.
fn pingpong() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let out = scratch("handlers").join("pingpong_fpspin.elf");
        run(Command::new(release_dir().join("softspin"))
            .arg("build")
            .arg(root().join("examples/ping_pong/handler.c"))
            .args(["--profile", "fpspin", "-o"])
            .arg(&out));
        out
    })
    .clone()
}

/// examples/rma_target's handlers (its window table) for the fpspin profile.
fn rma_target() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let out = scratch("handlers").join("rma_target_fpspin.elf");
        run(Command::new(release_dir().join("softspin"))
            .arg("build")
            .arg(root().join("examples/rma_target/handler.c"))
            .args(["--profile", "fpspin", "-o"])
            .arg(&out));
        out
    })
    .clone()
}

fn c_flags() -> Vec<String> {
    let inc = root().join("crates/host-c/include");
    [
        "-std=c11",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("-I{}", inc.display())])
    .collect()
}

fn run_api_test(exe: &PathBuf, dir: &PathBuf) {
    let o = run(Command::new(exe)
        .arg(handlers())
        .arg(dir)
        .arg(pingpong())
        .arg(rma_target()));
    let out = String::from_utf8_lossy(&o.stdout);
    print!("{out}");
    assert!(out.contains(", 0 failed"), "{out}");
}

#[test]
fn api_test_against_shared_library() {
    let lib = release_dir();
    let dir = scratch("shared");
    let exe = dir.join("api_test");
    run(Command::new(cc())
        .args(c_flags())
        .arg(root().join("crates/host-c/tests/api_test.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-lsoftspin")
        .arg(format!("-Wl,-rpath,{}", lib.display())));
    run_api_test(&exe, &dir);
}

#[test]
fn api_test_against_static_library() {
    let lib = release_dir();
    let dir = scratch("static");
    let exe = dir.join("api_test");
    run(Command::new(cc())
        .args(c_flags())
        .arg(root().join("crates/host-c/tests/api_test.c"))
        .arg("-o")
        .arg(&exe)
        .arg(lib.join("libsoftspin.a"))
        .args(["-lpthread", "-ldl", "-lm"]));
    run_api_test(&exe, &dir);
}

/// The header stands alone in strict C99 and in C++ (extern "C").
#[test]
fn header_compiles_alone() {
    let dir = scratch("header");
    let c = dir.join("only_header.c");
    std::fs::write(
        &c,
        "#include <softspin.h>\nint main(void) { return ss_abi_version() == SS_ABI_VERSION ? 0 : 1; }\n",
    )
    .unwrap();
    let inc = format!("-I{}", root().join("crates/host-c/include").display());
    run(Command::new(cc())
        .args([
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            &inc,
        ])
        .arg(&c));
    if Command::new("c++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        run(Command::new("c++")
            .args([
                "-x",
                "c++",
                "-std=c++11",
                "-Wall",
                "-Werror",
                "-fsyntax-only",
                &inc,
            ])
            .arg(&c));
    } else {
        skip("C++ check of softspin.h: no c++ compiler");
    }
}
