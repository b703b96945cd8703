#!/usr/bin/env python3
"""Validate `softspin sim` against the PsPIN paper (seed 001 §4.2) and the
sPIN paper's Little's-law estimate (seed 004 §4.4.2); writes docs/validation.md.

    cargo build --release && python3 scripts/validation.py [--check]

Handlers come from bench/handlers/*.c and are built into a temp dir; PsPIN's
own use-case handlers from a clone of spcl/pspin (scripts/pspin_usecases.py).
The simulator is deterministic, so the page is identical for identical
binaries: `--check` regenerates it into memory and fails (exit 1) when the
committed page differs, so a timing or model change cannot leave it stale.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import pspin_usecases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
HANDLERS = os.path.join(ROOT, "bench", "handlers")
OUT = os.path.join(ROOT, "docs", "validation.md")

# PsPIN profile constants, mirroring crates/engine/src/config.rs.
HPUS, CLUSTERS = 32, 4
TO_CLUSTER_NS, DMA_LAT, DMA_BYTES = 3, 10, 64
ASSIGN, INVOKE_NS, DOORBELL, COMPLETION_NS = 1, 7, 1, 1
HPU_OVERHEAD = ASSIGN + INVOKE_NS + DOORBELL  # HPU-cycles per task besides the handler
SCHED_GBPS_PER_BYTE = 8.0  # one task per cycle at 1 GHz: size*8 Gbit/s
INTERCONNECT_GBPS = 512.0  # the shared L2->L1 interconnect: 512 bit x 1 GHz (paper's bound too)
PAPER_RT = 8 + 2  # paper's max uses (x + 8 + 2) ns per packet

FIG8_X = [0, 16, 32, 64, 128, 256, 512, 1024, 2048]
FIG8_SIZES = [64, 512, 1024]
FIG8_MSGS, FIG8_PKTS, FIG8_CONC = 1000, 16, 16  # 16000 packets per point
UNLIMITED = 100000  # Gbit/s; with back-pressure nothing drops
LITTLE_SIZES = [64, 128, 256, 512, 1024, 2048, 4096]
LITTLE_X = 64
LITTLE_RATE = 400.0
TOL = 0.05
# Consistency-check kinds, keyed by the first word of the message.
KIND = {"hpu_utilization": "utilisation > 1", "throughput": "throughput above the model's own bound",
        "drops": "drops", "hpus_busy_max": "busy max < mean busy",
        "latency": "latency != sum of steps"}


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


class Sim:
    def __init__(self, tmp):
        self.tmp = tmp
        self.images = {}
        self.cfg = {}
        for name, text in {
            "bp": 'profile = "pspin"\nbuffer_full = "backpressure"\n',
            "bp4k": 'profile = "pspin"\nbuffer_full = "backpressure"\npkt_slot_size = 4096\n',
        }.items():
            p = os.path.join(tmp, name + ".toml")
            with open(p, "w") as f:
                f.write(text)
            self.cfg[name] = p

    def image(self, src, x=None):
        key = (src, x)
        if key not in self.images:
            out = os.path.join(self.tmp, f"{src}{'' if x is None else '_' + str(x)}.elf")
            cmd = [SOFTSPIN, "build", os.path.join(HANDLERS, src + ".c"), "-o", out]
            if x is not None:
                cmd += [f"-DNINSTR={x}"]
            sh(cmd)
            self.images[key] = out
        return self.images[key]

    def run(self, image, ph, messages, packets, size, rate=None, concurrent=1, cfg=None):
        cmd = [SOFTSPIN, "sim", "--image", image, "--ph", ph, "--messages", str(messages),
               "--packets", str(packets), "--size", str(size), "--concurrent", str(concurrent),
               "--json", "--quiet"]
        if rate is not None:
            cmd += ["--rate", str(rate)]
        if cfg:
            cmd += ["--config", self.cfg[cfg]]
        return json.loads(sh(cmd))


def cyc(r):
    return r["handlers"][0]["cycles_mean"]


def busy_mean(r):
    return r["hpu_utilization"] * HPUS


def f1(v):
    return f"{v:.1f}"


def pct(a, b):
    return (a - b) / b * 100.0 if b else float("inf")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def sanity(r, what, bound_gbps=None):
    """Model-internal consistency; returns problems found."""
    p = []
    if r["hpu_utilization"] > 1.0 + 1e-9:
        p.append(f"{what}: hpu_utilization {r['hpu_utilization']:.3f} > 1 (more HPU-time than exists)")
    if r["hpus_busy_max"] + 0.5 < busy_mean(r):
        p.append(f"{what}: hpus_busy_max {r['hpus_busy_max']} < mean busy {busy_mean(r):.2f}")
    if bound_gbps and r["throughput_gbps"] > bound_gbps * 1.01:
        p.append(f"{what}: throughput {r['throughput_gbps']:.1f} Gbit/s above the model's own bound {bound_gbps:.1f}")
    if r["drops"]:
        p.append(f"{what}: drops {r['drops']}")
    return p


def model_bound(size, hcyc):
    """What our model can sustain: scheduler, interconnect, 32 HPUs."""
    return min(size * SCHED_GBPS_PER_BYTE, INTERCONNECT_GBPS, HPUS * size * 8 / (hcyc + HPU_OVERHEAD))


def paper_max(size, x):
    return min(INTERCONNECT_GBPS, HPUS * size * 8 / (x + PAPER_RT))


def without_usecases(text):
    """The page without section 5 (it needs a PsPIN clone)."""
    head = "## " + pspin_usecases.TITLE
    if head not in text:
        return text
    before, after = text.split(head, 1)
    rest = after.split("\n## ", 1)
    return before + ("## " + rest[1] if len(rest) > 1 else "")


def check(page):
    """0 when docs/validation.md is what this build generates, else 1."""
    with open(OUT) as f:
        committed = f.read()
    if pspin_usecases.find_repo() is None:
        print("SKIPPED: validation --check: section 5 (PsPIN's use cases) not compared without spcl/pspin sources (scripts/third-party.sh pspin)")
        page, committed = without_usecases(page), without_usecases(committed)
    if page == committed:
        print(f"{os.path.relpath(OUT, ROOT)} is up to date")
        return 0
    import difflib
    diff = difflib.unified_diff(committed.splitlines(), page.splitlines(), "committed", "generated", lineterm="", n=1)
    print("\n".join(list(diff)[:40]))
    print(f"{os.path.relpath(OUT, ROOT)} is stale: run `make validation` and commit it")
    return 1


def main():
    if not os.path.exists(SOFTSPIN):
        sys.exit("build first: cargo build --release")
    problems = []
    md = ["# Validation against the PsPIN and sPIN papers", "",
          "Generated by `python3 scripts/validation.py` (do not edit by hand); handlers in",
          "`bench/handlers/`. Paper figures: seed 001 (PsPIN) §4.2, seed 004 (sPIN) §4.4.2.",
          "The simulator is deterministic: same binaries, same page.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        s = Sim(tmp)
        empty = s.image("empty")

        # -- 1. latency ------------------------------------------------------
        lat = {sz: s.run(empty, "empty_ph", 1, 1, sz) for sz in (64, 1024)}
        hc = {sz: cyc(lat[sz]) for sz in lat}
        dma = {sz: DMA_LAT + math.ceil(sz / DMA_BYTES) for sz in lat}
        steps = [
            ("HER to cluster scheduler", "3", "3", TO_CLUSTER_NS, TO_CLUSTER_NS),
            ("L2 -> L1 DMA (ours: 10 + ceil(len/64))", "12", "26", dma[64], dma[1024]),
            ("task to HPU", "1", "1", ASSIGN, ASSIGN),
            ("runtime invokes handler", "7", "7", INVOKE_NS, INVOKE_NS),
            ("empty handler (ours: measured cycles)", "(1, implied)", "(1, implied)", hc[64], hc[1024]),
            ("doorbell store", "1", "1", DOORBELL, DOORBELL),
            ("completion to inbound engine", "1", "1", COMPLETION_NS, COMPLETION_NS),
        ]
        total = {64: sum(st[3] for st in steps), 1024: sum(st[4] for st in steps)}
        rows = [(n, p64, f"{o64:g}", p1k, f"{o1k:g}") for n, p64, p1k, o64, o1k in steps]
        rows.append(("**sum of steps**", "", f"{total[64]:g}", "", f"{total[1024]:g}"))
        rows.append(("**measured latency (sim)**", "**26**", f"**{lat[64]['latency_ns']['min']:g}**",
                     "**40**", f"**{lat[1024]['latency_ns']['min']:g}**"))
        for sz in lat:
            if abs(total[sz] - lat[sz]["latency_ns"]["min"]) > 1e-6:
                problems.append(f"latency {sz} B: latency measured {lat[sz]['latency_ns']['min']} != sum of steps {total[sz]}")
        md += ["## 1. Packet latency (seed 001 §4.2.1)", "",
               "One packet, unloaded NIC, empty payload handler; ns at 1 GHz. Paper steps from",
               "§4.2.1; its totals imply ~1 ns for the handler, which it does not itemise.", "",
               "| step | paper 64 B | ours 64 B | paper 1024 B | ours 1024 B |",
               "|---|---|---|---|---|"] + ["| " + " | ".join(map(str, r)) + " |" for r in rows] + [""]
        md += [f"- 64 B: {lat[64]['latency_ns']['min']:g} vs 26 ns. Our DMA takes 11 ns (paper 12) and the "
               f"empty handler {hc[64]:g} cycles (a `ret` is a JALR, 2 cycles in our RI5CY table) instead of "
               "the paper's implied 1; the two offsets cancel.",
               f"- 1024 B: {lat[1024]['latency_ns']['min']:g} vs 40 ns. The DMA matches (26 ns); the extra ns is "
               "the 2-cycle `ret`.",
               "- Not modelled in an unloaded run: the completion arbiters' extra 6 ns / 2 ns under contention "
               "(ours: one completion per cycle per cluster, then per cycle overall).", ""]

        # -- 2. scheduling rate ------------------------------------------------
        n2 = 20000
        cases = [("20000 messages x 1 packet", dict(messages=n2, packets=1)),
                 ("1250 messages x 16, 16 concurrent", dict(messages=n2 // 16, packets=16, concurrent=16)),
                 ("1 message x 20000 packets", dict(messages=1, packets=n2))]
        rows = []
        sec2 = {}
        for name, kw in cases:
            r = s.run(empty, "empty_ph", size=64, rate=512, **kw)
            sec2[name] = r
            occ = cyc(r) + HPU_OVERHEAD
            problems += sanity(r, f"sched rate ({name})", model_bound(64, cyc(r)))
            rows.append((name, f"{r['mpps']:.1f}", r["drops"], f"{r['latency_ns']['mean']:.1f} / {r['latency_ns']['p99']:g}",
                         r["hpus_busy_max"], f"{busy_mean(r):.2f}", f"{r['mpps'] / 1000 * occ:.2f}"))
        md += ["## 2. Scheduling rate and HPU occupancy (seed 001 §4.2.2)", "",
               "64 B packets at 512 Gbit/s (one per ns), empty payload handler, 20000 packets.",
               "Paper: \"PsPIN can schedule one 64 B packet per cycle. Even with empty handlers, we need",
               "19 HPUs\" (maximum HPUs in use, Fig. 8 right).", "",
               table(["traffic", "Mpkt/s (paper 1000)", "drops", "latency mean / p99 ns", "HPUs busy max (paper ~19)",
                      "mean busy (util x 32)", "Little: Mpps x occupancy"], rows), ""]
        occ0 = cyc(sec2[cases[0][0]]) + HPU_OVERHEAD
        md += [f"Our model charges an HPU per task: {ASSIGN} cycle task assignment + {INVOKE_NS} ns invocation + "
               f"the handler ({cyc(sec2[cases[0][0]]):g} cycles for `ret`) + {DOORBELL} cycle doorbell = {occ0:g} "
               f"HPU-cycles. At one task per cycle Little's law gives {occ0:g} busy HPUs, which is what the mean "
               "busy column should show. The paper's 19 is a maximum over time and implies ~19 cycles of HPU "
               "occupancy per packet; §4.2.1 itemises only 1 + 7 + 1 cycles of runtime, so the other ~8 cycles "
               "(the HPU driver handshakes, the runtime fetching its next task) are not broken down in the paper "
               "and not charged by our model. Those are estimates of the cause, not measurements.",
               "",
               "With one message all tasks prefer the message's home cluster (8 HPUs) until 20 tasks wait there "
               "(`cluster_task_queue`); the queueing shows in the latency.", ""]

        # -- 3. throughput vs handler length -----------------------------------
        md += ["## 3. Throughput vs handler length (seed 001 Fig. 8)", "",
               "Handlers of x `addi` instructions (`bench/handlers/ninstr.c`, `-DNINSTR=x`, plus a 2-cycle `ret`),",
               f"{FIG8_MSGS * FIG8_PKTS} packets ({FIG8_MSGS} messages x {FIG8_PKTS}, {FIG8_CONC} concurrent), "
               "`buffer_full = \"backpressure\"` so nothing drops.",
               "",
               f"- **paper max** = min({INTERCONNECT_GBPS:g} Gbit/s interconnect (512 bit x 1 GHz), "
               "32 x size x 8 / ((x + 8 + 2) ns)); the paper reports PsPIN at this maximum.",
               f"- **ours** at unlimited injection (`--rate {UNLIMITED}`) and at 512 Gbit/s injection.",
               f"- **model bound** = min(scheduler: one task/cycle = size x 8 Gbit/s, the shared L2->L1 "
               f"interconnect {INTERCONNECT_GBPS:g} Gbit/s, 32 x size x 8 / ((handler cycles + {HPU_OVERHEAD}) ns)): "
               "what our model can at most deliver. Ours above it is a simulator bug.",
               f"- **HPUs needed** = packet rate at the paper max x (x + 10) ns, capped at 32 (Fig. 8 right).",
               f"- Δ: ours (unlimited) vs paper max; **bold** where |Δ| > {TOL * 100:g} %.", ""]
        fig8 = {}
        for size in FIG8_SIZES:
            rows = []
            for x in FIG8_X:
                img = s.image("ninstr", x)
                common = dict(messages=FIG8_MSGS, packets=FIG8_PKTS, size=size, concurrent=FIG8_CONC, cfg="bp")
                ru = s.run(img, "ninstr_ph", rate=UNLIMITED, **common)
                r5 = s.run(img, "ninstr_ph", rate=512, **common)
                fig8[(size, x)] = (ru, r5)
                pm = paper_max(size, x)
                mb = model_bound(size, cyc(ru))
                d = pct(ru["throughput_gbps"], pm)
                ds = f"{d:+.1f} %"
                if abs(d) > TOL * 100:
                    ds = f"**{ds}**"
                need = min(HPUS, pm / (size * 8) * (x + PAPER_RT))
                problems += sanity(ru, f"Fig. 8 {size} B x={x} unlimited", mb)
                problems += sanity(r5, f"Fig. 8 {size} B x={x} @512", min(mb, 512.0))
                rows.append((x, f"{cyc(ru):g}", f1(pm), f1(ru["throughput_gbps"]), ds, f1(r5["throughput_gbps"]),
                             f1(mb), f"{need:.1f}", ru["hpus_busy_max"], f"{busy_mean(ru):.1f}"))
            md += [f"### {size} B packets", "",
                   table(["x", "handler cycles", "paper max Gbit/s", "ours Gbit/s", "Δ", "ours @512 injection",
                          "model bound", "HPUs needed", "ours HPUs busy max", "ours mean busy"], rows), ""]
        # Differences, in words.
        notes = []
        over = [(sz, x) for (sz, x), (ru, _) in fig8.items() if ru["throughput_gbps"] > paper_max(sz, x) * (1 + TOL)]
        if over:
            notes.append(f"- Above the paper max at {len(over)} points (e.g. "
                         + ", ".join(f"{sz} B x={x}" for sz, x in over[:4]) + ").")
        under = [(sz, x) for (sz, x), (ru, _) in fig8.items() if ru["throughput_gbps"] < paper_max(sz, x) * (1 - TOL)]
        bug = [(sz, x) for (sz, x), (ru, _) in fig8.items() if ru["throughput_gbps"] > model_bound(sz, cyc(ru)) * 1.01]
        if bug:
            notes.append(f"- Above our model's own bound at {len(bug)} points (e.g. "
                         + ", ".join(f"{sz} B x={x}" for sz, x in bug[:4])
                         + "): more work finished than 32 HPUs can do; see Consistency checks.")
        if under:
            notes.append(f"- Below the paper max at {len(under)} points (e.g. "
                         + ", ".join(f"{sz} B x={x}" for sz, x in under[:4])
                         + f"): our per-task HPU overhead is {HPU_OVERHEAD} cycles + a 2-cycle `ret` vs the paper's "
                           "8 + 2, and one task per cycle caps 64 B at 512 Gbit/s.")
        for sz, x in [(64, 0)]:
            ru = fig8[(sz, x)][0]
            notes.append(f"- 64 B, x=0: {ru['throughput_gbps']:.1f} Gbit/s = {ru['mpps']:.0f} Mpkt/s, the "
                         "one-task-per-cycle scheduler limit (paper: same).")
        md += notes + [""]

        # -- 4. Little's law ---------------------------------------------------
        img = s.image("ninstr", LITTLE_X)
        rows = []
        for size in LITTLE_SIZES:
            n = 20000
            r = s.run(img, "ninstr_ph", messages=n // 16, packets=16, size=size, rate=LITTLE_RATE,
                      concurrent=16, cfg="bp4k")
            lam = LITTLE_RATE / (size * 8)  # packets per ns
            t_model = cyc(r) + HPU_OVERHEAD
            n_law = lam * t_model
            t_meas = r["hpu_utilization"] * HPUS * r["sim_time_ns"] / max(r["tasks"], 1)
            problems += sanity(r, f"Little {size} B", model_bound(size, cyc(r)))
            d = pct(busy_mean(r), min(n_law, HPUS))
            ds = f"{d:+.1f} %" if abs(d) <= TOL * 100 else f"**{d:+.1f} %**"
            rows.append((size, f"{lam * 1000:.1f}", f"{t_model:g}", f"{n_law:.2f}", f"{busy_mean(r):.2f}", ds,
                         f"{t_meas:.1f}", r["hpus_busy_max"], f1(r["throughput_gbps"]), f1(r["backpressure_ns"])))
        md += ["## 4. How many HPUs? Little's law (seed 004 §4.4.2)", "",
               f"N = λ × T with λ = {LITTLE_RATE:g} Gbit/s / (8 × size) and T = handler cycles + {HPU_OVERHEAD} "
               f"(our per-task HPU occupancy). Handler: x = {LITTLE_X} (`ninstr.c`), 20000 packets, 16-packet "
               "messages, back-pressure, `pkt_slot_size = 4096`. Measured mean busy = hpu_utilization × 32; "
               "measured T = HPU busy time / tasks. Where N > 32 the NIC cannot keep up: back-pressure "
               "throttles the link and the expected busy count is 32.", "",
               table(["size B", "λ Mpkt/s", "T ns", "N = λT", "ours mean busy", "Δ vs min(N, 32)",
                      "ours T ns", "ours busy max", "ours Gbit/s", "back-pressure ns"], rows), ""]
        md += ["Mean busy is averaged from the first arrival to the last completion, including the ramp-up "
               "and the drain, so it sits slightly under λT even when the model is exact.", ""]

    # -- 5. PsPIN's own handlers ---------------------------------------------------
    uc_md, uc_problems = pspin_usecases.section()
    md += uc_md
    if uc_problems:
        md += [f"**{len(uc_problems)} runs with handler errors or drops:**", ""] + [f"- {p}" for p in uc_problems] + [""]

    # -- consistency -----------------------------------------------------------
    md += ["## Consistency checks", "",
           "Model-internal invariants checked on every run above (utilisation ≤ 1, busy max ≥ mean busy, "
           "throughput ≤ the model's own bound, no drops, latency = sum of its steps).", ""]
    if problems:
        kinds = {}
        for p in problems:
            k = p.split(": ", 1)[1].split(" ")[0] if ": " in p else p
            kinds.setdefault(KIND.get(k, "other"), []).append(p)
        md += [f"**{len(problems)} violations.**", ""]
        for k, ps in kinds.items():
            md += [f"- {k}: {len(ps)} runs, e.g."] + [f"  - {p}" for p in ps[:3]]
        md += [""]
    else:
        md += ["All hold.", ""]

    page = "\n".join(md).rstrip() + "\n"
    if "--check" in sys.argv[1:]:
        sys.exit(check(page))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(page)

    # -- stdout summary ----------------------------------------------------------
    print(f"latency: 64 B {lat[64]['latency_ns']['min']:g} ns (paper 26), 1024 B {lat[1024]['latency_ns']['min']:g} ns (paper 40)")
    r = sec2[cases[0][0]]
    print(f"64 B @512 Gbit/s empty: {r['mpps']:.1f} Mpkt/s (paper 1000), drops {r['drops']}, "
          f"HPUs busy max {r['hpus_busy_max']}, mean {busy_mean(r):.2f} (paper ~19)")
    for sz, x in [(64, 0), (64, 64), (64, 1024), (1024, 0), (1024, 2048)]:
        ru, r5 = fig8[(sz, x)]
        print(f"Fig.8 {sz} B x={x}: ours {ru['throughput_gbps']:.1f} Gbit/s (@512: {r5['throughput_gbps']:.1f}), "
              f"paper max {paper_max(sz, x):.1f}, model bound {model_bound(sz, cyc(ru)):.1f}")
    print(f"consistency violations: {len(problems)}")
    seen = set()
    for p in problems:  # one example per kind
        k = p.split(": ", 1)[1].split(" ")[0] if ": " in p else p
        if k not in seen:
            seen.add(k)
            print("  e.g. " + p)
    print(f"wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
