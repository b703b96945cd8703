//! Regenerates include/softspin.h from src/lib.rs with cbindgen (parsing
//! that one file: no `cargo metadata` run from inside the build). The header
//! is checked in, so C users need no Rust toolchain to read it; it is
//! rewritten only when its text changes (keeps mtimes, and `make`, quiet).

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // A deleted or hand-edited header is rewritten too.
    println!("cargo:rerun-if-changed=include/softspin.h");
    let config = match cbindgen::Config::from_file(dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => panic!("cbindgen.toml: {e}"),
    };
    let bindings = match cbindgen::Builder::new()
        .with_src(dir.join("src/lib.rs"))
        .with_config(config)
        .generate()
    {
        Ok(b) => b,
        Err(e) => {
            // A syntax error in lib.rs: let rustc report it properly.
            println!("cargo:warning=softspin.h not regenerated: {e}");
            return;
        }
    };
    let mut text = Vec::new();
    bindings.write(&mut text);
    let out = dir.join("include/softspin.h");
    if std::fs::read(&out).ok().as_deref() != Some(&text[..]) {
        std::fs::create_dir_all(dir.join("include")).unwrap();
        std::fs::write(&out, &text).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    }
}
