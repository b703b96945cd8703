//! The XDP build's header search (build/bpf_include.rs) against made-up
//! include trees: the multiarch directory, a flat /usr/include, and the
//! errors when a header is missing.

#[path = "../build/bpf_include.rs"]
mod bpf_include;

use std::path::{Path, PathBuf};

use bpf_include::*;

/// An empty scratch include tree, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        let p = std::env::temp_dir().join(format!(
            "softspin-bpf-include-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tree(p)
    }
    fn add(&self, rel: &str) {
        let f = self.0.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "").unwrap();
    }
    fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn triples(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

#[test]
fn debian_triples_for_rust_targets() {
    assert_eq!(multiarch("x86_64", "linux"), Some("x86_64-linux-gnu"));
    assert_eq!(multiarch("aarch64", "linux"), Some("aarch64-linux-gnu"));
    assert_eq!(multiarch("x86", "linux"), Some("i386-linux-gnu"));
    assert_eq!(multiarch("x86_64", "macos"), None);
    assert_eq!(multiarch("wasm32", "linux"), None);
}

#[test]
fn the_multiarch_directory_holding_asm_is_chosen() {
    let t = Tree::new("multiarch");
    t.add("aarch64-linux-gnu/asm/types.h");
    let got = asm_include_dir(
        t.root(),
        &triples(&["x86_64-linux-gnu", "aarch64-linux-gnu"]),
        "x",
    )
    .unwrap();
    assert_eq!(got, Some(t.root().join("aarch64-linux-gnu")));
}

#[test]
fn a_flat_include_tree_needs_no_flag() {
    let t = Tree::new("flat");
    t.add("asm/types.h");
    assert_eq!(
        asm_include_dir(t.root(), &triples(&["x86_64-linux-gnu"]), "x").unwrap(),
        None
    );
}

#[test]
fn missing_headers_are_named_with_their_package() {
    let t = Tree::new("empty");
    let e = asm_include_dir(t.root(), &triples(&["x86_64-linux-gnu"]), "x86_64-linux").unwrap_err();
    assert!(
        e.contains("x86_64-linux") && e.contains("linux-libc-dev"),
        "{e}"
    );
    assert!(
        e.contains(
            &t.root()
                .join("x86_64-linux-gnu/asm/types.h")
                .display()
                .to_string()
        ),
        "{e}"
    );
    assert!(
        e.contains(&t.root().join("asm/types.h").display().to_string()),
        "{e}"
    );
    let e = check_libbpf(t.root()).unwrap_err();
    assert!(
        e.contains("bpf/bpf_helpers.h") && e.contains("libbpf-dev"),
        "{e}"
    );
    t.add("bpf/bpf_helpers.h");
    check_libbpf(t.root()).unwrap();
}
