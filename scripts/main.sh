#!/usr/bin/env bash
# The main job: build the SDK runtime and an example handler, run the
# handler on one HPU of the interpreter, and print what it did with its
# instruction and cycle counts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
SOFTSPIN=target/release/softspin
OUT=build/main
mkdir -p "$OUT"

echo "== softspin build examples/packet_digest/handler.c (clang-14, rv32imac, -O3)"
$SOFTSPIN build examples/packet_digest/handler.c -o "$OUT/packet_digest.elf"

echo "== softspin isa handler: digest_ph on a 1024-byte packet"
$SOFTSPIN isa handler "$OUT/packet_digest.elf" --handler digest_ph --packet-size 1024

echo "== softspin isa run: a bare-metal program (the HPU benchmark kernel)"
$SOFTSPIN build --bare -DROUNDS=200 bench/hpu_kernel.c -o "$OUT/hpu_kernel.elf"
$SOFTSPIN isa run "$OUT/hpu_kernel.elf"
