#!/usr/bin/env bash
# LogGOPSim's binomial broadcast with our sc17 parameters (docs/scale.md,
# "LogGOPSim reference"): the reference the netsim `rdma` baseline is
# compared with. LogGOPSim is built outside the repo, at a pinned commit,
# with g++ (gengetopt, re2c and libgraphviz-dev are its build tools), not
# its CMake file (that one also wants MPI, Fortran and libclang for tools we
# do not use).
#
#   bench/scale/loggopsim.sh [OUT.json]        default bench/results/loggopsim-sc17.json
#   bench/scale/loggopsim.sh --check           rerun and compare with that file:
#                                              every row's time, bit for bit; prints
#                                              SKIPPED (exit 0) without the sources
#                                              or the build tools
#
# Environment:
#   LOGGOPSIM_GIT    clone source (default: scripts/third-party.sh's loggopsim
#                    sources where present, else https://github.com/spcl/LogGOPSim.git;
#                    a local mirror or bare repo works)
#   LOGGOPSIM_DIR    build directory outside the repo (default /tmp/softspin-loggopsim)
#   NETSIM_PARAMS    a --params TOML for our profile (default: sc17)
#   NODES, SIZES     space-separated lists (default 2 4 ... 1024; 8 65536)
#
# Output: JSON, one row per (nodes, size): time_ns from LogGOPSim, next to
# closed_form_ns from crates/netsim/src/loggp.rs for the same L.
set -euo pipefail

LOGGOPSIM_COMMIT=76451de16546c7ea39651c183cbc532f4a3457c0   # spcl/LogGOPSim master, 2023-12-06
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RECORDED=$ROOT/bench/results/loggopsim-sc17.json
CHECK=0
[ "${1:-}" = --check ] && CHECK=1
[ "$CHECK" = 1 ] || OUT=${1:-$RECORDED}
# Sources: LOGGOPSIM_GIT, else scripts/third-party.sh's, else upstream (a
# check does not fetch: without the sources it is skipped).
[ -n "${LOGGOPSIM_GIT:-}" ] || LOGGOPSIM_GIT=$("$ROOT/scripts/third-party.sh" --where loggopsim 2>/dev/null | cut -f1) || true
if [ "$CHECK" = 1 ]; then
    skip() { echo "SKIPPED: LogGOPSim against $RECORDED: $*"; exit 0; }
    for tool in git g++ gengetopt re2c; do
        command -v "$tool" >/dev/null || skip "no $tool (scripts/setup.sh --tests installs it)"
    done
    [ -n "$LOGGOPSIM_GIT" ] || skip "$("$ROOT/scripts/third-party.sh" --where loggopsim 2>&1 >/dev/null)"
fi
GIT_SRC=${LOGGOPSIM_GIT:-https://github.com/spcl/LogGOPSim.git}
DIR=${LOGGOPSIM_DIR:-/tmp/softspin-loggopsim}
NODES=${NODES:-"2 4 8 16 32 64 128 256 512 1024"}
SIZES=${SIZES:-"8 65536"}

die() { echo "loggopsim.sh: $*" >&2; exit 1; }
for tool in git g++ gengetopt re2c; do
    command -v "$tool" >/dev/null || die "missing $tool (apt-get install gengetopt re2c libgraphviz-dev g++ git)"
done
[ -f /usr/include/graphviz/cgraph.h ] || die "missing graphviz/cgraph.h (apt-get install libgraphviz-dev)"

# --- build (once per commit) --------------------------------------------------
SRC=$DIR/src-$LOGGOPSIM_COMMIT
BIN=$DIR/bin-$LOGGOPSIM_COMMIT
if [ ! -x "$BIN/LogGOPSim" ] || [ ! -x "$BIN/schedgen" ] || [ ! -x "$BIN/txt2bin" ]; then
    mkdir -p "$DIR"
    if [ ! -d "$SRC/.git" ]; then
        rm -rf "$SRC"
        git clone -q "$GIT_SRC" "$SRC" || die "git clone $GIT_SRC failed"
    fi
    git -C "$SRC" -c advice.detachedHead=false checkout -q "$LOGGOPSIM_COMMIT" \
        || die "commit $LOGGOPSIM_COMMIT not in $GIT_SRC"
    rm -rf "$BIN"; mkdir -p "$BIN/gen"
    (
        cd "$BIN/gen"
        s=$SRC/src
        gengetopt -i "$s/LogGOPSim/loggopsim_cmdline.ggo" -F loggopsim_cmdline
        gengetopt -i "$s/LogGOPSim/txt2bin_cmdline.ggo" -F txt2bin_cmdline
        gengetopt -i "$s/Schedgen/schedgen_cmdline.ggo" -F schedgen_cmdline
        re2c -o txt2bin.cpp "$s/LogGOPSim/txt2bin.re"
        flags=(-O2 -w -std=gnu++11 -I. -I"$s/LogGOPSim" -I"$s/Schedgen")
        g++ "${flags[@]}" -o ../LogGOPSim "$s/LogGOPSim/LogGOPSim.cpp" loggopsim_cmdline.c -lcgraph
        g++ "${flags[@]}" -o ../txt2bin txt2bin.cpp txt2bin_cmdline.c
        g++ "${flags[@]}" -o ../schedgen "$s/Schedgen/schedgen.cpp" "$s/Schedgen/buffer_element.cpp" \
            "$s/Schedgen/process_trace.cpp" schedgen_cmdline.c
    ) >"$DIR/build.log" 2>&1 || die "build failed, see $DIR/build.log"
fi

# --- parameters: from the Rust profile, so they are defined once ---------------
cargo build -q --release -p softspin-netsim --example loggopsim_args --manifest-path "$ROOT/Cargo.toml" \
    || die "cargo build of the loggopsim_args example failed"
ARGS_BIN=$ROOT/target/release/examples/loggopsim_args
params=()
[ -n "${NETSIM_PARAMS:-}" ] && params=(--params "$NETSIM_PARAMS")

# --- runs ---------------------------------------------------------------------
WORK=$(mktemp -d "$DIR/run.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
[ "$CHECK" = 1 ] && OUT=$WORK/check.json
rows=()
for size in $SIZES; do
    for n in $NODES; do
        # One line: L o g G (in LogGOPSim's time unit), then a JSON object
        # with the row's parameters and the closed form.
        read -r L o g G meta < <("$ARGS_BIN" "${params[@]}" --nodes "$n" --size "$size") \
            || die "loggopsim_args failed for n=$n size=$size"
        "$BIN/schedgen" -p binomialtreebcast -s "$n" -d "$size" -o "$WORK/b.goal" >/dev/null \
            || die "schedgen failed for n=$n size=$size"
        "$BIN/txt2bin" -i "$WORK/b.goal" -o "$WORK/b.bin" >/dev/null || die "txt2bin failed for n=$n"
        out=$("$BIN/LogGOPSim" -f "$WORK/b.bin" -L "$L" -o "$o" -g "$g" -G "$G" -S 1000000000) \
            || die "LogGOPSim failed for n=$n size=$size"
        # Up to 16 hosts it lists every host's finishing time, above that
        # only the maximum.
        t=$(sed -n 's/^Maximum finishing time at host [0-9]*: \([0-9]*\).*/\1/p' <<<"$out")
        if [ -z "$t" ]; then
            hosts=$(grep -c '^ *Host [0-9]*:' <<<"$out" || true)
            [ "$hosts" = "$n" ] || die "LogGOPSim printed $hosts host times for $n nodes"
            t=$(grep '^ *Host [0-9]*:' <<<"$out" | awk '{ if ($3 > m) m = $3 } END { print m }')
        fi
        [ -n "$t" ] || die "no finishing time in LogGOPSim's output for n=$n size=$size"
        rows+=("$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); m["time_ns"]=int(sys.argv[2])/round(1/m["unit_ns"]); print(json.dumps(m))' "$meta" "$t")")
    done
done

mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$LOGGOPSIM_COMMIT" "$GIT_SRC" "$(g++ --version | head -1)" "${rows[@]}" <<'PY'
import json, sys
out, commit, src, gxx, *rows = sys.argv[1:]
rows = [json.loads(r) for r in rows]
doc = {
    "tool": "LogGOPSim",
    "commit": commit,
    "upstream": "https://github.com/spcl/LogGOPSim",
    # A local clone is named by its kind, not its path (scripts/check-paths.py).
    "source": src if "://" in src else "a local clone of upstream",
    "compiler": gxx,
    "pattern": "schedgen -p binomialtreebcast (root 0)",
    "eager_threshold": "S = 1e9 bytes (every message eager)",
    "rows": rows,
}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
for r in rows:
    print(f'{r["nodes"]:5d} {r["size"]:6d} B  {r["time_ns"]:12.3f} ns  closed form {r["closed_form_ns"]:12.3f} ns')
PY
if [ "$CHECK" = 1 ]; then
    # The rows' parameters and LogGOPSim's times must be the recorded ones
    # (the tool, build and header fields may differ between machines).
    python3 - "$RECORDED" "$OUT" <<'PY' || die "LogGOPSim's results differ from $RECORDED (rerun without --check to rewrite it)"
import json, sys
want, got = (json.load(open(p))["rows"] for p in sys.argv[1:])
bad = [f"{w['nodes']} nodes {w['size']} B: recorded {w}, now {g}" for w, g in zip(want, got) if w != g]
if len(want) != len(got):
    bad.append(f"{len(want)} rows recorded, {len(got)} now")
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    echo "LogGOPSim ${LOGGOPSIM_COMMIT:0:12}: bench/results/loggopsim-sc17.json reproduced, every row"
else
    echo "wrote $OUT"
fi
