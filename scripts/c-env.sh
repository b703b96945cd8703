#!/usr/bin/env bash
# Writes build/c/softspin.pc (pkg-config file for libsoftspin, the C API:
# headers in crates/host-c/include, library in target/release) and prints
# the environment that finds it:
#   eval "$(scripts/c-env.sh)"; cc app.c $(pkg-config --cflags --libs softspin)
# The library itself comes from `cargo build --release` (-p softspin-c).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/c"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
mkdir -p "$out"
# Written to a temporary file and renamed: parallel makes may run this at once.
tmp=$(mktemp "$out/.softspin.pc.XXXXXX")
cat >"$tmp" <<PC
prefix=$root
libdir=\${prefix}/target/release
includedir=\${prefix}/crates/host-c/include

Name: softspin
Description: C API of softspin, a software sPIN NIC (run sPIN handlers on a simulated PsPIN NIC)
Version: ${version:-0.0.0}
Libs: -L\${libdir} -lsoftspin
Libs.private: -lpthread -ldl -lm
Cflags: -I\${includedir}
PC
chmod 644 "$tmp"
mv -f "$tmp" "$out/softspin.pc"
echo "export PKG_CONFIG_PATH=\"$out\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}\""
echo "export SOFTSPIN_LIBDIR=\"$root/target/release\""
