#!/usr/bin/env bash
# check.sh - build-checks the SDK with plain clang-19 / ld.lld-19 commands
# driven by sdk/toolchain.txt:
#   * a PsPIN-style handler compiles unchanged and links with handler.ld
#     and the PsPIN memory map link/pspin.ld (.text at 0x1D000000, data at
#     0x1C000000, no linker warnings); with link/fpspin.ld, data that
#     overruns FPsPIN's 1 MiB handler memory is refused; without a memory
#     map the link fails and says so;
#   * the SDK self-test and every tests/diff/*.c program build bare-metal;
#   * if qemu-riscv32 is installed and the ISA is plain rv32imac (QEMU does
#     not implement CORE-V), the self-test passes and each diff program's
#     RV32 output equals its native (gcc) output;
#   * every SDK header compiles on its own (included alone, twice): the
#     handler headers with the handler flags, as the default and the fpspin
#     profile see them, the host headers (sdk/pspin, sdk/fpspin) with the
#     host compiler; and spin.h alone declares what handlers call from
#     string.h.
# Usage: [SOFTSPIN_ISA=rv32imac|corev] sdk/tests/check.sh [BUILD_DIR]
# (default ISA: toolchain.txt's `isa:` line)
set -u

SDK="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$SDK/.." && pwd)"
OUT="${1:-$(mktemp -d /tmp/softspin-sdk-check.XXXXXX)}"
mkdir -p "$OUT/rt"

tc() { sed -n "s/^$1:[[:space:]]*//p" "$SDK/toolchain.txt" | sed "s|{sdk}|$SDK|g"; }
# The ISA's tools and -march (toolchain.txt `isa:` / `isa-NAME:`).
ISA="${SOFTSPIN_ISA:-$(tc isa)}"
read -r CC LD MARCH <<<"$(tc "isa-$ISA")"
[ -n "$MARCH" ] || { echo "SOFTSPIN_ISA=$ISA: no isa-$ISA line in $SDK/toolchain.txt" >&2; exit 1; }
echo "ISA $ISA: $CC $LD $MARCH"
CFLAGS="$(tc cflags) $MARCH"
# Memory maps before handler.ld (ld.lld-19 reads DEFINED() in order).
LDFLAGS_HANDLER="$SDK/link/pspin.ld $(tc ldflags-handler)"
LDFLAGS_HANDLER_NOMAP="$(tc ldflags-handler)"
LDFLAGS_HANDLER_FPSPIN="$SDK/link/fpspin.ld $(tc ldflags-handler)"
LDFLAGS_BARE="$(tc ldflags-bare)"
if ! command -v "$CC" >/dev/null || ! command -v "$LD" >/dev/null; then
    echo "$CC / $LD not found: install them with apt-get install clang-19 lld-19" >&2
    exit 1
fi
READELF="$(command -v llvm-readelf-19 || command -v llvm-readelf || true)"
QEMU="$(command -v qemu-riscv32 || true)"
QEMU_WHY="qemu-riscv32 not installed"
if [ "$ISA" != rv32imac ]; then QEMU=""; QEMU_WHY="qemu-riscv32 has no $ISA"; fi
HOSTCC="$(command -v gcc || command -v cc || true)"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# cc SRC OBJ [extra flags]: compile with the canonical flags; warnings fail.
cc() {
    local src=$1 obj=$2
    shift 2
    if ! "$CC" $CFLAGS -Wall -Wextra -Werror "$@" -c "$src" -o "$obj" 2>"$obj.log"; then
        cat "$obj.log"
        return 1
    fi
}
# ld OUT FLAGS... -- OBJS...: link; any linker output counts as a failure.
ld_quiet() {
    local out=$1
    shift
    "$LD" "$@" -o "$out" >"$out.log" 2>&1 && [ ! -s "$out.log" ] || {
        cat "$out.log"
        return 1
    }
}

# --- runtime objects ---
rt_objs() {
    local objs=""
    for f in $(tc "runtime-$1"); do
        local o="$OUT/rt/$(basename "$f").o"
        [ -f "$o" ] || cc "$SDK/$f" "$o" || return 1
        objs="$objs $o"
    done
    echo "$objs"
}
RT_HANDLER="$(rt_objs handler)" && RT_BARE="$(rt_objs bare)" || {
    bad "runtime does not compile"
    echo "0 passed, 1 failed"
    exit 1
}

# --- PsPIN-style handler image ---
H="$OUT/pspin_style_handler"
if cc "$SDK/tests/pspin_style_handler.c" "$H.o" &&
    ld_quiet "$H.elf" $LDFLAGS_HANDLER $RT_HANDLER "$H.o"; then
    if [ -n "$READELF" ]; then
        "$READELF" -lSs "$H.elf" >"$H.readelf"
        if grep -Eq '^ +LOAD .* 0x1d000000 0x1d000000 .* R E ' "$H.readelf" &&
            grep -Eq '^ +LOAD .* 0x1c000000 0x1c000000 .* RW ' "$H.readelf" &&
            grep -Eq ' \.text +PROGBITS +1d000000 ' "$H.readelf" &&
            grep -Eq ' \.bss +NOBITS +1c0' "$H.readelf" &&
            grep -Eq ' (histo_ph|init_handlers)$' "$H.readelf"; then
            ok "pspin_style_handler.elf: .text @0x1D000000, data @0x1C000000"
        else
            bad "pspin_style_handler.elf layout (see $H.readelf)"
        fi
    else
        ok "pspin_style_handler.elf links (no llvm-readelf to check layout)"
    fi
else
    bad "pspin_style_handler does not build"
fi

# Same handler for FPsPIN (2 clusters, 1 MiB handler memory), data moved
# with the placement symbol; moved past the region's end, it must not link.
if cc "$SDK/tests/pspin_style_handler.c" "$H.2c.o" -DNB_CLUSTERS=2 &&
    ld_quiet "$H.2c.elf" $LDFLAGS_HANDLER_FPSPIN --defsym=SOFTSPIN_DATA_BASE=0x1C080000 \
        $RT_HANDLER "$H.2c.o" &&
    { [ -z "$READELF" ] || "$READELF" -l "$H.2c.elf" | grep -Eq 'LOAD .* 0x1c080000 .* RW '; }; then
    ok "handler for fpspin.ld with -DNB_CLUSTERS=2 and SOFTSPIN_DATA_BASE"
else
    bad "handler for fpspin.ld with SOFTSPIN_DATA_BASE"
fi
if ! "$LD" $LDFLAGS_HANDLER_FPSPIN --defsym=SOFTSPIN_DATA_BASE=0x1C100000 $RT_HANDLER "$H.2c.o" \
    -o "$H.over.elf" >"$H.over.log" 2>&1 && grep -q "does not fit in L2 handler memory" "$H.over.log"; then
    ok "data past FPsPIN's handler memory is refused"
else
    bad "data past FPsPIN's handler memory linked (see $H.over.log)"
fi
if ! "$LD" $LDFLAGS_HANDLER_NOMAP $RT_HANDLER "$H.o" -o "$H.nomap.elf" >"$H.nomap.log" 2>&1 &&
    grep -q "no NIC memory map" "$H.nomap.log"; then
    ok "a link without a memory map fails and says so"
else
    bad "a link without a memory map (see $H.nomap.log)"
fi

# PsPIN's optional debug switches must compile too.
if cc "$SDK/tests/pspin_style_handler.c" "$H.dbg.o" -DCHECK_ASSERTS -DLOG -DENABLE_TRACING &&
    ld_quiet "$H.dbg.elf" $LDFLAGS_HANDLER $RT_HANDLER "$H.dbg.o"; then
    ok "handler with -DCHECK_ASSERTS -DLOG -DENABLE_TRACING"
else
    bad "handler with debug switches"
fi

# --- bare-metal programs ---
# bare SRC NAME: build $OUT/NAME.elf
bare() {
    cc "$1" "$OUT/$2.o" "${@:3}" && ld_quiet "$OUT/$2.elf" $LDFLAGS_BARE $RT_BARE "$OUT/$2.o"
}

if bare "$SDK/tests/sdk_selftest.c" sdk_selftest; then
    if [ -n "$QEMU" ]; then
        if "$QEMU" "$OUT/sdk_selftest.elf" >"$OUT/sdk_selftest.txt"; then
            ok "sdk_selftest (qemu)"
        else
            cat "$OUT/sdk_selftest.txt"
            bad "sdk_selftest (qemu)"
        fi
    else
        ok "sdk_selftest builds ($QEMU_WHY: not run)"
    fi
else
    bad "sdk_selftest does not build"
fi

for src in "$ROOT"/tests/diff/*.c; do
    n="$(basename "$src" .c)"
    if ! bare "$src" "diff_$n"; then
        bad "diff/$n.c does not build for RV32"
        continue
    fi
    if [ -z "$QEMU" ] || [ -z "$HOSTCC" ]; then
        ok "diff/$n.c builds ($QEMU_WHY or no gcc: not compared)"
        continue
    fi
    if ! "$HOSTCC" -O2 -w -o "$OUT/diff_$n.native" "$src"; then
        bad "diff/$n.c does not build natively"
        continue
    fi
    "$OUT/diff_$n.native" >"$OUT/diff_$n.native.txt"
    nrc=$?
    "$QEMU" "$OUT/diff_$n.elf" >"$OUT/diff_$n.rv.txt"
    rrc=$?
    if [ $nrc -eq 0 ] && [ $rrc -eq 0 ] && cmp -s "$OUT/diff_$n.native.txt" "$OUT/diff_$n.rv.txt"; then
        ok "diff/$n.c: RV32 (qemu) output == native ($(wc -l <"$OUT/diff_$n.rv.txt") lines)"
    else
        bad "diff/$n.c: native rc=$nrc rv rc=$rrc; diff $OUT/diff_$n.native.txt $OUT/diff_$n.rv.txt"
    fi
done

# --- every header on its own ---
# hdr_alone NAME COMPILER FLAGS...: a TU that includes NAME twice (so a
# missing include guard fails too) compiles, warnings as errors.
H_DIR="$OUT/headers"
mkdir -p "$H_DIR"
hdr_alone() {
    local name=$1 tu
    shift
    tu="$H_DIR/$(echo "$name $*" | cksum | cut -d' ' -f1).c"
    printf '#include <%s>\n#include <%s>\nint softspin_header_check;\n' "$name" "$name" >"$tu"
    "$@" -Wall -Wextra -Werror -fsyntax-only "$tu" >"$tu.log" 2>&1 || {
        cat "$tu.log"
        return 1
    }
}
FPSPIN_RT="-I $SDK/fpspin/runtime/include -DNB_CLUSTERS=2"
for profile in default fpspin; do
    inc=""
    [ $profile = fpspin ] && inc=$FPSPIN_RT
    n=0 failed=""
    for h in "$SDK"/include/*.h "$SDK"/include/libc/*.h; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        hdr_alone "$(basename "$h")" "$CC" $inc $CFLAGS || failed="$failed $(basename "$h")"
    done
    if [ $profile = fpspin ]; then
        for h in "$SDK"/fpspin/runtime/include/*.h; do
            n=$((n + 1))
            # shellcheck disable=SC2086
            hdr_alone "$(basename "$h")" "$CC" $inc $CFLAGS || failed="$failed fpspin/runtime/$(basename "$h")"
        done
    fi
    if [ -z "$failed" ]; then ok "$n handler headers compile alone ($profile profile)"; else bad "handler headers that do not compile alone ($profile profile):$failed"; fi
    # What a handler may call after including spin.h and nothing else.
    tu="$H_DIR/spin_string_$profile.c"
    printf '%s\n' '#include <spin.h>' \
        'int spin_h_string(void *d, const void *s, size_t n) {' \
        '    memcpy(d, s, n); memmove(d, s, n); memset(d, 0, n);' \
        '    return memcmp(d, s, n) + (int)strlen((const char *)s); }' >"$tu"
    # shellcheck disable=SC2086
    if "$CC" $inc $CFLAGS -Wall -Wextra -Werror -fsyntax-only "$tu" >"$tu.log" 2>&1; then
        ok "memcpy/memmove/memset/memcmp/strlen after only spin.h ($profile profile)"
    else
        cat "$tu.log"
        bad "memcpy/memmove/memset/memcmp/strlen after only spin.h ($profile profile)"
    fi
done
if [ -n "$HOSTCC" ]; then
    failed=""
    for h in "$SDK"/pspin/include/*.h; do
        hdr_alone "$(basename "$h")" "$HOSTCC" -std=gnu11 -I "$SDK/pspin/include" -I "$ROOT/crates/host-c/include" ||
            failed="$failed pspin/$(basename "$h")"
    done
    hdr_alone fpspin/fpspin.h "$HOSTCC" -std=gnu11 -I "$SDK/fpspin/include" -I "$ROOT/crates/host-c/include" ||
        failed="$failed fpspin/fpspin.h"
    if [ -z "$failed" ]; then ok "host headers (sdk/pspin, sdk/fpspin) compile alone"; else bad "host headers that do not compile alone:$failed"; fi
fi

# --- the make fragment ---
if command -v make >/dev/null; then
    M="$OUT/mk"
    mkdir -p "$M"
    cp "$SDK/tests/pspin_style_handler.c" "$M/"
    printf 'OBJS = pspin_style_handler.o\ninclude %s/mk/softspin.mk\nall: pspin_style_handler.elf\n' "$SDK" >"$M/Makefile"
    if make -s -C "$M" >"$M/make.log" 2>&1 && [ -f "$M/pspin_style_handler.elf" ]; then
        ok "mk/softspin.mk builds a handler image"
    else
        cat "$M/make.log"
        bad "mk/softspin.mk"
    fi
fi

echo "build dir: $OUT"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
