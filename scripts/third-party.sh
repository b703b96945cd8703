#!/usr/bin/env bash
# Third-party sources some tests and benchmarks read, never shipped with
# softspin: PsPIN's and FPsPIN's unchanged examples (crates/host-c/tests,
# scripts/pspin_usecases.py), Embench-IoT (crates/cli/tests/conformance.rs,
# make bench-hpu) and LogGOPSim (bench/scale/loggopsim.sh, its --check in
# scripts/test.sh). Each is pinned to the commit the tests were written against.
#
#   scripts/third-party.sh [NAME...]   get NAME (default: all) into third_party/NAME
#   scripts/third-party.sh --where NAME
#                                      print "GIT_REPO<TAB>COMMIT" of NAME's sources,
#                                      or say how to get them and exit 1
#   scripts/third-party.sh --list      NAME, variable, upstream, commit
#
# Sources come from the upstream on GitHub, or, where no network reaches it,
# from an existing clone or mirror (bare or not) named by the NAME's variable
# (SOFTSPIN_PSPIN_REPO, SOFTSPIN_FPSPIN_REPO, SOFTSPIN_EMBENCH_REPO,
# SOFTSPIN_LOGGOPSIM_REPO), which must hold the pinned commit. --where
# prefers the variable, then third_party/NAME. third_party/ is git-ignored.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/third_party"

# NAME VARIABLE UPSTREAM COMMIT (the commits docs/validation.md,
# docs/perf-interpreter.md, docs/pspin-drivers.md, docs/fpspin.md and
# docs/scale.md report).
PINS="pspin SOFTSPIN_PSPIN_REPO https://github.com/spcl/pspin a49fec8b582990f9c7f295386274a62ae0380b55
fpspin SOFTSPIN_FPSPIN_REPO https://github.com/spcl/FPsPIN f5feca170a84c9236edf4ecd1d34c23261d7787c
embench SOFTSPIN_EMBENCH_REPO https://github.com/embench/embench-iot 09c2ed8c3b7008c95d08b038de4a3f6dc103ed70
loggopsim SOFTSPIN_LOGGOPSIM_REPO https://github.com/spcl/LogGOPSim 76451de16546c7ea39651c183cbc532f4a3457c0"
# Seconds a fetch from the network may take (one that drops packets
# instead of refusing them must not stall scripts/test.sh).
FETCH_TIMEOUT=120

pin() { # NAME -> "VARIABLE UPSTREAM COMMIT", or fail
    local n v u c
    while read -r n v u c; do
        [ "$n" = "$1" ] && { echo "$v $u $c"; return 0; }
    done <<<"$PINS"
    echo "third-party: unknown name '$1' (one of: $(cut -d' ' -f1 <<<"$PINS" | tr '\n' ' '))" >&2
    return 1
}

has_commit() { git -C "$1" cat-file -e "$2^{commit}" 2>/dev/null; }

# How to get NAME's sources, for messages (tests print it after SKIPPED).
how() {
    echo "run scripts/third-party.sh $1 (or set $2 to a clone or mirror of $3 holding commit ${4:0:12})"
}

where() {
    local n=$1 v u c p
    p=$(pin "$n") || return 2
    read -r v u c <<<"$p"
    local given=${!v:-}
    if [ -n "$given" ]; then
        if has_commit "$given" "$c"; then
            printf '%s\t%s\n' "$(cd "$given" && pwd)" "$c"
            return 0
        fi
        echo "$v=$given holds no commit $c of $u: fetch it there, or unset $v to use third_party/$n" >&2
        return 1
    fi
    if [ -d "$dir/$n/.git" ] && has_commit "$dir/$n" "$c"; then
        printf '%s\t%s\n' "$dir/$n" "$c"
        return 0
    fi
    echo "no $u sources in third_party/$n: $(how "$n" "$v" "$u" "$c")" >&2
    return 1
}

get() {
    local n=$1 v u c p
    p=$(pin "$n") || return 2
    read -r v u c <<<"$p"
    local dest="$dir/$n" src=${!v:-$u}
    if [ -d "$dest/.git" ] && [ "$(git -C "$dest" rev-parse -q --verify HEAD)" = "$c" ]; then
        echo "third_party/$n: at ${c:0:12}"
        return 0
    fi
    mkdir -p "$dir"
    [ -d "$dest/.git" ] || git init -q "$dest"
    if ! has_commit "$dest" "$c"; then
        echo "third_party/$n: fetching ${c:0:12} from $src"
        # One commit, no history: the tests read a tree. A local clone
        # whose git refuses a fetch by id gets a fetch of all its refs.
        # No prompt: a wrong URL must fail, not ask for a password.
        if [ -d "$src" ]; then
            git -C "$dest" fetch -q --depth 1 "$src" "$c" 2>/dev/null ||
                git -C "$dest" fetch -q "$src" '+refs/*:refs/remotes/source/*' || true
        else
            GIT_TERMINAL_PROMPT=0 timeout "$FETCH_TIMEOUT" git -C "$dest" fetch -q --depth 1 "$src" "$c" || true
        fi
        if ! has_commit "$dest" "$c"; then
            echo "third-party: could not get $u at ${c:0:12} from $src; where no network reaches" \
                "the upstream, set $v to a clone or mirror that holds it" >&2
            return 1
        fi
    fi
    git -C "$dest" -c advice.detachedHead=false checkout -q --detach "$c"
    echo "third_party/$n: at ${c:0:12}"
}

case "${1:-}" in
--where)
    [ $# -eq 2 ] || { echo "usage: $0 --where NAME" >&2; exit 2; }
    where "$2"
    ;;
--list)
    while read -r n v u c; do printf '%-8s %-22s %s %s\n' "$n" "$v" "$u" "$c"; done <<<"$PINS"
    ;;
-h | --help)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    ;;
-*)
    echo "usage: $0 [NAME...] | --where NAME | --list" >&2
    exit 2
    ;;
*)
    names=("$@")
    [ ${#names[@]} -gt 0 ] || mapfile -t names < <(cut -d' ' -f1 <<<"$PINS")
    failed=0
    for n in "${names[@]}"; do
        pin "$n" >/dev/null || exit 2
        get "$n" || failed=$((failed + 1))
    done
    exit $((failed > 0))
    ;;
esac
