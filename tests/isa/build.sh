#!/usr/bin/env bash
# build.sh OUTDIR - assemble and link every ISA test into OUTDIR/<suite>-<name>.elf
#
# Environment: CLANG (default clang-19), LLD (default ld.lld-19),
# ISA_CPPFLAGS (extra preprocessor flags, e.g. -DISA_QEMU_USER).
# Exits non-zero, with the assembler's or linker's message, on the first error.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1
CLANG=${CLANG:-clang-19}
LLD=${LLD:-ld.lld-19}
SUITES="rv32ui rv32um rv32ua rv32uc rv32uzicsr"
# shellcheck disable=SC2206
EXTRA=(${ISA_CPPFLAGS:-})

mkdir -p "$OUT/obj"
n=0
for suite in $SUITES; do
    for src in "$HERE/$suite"/*.S; do
        [ -e "$src" ] || continue
        name=$(basename "$src" .S)
        obj="$OUT/obj/$suite-$name.o"
        elf="$OUT/$suite-$name.elf"
        # Every suite is assembled for rv32imac; files that must not contain
        # compressed instructions say so with `.option norvc`.
        if ! "$CLANG" --target=riscv32-unknown-elf -march=rv32imac -mabi=ilp32 \
                -nostdlib -I "$HERE/env" "${EXTRA[@]}" -c "$src" -o "$obj"; then
            echo "build.sh: assembling $suite/$name.S failed" >&2
            exit 1
        fi
        if ! "$LLD" -T "$HERE/link.ld" "$obj" -o "$elf"; then
            echo "build.sh: linking $suite/$name failed" >&2
            exit 1
        fi
        n=$((n + 1))
    done
done
echo "build.sh: $n tests built in $OUT"
