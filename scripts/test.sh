#!/usr/bin/env bash
# Run every test: Rust unit and integration tests (interpreter, SDK through
# the CLI, the ISA suite, differential programs) and the SDK build checks.
# Tests whose inputs are missing (third-party sources, root) pass without
# running and say SKIPPED; the last lines printed list them and why.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's header says the seconds since the start (CI aims at 30 min).
stage() { echo "== [${SECONDS}s] $*"; }

scripts/setup.sh --tests

stage "no tracked file names a machine-specific path (scripts/check-paths.py)"
python3 scripts/check-paths.py --self-test
python3 scripts/check-paths.py

skips=target/test-skips.txt
mkdir -p target && : >"$skips"
python3 scripts/skips.py --self-test >/dev/null
python3 tests/py/packets.py --self-test >/dev/null
trap 'python3 scripts/skips.py summary "$skips"' EXIT
# LABEL CMD...: run CMD, its skips collected for the summary.
logged() {
    local label=$1
    shift
    "$@" 2>&1 | python3 scripts/skips.py filter "$skips" "$label"
}

stage "softspin-host builds without the live NIC (feature live off): no clang, no libbpf"
# A clang-19 that fails comes first on PATH: the build must not run it.
noclang=$(mktemp -d)
printf '#!/bin/sh\necho "clang-19 ran, but a build without the live feature needs no clang" >&2\nexit 1\n' >"$noclang/clang-19"
chmod +x "$noclang/clang-19"
PATH="$noclang:$PATH" cargo check -p softspin-host --no-default-features
rm -rf "$noclang"

stage "third-party sources (scripts/third-party.sh; their tests say SKIPPED without them)"
scripts/third-party.sh || echo "third-party sources missing: the tests that read them will be skipped"

stage "style and lint gates: cargo fmt --check, clippy -D warnings (the workspace lint table), rust-version"
cargo fmt --all --check
# The workspace as built (softspin-cli's default `jit` on for all), the
# crates apart as their tests build them, and the CLI without the JIT.
cargo clippy --release --workspace --all-targets -- -D warnings
cargo clippy --release --workspace --exclude softspin-cli --all-targets -- -D warnings
cargo clippy --release -p softspin-hpu -p softspin-engine -p softspin-cli --all-targets --features jit -- -D warnings
cargo clippy --release -p softspin-cli --all-targets --no-default-features -- -D warnings
python3 scripts/check-msrv.py

stage "ISA suite sources are up to date with tests/isa/gen.py"
tmp=$(mktemp -d)
cp -r tests/isa "$tmp/isa"
python3 "$tmp/isa/gen.py"
diff -r tests/isa "$tmp/isa" >/dev/null || { echo "tests/isa is stale: run python3 tests/isa/gen.py" >&2; diff -r tests/isa "$tmp/isa" | head -20 >&2; exit 1; }
rm -rf "$tmp"

stage "SDK build checks (warnings are errors, image layout), CORE-V and plain RV32IMAC (against qemu)"
sdk/tests/check.sh build/sdk-check
SOFTSPIN_ISA=rv32imac sdk/tests/check.sh build/sdk-check-rv32imac

# Two runs: softspin-cli's default feature `jit` would turn on
# softspin-hpu's for every crate of one workspace build, and each test
# binary would link Cranelift; only the CLI's need it.
stage "cargo test (every crate but the CLI: no Cranelift)"
logged "cargo test" cargo test --release --workspace --exclude softspin-cli -- --show-output
stage "cargo test (the CLI, with its default JIT)"
logged "cargo test cli" cargo test --release -p softspin-cli -- --show-output

stage "the JIT against the interpreter (crates/hpu, feature jit)"
logged "cargo test jit" cargo test --release -p softspin-hpu --features jit --test jit -- --show-output

stage "softspin sim --jit and --no-jit give byte-identical results (bench/sim_bench.py --jit --identical)"
python3 bench/sim_bench.py --jit --identical
stage "... also with every region compiled at its first entry"
python3 bench/sim_bench.py --jit --jit-after 1 --identical
stage "softspin nic --jit answers on the wire (live test, root)"
logged "cargo test live jit" cargo test --release -p softspin-cli --features jit --test live jit -- --show-output

# --no-build: `cluster` is the same in the softspin the steps above built
# (with or without jit); building it again here would recompile the crates.
stage "the cluster benchmark's results are consistent (bench/cluster_bench.py --self-test, and --check as root)"
.venv/bin/python bench/cluster_bench.py --self-test
logged "cluster_bench.py --check" .venv/bin/python bench/cluster_bench.py --check --no-build
stage "the use-case benchmark's results are consistent (bench/usecases_bench.py --self-test, and --check as root: ~20 s)"
.venv/bin/python bench/usecases_bench.py --self-test
stage "the scale benchmark's checks (bench/scale_bench.py --self-test)"
.venv/bin/python bench/scale_bench.py --self-test
logged "usecases_bench.py --check" .venv/bin/python bench/usecases_bench.py --check

stage "LogGOPSim's binomial broadcast gives bench/results/loggopsim-sc17.json (bench/scale/loggopsim.sh --check, ~30 s)"
logged "loggopsim.sh --check" bench/scale/loggopsim.sh --check

stage "docs/validation.md is what this build generates (scripts/validation.py --check)"
logged "validation.py --check" python3 scripts/validation.py --check

stage "docs/benchmarks.md's simulated figures are what this build gives (scripts/benchmarks.py --check)"
python3 scripts/benchmarks.py --check

# The overflow-checked run repeats what exercises our arithmetic (the ISA,
# the engine, wire formats, SLMP, the matcher, the host API, the CLI's sim
# and reproduction cases); not the tests whose time is wall-clock waiting on
# a wire or a peer (live NIC, SLMP over namespaces, the lossy link, the
# socket/XDP ports) nor the C and Python layers over the same host API.
stage "cargo test, checked profile (overflow checks, debug assertions): the model, not the wire"
logged "cargo test --profile checked" cargo test --profile checked --workspace \
    --exclude softspin-cli --exclude softspin-c --exclude softspin-py --exclude softspin-lossy --exclude softspin-netio -- --show-output
# --no-default-features: the JIT's own checks are the runs above.
logged "cargo test --profile checked (cli)" cargo test --profile checked -p softspin-cli --no-default-features \
    --bins --test sim --test reproductions --test cli_results --test build_profile -- --show-output
logged "cargo test --profile checked (netio)" cargo test --profile checked -p softspin-netio --lib --test matcher -- --show-output

stage "Python host API, examples and softspin sweep (pytest; the sweep's 100-point sim grid on a local Dask cluster)"
logged pytest .venv/bin/python -m pytest -q -rs --durations=10 crates/host-py/tests examples/ping_pong examples/copy_to_host examples/slmp_recv examples/slmp_ddt examples/rma_target examples/cluster

stage "fuzz smoke (every target briefly; make fuzz runs them longer)"
scripts/fuzz.sh --smoke
