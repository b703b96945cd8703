#!/usr/bin/env python3
"""sPIN's multi-node use cases measured (issue 28, "Measured"; seed 004
§4.4-5): every `examples/cluster/NAME/run --json` over its sizes, modes and
node counts, offload against the host-CPU baseline, in interleaved rounds.

    make bench-usecases     (or: sudo .venv/bin/python bench/usecases_bench.py)

Use cases are found by listing examples/cluster/*/run; USECASES below says
which modes, sizes and node counts to run for each (DEFAULT for one it does
not name), so a new use case joins without edits here. One round runs
every (use case, node count) once, each run covering all its modes and
sizes (one cluster per run, made and torn down by the run itself); round 2
then does the same again, so slow drift on the machine hits all alike. Per
point (use case, nodes, mode, size): the median over rounds of the offload's
and the baseline's latency and goodput, of the ratio offload / baseline
(per round, then the median) and of the NIC-time share when the run
reports one (`nic_time_share` in the point or at the top of its JSON; null
otherwise).

Writes bench/results/usecases-<UTC time>.json (the machine, the load
average before and after, every run's JSON and exit status) and the plots
docs/img/usecases_latency.png and docs/img/usecases_ratio.png, which
docs/usecases.md "Benchmarks" quotes; --plot FILE redraws them from a
results file and prints its tables. A run that exits nonzero, prints no JSON, or reports
verified false (or lacks a key or a point asked for) is recorded with its
error, and the script exits 1 after writing the results.

--quick: one round, each use case's smallest size and node count.
--check (CI, scripts/test.sh; ~20 s): one round, one small point per use
case present, on 2 nodes (more only where the use case needs them: raid),
asserting consistency, not speed: verified, exit status 0, the JSON keys
and the points asked for present; and the first use case run again with
--sabotage must be caught (verified false, exit nonzero). Without root it
prints SKIPPED and exits 0. --self-test (no root): the plan, medians,
ratios, summary and checks on made-up run outputs, consistent and broken,
and on stand-in run scripts (failing, silent, hanging).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "examples", "cluster")
RESULTS = os.path.join(ROOT, "bench", "results")
OUT = os.path.join(ROOT, "target", "bench-usecases")
PLOT_LAT = os.path.join(ROOT, "docs", "img", "usecases_latency.png")
PLOT_RATIO = os.path.join(ROOT, "docs", "img", "usecases_ratio.png")

# What each use case runs: one entry, or a list of entries (each one run
# per node count and round: for modes that take different sizes). modes
# None: the run's own default (no --mode). check: the one small point
# --check runs (default: the first entry's first mode, smallest size and
# fewest nodes).
USECASES = {
    # device mode is one packet (1408 B at most); host and stream take any size.
    "pingpong": [{"modes": ["device"], "sizes": [8, 1024], "nodes": [4], "check": {"nodes": 2}},
                 {"modes": ["host", "stream"], "sizes": [8, 1024, 16384, 65536], "nodes": [4]}],
    "accumulate": {"modes": ["nic"], "sizes": [1024, 16384, 65536], "nodes": [4], "check": {"nodes": 2}},
    "matching": {"modes": ["posted", "unexpected"], "sizes": [64, 1024, 16384, 65536], "nodes": [4],
                 "check": {"nodes": 2}},
    "kvstore": {"modes": ["nic"], "sizes": [64, 1024], "nodes": [4], "check": {"nodes": 2}},
    "allreduce": {"modes": ["int32", "float", "double", "barrier"], "sizes": [1024, 16384, 65536], "nodes": [4, 8],
                  "check": {"nodes": 2}},
    "broadcast": {"modes": ["store", "stream"], "sizes": [8, 65536], "nodes": [2, 4, 8]},
    # Four data nodes and one parity node: 5 or nothing.
    "raid": {"modes": None, "sizes": [64, 4096, 65536], "nodes": [5]},
}
DEFAULT = {"modes": None, "sizes": [1024], "nodes": [4]}
# The run's JSON (examples/cluster/common.py report()): at the top, and in each point.
TOP_KEYS = ["verified", "nodes", "offload_latency_us", "baseline_latency_us", "offload_goodput_gbps",
            "baseline_goodput_gbps", "points"]
POINT_KEYS = ["mode", "size", "verified", "offload_latency_us", "baseline_latency_us", "offload_goodput_gbps",
              "baseline_goodput_gbps"]
SHARE_KEY = "nic_time_share"
RUN_TIMEOUT_S = 900  # a run that takes longer is stopped (SIGTERM: it tears its cluster down)


def discover(cluster_dir=CLUSTER):
    """The use cases present: examples/cluster/NAME/run, sorted."""
    return sorted(n for n in os.listdir(cluster_dir) if os.path.isfile(os.path.join(cluster_dir, n, "run")))


def entries(name):
    e = USECASES.get(name, DEFAULT)
    return e if isinstance(e, list) else [e]


def plan(names, mode="full"):
    """The runs of one round, in order: {"usecase", "nodes", "modes", "sizes"}.
    mode: full (the table), quick (each entry's smallest size and fewest
    nodes), check (one small point per use case)."""
    runs = []
    for name in names:
        if mode == "check":
            e = entries(name)[0]
            c = e.get("check", {})
            modes = c.get("modes", e["modes"][:1] if e["modes"] else None)
            runs.append({"usecase": name, "nodes": c.get("nodes", min(e["nodes"])), "modes": modes,
                         "sizes": c.get("sizes", [min(e["sizes"])])})
            continue
        for e in entries(name):
            for nodes in (e["nodes"][:1] if mode == "quick" else e["nodes"]):
                sizes = [min(e["sizes"])] if mode == "quick" else list(e["sizes"])
                runs.append({"usecase": name, "nodes": nodes, "modes": e["modes"], "sizes": sizes})
    return runs


def command(r, prefix, run_rounds, cluster_dir=CLUSTER, sabotage=False):
    cmd = [os.path.join(cluster_dir, r["usecase"], "run"), "--json", "--nodes", str(r["nodes"]),
           "--size", ",".join(map(str, r["sizes"])), "--rounds", str(run_rounds),
           "--prefix", prefix + r["usecase"][:2]]
    if r["modes"]:
        cmd += ["--mode", ",".join(r["modes"])]
    if sabotage:
        cmd.append("--sabotage")  # the run perturbs its reference: verified must come out false
    return cmd


def execute(r, prefix, run_rounds, timeout, cluster_dir=CLUSTER, sabotage=False):
    """One run: its exit status, JSON (None if it printed none), stderr's
    tail and wall time. A run past `timeout` gets SIGTERM (it removes its
    cluster), then its process group SIGKILL."""
    cmd = command(r, prefix, run_rounds, cluster_dir, sabotage)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
    except BaseException:
        p.send_signal(signal.SIGTERM)  # Ctrl-C: let the run remove its cluster
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
        raise
    res = None
    for line in reversed(out.strip().splitlines()):
        try:
            res = json.loads(line)
            break
        except json.JSONDecodeError:
            continue
    rec = {**r, "cmd": " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd),
           "rc": p.returncode, "seconds": round(time.monotonic() - t0, 1), "stderr": err.strip()[-2000:],
           "result": res if isinstance(res, dict) else None}
    if timed_out:
        rec["timed_out"] = timeout
    return rec


def problems_of(rec):
    """What is wrong with one run: [] when it exited 0, verified, and has
    every key and every (mode, size) point asked for."""
    where = f"{rec['usecase']} on {rec['nodes']} nodes (round {rec.get('round', '?')})"
    res = rec.get("result")
    out = []
    if rec.get("timed_out"):
        out.append(f"{where}: stopped after {rec['timed_out']} s")
    if res is None:
        return out + [f"{where}: exited {rec['rc']} without a JSON object: {rec.get('stderr', '')[-300:]}"]
    if res.get("error"):
        out.append(f"{where}: {res['error']}")
    if rec["rc"] != 0:
        out.append(f"{where}: exited {rec['rc']}")
    missing = [k for k in TOP_KEYS if k not in res]
    if missing:
        out.append(f"{where}: JSON lacks {', '.join(missing)}")
    if res.get("verified") is not True:
        out.append(f"{where}: verified is {res.get('verified')}")
    elif rec["rc"] != 0:
        out.append(f"{where}: verified but exited {rec['rc']}: the exit status disagrees")
    pts = res.get("points") if isinstance(res.get("points"), list) else []
    for p in pts:
        lack = [k for k in POINT_KEYS if k not in p]
        if lack:
            out.append(f"{where}: point {p.get('mode')} {p.get('size')} B lacks {', '.join(lack)}")
        elif p["verified"] is not True:
            out.append(f"{where}: point {p['mode']} {p['size']} B not verified")
    # Every point asked for; a size-less mode (allreduce's barrier) comes
    # once, at a size of its own, not asked for.
    got = {(p.get("mode"), p.get("size")) for p in pts}
    for m in rec["modes"] or [None]:
        have = {s for (gm, s) in got if m is None or gm == m}
        if not have:
            out.append(f"{where}: no point for mode {m or '(default)'}")
        elif len(have) > 1 or have & set(rec["sizes"]):
            for s in rec["sizes"]:
                if s not in have:
                    out.append(f"{where}: no point for {m or '(default)'} {s} B")
    if res.get("nodes") not in (None, rec["nodes"]):
        out.append(f"{where}: ran on {res['nodes']} nodes, asked for {rec['nodes']}")
    return out


def sabotage_problems(rec):
    """--check runs one use case with --sabotage: the check must see it fail."""
    got = problems_of(rec)
    if any("verified is False" in g for g in got) and rec["rc"] != 0:
        return []
    return [f"{rec['usecase']} --sabotage went unnoticed (exit {rec['rc']}; {got or 'no problem found'})"]


def median(xs):
    xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return round(statistics.median(xs), 4) if xs else None


def share_of(res, p):
    v = p.get(SHARE_KEY)
    return v if v is not None else res.get(SHARE_KEY)


def summarise(runs):
    """Per (use case, nodes, mode, size): medians over the rounds' runs
    (failed points included only if verified: a wrong answer's time is no
    measurement)."""
    acc = {}
    for rec in runs:
        res = rec.get("result") or {}
        for p in res.get("points") or []:
            if not isinstance(p, dict) or p.get("verified") is not True:
                continue
            key = (rec["usecase"], rec["nodes"], p.get("mode"), p.get("size"))
            a = acc.setdefault(key, {"off": [], "base": [], "off_g": [], "base_g": [], "ratio": [], "share": []})
            ol, bl = p.get("offload_latency_us"), p.get("baseline_latency_us")
            a["off"].append(ol)
            a["base"].append(bl)
            a["off_g"].append(p.get("offload_goodput_gbps"))
            a["base_g"].append(p.get("baseline_goodput_gbps"))
            a["ratio"].append(ol / bl if isinstance(ol, (int, float)) and isinstance(bl, (int, float)) and bl > 0
                              else None)
            a["share"].append(share_of(res, p))
    out = []
    for (uc, nodes, mode, size), a in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]),
                                                                         kv[0][3] or 0)):
        out.append({"usecase": uc, "nodes": nodes, "mode": mode, "size": size, "rounds": len(a["off"]),
                    "offload_latency_us": median(a["off"]), "baseline_latency_us": median(a["base"]),
                    "offload_goodput_gbps": median(a["off_g"]), "baseline_goodput_gbps": median(a["base_g"]),
                    "ratio": median(a["ratio"]), SHARE_KEY: median(a["share"]),
                    # The rounds' spread: how far one round's ratio is from another's.
                    "ratio_min": median([min((r for r in a["ratio"] if r is not None), default=None)]),
                    "ratio_max": median([max((r for r in a["ratio"] if r is not None), default=None)])})
    return out


def fmt(v, nd=0):
    if v is None:
        return "-"
    return f"{v:,.{nd}f}" if nd == 0 else f"{v:.{nd}f}"


def size_label(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 and b % (1 << 20) == 0 else \
        f"{b >> 10} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"


def tables(summary):
    """Markdown (docs/usecases.md quotes them): per use case, latency
    offload / host in µs and the ratio, a row per (mode, nodes), a column
    per size (with the NIC-time share where a run reports one); then the
    goodput at each row's largest size."""
    lines = []
    for uc in sorted({s["usecase"] for s in summary}):
        rows = series(summary, uc)
        sizes = sorted({p["size"] for _, pts in rows for p in pts})
        lines += [f"\n| {uc}: latency µs, offload / host (ratio) | " + " | ".join(map(size_label, sizes)) + " |",
                  "|---" * (len(sizes) + 1) + "|"]
        for label, pts in rows:
            by = {p["size"]: p for p in pts}
            cells = []
            for z in sizes:
                p = by.get(z)
                if p is None:
                    cells.append("")
                    continue
                c = f"{fmt(p['offload_latency_us'])} / {fmt(p['baseline_latency_us'])} ({fmt(p['ratio'], 2)})"
                if p[SHARE_KEY] is not None:
                    c += f", NIC {p[SHARE_KEY]:.0%}"
                cells.append(c)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["\n| goodput Gbit/s at the largest size | size | offload | host |", "|---|---|---|---|"]
    for uc in sorted({s["usecase"] for s in summary}):
        for label, pts in series(summary, uc):
            p = pts[-1]
            if not p["offload_goodput_gbps"] and not p["baseline_goodput_gbps"]:
                continue  # the barrier: no payload
            lines.append(f"| {uc} {label} | {size_label(p['size'])} | {fmt(p['offload_goodput_gbps'], 4)} | "
                         f"{fmt(p['baseline_goodput_gbps'], 4)} |")
    return "\n".join(lines)


def series(summary, uc):
    """(label, [points]) per (mode, nodes) of a use case, sizes ascending."""
    keys = sorted({(str(s["mode"]), s["nodes"]) for s in summary if s["usecase"] == uc}, key=lambda k: (k[1], k[0]))
    return [(f"{m}, {n} nodes", sorted((s for s in summary if s["usecase"] == uc and str(s["mode"]) == m
                                        and s["nodes"] == n), key=lambda s: s["size"] or 0)) for m, n in keys]


def plot(res, lat_path, ratio_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summ = res["summary"]
    ucs = sorted({s["usecase"] for s in summ})
    if not ucs:
        return
    cols = min(3, len(ucs))
    rows = (len(ucs) + cols - 1) // cols
    m = res.get("machine", {})
    load = m.get("loadavg_1_5_15_before")
    note = (f"medians of {res.get('config', {}).get('rounds', '?')} interleaved rounds; "
            f"{m.get('cpus', '?')} cores, load {load[0]:.1f} before" if load else "")
    for path, what in ((lat_path, "latency"), (ratio_path, "ratio")):
        fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.5 * rows), squeeze=False)
        for i, uc in enumerate(ucs):
            ax = axes[i // cols][i % cols]
            for k, (label, pts) in enumerate(series(summ, uc)):
                xs = [p["size"] for p in pts]
                if what == "latency":
                    off = [(x, p["offload_latency_us"]) for x, p in zip(xs, pts) if p["offload_latency_us"]]
                    base = [(x, p["baseline_latency_us"]) for x, p in zip(xs, pts) if p["baseline_latency_us"]]
                    if off:
                        ax.plot(*zip(*off), "o-", ms=4, color=f"C{k}", label=f"{label}: offload")
                    if base:
                        ax.plot(*zip(*base), "s--", ms=4, color=f"C{k}", mfc="none", label=f"{label}: host")
                else:
                    r = [(x, p["ratio"], max(0, p["ratio"] - p["ratio_min"]), max(0, p["ratio_max"] - p["ratio"]))
                         for x, p in zip(xs, pts) if p["ratio"]]
                    if r:
                        x, y, lo, hi = zip(*r)
                        ax.errorbar(x, y, yerr=[lo, hi], fmt="o-", ms=4, capsize=2, color=f"C{k}", label=label)
            if what == "ratio":
                ax.axhline(1, color="gray", lw=1, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(uc, fontsize=10)
            ax.set_xlabel("message size (bytes)", fontsize=8)
            ax.set_ylabel("latency (µs)" if what == "latency" else "offload / host-CPU latency", fontsize=8)
            ax.legend(fontsize=6)
        for j in range(len(ucs), rows * cols):
            axes[j // cols][j % cols].axis("off")
        title = ("sPIN use cases on a softspin cluster: offload (solid) against the host CPU (dashed)"
                 if what == "latency" else
                 "offload / host-CPU baseline latency, median and the rounds' range (below 1: the NICs win)")
        fig.suptitle(f"{title}\n{note}", fontsize=9)
        fig.tight_layout()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fig.savefig(path, dpi=90)
        plt.close(fig)


def machine():
    m = {"cpus": os.cpu_count(), "kernel": os.uname().release}
    try:
        with open("/proc/cpuinfo") as f:
            m["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return m


def self_test():
    """The plan, checks, medians, ratios and summary on made-up run outputs:
    consistent ones pass, each kind of breakage is named (no root)."""
    import copy
    import tempfile

    def point(mode, size, off, base, **kw):
        return {"mode": mode, "size": size, "verified": True, "offload_latency_us": off, "baseline_latency_us": base,
                "offload_goodput_gbps": size * 8 / (off * 1000), "baseline_goodput_gbps": size * 8 / (base * 1000),
                **kw}

    def run(uc, nodes, modes, sizes, rnd, pts, **top):
        res = {"verified": True, "nodes": nodes, "offload_latency_us": pts[-1]["offload_latency_us"],
               "baseline_latency_us": pts[-1]["baseline_latency_us"], "offload_goodput_gbps": 0.1,
               "baseline_goodput_gbps": 0.2, "points": pts, **top}
        return {"usecase": uc, "nodes": nodes, "modes": modes, "sizes": sizes, "round": rnd, "rc": 0,
                "stderr": "", "result": res}

    # Discovery and the plan: a use case the table lacks gets DEFAULT; broadcast's entry only when present.
    with tempfile.TemporaryDirectory() as d:
        for n in ("pingpong", "zeta", "notes"):
            os.makedirs(os.path.join(d, n))
        for n in ("pingpong", "zeta"):
            open(os.path.join(d, n, "run"), "w").close()
        names = discover(d)
    assert names == ["pingpong", "zeta"], names
    full = plan(names + ["broadcast", "raid"])
    assert [(r["usecase"], r["nodes"]) for r in full] == [("pingpong", 4), ("pingpong", 4), ("zeta", 4),
                                                          ("broadcast", 2), ("broadcast", 4), ("broadcast", 8),
                                                          ("raid", 5)], full
    assert full[2]["modes"] is None and full[2]["sizes"] == DEFAULT["sizes"]
    assert "--mode" not in command(full[2], "x", 3) and "--mode" in command(full[0], "x", 3)
    # pingpong: device mode (one packet) on its own run, with its own sizes.
    pp = [(r["modes"], r["sizes"]) for r in plan(["pingpong"])]
    assert pp == [(["device"], [8, 1024]), (["host", "stream"], [8, 1024, 16384, 65536])], pp
    chk = plan(["pingpong", "broadcast", "raid", "zeta"], "check")
    assert [(r["usecase"], r["nodes"], r["modes"], r["sizes"]) for r in chk] == [
        ("pingpong", 2, ["device"], [8]), ("broadcast", 2, ["store"], [8]), ("raid", 5, None, [64]),
        ("zeta", 4, None, [1024])], chk
    quick = plan(["pingpong", "allreduce"], "quick")
    assert [(r["nodes"], r["sizes"]) for r in quick] == [(4, [8]), (4, [8]), (4, [1024])], quick

    # Three rounds of two use cases; latencies chosen so medians and ratios are known.
    rounds = []
    for k, (a, b) in enumerate([(100, 10), (300, 20), (200, 40)]):
        rounds.append(run("pingpong", 4, ["device", "stream"], [8, 1024], k + 1,
                          [point("device", 8, a, b), point("device", 1024, a * 2, b),
                           point("stream", 8, a, b, nic_time_share=0.1 * (k + 1)), point("stream", 1024, a, b)]))
        rounds.append(run("allreduce", 4, ["double", "barrier"], [1024], k + 1,
                          [point("double", 1024, a, b),
                           point("barrier", 4, b, b, offload_goodput_gbps=0.0, baseline_goodput_gbps=0.0)],
                          nic_time_share=0.5))
    for r in rounds:
        assert problems_of(r) == [], problems_of(r)
    summ = summarise(rounds)
    by = {(s["usecase"], s["mode"], s["size"]): s for s in summ}
    dev8 = by[("pingpong", "device", 8)]
    # Medians of 100,300,200 and 10,20,40; the ratio is the median of 10, 15, 5 (not 200 / 20).
    assert (dev8["offload_latency_us"], dev8["baseline_latency_us"], dev8["ratio"], dev8["rounds"]) == (
        200, 20, 10, 3), dev8
    assert (dev8["ratio_min"], dev8["ratio_max"]) == (5, 15), dev8
    assert by[("pingpong", "device", 1024)]["ratio"] == 20
    assert dev8[SHARE_KEY] is None and by[("pingpong", "stream", 8)][SHARE_KEY] == 0.2
    assert by[("allreduce", "double", 1024)][SHARE_KEY] == 0.5  # from the top of the run's JSON
    assert by[("allreduce", "barrier", 4)]["ratio"] == 1
    assert len(summ) == 6
    t = tables(summ)
    assert "| device, 4 nodes | 200 / 20 (10.00) | 400 / 20 (20.00) |" in t, t
    assert "| stream, 4 nodes | 200 / 20 (10.00), NIC 20% | 200 / 20 (10.00) |" in t, t
    assert "| allreduce: latency µs, offload / host (ratio) | 4 B | 1 KiB |" in t, t
    assert "| pingpong stream, 4 nodes | 1 KiB | 0.0410 | 0.4096 |" in t, t
    assert "| allreduce barrier" not in t.split("goodput")[1], t  # no payload, no goodput row

    # Each kind of breakage is named; a broken point is left out of the medians.
    cases = [
        (lambda r: r.update(rc=1), "exited 1"),
        (lambda r: r.update(result=None, rc=2, stderr="Traceback"), "without a JSON object"),
        (lambda r: r["result"].update(verified=False), "verified is False"),
        (lambda r: r["result"].update(verified=False, error="worker died"), "worker died"),
        (lambda r: r["result"].pop("baseline_goodput_gbps"), "lacks baseline_goodput_gbps"),
        (lambda r: r["result"]["points"][0].pop("offload_latency_us"), "lacks offload_latency_us"),
        (lambda r: r["result"]["points"][1].update(verified=False), "device 1024 B not verified"),
        (lambda r: r["result"]["points"].pop(1), "no point for device 1024 B"),
        (lambda r: r["result"].update(points=[]), "no point for mode stream"),
        (lambda r: r["result"].update(nodes=2), "ran on 2 nodes"),
        (lambda r: r.update(timed_out=900), "stopped after 900 s"),
    ]
    for mutate, want in cases:
        r = copy.deepcopy(rounds[0])
        mutate(r)
        got = problems_of(r)
        assert any(want in g for g in got), (want, got)
    # execute() on stand-in runs: JSON found after other output, a failure
    # and a run without JSON recorded, a hanging run stopped.
    with tempfile.TemporaryDirectory() as d:
        good = json.dumps(rounds[0]["result"])
        bodies = {"good": f"echo building; echo '{good}'", "bad": "echo '{\"verified\": false}'; exit 1",
                  "nojson": "echo oops >&2; exit 2", "hang": "exec sleep 30"}
        for n, body in bodies.items():
            os.makedirs(os.path.join(d, n))
            with open(os.path.join(d, n, "run"), "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(os.path.join(d, n, "run"), 0o755)
        ex = {n: execute({**rounds[0], "usecase": n}, "t", 1, 1 if n == "hang" else 30, d) for n in bodies}
    assert ex["good"]["rc"] == 0 and problems_of(ex["good"]) == [], ex["good"]
    assert ex["bad"]["rc"] == 1 and any("verified is False" in g for g in problems_of(ex["bad"])), ex["bad"]
    assert any("without a JSON object: oops" in g for g in problems_of(ex["nojson"])), ex["nojson"]
    assert ex["hang"]["timed_out"] == 1 and ex["hang"]["rc"] != 0, ex["hang"]
    assert sabotage_problems(ex["bad"]) == [] and sabotage_problems(ex["good"]), ex
    assert "--sabotage" in command(full[0], "x", 1, sabotage=True) and "--sabotage" not in command(full[0], "x", 1)

    bad = copy.deepcopy(rounds)
    bad[0]["result"]["points"][0].update(verified=False, offload_latency_us=1e9)
    assert [s for s in summarise(bad) if s["mode"] == "device" and s["size"] == 8][0]["rounds"] == 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "plan, checks, medians and summary ok (no matplotlib: plots not tried)"
    # One round: ratio, its minimum and maximum the same (rounded alike: no negative error bar).
    one = summarise([run("accumulate", 4, ["nic"], [8], 1, [point("nic", 8, 100, 3)])])
    assert one[0]["ratio"] == one[0]["ratio_min"] == one[0]["ratio_max"] == 33.3333, one
    with tempfile.TemporaryDirectory() as d:
        res = {"summary": summ + one, "machine": {"cpus": 2, "loadavg_1_5_15_before": [1.0, 1.0, 1.0]},
               "config": {"rounds": 3}}
        plot(res, os.path.join(d, "l.png"), os.path.join(d, "r.png"))
        assert os.path.getsize(os.path.join(d, "l.png")) > 0 and os.path.getsize(os.path.join(d, "r.png")) > 0
    return "plan, checks, medians, summary and plots ok"


def on_sigterm(*_):
    raise KeyboardInterrupt("SIGTERM")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--run-rounds", type=int, default=3,
                    help="each run's own --rounds: rounds per pair, size and mode (default 3)")
    ap.add_argument("--only", help="NAME[,NAME]: only these use cases")
    ap.add_argument("--quick", action="store_true", help="one round, each use case's smallest size and node count")
    ap.add_argument("--check", action="store_true", help="CI: one small point per use case, consistency only")
    ap.add_argument("--prefix", default=os.environ.get("SS_NS_PREFIX", "") + "ub",
                    help="cluster names: PREFIX + the use case's first two letters (default $SS_NS_PREFIX + 'ub')")
    ap.add_argument("--timeout", type=int, default=RUN_TIMEOUT_S, help=f"seconds per run (default {RUN_TIMEOUT_S})")
    ap.add_argument("--out", help="results file (default bench/results/usecases-<UTC time>.json; "
                                  "with --check target/bench-usecases/check.json)")
    ap.add_argument("--plot", metavar="FILE",
                    help="only redraw the plots (and print the tables) from this results file")
    ap.add_argument("--self-test", action="store_true", help="test the summary and checks on made-up runs (no root)")
    args = ap.parse_args()
    if args.self_test:
        print(f"usecases_bench.py --self-test: {self_test()}")
        return
    if args.plot:
        with open(args.plot) as f:
            res = json.load(f)
        plot(res, PLOT_LAT, PLOT_RATIO)
        print(tables(res["summary"]))
        return
    names = discover()
    if args.only:
        want = args.only.split(",")
        unknown = [n for n in want if n not in names]
        if unknown:
            ap.error(f"--only {','.join(unknown)}: not in examples/cluster (present: {', '.join(names)})")
        names = [n for n in names if n in want]
    if args.rounds < 1 or args.run_rounds < 1:
        ap.error("--rounds and --run-rounds: at least 1")
    if args.check or args.quick:
        args.rounds = 1
    if args.check:
        args.run_rounds = 1
    if os.geteuid() != 0:
        if args.check:
            print("SKIPPED: bench/usecases_bench.py --check needs root (network namespaces)")
            return
        raise SystemExit("usecases_bench.py needs root (network namespaces)")
    signal.signal(signal.SIGTERM, on_sigterm)
    runs_of_round = plan(names, "check" if args.check else "quick" if args.quick else "full")
    t0 = time.monotonic()
    load_before = os.getloadavg()
    records = []
    for rnd in range(1, args.rounds + 1):
        for r in runs_of_round:
            rec = {**execute(r, args.prefix, args.run_rounds, args.timeout), "round": rnd}
            rec["problems"] = problems_of(rec)
            records.append(rec)
            print(f"round {rnd}/{args.rounds}: {r['usecase']} on {r['nodes']} nodes: "
                  f"{'ok' if not rec['problems'] else 'FAILED'} ({rec['seconds']} s)", flush=True)
    problems = [p for rec in records for p in rec["problems"]]
    sabotage = None
    if args.check and runs_of_round:
        sabotage = {**execute(runs_of_round[0], args.prefix, args.run_rounds, args.timeout, sabotage=True),
                    "round": "sabotage"}
        problems += sabotage_problems(sabotage)
        print(f"sabotaged: {sabotage['usecase']} on {sabotage['nodes']} nodes: "
              f"{'caught' if not sabotage_problems(sabotage) else 'NOT caught'} ({sabotage['seconds']} s)")
    # Other work on the machine shows in the numbers: say how much there was.
    res = {"machine": {**machine(), "loadavg_1_5_15_before": load_before, "loadavg_1_5_15_after": os.getloadavg()},
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "seconds": round(time.monotonic() - t0, 1),
           "config": {"rounds": args.rounds, "run_rounds": args.run_rounds, "check": args.check,
                      "quick": args.quick, "usecases": names, "plan": runs_of_round},
           "summary": summarise(records), "problems": problems, "runs": records, "sabotage": sabotage}
    out = args.out or (os.path.join(OUT, "check.json") if args.check else
                       os.path.join(RESULTS, time.strftime("usecases-%Y%m%dT%H%MZ.json", time.gmtime())))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    try:
        if args.check or args.quick or args.only:  # the plotting code runs, but docs/img keeps the full run's
            plot(res, os.path.join(OUT, "usecases_latency.png"), os.path.join(OUT, "usecases_ratio.png"))
        else:
            plot(res, PLOT_LAT, PLOT_RATIO)
    except ImportError:
        print("no matplotlib: plots not drawn (make test-deps installs it in .venv)")
    print(tables(res["summary"]))
    load = res["machine"]
    print(f"\nload average before {load['loadavg_1_5_15_before'][0]:.1f}, after "
          f"{load['loadavg_1_5_15_after'][0]:.1f}; results: {os.path.relpath(out, ROOT)} ({res['seconds']} s)")
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    if args.check:
        print("use-case benchmark check: consistent (every run verified, exit 0, its JSON keys and points there; "
              "a sabotaged run caught)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        sys.exit(f"interrupted ({str(e) or 'SIGINT'}): the running use case removed its cluster")
