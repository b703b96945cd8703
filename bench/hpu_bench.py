#!/usr/bin/env python3
"""HPU interpreter benchmark: guest MIPS with the timing model on, and the
slowdown against the same kernel (bench/hpu_kernel.c) compiled natively.

    make bench-hpu            (or: python3 bench/hpu_bench.py [--rounds N])

Both builds must print the same digest, so the speed figures are for a
correct run. Best of --repeat runs; both measured in this one invocation.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
KERNEL = os.path.join(ROOT, "bench", "hpu_kernel.c")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000, help="kernel rounds on the interpreter")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    native_rounds = a.rounds * 10
    with tempfile.TemporaryDirectory() as d:
        elf = os.path.join(d, "k.elf")
        run([SOFTSPIN, "build", "--bare", f"-DROUNDS={a.rounds}", KERNEL, "-o", elf])
        nat = os.path.join(d, "k.native")
        nat_same = os.path.join(d, "k.same")
        run(["clang-14", "-O3", f"-DROUNDS={native_rounds}", KERNEL, "-o", nat])
        run(["clang-14", "-O3", f"-DROUNDS={a.rounds}", KERNEL, "-o", nat_same])

        want = run([nat_same]).stdout
        got = run([SOFTSPIN, "isa", "run", elf]).stdout
        if not got.startswith(want):
            sys.exit(f"digest mismatch: native {want!r} vs interpreter {got!r}")
        m = re.search(r"instructions=(\d+) cycles=(\d+)", got)
        instrs, cycles = int(m.group(1)), int(m.group(2))

        best_interp = min(
            float(re.search(r"wall_s=([\d.]+)", run([SOFTSPIN, "isa", "run", "--quiet", "--stats", elf]).stderr).group(1))
            for _ in range(a.repeat)
        )
        best_native = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            run([nat])
            best_native = min(best_native, time.perf_counter() - t0)

    mips = instrs / best_interp / 1e6
    per_round_interp = best_interp / a.rounds
    per_round_native = best_native / native_rounds
    print(f"kernel: {os.path.relpath(KERNEL, ROOT)} ({a.rounds} rounds; checksums, FNV-1a, word sums, byte copies)")
    print(f"guest instructions: {instrs}  simulated cycles: {cycles}  CPI: {cycles / instrs:.2f}")
    print(f"interpreter (timing model on): {best_interp:.3f} s  ->  {mips:.0f} MIPS")
    print(f"native (clang-14 -O3):         {per_round_native * 1e9:.0f} ns/round, interpreter {per_round_interp * 1e9:.0f} ns/round")
    print(f"ratio interpreted/native time: {per_round_interp / per_round_native:.1f}x")


if __name__ == "__main__":
    main()
