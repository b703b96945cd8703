//! ss_client_*: tests/client_test.c, a C host program beside `softspin nic`
//! (socket mode on lo, no root) serving examples/rma_target with its host
//! window in shared memory (docs/host-interface.md).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::release_dir;
use softspin_testkit::{root, run, scratch};

#[test]
fn a_c_program_beside_the_nic() {
    let bin = release_dir();
    let dir = scratch("client");
    let elf = dir.join("rma.elf");
    run(Command::new(bin.join("softspin"))
        .arg("build")
        .arg(root().join("examples/rma_target/handler.c"))
        .args(["--profile", "fpspin", "-o"])
        .arg(&elf));
    let exe = dir.join("client_test");
    run(
        Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror"])
            .arg(format!(
                "-I{}",
                root().join("crates/host-c/include").display()
            ))
            .arg(root().join("crates/host-c/tests/client_test.c"))
            .arg("-o")
            .arg(&exe)
            .arg(format!("-L{}", bin.display()))
            .arg("-lsoftspin")
            .arg(format!("-Wl,-rpath,{}", bin.display())),
    );

    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ctl: PathBuf = dir.join("nic.sock");
    let shm = format!("sF-c-{}", std::process::id());
    let mut nic = Command::new(bin.join("softspin"))
        .args(["nic", "--iface", "lo", "--mode", "socket", "--image"])
        .arg(&elf)
        .args(["--ph", "rma_target_ph", "--match", &format!("udp:{port}")])
        .args([
            "--scratchpad",
            "12288",
            "--host-size",
            "65536",
            "--host-shm",
            &shm,
        ])
        .arg("--control")
        .arg(&ctl)
        .args(["--duration", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !ctl.exists() {
        assert!(nic.try_wait().unwrap().is_none(), "softspin nic exited");
        assert!(Instant::now() < end, "no control socket after 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = Command::new(&exe)
        .arg(&ctl)
        .arg(port.to_string())
        .arg("rma")
        .output()
        .unwrap();
    let _ = nic.kill();
    let _ = nic.wait();
    let _ = std::fs::remove_file(PathBuf::from("/dev/shm").join(&shm));
    let out = String::from_utf8_lossy(&o.stdout);
    print!("{out}");
    assert!(o.status.success() && out.contains(", 0 failed"), "{out}");
}
