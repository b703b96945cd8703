#!/usr/bin/env bash
# Run every test: Rust unit and integration tests (interpreter, SDK through
# the CLI, the ISA suite, differential programs) and the SDK build checks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== ISA suite sources are up to date with tests/isa/gen.py"
tmp=$(mktemp -d)
cp -r tests/isa "$tmp/isa"
python3 "$tmp/isa/gen.py"
diff -r tests/isa "$tmp/isa" >/dev/null || { echo "tests/isa is stale: run python3 tests/isa/gen.py" >&2; diff -r tests/isa "$tmp/isa" | head -20 >&2; exit 1; }
rm -rf "$tmp"

echo "== SDK build checks (warnings are errors, image layout), CORE-V and plain RV32IMAC (against qemu)"
sdk/tests/check.sh build/sdk-check
SOFTSPIN_ISA=rv32imac sdk/tests/check.sh build/sdk-check-rv32imac

echo "== cargo test"
cargo test --release --workspace

echo "== the JIT against the interpreter (crates/hpu, feature jit)"
cargo test --release -p softspin-hpu --features jit --test jit

echo "== softspin sim --jit gives byte-identical results (bench/sim_bench.py --jit --identical builds it)"
python3 bench/sim_bench.py --jit --identical
echo "== ... also with every region compiled at its first entry"
python3 bench/sim_bench.py --jit --jit-after 1 --identical
echo "== softspin nic --jit answers on the wire (live test, root)"
cargo test --release -p softspin-cli --features jit --test live jit

echo "== docs/validation.md is what this build generates (scripts/validation.py --check)"
python3 scripts/validation.py --check

echo "== docs/benchmarks.md's simulated figures are what this build gives (scripts/benchmarks.py --check)"
python3 scripts/benchmarks.py --check

echo "== cargo test, checked profile (overflow checks, debug assertions)"
cargo test --profile checked --workspace

echo "== Python host API and examples (pytest)"
.venv/bin/python -m pytest -q crates/host-py/tests examples/ping_pong examples/copy_to_host examples/slmp_recv examples/slmp_ddt

echo "== fuzz smoke (every target briefly; make fuzz runs them longer)"
scripts/fuzz.sh --smoke
