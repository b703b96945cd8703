#!/usr/bin/env bash
# check_qemu.sh [OUTDIR] - validate the ISA suite against qemu-riscv32 (user mode).
#
# Builds every test with -DISA_QEMU_USER (qemu-user reports the host
# time-stamp counter as cycle/instret/time, so the exact instret checks are
# relaxed to lower bounds), checks with llvm-objdump that the 16-bit
# instructions in each ELF are exactly the ones its source declares
# ("rvc-expect:" header; "none" for the 32-bit-only suites), then runs each
# test.  Prints PASS/FAIL per test and "N passed, M failed"; exits non-zero
# if anything failed.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$(mktemp -d /tmp/softspin-isa.XXXXXX)}
QEMU=${QEMU:-qemu-riscv32}
OBJDUMP=${OBJDUMP:-llvm-objdump-14}
SUITES="rv32ui rv32um rv32ua rv32uc rv32uzicsr"

if ! ISA_CPPFLAGS="-DISA_QEMU_USER ${ISA_CPPFLAGS:-}" "$HERE/build.sh" "$OUT"; then
    echo "check_qemu.sh: build failed" >&2
    exit 1
fi

# Compressed instructions in an ELF, as "mnemonic=count ..." sorted by name
# (zero padding decodes as c.unimp and is ignored).
rvc_census() {
    "$OBJDUMP" -d -M no-aliases --mattr=+m,+a,+c "$1" |
        awk -F'\t' '/^ *[0-9a-f]+:/ {
                n = split($1, f, " ");
                if (n - 1 == 2 && $2 != "c.unimp") c[$2]++
            }
            END { for (m in c) print m "=" c[m] }' |
        LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}

pass=0
fail=0
for suite in $SUITES; do
    for src in "$HERE/$suite"/*.S; do
        [ -e "$src" ] || continue
        name=$(basename "$src" .S)
        elf="$OUT/$suite-$name.elf"
        expect=$(sed -n 's/^ \* rvc-expect: //p' "$src")
        got=$(rvc_census "$elf")
        [ -n "$got" ] || got=none
        if [ "$got" != "$expect" ]; then
            echo "FAIL $suite-$name (16-bit instructions: expected '$expect', found '$got')"
            fail=$((fail + 1))
            continue
        fi
        timeout 20 "$QEMU" "$elf"
        rc=$?
        if [ $rc -eq 0 ]; then
            echo "PASS $suite-$name"
            pass=$((pass + 1))
        else
            echo "FAIL $suite-$name (exit status $rc = failing test number)"
            fail=$((fail + 1))
        fi
    done
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
