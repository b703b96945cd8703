//! Helpers shared by the C tests: the release build the C programs link
//! against, handler builds (the rest is in `softspin-testkit`).
#![allow(dead_code)] // each test crate uses a part of them

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub use softspin_testkit::release_dir;
use softspin_testkit::{root, run};

/// Build a handler image with `softspin build`.
pub fn build_handler(src: &Path, out: &Path) {
    run(Command::new(release_dir().join("softspin"))
        .arg("build")
        .arg(src)
        .arg("-o")
        .arg(out));
}

/// libsoftspin and the CLI current, then `make -C sdk/WHICH` (pspin,
/// fpspin); returns the PKG_CONFIG_PATH that finds softspin-WHICH.pc. Once
/// per process and SDK, under a lock: the tests run in parallel and must
/// not link while make rewrites the library.
pub fn sdk(which: &str) -> PathBuf {
    static DONE: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut done = DONE.lock().unwrap_or_else(|p| p.into_inner());
    done.entry(which.to_string())
        .or_insert_with(|| {
            release_dir();
            run(Command::new("make")
                .arg("-s")
                .arg("-C")
                .arg(root().join("sdk").join(which)));
            root().join("build").join(which)
        })
        .clone()
}
