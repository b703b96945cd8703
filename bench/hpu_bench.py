#!/usr/bin/env python3
"""HPU interpreter benchmark: softspin's interpreter (timing model on) against
QEMU user mode, libriscv's emulator and native clang, on the same RV32 ELFs.

    make bench-hpu EMBENCH=/path/to/embench-iot [LIBRISCV=/path/to/rvlinux]
    python3 bench/hpu_bench.py [--embench DIR] [--libriscv BIN] [--repeat N] [--jit [--jit-after N]]

softspin's interpreter is `softspin isa run --no-jit`. With --jit, the JIT
(`softspin isa run --jit`, the shipped binary's default) runs too, and its
instruction and cycle counts must equal the interpreter's.

Programs: our handler-like kernel (bench/hpu_kernel.c) and ten Embench-IoT
programs, built from the Embench tree given (not vendored) with our board shim
(bench/embench/boardsupport.c): `softspin build --bare --isa rv32imac` (plain RV32IMAC), which QEMU
(`qemu-riscv32`, Debian's qemu-user; installed here when missing and we are
root) and libriscv's `rvlinux` run unchanged (the bare-metal crt0 exits
through the Linux `exit` call), and clang-19 -O3 natively. Every run must
verify: Embench's own check decides the exit code, the kernel's digest must
match native. Times are whole-process wall clock, runners interleaved round by
round, medians of --repeat rounds; MIPS is softspin's retired-instruction
count (the same ELF retires the same instructions everywhere) over each
runner's time. Native has other instructions, so only its time ratio is shown.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
KERNEL = os.path.join(ROOT, "bench", "hpu_kernel.c")
BOARD = os.path.join(ROOT, "bench", "embench", "boardsupport.c")
# Integer-only programs that need no libm/ctype (our bare-metal libc has none).
EMBENCH = ["aha-mont64", "crc32", "edn", "matmult-int", "md5sum", "nettle-aes",
           "nettle-sha256", "nsichneu", "picojpeg", "statemate"]


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def ensure_qemu():
    q = shutil.which("qemu-riscv32")
    if q or os.geteuid() != 0:
        return q
    print("installing qemu-user (for qemu-riscv32) ...", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-qq", "qemu-user"], capture_output=True)
    return shutil.which("qemu-riscv32")


def wall(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"run failed ({r.returncode}): {' '.join(cmd)}")
    return dt


def build(d, embench, scale, rounds):
    """(name, rv32 elf, native exe) for every program."""
    progs = []
    elf = os.path.join(d, "kernel.elf")
    run([SOFTSPIN, "build", "--bare", "--isa", "rv32imac", f"-DROUNDS={rounds}", KERNEL, "-o", elf])
    nat = os.path.join(d, "kernel.native")
    run(["clang-19", "-O3", f"-DROUNDS={rounds}", KERNEL, "-o", nat])
    progs.append(("hpu_kernel", elf, nat))
    if embench:
        sup = os.path.join(embench, "support")
        for p in EMBENCH:
            src = os.path.join(embench, "src", p)
            cs = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".c"))
            common = [os.path.join(sup, "main.c"), os.path.join(sup, "beebsc.c"), BOARD] + cs
            defs = [f"-DGLOBAL_SCALE_FACTOR={scale}", "-DWARMUP_HEAT=0", "-I", sup, "-I", src]
            elf = os.path.join(d, p + ".elf")
            run([SOFTSPIN, "build", "--bare", "--isa", "rv32imac"] + defs + common + ["-o", elf])
            nat = os.path.join(d, p + ".native")
            run(["clang-19", "-O3", "-w"] + defs + common + ["-o", nat])
            progs.append((p, elf, nat))
    return progs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embench", default=os.environ.get("EMBENCH"), help="Embench-IoT source tree")
    ap.add_argument("--libriscv", default=os.environ.get("LIBRISCV"), help="libriscv's emulator (rvlinux, RV32 build)")
    ap.add_argument("--before", help="another softspin binary to time alongside (e.g. main's, for before/after)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (medians are reported)")
    ap.add_argument("--scale", type=int, default=40, help="Embench GLOBAL_SCALE_FACTOR")
    ap.add_argument("--rounds", type=int, default=8000, help="hpu_kernel rounds")
    ap.add_argument("--jit", action="store_true", help="also time the JIT (softspin isa run --jit)")
    ap.add_argument("--jit-after", type=int, help="with --jit: compile a region at its entry's N-th use")
    a = ap.parse_args()
    qemu = ensure_qemu()
    if not a.embench:
        print("note: no Embench-IoT tree given (--embench / EMBENCH=): kernel only", file=sys.stderr)

    with tempfile.TemporaryDirectory() as d:
        progs = build(d, a.embench, a.scale, a.rounds)
        # The interpreter alone; the JIT (the default) only with --jit.
        runners = [("softspin", lambda e, n: [SOFTSPIN, "isa", "run", "--quiet", "--no-jit", e])]
        jit = [SOFTSPIN, "isa", "run", "--jit"] + (["--jit-after", str(a.jit_after)] if a.jit_after else [])
        if a.jit:
            runners.append(("jit", lambda e, n: [*jit, "--quiet", e]))
        if a.before:
            # Its interpreter too: a build from before the JIT default has
            # no --no-jit (and interprets anyway).
            before_nojit = "--no-jit" in run([a.before, "isa", "run", "--help"], check=False).stdout
            before = [a.before, "isa", "run", "--quiet"] + (["--no-jit"] if before_nojit else [])
            runners.append(("before", lambda e, n: [*before, e]))
        if a.libriscv:
            runners.append(("libriscv", lambda e, n: [a.libriscv, e]))
        if qemu:
            runners.append(("qemu", lambda e, n: [qemu, e]))
        runners.append(("native", lambda e, n: [n]))

        # Correctness first: instruction counts, and every runner verifies.
        insts = {}
        for name, elf, nat in progs:
            out = run([SOFTSPIN, "isa", "run", "--no-jit", elf]).stdout
            insts[name] = int(re.search(r"instructions=(\d+)", out).group(1))
            if a.jit:
                counts = lambda o: re.search(r"instructions=\d+ cycles=\d+", o).group(0)
                if counts(run([*jit, elf]).stdout) != counts(out):
                    sys.exit(f"{name}: the JIT's counts differ from the interpreter's")
            if name == "hpu_kernel":
                want = run([nat]).stdout
                if not out.startswith(want):
                    sys.exit(f"digest mismatch: native {want!r} vs softspin {out!r}")
                if qemu and run([qemu, elf]).stdout != want:
                    sys.exit("digest mismatch under qemu")

        times = {(p[0], r[0]): [] for p in progs for r in runners}
        for _ in range(a.repeat):
            for name, elf, nat in progs:
                for rname, cmd in runners:
                    times[(name, rname)].append(wall(cmd(elf, nat)))

    med = {k: statistics.median(v) for k, v in times.items()}
    names = [r[0] for r in runners]
    print(f"whole-process wall time, medians of {a.repeat} interleaved rounds; "
          f"MIPS = softspin's guest instructions / time")
    head = "| program | guest instr | " + " | ".join(f"{n} s" for n in names) + " | " + \
        " | ".join(f"{n} MIPS" for n in names if n != "native") + " | " + \
        " | ".join(f"softspin/{n}" for n in names if n != "softspin") + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    geo = {n: [] for n in names}
    for name, _, _ in progs:
        t = {n: med[(name, n)] for n in names}
        row = [name, f"{insts[name] / 1e6:.1f} M"] + [f"{t[n]:.3f}" for n in names]
        row += [f"{insts[name] / t[n] / 1e6:.0f}" for n in names if n != "native"]
        for n in names:
            if n != "softspin":
                geo[n].append(t["softspin"] / t[n])
        row += [f"{t['softspin'] / t[n]:.2f}x" for n in names if n != "softspin"]
        print("| " + " | ".join(row) + " |")
    gm = lambda xs: statistics.geometric_mean(xs) if xs else float("nan")
    print("geometric mean of softspin's time over: " +
          ", ".join(f"{n} {gm(geo[n]):.2f}x" for n in names if n != "softspin"))
    tot = sum(insts.values())
    print("aggregate MIPS: " + ", ".join(
        f"{n} {tot / sum(med[(p[0], n)] for p in progs) / 1e6:.0f}" for n in names if n != "native"))


if __name__ == "__main__":
    main()
