//! Link SimGrid's C library (Debian's libsimgrid-dev 3.32; docs/scale.md).

fn main() {
    let found = ["/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/local/lib"]
        .iter()
        .any(|d| std::path::Path::new(d).join("libsimgrid.so").exists());
    if !found {
        println!(
            "cargo:warning=libsimgrid.so not found: install SimGrid's C library with `apt-get install libsimgrid-dev` (scripts/setup.sh does)"
        );
    }
    println!("cargo:rustc-link-lib=dylib=simgrid");
    println!("cargo:rerun-if-changed=build.rs");
}
