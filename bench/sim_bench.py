#!/usr/bin/env python3
"""Simulator speed: simulated NIC time and packets per wall second of
`softspin sim`, against PsPIN's cycle-accurate Verilator model (~200 NIC-ns
per wall second, i.e. 200 cycles/s at 1 GHz). docs/perf-engine.md has the
figures and how they were taken.

    cargo build --release -p softspin-cli && python3 bench/sim_bench.py
        [--target-s 2] [--repeat 5] [--compare OTHER/softspin] [--json FILE]

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
"""
import argparse
import json
import os
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


def sim(softspin, image, flags, size, packets, cfg):
    """One run: (report, wall seconds, packets)."""
    msgs = max(1, packets // PKTS_PER_MSG)
    cmd = [softspin, "sim", "--image", image, *flags, "--messages", str(msgs),
           "--packets", str(PKTS_PER_MSG), "--concurrent", str(CONCURRENT), "--size", str(size),
           "--rate", "400", "--config", cfg, "--json", "--quiet"]
    t0 = time.perf_counter()
    out = sh(cmd)
    wall = time.perf_counter() - t0
    return json.loads(out), wall, msgs * PKTS_PER_MSG


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-s", type=float, default=2.0, help="wall seconds per run (calibrated)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per case (and binary); medians are reported")
    ap.add_argument("--softspin", default=SOFTSPIN, help="the softspin binary to measure")
    ap.add_argument("--compare", help="a second softspin binary (e.g. an older build) run interleaved with the same packets")
    ap.add_argument("--cases", default="abcd", help="which cases, e.g. ab")
    ap.add_argument("--json", help="write the figures to this file")
    for key, *_ in CASES:
        ap.add_argument(f"--packets-{key}", type=int, help=f"fix case ({key})'s packet count instead of calibrating")
    a = ap.parse_args()
    bins = [("this", a.softspin)] + ([("compare", a.compare)] if a.compare else [])
    for _, b in bins:
        if not os.path.exists(b):
            sys.exit(f"no {b}: build first (cargo build --release -p softspin-cli)")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "nic.toml")
        with open(cfg, "w") as f:
            f.write('profile = "pspin"\nbuffer_full = "backpressure"\n')
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
            if a.compare and reps["compare"] != rep:
                print(f"    NOTE: the two binaries' reports differ for ({key})")
            h = rep["handlers"][0]
            nic_ns = rep["sim_time_ns"]
            print(f"\n({key}) {title}")
            print(f"    {n} packets, {nic_ns / 1e6:.3f} ms NIC time; NIC: {rep['throughput_gbps']:.1f} Gbit/s delivered, "
                  f"back-pressure {rep['backpressure_ns'] / 1e3:.1f} us, HPU utilisation {rep['hpu_utilization'] * 100:.1f} %, "
                  f"{h['name']} {h['cycles_mean']:.0f} cycles / {h['instructions_mean']:.0f} instr")
            row = {"case": key, "title": title, "packets": n, "nic_ns": nic_ns}
            for name, _ in bins:
                w = statistics.median(walls[name])
                ns_s, pk_s = nic_ns / w, rep["packets"] / w
                row[name] = {"wall_s": walls[name], "median_wall_s": w, "nic_ns_per_s": ns_s,
                             "packets_per_s": pk_s, "x_rtl": ns_s / RTL_NS_PER_S}
                label = "" if not a.compare else f"{name:>8}: "
                print(f"    {label}wall {w:.3f} s   {ns_s:,.0f} NIC-ns per wall-s   {pk_s:,.0f} packets per wall-s   "
                      f"{ns_s / RTL_NS_PER_S:,.0f}x the RTL simulation")
            if a.compare:
                print(f"    speed-up: {row['compare']['median_wall_s'] / row['this']['median_wall_s']:.2f}x")
            results.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"binaries": dict(bins), "repeat": a.repeat, "rtl_ns_per_s": RTL_NS_PER_S, "cases": results}, f, indent=1)


if __name__ == "__main__":
    main()
