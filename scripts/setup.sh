#!/usr/bin/env bash
# Install what softspin needs, idempotently; safe to run again and again.
#   scripts/setup.sh          the main job (scripts/main.sh): clang-19, lld-19
#                             and llvm-19 from Debian (handler toolchain, CORE-V
#                             code generation, the XDP matcher), libbpf-dev (its
#                             BPF headers), gcc (the Rust linker), python3
#                             (pyo3's build), then the release build of the
#                             workspace.
#   scripts/setup.sh --tests  that, plus what only tests, benchmarks and the
#                             Python host API use (scripts/test.sh runs it): the
#                             peers and oracles below, MPI and the FPsPIN build
#                             tools, tshark, and a venv at .venv with the
#                             Python module `softspin`.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "setup: $*" >&2; exit 1; }
tests=0
case "${1:-}" in
"") ;;
--tests) tests=1 ;;
*) die "usage: scripts/setup.sh [--tests]" ;;
esac

need_pkgs=()
# clang-19/lld-19 build every handler (CORE-V by default, sdk/toolchain.txt)
# and the XDP matcher (crates/netio/build.rs, with libbpf-dev's BPF helpers);
# llvm-19's objdump/mc/readelf check the decoder and the SDK's images.
command -v clang-19 >/dev/null || need_pkgs+=(clang-19)
command -v ld.lld-19 >/dev/null || need_pkgs+=(lld-19)
command -v llvm-objdump-19 >/dev/null || need_pkgs+=(llvm-19)
[ -f /usr/include/bpf/bpf_helpers.h ] || need_pkgs+=(libbpf-dev)
command -v gcc >/dev/null || need_pkgs+=(gcc)
# SimGrid's C API: softspin-netsim (a workspace member) links libsimgrid.
[ -f /usr/include/simgrid/actor.h ] || need_pkgs+=(libsimgrid-dev)
# pyo3's build script (crates/host-py is a workspace member) asks python3.
command -v python3 >/dev/null || need_pkgs+=(python3)
if [ $tests = 1 ]; then
    # llvm-objdump-14: the reference disassembler of the base-ISA decoder test
    # (crates/hpu/tests/decoder_objdump.rs reads its output format).
    command -v llvm-objdump-14 >/dev/null || need_pkgs+=(llvm-14)
    # qemu-riscv32: the SDK check compares plain-RV32 builds against native
    # output under it, and make bench-hpu measures against it.
    command -v qemu-riscv32 >/dev/null || need_pkgs+=(qemu-user)
    # Host-side C layers (sdk/pspin, sdk/fpspin): their Makefiles and .pc files.
    command -v make >/dev/null || need_pkgs+=(make)
    command -v pkg-config >/dev/null || need_pkgs+=(pkg-config)
    # The live NIC's test wire: checksum offload off on the veth pair (scripts/netns.sh).
    command -v ethtool >/dev/null || [ -x /usr/sbin/ethtool ] || need_pkgs+=(ethtool)
    command -v ip >/dev/null || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need_pkgs+=(iproute2)
    command -v ping >/dev/null || [ -x /usr/bin/ping ] || need_pkgs+=(iputils-ping)
    # FPsPIN's datatypes host program (crates/host-c/tests/fpspin_examples.rs,
    # docs/fpspin.md): MPI (mpicc), OpenBLAS (cblas.h), and what building its
    # mpitypes (autotools) and typebuilder (bison, flex, C++) takes.
    command -v mpicc >/dev/null || need_pkgs+=(mpich libmpich-dev)
    [ -n "$(find /usr/include -maxdepth 2 -name cblas.h -print -quit 2>/dev/null)" ] || need_pkgs+=(libopenblas-dev)
    command -v autoreconf >/dev/null || need_pkgs+=(autoconf)
    command -v automake >/dev/null || need_pkgs+=(automake)
    command -v bison >/dev/null || need_pkgs+=(bison)
    command -v flex >/dev/null || need_pkgs+=(flex)
    command -v g++ >/dev/null || need_pkgs+=(g++)
    # The SLMP dissector's test (tools/wireshark/slmp.lua under tshark, on
    # frames tcpdump captured after the lossy link).
    command -v tshark >/dev/null || need_pkgs+=(tshark)
    command -v tcpdump >/dev/null || [ -x /usr/bin/tcpdump ] || [ -x /usr/sbin/tcpdump ] || need_pkgs+=(tcpdump)
    # The handler debugger's test (crates/cli/tests/gdb.rs, docs/debugging.md).
    command -v gdb-multiarch >/dev/null || need_pkgs+=(gdb-multiarch)
    # LogGOPSim's build tools (bench/scale/loggopsim.sh --check in scripts/test.sh).
    command -v gengetopt >/dev/null || need_pkgs+=(gengetopt)
    command -v re2c >/dev/null || need_pkgs+=(re2c)
    [ -f /usr/include/graphviz/cgraph.h ] || need_pkgs+=(libgraphviz-dev)
fi
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
for t in clang-19 ld.lld-19 llvm-objdump-19 gcc; do command -v "$t" >/dev/null || die "$t still missing after install"; done

echo "setup: building softspin (release)"
# In two parts, as scripts/test.sh tests them: the crates without the
# JIT (one build of the whole workspace would turn softspin-hpu's `jit` on
# for all of them, softspin-cli's default), then the CLI with it.
cargo build --release --quiet --workspace --exclude softspin-cli || die "cargo build failed"
cargo build --release --quiet -p softspin-cli || die "cargo build -p softspin-cli failed"
[ $tests = 1 ] || exit 0

# The Python module `softspin` (crates/host-py) in a venv at .venv, built by
# maturin into its own target dir (pyo3 built for the venv's Python), and
# rebuilt only when its Rust or Python sources changed.
PY_PINS="maturin==1.9.6 numpy==2.2.6 pytest==8.4.2 matplotlib==3.10.7 dask==2026.8.0 distributed==2026.8.0"
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    echo "setup: creating .venv"
    rm -rf .venv
    if ! python3 -m venv .venv >/dev/null 2>&1; then
        rm -rf .venv
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv >/dev/null || die "apt-get install python3-venv failed"
        python3 -m venv .venv || die "python3 -m venv failed"
    fi
fi
if [ "$(cat .venv/.softspin-pins 2>/dev/null)" != "$PY_PINS" ]; then
    echo "setup: pip install $PY_PINS"
    # shellcheck disable=SC2086
    .venv/bin/python -m pip install -q --disable-pip-version-check $PY_PINS || die "pip install failed"
    echo "$PY_PINS" > .venv/.softspin-pins
fi
py_hash=$( { find crates/host-py crates/host crates/engine crates/hpu crates/netio crates/wire \
                 \( -path crates/host-py/tests -o -name target \) -prune -o -type f \
                 \( -name '*.rs' -o -name '*.toml' -o -name '*.py' -o -name '*.pyi' -o -name py.typed \) -print \
             | LC_ALL=C sort | xargs sha256sum; sha256sum Cargo.lock; } | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.softspin-build 2>/dev/null)" != "$py_hash" ] || ! .venv/bin/python -c 'import softspin' 2>/dev/null; then
    echo "setup: building the Python module softspin (maturin develop --release)"
    log=$(VIRTUAL_ENV="$PWD/.venv" CARGO_TARGET_DIR="$PWD/target/python" \
        .venv/bin/maturin develop --release -m crates/host-py/Cargo.toml 2>&1) \
        || { echo "$log" >&2; die "maturin develop failed"; }
    .venv/bin/python -c 'import softspin' || die "import softspin failed after the build"
    echo "$py_hash" > .venv/.softspin-build
fi
