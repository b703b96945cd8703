#!/usr/bin/env bash
# Run the coverage-guided fuzz targets (fuzz/, cargo-fuzz + libFuzzer), each
# for a set time, and fail if any of them finds a crash, an over-limit
# allocation, a leak of the RSS limit or a hang.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target SECONDS (default 60)
#   scripts/fuzz.sh --smoke                 each target 10 s (CI: scripts/test.sh)
#
# The toolchain is stable Rust, so no sanitizer (`-s none`; ASan needs
# nightly): libFuzzer still gets coverage, and Rust's own checks (bounds,
# overflow-checks and debug-assertions in fuzz/Cargo.toml) turn bugs into
# panics. Memory is capped like `ulimit -v 1G`: fuzz/src/lib.rs's allocator
# refuses allocations past 1 GiB live (an infallible one then aborts: a
# finding); -rss_limit_mb=2048 leaves it room and catches leaks across runs
# (-malloc_limit_mb=1024 only takes effect with a sanitizer, i.e. nightly).
# New corpus entries go to fuzz/work/TARGET (not committed); the committed
# seeds are fuzz/corpus/TARGET; crashes land in fuzz/artifacts/TARGET/, and
# `cargo fuzz run -s none TARGET fuzz/artifacts/TARGET/crash-...` replays one.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=60
if [[ ${1:-} == --smoke ]]; then
    secs=10
    shift
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi
all=(elf_handler elf_code trace pcap config_toml host_api rules jit_diff node_table node_entries control ti_trace)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")

if ! command -v cargo-fuzz >/dev/null; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

cd fuzz
# One crate: building every target at once costs little more than one.
cargo fuzz build -s none

failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "corpus/$t"
    log="work/$t.log"
    echo "== fuzz $t for ${secs}s"
    set +e
    cargo fuzz run -s none "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    stats=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
    summary+=("$t: ${execs:-?} execs; ${stats:-no stats}")
    if [[ $rc -ne 0 ]]; then
        failed+=("$t")
        echo "fuzz: $t FAILED (exit $rc); log: fuzz/$log" >&2
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written|malloc\(' "$log" | head -20 >&2 || true
    fi
done

echo "== fuzz summary (${secs}s per target)"
printf '  %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
