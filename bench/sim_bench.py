#!/usr/bin/env python3
"""Simulator speed: simulated NIC time and packets per wall second of
`softspin sim`, against PsPIN's cycle-accurate Verilator model (~200 NIC-ns
per wall second, i.e. 200 cycles/s at 1 GHz). docs/perf-engine.md has the
figures and how they were taken.

    cargo build --release -p softspin-cli && python3 bench/sim_bench.py
        [--target-s 2] [--repeat 5] [--compare OTHER/softspin] [--json FILE]
    python3 bench/sim_bench.py --identical OTHER/softspin
    python3 bench/sim_bench.py --jit [--jit-after N] [--identical]   (this build: `--no-jit` against `--jit`, in `sim` and `isa run`)

`--identical` checks instead that this build and another give byte-identical
results (an engine change must not move them): `softspin sim --json`,
`--records` and `--timeline` over the cases in IDENTITY_CASES, and
`softspin-suite --json` (next to each `softspin`) without its wall-clock
baseline figures, and `softspin isa run` of a bare-metal kernel. `sim
--json`'s `hpu_engine` (which engine ran: the JIT by default, the
interpreter with `--no-jit` or in a build without it) is left out of the
comparison; without `--jit`, each build runs with its own default.

Cases, all at 400 Gbit/s offered with back-pressure (every packet is
processed; the link slows when the handlers cannot keep up), messages of 32
packets, 8 in flight:
(a) 64 B packets, empty payload handler (the engine's cost per packet);
(b) 1024 B packets, a handler reading every 32-bit word (bench/handlers);
(c) 1024 B packets, the histogram example (examples/histogram: payload and
    completion handlers, per-cluster tables in the L1 scratchpad);
(d) 1024 B packets, the reduce example (examples/reduce: payload and
    completion handlers, per-cluster accumulators in the scratchpad).
Packet counts are calibrated to about --target-s wall seconds per run.
Repeats are interleaved (case by case, run by run, and with --compare
binary by binary), and the figures are medians over the repeats.

Then, for (a) and (b), host instructions per packet (issue 30's goal 1:
<= 1,000 at 64 B), counted with callgrind as the difference between two
run lengths over the difference in packets, so start-up costs cancel: the
same count on any machine (with `--no-jit`: the interpreter, whose cost
does not change at the JIT's compile threshold). Skipped, with a line saying so, without
valgrind; `--no-callgrind` skips it, `--callgrind-only` runs only it.
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
RTL_NS_PER_S = 200.0  # PsPIN Verilator: ~200 cycles per wall second at 1 GHz
PKTS_PER_MSG, CONCURRENT = 32, 8

# key, title, source, handler flags, frame size, probe packet count
CASES = [
    ("a", "64 B, empty handler", "bench/handlers/empty.c", ["--ph", "empty_ph"], 64, 200_000),
    ("b", "1024 B, word-sum handler", "bench/handlers/wordsum.c", ["--ph", "wordsum_ph"], 1024, 4_000),
    ("c", "1024 B, histogram (examples/histogram)", "examples/histogram/handler.c",
     ["--ph", "histogram_ph", "--th", "histogram_th", "--scratchpad", "16384"], 1024, 4_000),
    ("d", "1024 B, reduce (examples/reduce)", "examples/reduce/handler.c",
     ["--ph", "reduce_ph", "--th", "reduce_th", "--scratchpad", "8192"], 1024, 4_000),
]


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


# The engine each binary's last run used (`sim --json`'s hpu_engine; a
# build from before it was reported has only the interpreter).
ENGINES = {}


def sim(softspin, image, flags, size, packets, cfg):
    """One run: (report, wall seconds, packets)."""
    msgs = max(1, packets // PKTS_PER_MSG)
    cmd = [softspin, "sim", "--image", image, *flags, "--messages", str(msgs),
           "--packets", str(PKTS_PER_MSG), "--concurrent", str(CONCURRENT), "--size", str(size),
           "--rate", "400", "--config", cfg, "--json", "--quiet"]
    t0 = time.perf_counter()
    out = sh(cmd)
    wall = time.perf_counter() - t0
    rep = json.loads(out)
    # Which engine ran (kept apart: the rest must not depend on it).
    ENGINES[softspin] = (rep.pop("hpu_engine", None) or {}).get("kind", "interpreter")
    return rep, wall, msgs * PKTS_PER_MSG


# Host instructions per packet: case key -> (short run, long run) in
# packets. Whole messages of PKTS_PER_MSG; the short run is long enough that
# every HPU and buffer is in use, so only per-packet work differs.
CALLGRIND_RUNS = {"a": (3_200, 35_200), "b": (640, 3_840)}


def callgrind_instructions(softspin, image, flags, size, packets, cfg):
    """Host instructions (callgrind's `Ir`) of one whole `softspin sim` run."""
    msgs = packets // PKTS_PER_MSG
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}", softspin, "sim", "--image", image,
               *flags, "--messages", str(msgs), "--packets", str(PKTS_PER_MSG), "--concurrent", str(CONCURRENT),
               "--size", str(size), "--rate", "400", "--config", cfg, "--json", "--quiet",
               # The interpreter: the JIT compiles a region at its 16,000th
               # entry, inside the long run only, which would not cancel.
               "--no-jit"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
        with open(out) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    sys.exit(f"no instruction total in callgrind's output of {' '.join(cmd)}")


def host_instructions(bins, tmp, cfg, cases):
    """Per binary and case in CALLGRIND_RUNS: host instructions per packet."""
    rows = []
    if shutil.which("valgrind") is None:
        print("\nhost instructions per packet: skipped (valgrind not installed; apt-get install valgrind)")
        return rows
    print("\nhost instructions per packet (callgrind, (long run - short run) / (long - short) packets):")
    for key, title, src, flags, size, _ in CASES:
        if key not in CALLGRIND_RUNS or key not in cases:
            continue
        img = os.path.join(tmp, key + ".elf")
        if not os.path.exists(img):
            sh([bins[0][1], "build", os.path.join(ROOT, src), "-o", img])
        short, long_ = CALLGRIND_RUNS[key]
        row = {"case": key, "title": title, "packets": [short, long_]}
        for name, b in bins:
            ir = [callgrind_instructions(b, img, flags, size, n, cfg) for n in (short, long_)]
            per = (ir[1] - ir[0]) / (long_ - short)
            row[name] = {"instructions": ir, "per_packet": per}
            label = "" if len(bins) == 1 else f"{name:>8}: "
            print(f"    ({key}) {title}: {label}{per:,.0f} host instructions per packet "
                  f"({ir[0]:,} for {short} packets, {ir[1]:,} for {long_})")
        if len(bins) > 1:
            print(f"    ({key}) this / compare: {row['this']['per_packet'] / row['compare']['per_packet']:.3f}")
        rows.append(row)
    return rows


def flatten(x, pre=""):
    """A report as {dotted key: leaf value}."""
    if isinstance(x, dict):
        return {k2: v for k, y in x.items() for k2, v in flatten(y, f"{pre}{k}.").items()}
    if isinstance(x, list):
        return {k2: v for i, y in enumerate(x) for k2, v in flatten(y, f"{pre}{i}.").items()}
    return {pre[:-1]: x}


def moved(before, after):
    """Print the outputs of `sim --json` that differ: before, after, change."""
    b, a = flatten(before), flatten(after)
    print(f"    {'output':<40} {'before':>16} {'after':>16} {'change':>9}")
    for k in sorted(set(b) | set(a)):
        x, y = b.get(k), a.get(k)
        if x == y:
            continue
        ch = ""
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x:
            ch = f"{(y - x) / abs(x) * 100:+.2f} %"
        print(f"    {k:<40} {x!s:>16} {y!s:>16} {ch:>9}")


def without_engine(out):
    """`sim --json`'s output without `hpu_engine` (the one key that names
    the engine), key order kept; other output (errors) unchanged."""
    try:
        j = json.loads(out)
    except ValueError:
        return out
    if not isinstance(j, dict):
        return out
    j.pop("hpu_engine", None)
    return json.dumps(j, separators=(",", ":")) + "\n"


def write_pcap(path):
    """Ethernet/IPv4/UDP frames of varying sizes to two UDP ports (two
    ECTXs), many sharing a microsecond timestamp (ties in arrival time)."""
    import struct
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n in range(3000):
            size = 64 + (n * 37) % 900
            port = 9330 + (n % 3 == 0)
            pl = bytes((i + 7 * n) & 255 for i in range(size - 42))
            udp = struct.pack(">HHHH", 1234, port, 8 + len(pl), 0) + pl
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), n & 0xFFFF, 0, 64, 17, 0,
                             bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
            f = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp
            out.write(struct.pack("<IIII", 0, n * 3 // 100, len(f), len(f)) + f)


# name, image key, flags (I: image directory, T: temporary directory);
# `--timeline` where cheap. Back-pressure and drops, message timeouts, both
# profiles, two ECTXs from a pcap (at capture times and back to back), and
# every packet at time 0.
IDENTITY_CASES = [
    ("empty64", ["--image", "{I}/empty.elf", "--ph", "empty_ph", "--messages", "2000", "--packets", "32",
                 "--concurrent", "8", "--size", "64", "--rate", "400", "--config", "{T}/bp.toml", "--timeline", "{O}.tl"]),
    ("wordsum1k", ["--image", "{I}/wordsum.elf", "--ph", "wordsum_ph", "--messages", "200", "--packets", "32",
                   "--concurrent", "8", "--size", "1024", "--rate", "400", "--config", "{T}/bp.toml", "--timeline", "{O}.tl"]),
    ("wordsum_drop", ["--image", "{I}/wordsum.elf", "--ph", "wordsum_ph", "--messages", "300", "--packets", "32",
                      "--concurrent", "8", "--size", "1024", "--rate", "400", "--profile", "pspin", "--timeout-ns", "20000"]),
    ("hist_pspin", ["--image", "{I}/histogram.elf", "--ph", "histogram_ph", "--th", "histogram_th", "--scratchpad", "16384",
                    "--messages", "300", "--packets", "16", "--concurrent", "4", "--size", "512", "--profile", "pspin",
                    "--payload", "random", "--timeline", "{O}.tl"]),
    ("hist_fpspin", ["--image", "{I}/histogram_fp.elf", "--ph", "histogram_ph", "--th", "histogram_th", "--scratchpad", "16384",
                     "--messages", "300", "--packets", "16", "--concurrent", "4", "--size", "512", "--profile", "fpspin",
                     "--frame", "eth", "--payload", "random"]),
    ("reduce_pspin", ["--image", "{I}/reduce.elf", "--ph", "reduce_ph", "--th", "reduce_th", "--scratchpad", "8192",
                      "--messages", "100", "--packets", "32", "--concurrent", "8", "--size", "1024", "--profile", "pspin"]),
    ("reduce_fpspin", ["--image", "{I}/reduce_fp.elf", "--ph", "reduce_ph", "--th", "reduce_th", "--scratchpad", "8192",
                       "--messages", "100", "--packets", "32", "--concurrent", "8", "--size", "1024", "--profile", "fpspin",
                       "--frame", "eth"]),
    ("two_ectx", ["--scenario", "{T}/two.toml", "--pcap", "{T}/mixed.pcap", "--timeline", "{O}.tl"]),
    ("two_ectx_rate", ["--scenario", "{T}/two.toml", "--pcap", "{T}/mixed.pcap", "--rate", "400"]),
    ("empty_inf", ["--image", "{I}/empty.elf", "--ph", "empty_ph", "--messages", "50", "--packets", "64",
                   "--concurrent", "16", "--size", "200", "--rate", "inf"]),
]


def identical(a):
    """Run IDENTITY_CASES and the suite with both builds; compare outputs."""
    bins = {"this": a.softspin, "other": a.identical}
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "img")
        os.mkdir(img)
        b = a.softspin
        for name, src, extra in [
            ("empty", "bench/handlers/empty.c", []), ("wordsum", "bench/handlers/wordsum.c", []),
            ("histogram", "examples/histogram/handler.c", []), ("reduce", "examples/reduce/handler.c", []),
            ("histogram_fp", "examples/histogram/handler.c", ["--profile", "fpspin"]),
            ("reduce_fp", "examples/reduce/handler.c", ["--profile", "fpspin"]),
        ]:
            sh([b, "build", os.path.join(ROOT, src), *extra, "-o", os.path.join(img, name + ".elf")])
        # A bare-metal program for `isa run` (CORE-V, the SDK's default ISA).
        sh([b, "build", "--bare", "-DROUNDS=400", os.path.join(ROOT, "bench/hpu_kernel.c"), "-o", os.path.join(img, "kernel.elf")])
        both = [os.path.join(ROOT, "bench/handlers/empty.c"), os.path.join(ROOT, "bench/handlers/wordsum.c")]
        sh([b, "build", *both, "-o", os.path.join(img, "both.elf")])
        # The second ECTX's image elsewhere in program and handler memory.
        sh([b, "build", *both, "--code-base", "0x1d004000", "--data-base", "0x1c001000", "-o", os.path.join(img, "both2.elf")])
        with open(os.path.join(tmp, "bp.toml"), "w") as f:
            f.write('profile = "pspin"\nbuffer_full = "backpressure"\n')
        with open(os.path.join(tmp, "two.toml"), "w") as f:
            f.write(f'[[ectx]]\nname = "a"\nimage = "{img}/both.elf"\nph = "empty_ph"\nudp_dst_port = 9330\n\n'
                    f'[[ectx]]\nname = "b"\nimage = "{img}/both2.elf"\nph = "wordsum_ph"\nudp_dst_port = 9331\n')
        write_pcap(os.path.join(tmp, "mixed.pcap"))
        outs = {}
        for who, softspin in bins.items():
            d = os.path.join(tmp, who)
            os.mkdir(d)
            for name, flags in IDENTITY_CASES:
                o = os.path.join(d, name)
                cmd = [softspin, "sim", *[x.format(I=img, T=tmp, O=o) for x in flags], "--json", "--quiet",
                       "--records", o + ".records"]
                r = subprocess.run(cmd, capture_output=True, text=True)
                with open(o + ".json", "w") as f:
                    f.write(without_engine(r.stdout))
                with open(o + ".err", "w") as f:
                    f.write(f"{r.stderr}exit {r.returncode}\n")
            with open(os.path.join(d, "isa_run.out"), "w") as f:
                f.write(sh([softspin, "isa", "run", os.path.join(img, "kernel.elf")]))
            suite = os.path.join(os.path.dirname(softspin), "softspin-suite")
            rows = json.loads(sh([suite, "--json"]))
            outs[who] = [{k: v for k, v in row.items() if k != "baseline_gbps"} for row in rows]
        same = True
        for name in sorted(os.listdir(os.path.join(tmp, "this"))):
            with open(os.path.join(tmp, "this", name), "rb") as f:
                x = f.read()
            with open(os.path.join(tmp, "other", name), "rb") as f:
                y = f.read()
            print(f"    {'same' if x == y else 'DIFFERENT'}  {name} ({len(x)} bytes)")
            same &= x == y
        ok = outs["this"] == outs["other"]
        print(f"    {'same' if ok else 'DIFFERENT'}  softspin-suite --json ({len(outs['this'])} examples, baseline_gbps left out)")
        same &= ok
        print("identical" if same else "RESULTS DIFFER")
        sys.exit(0 if same else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-s", type=float, default=2.0, help="wall seconds per run (calibrated)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per case (and binary); medians are reported")
    ap.add_argument("--softspin", default=SOFTSPIN, help="the softspin binary to measure")
    ap.add_argument("--compare", help="a second softspin binary (e.g. an older build) run interleaved with the same packets")
    ap.add_argument("--cases", default="abcd", help="which cases, e.g. ab")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--identical", metavar="OTHER", nargs="?", const="",
                    help="check byte-identical results against another softspin build instead (none with --jit)")
    for key, *_ in CASES:
        ap.add_argument(f"--packets-{key}", type=int, help=f"fix case ({key})'s packet count instead of calibrating")
    ap.add_argument("--jit", action="store_true",
                    help="this build with `--no-jit` against itself with `--jit` (with --identical: check the JIT "
                         "changes no result; else: time it against the interpreter)")
    ap.add_argument("--jit-after", type=int,
                    help="with --jit: compile a region at its entry's N-th use (1: all at once)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the host-instruction count")
    ap.add_argument("--callgrind-only", action="store_true", help="only the host-instruction count")
    a = ap.parse_args()
    if a.jit:
        # This build, whose default feature `jit` compiles the JIT in.
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "softspin-cli"], cwd=ROOT, check=True)
        # Two wrappers of this build, each next to a link to its
        # softspin-suite (which --identical runs too): `sim` and `isa run`
        # with --no-jit (this), and with --jit (the other).
        wdir = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, wdir, True)
        real = a.softspin

        def wrapper(name, flags):
            d = os.path.join(wdir, name)
            os.mkdir(d)
            w = os.path.join(d, "softspin")
            with open(w, "w") as f:
                f.write(f'#!/bin/sh\nif [ "$1" = sim ]; then shift; exec {real} sim {flags} "$@"; fi\n'
                        f'if [ "$1 $2" = "isa run" ]; then shift 2; exec {real} isa run {flags} "$@"; fi\n'
                        f'exec {real} "$@"\n')
            os.chmod(w, 0o755)
            os.symlink(os.path.join(os.path.dirname(real), "softspin-suite"), os.path.join(d, "softspin-suite"))
            return w

        a.softspin = wrapper("interpreter", "--no-jit")
        w = wrapper("jit", "--jit" + (f" --jit-after {a.jit_after}" if a.jit_after else ""))
        if a.identical is not None:
            a.identical = w
        else:
            a.compare = w
    elif a.identical == "":
        sys.exit("--identical needs the other build's softspin (or --jit)")
    if a.identical:
        return identical(a)
    bins = [("this", a.softspin)] + ([("compare", a.compare)] if a.compare else [])
    for _, b in bins:
        if not os.path.exists(b):
            sys.exit(f"no {b}: build first (cargo build --release -p softspin-cli)")
    results, counts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "nic.toml")
        with open(cfg, "w") as f:
            f.write('profile = "pspin"\nbuffer_full = "backpressure"\n')
        if not a.callgrind_only:
            results = speed(a, bins, tmp, cfg)
        if not a.no_callgrind:
            counts = host_instructions(bins, tmp, cfg, a.cases)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"binaries": dict(bins), "repeat": a.repeat, "rtl_ns_per_s": RTL_NS_PER_S, "cases": results,
                       "host_instructions": counts}, f, indent=1)


def speed(a, bins, tmp, cfg):
    """The wall-clock figures: one row per case."""
    results = []
    print(f"softspin sim speed (median of {a.repeat} interleaved runs); "
          f"PsPIN RTL (Verilator): ~{RTL_NS_PER_S:g} NIC-ns per wall-s")
    for key, title, src, flags, size, probe in CASES:
        if key not in a.cases:
            continue
        img = os.path.join(tmp, key + ".elf")
        sh([a.softspin, "build", os.path.join(ROOT, src), "-o", img])
        n = getattr(a, f"packets_{key}")
        if n is None:
            # Scale a probe run to the target wall time, twice (fixed
            # start-up costs make the first estimate short).
            n = probe
            for _ in range(2):
                _, w, got = sim(a.softspin, img, flags, size, n, cfg)
                n = max(PKTS_PER_MSG, min(int(got * a.target_s / max(w, 1e-3)), 50_000_000))
        walls = {name: [] for name, _ in bins}
        reps = {}
        for _ in range(a.repeat):
            for name, b in bins:
                rep, w, n = sim(b, img, flags, size, n, cfg)
                walls[name].append(w)
                reps[name] = rep
        rep = reps["this"]
        h = rep["handlers"][0]
        nic_ns = rep["sim_time_ns"]
        print(f"\n({key}) {title}")
        print(f"    {n} packets, {nic_ns / 1e6:.3f} ms NIC time; NIC: {rep['throughput_gbps']:.1f} Gbit/s delivered, "
              f"back-pressure {rep['backpressure_ns'] / 1e3:.1f} us, HPU utilisation {rep['hpu_utilization'] * 100:.1f} %, "
              f"{h['name']} {h['cycles_mean']:.0f} cycles / {h['instructions_mean']:.0f} instr")
        row = {"case": key, "title": title, "packets": n, "nic_ns": nic_ns}
        for name, b in bins:
            w = statistics.median(walls[name])
            ns_s, pk_s = nic_ns / w, rep["packets"] / w
            row[name] = {"engine": ENGINES.get(b), "wall_s": walls[name], "median_wall_s": w, "nic_ns_per_s": ns_s,
                         "packets_per_s": pk_s, "x_rtl": ns_s / RTL_NS_PER_S}
            shown = {"this": "interpreter", "compare": "jit"}.get(name, name) if a.jit else name
            label = "" if not a.compare else f"{shown:>11}: "
            label += f"[{ENGINES.get(b, '?')}] "
            print(f"    {label}wall {w:.3f} s   {ns_s:,.0f} NIC-ns per wall-s   {pk_s:,.0f} packets per wall-s   "
                  f"{ns_s / RTL_NS_PER_S:,.0f}x the RTL simulation")
        if a.compare and reps["compare"] != rep:
            print(f"    NOTE: the two binaries' reports differ for ({key}):")
            moved(reps["compare"], rep)
        if a.compare:
            # This build over the other; with --jit, the JIT over the interpreter.
            up = row['compare']['median_wall_s'] / row['this']['median_wall_s']
            print(f"    JIT speed-up: {1 / up:.2f}x" if a.jit else f"    speed-up: {up:.2f}x")
        results.append(row)
    return results


if __name__ == "__main__":
    main()
