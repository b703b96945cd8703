#!/usr/bin/env bash
# The main job: run the whole handler suite (examples/*) on the simulated
# PsPIN NIC, verify every example against its independent reference, and
# print one table: verified, Gbit/s at 1024 B packets, handler cycles per
# packet, HPU utilisation, and the same computation on host threads.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== the handler suite on the simulated PsPIN NIC (32 HPUs, 400 Gbit/s, 1024 B packets)"
exec target/release/softspin-suite "$@"
