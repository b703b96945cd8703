#!/usr/bin/env python3
"""HPU interpreter run time without process start-up: softspin's
interpreter (`bare_run`, timing model on, its own clock around
`BareMetal::run`) against libriscv's interpreter (its own `Runtime:` line),
on the ELFs `bench/hpu_bench.py` builds (our kernel and Embench-IoT).
`make bench-hpu` times whole processes, which since the CLI links SimGrid
and ns-3 includes ~18 ms of start-up per run (docs/perf-interpreter.md,
seventh round); this isolates the interpreter.

    cargo build --release -p softspin-hpu --example bare_run
    python3 bench/hpu_run_time.py --embench DIR --libriscv RVLINUX [--before OLD_BARE_RUN] [--repeat 7]

Runs are interleaved round by round; medians; geometric means of the ratios.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpu_bench  # noqa: E402  (the ELF build and its paths)

BARE_RUN = os.path.join(hpu_bench.ROOT, "target", "release", "examples", "bare_run")


def bare_run(exe):
    def run(elf):
        r = subprocess.run([exe, elf], capture_output=True, text=True)
        m = re.search(r"wall_s=([\d.]+)", r.stderr)
        if r.returncode != 0 or not m:
            sys.exit(f"bare_run failed ({r.returncode}): {exe} {elf}\n{r.stderr}")
        return float(m.group(1))
    return run


def libriscv(exe):
    def run(elf):
        r = subprocess.run([exe, elf], capture_output=True, text=True)
        m = re.search(r"Runtime: ([\d.]+)ms", r.stdout + r.stderr)
        if r.returncode != 0 or not m:
            sys.exit(f"libriscv failed ({r.returncode}): {exe} {elf}")
        return float(m.group(1)) / 1000
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embench", default=os.environ.get("EMBENCH"), help="Embench-IoT source tree")
    ap.add_argument("--libriscv", required=True, help="libriscv's emulator (rvlinux, RV32 build)")
    ap.add_argument("--before", help="another bare_run to time alongside (before/after)")
    ap.add_argument("--repeat", type=int, default=7, help="interleaved rounds (medians are reported)")
    ap.add_argument("--scale", type=int, default=40, help="Embench GLOBAL_SCALE_FACTOR")
    ap.add_argument("--rounds", type=int, default=8000, help="hpu_kernel rounds")
    a = ap.parse_args()
    if not os.path.exists(BARE_RUN):
        sys.exit(f"no {BARE_RUN}: cargo build --release -p softspin-hpu --example bare_run")
    runners = [("softspin", bare_run(BARE_RUN))]
    if a.before:
        runners.append(("before", bare_run(a.before)))
    runners.append(("libriscv", libriscv(a.libriscv)))
    with tempfile.TemporaryDirectory() as d:
        progs = hpu_bench.build(d, a.embench, a.scale, a.rounds)
        t = {(p, r): [] for p, _, _ in progs for r, _ in runners}
        for _ in range(a.repeat):
            for p, elf, _ in progs:
                for r, f in runners:
                    t[(p, r)].append(f(elf))
    names = [r for r, _ in runners]
    ratios = [(x, "libriscv") for x in names if x != "libriscv"] + ([("softspin", "before")] if a.before else [])
    print(f"run time without start-up, medians of {a.repeat} interleaved rounds")
    print("| program | " + " | ".join(f"{n} s" for n in names) + " | " + " | ".join(f"{x}/{y}" for x, y in ratios) + " |")
    print("|---|" + "---:|" * (len(names) + len(ratios)))
    logs = {k: [] for k in ratios}
    for p, _, _ in progs:
        med = {n: statistics.median(t[(p, n)]) for n in names}
        cells = [f"{med[n]:.3f}" for n in names]
        for x, y in ratios:
            logs[(x, y)].append(math.log(med[x] / med[y]))
            cells.append(f"{med[x] / med[y]:.2f}x")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print("| geometric mean | " + " | " * (len(names) - 1) + " | "
          + " | ".join(f"{math.exp(sum(v) / len(v)):.2f}x" for v in logs.values()) + " |")


if __name__ == "__main__":
    main()
