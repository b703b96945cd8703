#!/usr/bin/env bash
# The main job: build the SDK runtime and example handlers, run a handler on
# one HPU of the interpreter, then run the simulated PsPIN NIC at 400 Gbit/s
# and print its statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
SOFTSPIN=target/release/softspin
OUT=build/main
mkdir -p "$OUT"

echo "== softspin build examples/packet_digest/handler.c (clang-14, rv32imac, -O3)"
$SOFTSPIN build examples/packet_digest/handler.c -o "$OUT/packet_digest.elf"

echo "== one HPU: digest_ph on a 1024-byte packet (softspin isa handler)"
$SOFTSPIN isa handler "$OUT/packet_digest.elf" --handler digest_ph --packet-size 1024

echo
echo "== the PsPIN NIC: 64 messages x 16 packets of 1024 B at 400 Gbit/s (softspin sim)"
$SOFTSPIN sim --image "$OUT/packet_digest.elf" --ph digest_ph \
    --messages 64 --packets 16 --size 1024 --concurrent 8 --quiet
