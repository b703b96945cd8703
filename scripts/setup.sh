#!/usr/bin/env bash
# Install everything softspin needs, idempotently: clang-14 and lld-14 from
# Debian (handler toolchain), gcc (native references), the Rust crates, and
# the release build of the `softspin` CLI. Safe to run again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "setup: $*" >&2; exit 1; }

need_pkgs=()
command -v clang-14 >/dev/null || need_pkgs+=(clang-14)
command -v ld.lld-14 >/dev/null || need_pkgs+=(lld-14)
command -v llvm-readelf-14 >/dev/null || need_pkgs+=(llvm-14)
command -v gcc >/dev/null || need_pkgs+=(gcc)
command -v python3 >/dev/null || need_pkgs+=(python3)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "setup: installing ${need_pkgs[*]} from Debian"
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
        die "missing ${need_pkgs[*]}; run as root or install them: apt-get install ${need_pkgs[*]}"
    fi
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || die "apt-get update failed"
    $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null || die "apt-get install ${need_pkgs[*]} failed"
fi
command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) first"
for t in clang-14 ld.lld-14 gcc; do command -v "$t" >/dev/null || die "$t still missing after install"; done

echo "setup: building softspin (release)"
cargo build --release --quiet --workspace || die "cargo build failed"
