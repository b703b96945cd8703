//! The memory map handler images are linked against comes from the NIC
//! configuration: `sdk/link/<profile>.ld` equal what `NicConfig` generates,
//! and an image built for a profile has its regions where that profile says.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol};

use softspin_engine::NicConfig;
use softspin_hpu::abi;
use softspin_sdk::{build, sdk_dir, BuildOptions};

fn profiles() -> [(&'static str, NicConfig); 2] {
    [
        ("pspin", NicConfig::pspin()),
        ("fpspin", NicConfig::fpspin()),
    ]
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "softspin-sdk-profiles-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn profile_linker_scripts_are_generated_from_the_config() {
    let sdk = sdk_dir().unwrap();
    for (name, cfg) in profiles() {
        let path = sdk.join(format!("link/{name}.ld"));
        let want = cfg.memory_map().linker_script(name);
        if std::env::var_os("SOFTSPIN_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            have,
            want,
            "{} is stale: rerun this test with SOFTSPIN_BLESS=1",
            path.display()
        );
    }
}

fn handler_src() -> PathBuf {
    sdk_dir().unwrap().join("tests/pspin_style_handler.c")
}

/// Every symbol of an image, absolute ones (the linker's --defsym) included.
fn symbols(path: &Path) -> HashMap<String, u32> {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address() as u32)))
        .collect()
}

fn check_regions(elf: &Path, cfg: &NicConfig, what: &str) {
    let syms = symbols(elf);
    let sym = |n: &str| {
        *syms
            .get(n)
            .unwrap_or_else(|| panic!("{what}: no symbol {n}"))
    };
    assert_eq!(sym("__prog_mem_size"), cfg.prog_mem_size, "{what}");
    assert_eq!(sym("__l2_handler_size"), cfg.l2_handler_size, "{what}");
    assert_eq!(sym("SOFTSPIN_L2_PKT_SIZE"), cfg.l2_pkt_size, "{what}");
    assert_eq!(sym("SOFTSPIN_L1_SIZE"), cfg.l1_size, "{what}");
    assert_eq!(sym("__prog_mem_base"), abi::PROG_MEM_BASE, "{what}");
    assert_eq!(sym("__text_start"), abi::PROG_MEM_BASE, "{what}");
    assert_eq!(
        sym("__l2_handler_data_start"),
        abi::L2_HANDLER_BASE,
        "{what}"
    );
}

#[test]
fn images_are_linked_with_their_profiles_sizes() {
    let dir = out_dir("sizes");
    for (name, cfg) in profiles() {
        // As `softspin build --profile NAME` links: --defsym from the config.
        let out = dir.join(format!("{name}.elf"));
        let o = BuildOptions {
            define: cfg.sdk_defines(),
            link_symbols: cfg.memory_map().link_symbols(),
            ..BuildOptions::handler(&[handler_src()], &out)
        };
        build(&o).unwrap();
        check_regions(&out, &cfg, name);
    }
    // Without a map, the SDK's default is the PsPIN profile file.
    let out = dir.join("default.elf");
    build(&BuildOptions::handler(&[handler_src()], &out)).unwrap();
    check_regions(&out, &NicConfig::pspin(), "default");
    let _ = std::fs::remove_dir_all(dir);
}

/// Data that fits PsPIN's 4 MiB handler memory but not FPsPIN's 1 MiB links
/// for one and is refused for the other: the size reaches the link.
#[test]
fn data_larger_than_the_profiles_handler_memory_does_not_link() {
    let dir = out_dir("big");
    let src = dir.join("big.c");
    std::fs::write(
        &src,
        "#include <handler.h>\nstatic volatile uint8_t big[2u << 20];\n\
         __handler__ void ph(handler_args_t *a) { big[a->hpu_gid] = 1; }\n",
    )
    .unwrap();
    let try_link = |cfg: &NicConfig, out: &Path| {
        build(&BuildOptions {
            define: cfg.sdk_defines(),
            link_symbols: cfg.memory_map().link_symbols(),
            ..BuildOptions::handler(&[&src], out)
        })
    };
    try_link(&NicConfig::pspin(), &dir.join("p.elf"))
        .expect("2 MiB of data fits PsPIN's L2 handler memory");
    try_link(&NicConfig::fpspin(), &dir.join("f.elf"))
        .expect_err("2 MiB of data must not fit FPsPIN's 1 MiB");
    let _ = std::fs::remove_dir_all(dir);
}
