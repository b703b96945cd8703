//! `softspin build --profile/--config` links against that NIC's memory map:
//! data that fits PsPIN's 4 MiB L2 handler memory but not FPsPIN's 1 MiB
//! builds for one and is refused for the other, and a TOML configuration's
//! own size reaches the link.

use softspin_testkit::scratch;
use std::process::{Command, Output};

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn build_links_with_the_profiles_region_sizes() {
    let d = scratch("build-profile");
    let src = d.join("big.c");
    std::fs::write(
        &src,
        "#include <handler.h>\nstatic volatile uint8_t big[2u << 20];\n\
         __handler__ void ph(handler_args_t *a) { big[a->hpu_gid] = 1; }\n",
    )
    .unwrap();
    let (src, out) = (src.to_str().unwrap(), d.join("o.elf"));
    let out = out.to_str().unwrap();
    let ok = softspin(&["build", "--profile", "pspin", src, "-o", out]);
    assert!(
        ok.status.success(),
        "pspin: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = softspin(&["build", "--profile", "fpspin", src, "-o", out]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("L2 handler memory"),
        "fpspin linked 2 MiB of data: {err}"
    );
    // A configuration with a 1 MiB handler memory on the PsPIN base: refused
    // too, so the link follows the file, not the profile it names.
    let toml = d.join("nic.toml");
    std::fs::write(&toml, "profile = \"pspin\"\nl2_handler_size = 1048576\n").unwrap();
    let bad = softspin(&["build", "--config", toml.to_str().unwrap(), src, "-o", out]);
    assert!(
        !bad.status.success(),
        "--config with a 1 MiB handler memory linked 2 MiB of data"
    );
    let _ = std::fs::remove_dir_all(d);
}
