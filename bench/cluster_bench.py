#!/usr/bin/env python3
"""Remote memory on a cluster (issue 27, item 6; DiAD, seed 003 §IV-B/C):
remote 8-byte read latency by pointer chasing and put/get goodput against
message size and outstanding transactions, for each server beside the
others on the same two nodes of a `softspin cluster`.

    make bench-cluster     (or: sudo .venv/bin/python bench/cluster_bench.py)

Series (node 0 asks, node 1 serves):
- host-CPU server: bench/cluster/hostserver, a C UDP server whose CPU
  serves RMA reads and writes from its memory; bench/cluster/hostclient
  fills it, chases a random cyclic chain through it (every value checked),
  measures put/get goodput per message size and outstanding count, and
  reads the whole region back against its own copy.
- kernel TCP: bench/cluster/tcpgoodput, a stream of messages of each size,
  every byte counted and checked by the receiver.
- NIC-served: `softspin rma lat|bw` against `softspin cluster up --rma
  --window SIZE --profile P` (--profile, default pspin: PsPIN's 1 GHz
  model); the reads posted by node 0's host through its NIC's control
  socket, and (`rma lat --initiator nic`) issued by node 0's NIC itself,
  each when the previous response arrives (DiAD's accelerator-issued
  reads). Skipped, saying why, while this build lacks them.

Every round runs every series once (interleaved); tables give the median
of the rounds. Writes bench/results/cluster-<UTC time>.json and the plots
docs/img/cluster_latency.png and docs/img/cluster_goodput.png, which
docs/cluster.md "Benchmarks" quotes. --plot FILE redraws them from a
results file.

--check (CI, scripts/test.sh): one small round (< 30 s) asserting that the
results are consistent, not fast: every chased value verified, the
read-back equal, the server's byte counts equal to the client's, TCP bytes
received equal to bytes sent; that hostile requests get their error
responses and write nothing (bench/cluster/probe.py); and that a server
flipping a bit is caught.
Without root it prints SKIPPED and exits 0.

Needs root (network namespaces). The cluster is always torn down, also on
an error or Ctrl-C.
"""
import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time
import tomllib

from netbench import DOCS, ROOT, SOFTSPIN, run

SRC = os.path.join(ROOT, "bench", "cluster")
OUT = os.path.join(ROOT, "target", "bench-cluster")
RESULTS = os.path.join(ROOT, "bench", "results")
C_PROGS = ["hostserver", "hostclient", "tcpgoodput"]
PLOT_LAT = os.path.join(DOCS, "img", "cluster_latency.png")
PLOT_BW = os.path.join(DOCS, "img", "cluster_goodput.png")


def rma_udp_port():
    """The NIC's RMA port, from the one place it is defined for C."""
    with open(os.path.join(ROOT, "sdk", "include", "spin_rma.h")) as f:
        return int(re.search(r"#define RMA_UDP_PORT (\d+)", f.read()).group(1))


# The baselines' ports: beside the NIC's, so a NIC on node 1 (the NIC
# series) never takes their datagrams.
TCP_PORT = rma_udp_port() + 2
SABOTAGE_PORT = rma_udp_port() + 3
# The host-CPU series: summary key, label, port, hostserver's flags.
HOST_SERIES = [
    ("host", "host-CPU server, blocking socket", rma_udp_port() + 1, []),
    ("host_poll", "host-CPU server, busy-polling", rma_udp_port() + 4, ["--busy-poll"]),
]
NIC_LABEL = "NIC-served, host-posted, rma lat|bw"
NIC_INIT_LABEL = "NIC-served, NIC-issued, rma lat --initiator nic"
SERVER_LIFETIME_S = 3600  # a guard: servers end themselves if left behind

SIZES = [8 ** k for k in range(1, 9)]  # 8 B .. 16 MiB
OUTSTANDING = [1, 4, 16, 64]

# DiAD (seed 003 §IV): Alveo U200 FPGAs, 100 Gbit/s, one Mellanox SN2100
# switch. Multichase 8-byte remote reads (round trip, mean): remote FPGA
# DDR 3.2 µs, remote host DDR 3.9 µs (§IV-C); small-message FPGA-to-FPGA
# round trip ~1.8 µs (Fig. 4); AXI-MM throughput saturates at ~87 Gbit/s
# with 8 x 4 KiB in flight, ~25 Gbit/s for 8 KiB messages (Fig. 5).
DIAD = {
    "read_lat_remote_fpga_us": 3.2, "read_lat_remote_host_us": 3.9, "fabric_rtt_small_us": 1.8,
    "link_gbps": 100, "axi_mm_saturated_gbps": 87, "axi_mm_saturated_at": "8 x 4 KiB in flight",
    "axi_mm_8k_message_gbps": 25, "stream_gbps": 99.6,
}


def build(no_build):
    if not no_build:
        run(["cargo", "build", "--release", "-q", "-p", "softspin-cli"], cwd=ROOT)
    os.makedirs(OUT, exist_ok=True)
    for p in C_PROGS:
        run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", os.path.join(OUT, p), os.path.join(SRC, p + ".c")])


def exec_cmd(prefix, rank, *cmd):
    return [SOFTSPIN, "cluster", "exec", str(rank), "--prefix", prefix, "--", *cmd]


class Cluster:
    """`softspin cluster up` ... `down`, always down (also on errors)."""

    def __init__(self, prefix, nic_args=()):
        self.prefix = prefix
        self.table = os.path.join(OUT, f"nodes-{prefix}.toml")
        self.nic_args = list(nic_args)

    def __enter__(self):
        try:
            run([SOFTSPIN, "cluster", "up", "--nodes", "2", "--prefix", self.prefix, "--table", self.table,
                 *self.nic_args], timeout=120)
            with open(self.table, "rb") as f:
                self.nodes = {n["rank"]: n for n in tomllib.load(f)["node"]}
        except BaseException:
            self.down()
            raise
        return self

    def down(self):
        r = run([SOFTSPIN, "cluster", "down", "--prefix", self.prefix], check=False, timeout=60)
        if r.returncode != 0:
            print(f"softspin cluster down --prefix {self.prefix} failed: {r.stderr}", file=sys.stderr)

    def __exit__(self, *exc):
        self.down()

    def ip(self, rank):
        return self.nodes[rank]["ipv4"]


class Server:
    """A server program in a node; it prints `listening`, and one JSON line
    when stopped with SIGTERM."""

    def __init__(self, cluster, rank, prog, *args):
        self.cluster, self.rank, self.bin = cluster, rank, os.path.join(OUT, prog)
        self.p = subprocess.Popen(exec_cmd(cluster.prefix, rank, self.bin, *map(str, args)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], 10)
        line = self.p.stdout.readline() if ready else ""
        if line.strip() != "listening":
            self.p.kill()
            raise SystemExit(f"{prog} in node {rank} did not start: {line}{self.p.stderr.read()}")

    def pids(self):
        """Our server's pid in the node (`cluster exec` runs it as a child)."""
        ns = f"{self.cluster.prefix}{self.rank}"
        out = run(["ip", "netns", "pids", ns], check=False).stdout.split()
        found = []
        for pid in out:
            try:
                if os.readlink(f"/proc/{pid}/exe") == self.bin:
                    found.append(int(pid))
            except OSError:
                pass
        return found

    def stop(self):
        for pid in self.pids():
            os.kill(pid, signal.SIGTERM)
        try:
            out, err = self.p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        if self.p.returncode != 0:
            raise SystemExit(f"{os.path.basename(self.bin)} failed ({self.p.returncode}): {err}")
        return json.loads(out.strip().splitlines()[-1])

    def kill(self):
        if self.p.poll() is None:
            for pid in self.pids():
                os.kill(pid, signal.SIGKILL)
            self.p.kill()
            self.p.wait()


def host_client(cl, port, args, chase, sizes, outs, ops="put,get"):
    cmd = [os.path.join(OUT, "hostclient"), cl.ip(1), str(port), "--region", str(args.region), "--seed",
           str(args.seed), "--chase", str(chase)]
    if sizes:
        cmd += ["--sizes", ",".join(map(str, sizes)), "--outstanding", ",".join(map(str, outs)), "--ops", ops,
                "--seconds", str(args.seconds)]
    r = run(exec_cmd(cl.prefix, 0, *cmd), check=False, timeout=1800)
    try:
        res = json.loads(r.stdout)
    except json.JSONDecodeError:
        res = {}
    res["rc"], res["stderr"] = r.returncode, r.stderr[-2000:]
    return res


def tcp_client(cl, args, sizes):
    cmd = [os.path.join(OUT, "tcpgoodput"), "send", cl.ip(1), str(TCP_PORT), str(args.seconds), str(args.seed),
           *map(str, sizes)]
    r = run(exec_cmd(cl.prefix, 0, *cmd), check=False, timeout=1800)
    try:
        runs = json.loads(r.stdout)
    except json.JSONDecodeError:
        runs = []
    return {"rc": r.returncode, "stderr": r.stderr[-2000:], "runs": runs}


def baselines(args, sizes, outs):
    """The host-CPU servers and kernel TCP, --rounds rounds interleaved.
    Each host server runs only while its client does (a polling one would
    take a core from everything else), so its counts are per round."""
    rounds, servers = [], []
    with Cluster(args.prefix) as cl:
        try:
            tcp = Server(cl, 1, "tcpgoodput", "recv", TCP_PORT, SERVER_LIFETIME_S)
            servers.append(tcp)
            for r in range(args.rounds):
                rnd = {}
                for key, label, port, flags in HOST_SERIES:
                    srv = Server(cl, 1, "hostserver", port, args.region, "--seconds", SERVER_LIFETIME_S, *flags)
                    servers.append(srv)
                    h = host_client(cl, port, args, args.count, sizes, outs)
                    h["server"] = srv.stop()
                    lat = h.get("chase", {}).get("lat_ns", {})
                    print(f"round {r}: {label}: read p50 {lat.get('p50', 0) / 1e3:.1f} µs "
                          f"p99 {lat.get('p99', 0) / 1e3:.1f} µs (rc {h['rc']})", flush=True)
                    rnd[key] = h
                rnd["tcp"] = tcp_client(cl, args, sizes)
                print(f"round {r}: kernel TCP rc {rnd['tcp']['rc']}", flush=True)
                rounds.append(rnd)
            sabotage = None
            if args.check:
                # A fresh server: hostile requests get their error responses
                # and write nothing (probe.py); then it flips a bit in every
                # 100th read, which the client must catch (the check must be
                # able to fail).
                bad = Server(cl, 1, "hostserver", SABOTAGE_PORT, args.region, "--seconds", SERVER_LIFETIME_S,
                             "--sabotage", 100)
                servers.append(bad)
                p = run(exec_cmd(cl.prefix, 0, sys.executable, os.path.join(SRC, "probe.py"), cl.ip(1),
                                 str(SABOTAGE_PORT), str(args.region)), check=False, timeout=60)
                sabotage = host_client(cl, SABOTAGE_PORT, args, 500, [], [])
                sabotage["probe"] = {"rc": p.returncode, "result": parse_json(p.stdout), "stderr": p.stderr[-2000:]}
                sabotage["server"] = bad.stop()
            tcp_counts = tcp.stop()
        finally:
            for s in servers:
                s.kill()
    return rounds, tcp_counts, sabotage


def nic_series_missing():
    """Why the NIC-served series cannot run with this build, or None."""
    need = {("rma", "lat"): ["--from", "--to", "--count", "--prefix", "--json", "--initiator"],
            ("rma", "bw"): ["--from", "--to", "--op", "--size", "--outstanding", "--prefix", "--json"],
            ("cluster", "up"): ["--rma", "--window", "--profile"]}
    for cmd, flags in need.items():
        r = run([SOFTSPIN, *cmd, "--help"], check=False)
        if r.returncode != 0:
            return f"`softspin {' '.join(cmd)}` is not a command of this build (issue 27, items 3-4)"
        lacking = [f for f in flags if f not in r.stdout]
        if lacking:
            return f"`softspin {' '.join(cmd)}` lacks {', '.join(lacking)}"
    return None


def nic_series(args, sizes, outs):
    """The NIC-served series: the same reads and goodput points against a
    window the NIC on node 1 serves by DMA (`softspin rma lat|bw`, run in
    node 0; they post through node 0's NIC, found by --prefix). Their JSON
    is kept as the command gives it."""
    out = {"profile": args.profile, "lat": [], "lat_nic": [], "bw": []}
    with Cluster(args.prefix, ["--rma", "--window", str(args.region), "--profile", args.profile]) as cl:
        for _ in range(args.rounds):
            for key, extra in (("lat", []), ("lat_nic", ["--initiator", "nic"])):
                r = run(exec_cmd(cl.prefix, 0, SOFTSPIN, "rma", "lat", "--from", "0", "--to", "1", "--count",
                                 str(args.count), "--prefix", cl.prefix, "--json", *extra), check=False, timeout=1800)
                out[key].append({"rc": r.returncode, "stderr": r.stderr[-2000:], "result": parse_json(r.stdout)})
            for op in ("put", "get"):
                for s in sizes:
                    for w in outs:
                        r = run(exec_cmd(cl.prefix, 0, SOFTSPIN, "rma", "bw", "--from", "0", "--to", "1", "--op", op,
                                         "--size", str(s), "--outstanding", str(w), "--prefix", cl.prefix,
                                         "--json"),
                                check=False, timeout=1800)
                        out["bw"].append({"op": op, "size": s, "outstanding": w, "rc": r.returncode,
                                          "stderr": r.stderr[-2000:], "result": parse_json(r.stdout)})
    return out


def parse_json(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def check(rounds, tcp_counts, sabotage, args, nic):
    """What must hold whatever the speed; the list of what did not."""
    bad = []
    for x in nic.get("lat", []) + nic.get("lat_nic", []) + nic.get("bw", []):
        what = "rma lat" if "op" not in x else f"rma bw {x['op']} {x['size']} B x{x['outstanding']}"
        if x["rc"] != 0 or x["result"] is None:
            bad.append(f"NIC-served {what} exited {x['rc']}: {x['stderr']}")
        elif "op" not in x and x["result"].get("verified", args.count) != args.count:
            bad.append(f"NIC-served rma lat verified {x['result'].get('verified')} of {args.count} values")
        elif "op" in x and x["result"].get("target_dma_bytes") not in (None, x["result"].get("bytes")):
            # The target NIC's own DMA byte counter against the bytes moved.
            bad.append(f"NIC-served {what}: the target NIC counted {x['result']['target_dma_bytes']} bytes of DMA "
                       f"for {x['result'].get('bytes')}")
    for i, rnd in enumerate(rounds):
        for key, label, _, _ in HOST_SERIES:
            h = rnd[key]
            if h["rc"] != 0:
                bad.append(f"round {i}, {label}: hostclient exited {h['rc']}: {h['stderr']}")
                continue
            c = h["chase"]
            if c["verified"] != args.count:
                bad.append(f"round {i}, {label}: {c['verified']} of {args.count} chased values verified")
            if h["readback"]["mismatched_packets"] or h["mismatches"] or h["errors"]:
                bad.append(f"round {i}, {label}: mismatches {h['mismatches']}, errors {h['errors']}")
            for b in h["bw"]:
                if b["messages"] < 1 or b["bytes"] != b["messages"] * b["size"]:
                    bad.append(f"round {i}, {label}: {b['op']} {b['size']} B x{b['outstanding']}: "
                               f"{b['messages']} messages, {b['bytes']} bytes")
            # The server's own counts against the client's: exact unless a
            # request was resent (then the server saw at most what was sent).
            srv = h["server"]
            for mine, theirs in (("write_bytes_sent", "write_bytes"), ("read_bytes_requested", "read_bytes")):
                if h["retransmits"] == 0 and srv[theirs] != h[mine]:
                    bad.append(f"round {i}, {label}: the server counted {theirs} {srv[theirs]}, "
                               f"the client sent {h[mine]}")
                if srv[theirs] > h[mine]:
                    bad.append(f"round {i}, {label}: the server counted {theirs} {srv[theirs]} > the client's {h[mine]}")
            if srv["ok"] != srv["reads"] + srv["writes"] or srv["ignored"]:
                bad.append(f"round {i}, {label}: the server refused or ignored requests: {srv}")
        t = rnd["tcp"]
        if t["rc"] != 0 or not t["runs"]:
            bad.append(f"round {i}: tcpgoodput send exited {t['rc']}: {t['stderr']}")
        for x in t["runs"]:
            if x["bytes_received"] != x["bytes_sent"] or x["differing"]:
                bad.append(f"round {i}: TCP {x['size']} B: sent {x['bytes_sent']}, received {x['bytes_received']}, "
                           f"{x['differing']} differing")
    tcp_sent = sum(x["bytes_sent"] for r in rounds for x in r["tcp"]["runs"])
    if tcp_counts["bytes"] != tcp_sent or tcp_counts["differing"]:
        bad.append(f"TCP receiver counted {tcp_counts['bytes']} bytes, the senders sent {tcp_sent}")
    if sabotage is not None and (sabotage["rc"] != 1 or not sabotage.get("mismatches")):
        bad.append(f"a server flipping bits went unnoticed (hostclient rc {sabotage['rc']})")
    if sabotage is not None and sabotage.get("probe", {}).get("rc", 0) != 0:
        bad.append(f"hostserver answered hostile requests wrongly: {sabotage['probe']}")
    return bad


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def lat_stats(runs):
    """Median over rounds of each latency statistic (`lat_ns`: min, p1 ..
    p99, max, mean, as hostclient's chase reports them)."""
    runs = [r for r in runs if r]
    return {k: med(r.get(k) for r in runs) for k in runs[0]} if runs else {}


def bw_medians(points):
    """(op, size, outstanding, goodput) -> the median goodput per point."""
    by = {}
    for op, size, w, g in points:
        by.setdefault((op, size, w), []).append(g)
    return [{"op": k[0], "size": k[1], "outstanding": k[2], "goodput_gbps_median": med(v)}
            for k, v in sorted(by.items())]


def summarise(rounds, nic):
    """Per series: `KEY_lat_ns` and `KEY_bw` (KEY: each HOST_SERIES key,
    and `nic`), and `tcp`."""
    out = {}
    for key, _, _, _ in HOST_SERIES:
        ok = [r[key] for r in rounds if r[key]["rc"] == 0]
        out[f"{key}_lat_ns"] = lat_stats([h["chase"].get("lat_ns") for h in ok])
        out[f"{key}_bw"] = bw_medians((b["op"], b["size"], b["outstanding"], b["goodput_gbps"])
                                      for h in ok for b in h["bw"])
    tcp = {}
    for r in rounds:
        for x in r["tcp"]["runs"]:
            tcp.setdefault(x["size"], []).append(x["goodput_gbps"])
    out["tcp"] = [{"size": s, "goodput_gbps_median": med(v)} for s, v in sorted(tcp.items())]
    if "skipped" not in nic:
        # `softspin rma lat|bw --json` are expected to report as hostclient
        # does: `lat_ns` with the same keys, and `goodput_gbps`.
        out["nic_lat_ns"] = lat_stats([(x["result"] or {}).get("lat_ns") for x in nic["lat"] if x["rc"] == 0])
        out["nic_init_lat_ns"] = lat_stats([(x["result"] or {}).get("lat_ns") for x in nic.get("lat_nic", [])
                                            if x["rc"] == 0])
        # Issue 27's question, answered in the same run: the fastest NIC-served
        # read against the host-CPU server (median read over median read).
        host = (out.get("host_lat_ns") or {}).get("p50")
        best = min([v for v in ((out.get(k) or {}).get("p50") for k in ("nic_lat_ns", "nic_init_lat_ns")) if v],
                   default=None)
        out["nic_over_host_p50"] = round(best / host, 3) if best and host else None
        out["nic_bw"] = bw_medians((x["op"], x["size"], x["outstanding"], (x["result"] or {}).get("goodput_gbps"))
                                   for x in nic["bw"] if x["rc"] == 0)
    return out


def series():
    """(summary key prefix, label) of every series that has a box and lines."""
    return [(k, label) for k, label, _, _ in HOST_SERIES] + [("nic", NIC_LABEL), ("nic_init", NIC_INIT_LABEL)]


def plot(res, lat_path, bw_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s, d = res["summary"], res["diad"]
    # Latency: boxes from the percentiles (whiskers p1 and p99), medians of
    # the rounds; DiAD's multichase means as reference lines.
    boxes = []
    for key, label in series():
        L = {k: v / 1e3 for k, v in (s.get(f"{key}_lat_ns") or {}).items() if v is not None}
        if all(k in L for k in ("p1", "p25", "p50", "p75", "p99", "mean")):
            boxes.append({"label": label.replace(", ", ",\n"), "med": L["p50"], "q1": L["p25"], "q3": L["p75"],
                          "whislo": L["p1"], "whishi": L["p99"], "mean": L["mean"], "fliers": []})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if boxes:
        ax.bxp(boxes, showmeans=True)
    ax.axhline(d["read_lat_remote_host_us"], color="C3", ls="--", label="DiAD remote host DDR, 3.9 µs (mean)")
    ax.axhline(d["read_lat_remote_fpga_us"], color="C2", ls="--", label="DiAD remote FPGA DDR, 3.2 µs (mean)")
    ax.axhline(d["fabric_rtt_small_us"], color="C7", ls=":", label="DiAD FPGA-FPGA round trip, ~1.8 µs")
    ax.set_yscale("log")
    # Room above the whiskers for the legend.
    ax.set_ylim(1, 8 * max([b["whishi"] for b in boxes] + [d["read_lat_remote_host_us"]]))
    ax.set_ylabel("8-byte remote read, round trip (µs)")
    ax.set_title("Pointer chasing across two cluster nodes (box p25-p75, whiskers p1-p99, ▲ mean)", fontsize=9)
    if not s.get("nic_lat_ns"):
        ax.text(0.98, 0.02, "NIC-served series: not measured yet", transform=ax.transAxes, ha="right", fontsize=8,
                color="gray")
    ax.legend(fontsize=7, loc="upper center")
    fig.tight_layout()
    fig.savefig(lat_path, dpi=100)
    plt.close(fig)

    # Goodput: one panel per op and outstanding count, a line per server.
    ops = [op for op in ("get", "put") if any(b["op"] == op for key, _ in series() for b in s.get(f"{key}_bw", []))]
    outs = sorted({b["outstanding"] for key, _ in series() for b in s.get(f"{key}_bw", [])})
    if not ops or not outs:
        return
    width = 3.2 * len(outs) + 3.4  # the panels and the legend beside them
    fig, axes = plt.subplots(len(ops), len(outs), figsize=(width, 3 * len(ops)), sharex=True,
                             sharey=True, squeeze=False)
    for r, op in enumerate(ops):
        for c, w in enumerate(outs):
            ax = axes[r][c]
            for i, (key, label) in enumerate(series()):
                pts = [b for b in s.get(f"{key}_bw", []) if b["op"] == op and b["outstanding"] == w
                       and b["goodput_gbps_median"]]
                if pts:
                    ax.plot([b["size"] for b in pts], [b["goodput_gbps_median"] for b in pts], "o-", ms=3,
                            color=f"C{i}", label=label)
            if s["tcp"]:
                ax.plot([x["size"] for x in s["tcp"]], [x["goodput_gbps_median"] for x in s["tcp"]], "k--", lw=1,
                        label="kernel TCP stream (no outstanding limit)")
            ax.plot([4096], [d["axi_mm_saturated_gbps"]], "s", color="C3", label="DiAD AXI-MM, 8 x 4 KiB in flight")
            ax.plot([8192], [d["axi_mm_8k_message_gbps"]], "^", color="C3", label="DiAD AXI-MM, 8 KiB messages")
            ax.axhline(d["link_gbps"], color="C3", ls=":", lw=1, label="DiAD link, 100 Gbit/s")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(f"{op}, {w} outstanding", fontsize=9)
            if r == len(ops) - 1:
                ax.set_xlabel("message size (bytes)", fontsize=8)
            if c == 0:
                ax.set_ylabel("goodput (Gbit/s)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1 - 3.1 / width, 0.5))
    fig.suptitle("put/get goodput between two cluster nodes (median of rounds)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 3.2 / width, 1))
    fig.savefig(bw_path, dpi=100)
    plt.close(fig)


def print_tables(res):
    s = res["summary"]
    for key, name in series():
        L = s.get(f"{key}_lat_ns")
        if L:
            print(f"\nremote 8-byte read, {name}: p50 {L['p50'] / 1e3:.1f} µs, p99 {L['p99'] / 1e3:.1f} µs, "
                  f"mean {L['mean'] / 1e3:.1f} µs (DiAD: 3.2 µs remote FPGA DDR, 3.9 µs remote host DDR)")
    tcp = {x["size"]: x["goodput_gbps_median"] for x in s["tcp"]}
    for key, name in series():
        pts = s.get(f"{key}_bw") or []
        outs = sorted({b["outstanding"] for b in pts})
        for op in sorted({b["op"] for b in pts}):
            print(f"\n| {name}: {op}, Gbit/s | " + " | ".join(f"{w} outstanding" for w in outs) + " | kernel TCP |")
            print("|---" * (len(outs) + 2) + "|")
            for size in sorted({b["size"] for b in pts}):
                g = {b["outstanding"]: b["goodput_gbps_median"] for b in pts if b["op"] == op and b["size"] == size}
                cells = [f"{g[w]:.4f}" if g.get(w) is not None else "-" for w in outs]
                t = f"{tcp[size]:.4f}" if tcp.get(size) is not None else "-"
                print(f"| {size} | " + " | ".join(cells) + f" | {t} |")
    if s.get("nic_over_host_p50") is not None:
        print(f"\nfastest NIC-served read / host-CPU server read (p50): {s['nic_over_host_p50']}")
    print(f"\nNIC-served series: {res['nic'].get('skipped') or 'measured'}")


def self_test():
    """The consistency check and the summary on made-up results: consistent
    ones pass, and each kind of disagreement is named (no root needed)."""
    import copy
    import tempfile

    class A:
        count = 10

    lat = {"min": 1, "p1": 2, "p5": 3, "p25": 4, "p50": 5, "p75": 6, "p95": 7, "p99": 8, "max": 9, "mean": 5.5}
    host = {"rc": 0, "stderr": "", "chase": {"verified": 10, "lat_ns": lat}, "readback": {"mismatched_packets": 0},
            "mismatches": 0, "errors": 0, "write_bytes_sent": 100, "read_bytes_requested": 80, "requests": 9,
            "retransmits": 0,
            "bw": [{"op": "get", "size": 8, "outstanding": 1, "messages": 10, "bytes": 80, "goodput_gbps": 0.1}],
            "server": {"write_bytes": 100, "read_bytes": 80, "ok": 9, "reads": 5, "writes": 4, "ignored": 0}}
    tcp = {"rc": 0, "stderr": "", "runs": [{"size": 8, "bytes_sent": 64, "bytes_received": 64, "differing": 0,
                                            "goodput_gbps": 1.0}]}
    rnd = {key: copy.deepcopy(host) for key, _, _, _ in HOST_SERIES}
    rounds = [{**rnd, "tcp": tcp}]
    tcp_counts = {"bytes": 64, "differing": 0}
    caught = {"rc": 1, "mismatches": 3}
    nic = {"lat": [{"rc": 0, "stderr": "", "result": {"verified": 10, "lat_ns": lat}}],
           "lat_nic": [{"rc": 0, "stderr": "", "result": {"verified": 10, "lat_ns": {**lat, "p50": 4}}}],
           "bw": [{"op": "put", "size": 8, "outstanding": 4, "rc": 0, "stderr": "",
                   "result": {"goodput_gbps": 0.5, "bytes": 32, "target_dma_bytes": 32}}]}
    assert check(rounds, tcp_counts, caught, A, nic) == [], check(rounds, tcp_counts, caught, A, nic)
    last = HOST_SERIES[-1][0]
    cases = [
        (lambda r, t, n: r[0]["host"]["chase"].update(verified=9), "chased values verified"),
        (lambda r, t, n: r[0][last]["readback"].update(mismatched_packets=1), "mismatches"),
        (lambda r, t, n: r[0][last]["server"].update(write_bytes=99), "the server counted write_bytes"),
        (lambda r, t, n: r[0]["host"]["server"].update(ignored=1), "refused or ignored"),
        (lambda r, t, n: r[0]["host"]["bw"][0].update(bytes=81), "get 8 B x1"),
        (lambda r, t, n: r[0]["tcp"]["runs"][0].update(bytes_received=63), "TCP 8 B"),
        (lambda r, t, n: t.update(bytes=63), "TCP receiver counted"),
        (lambda r, t, n: n["lat"][0]["result"].update(verified=3), "rma lat verified"),
        (lambda r, t, n: n["lat_nic"][0].update(rc=1), "rma lat exited 1"),
        (lambda r, t, n: n["bw"][0].update(rc=1), "rma bw put 8 B x4 exited 1"),
        (lambda r, t, n: n["bw"][0]["result"].update(target_dma_bytes=31), "counted 31 bytes of DMA"),
    ]
    for mutate, want in cases:
        r, t, n = copy.deepcopy(rounds), copy.deepcopy(tcp_counts), copy.deepcopy(nic)
        mutate(r, t, n)
        got = check(r, t, caught, A, n)
        assert any(want in g for g in got), (want, got)
    assert any("unnoticed" in g for g in check(rounds, tcp_counts, {"rc": 0}, A, nic))
    assert any("hostile" in g for g in check(rounds, tcp_counts, {**caught, "probe": {"rc": 1}}, A, nic))
    summ = summarise(rounds, nic)
    assert summ["host_lat_ns"]["p50"] == 5 and summ["nic_lat_ns"]["p99"] == 8
    assert summ["nic_init_lat_ns"]["p50"] == 4 and summ["nic_over_host_p50"] == 0.8
    assert summ["nic_bw"] == [{"op": "put", "size": 8, "outstanding": 4, "goodput_gbps_median": 0.5}]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "check and summary ok (no matplotlib: plots not tried)"
    with tempfile.TemporaryDirectory() as d:
        plot({"summary": summ, "diad": DIAD, "nic": nic}, os.path.join(d, "l.png"), os.path.join(d, "b.png"))
        assert os.path.getsize(os.path.join(d, "l.png")) > 0 and os.path.getsize(os.path.join(d, "b.png")) > 0
    return "check, summary and plots ok"


def on_sigterm(*_):
    raise KeyboardInterrupt("SIGTERM")


def machine():
    m = {"cpus": os.cpu_count(), "kernel": os.uname().release}
    try:
        with open("/proc/cpuinfo") as f:
            m["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="CI: one small round, consistency only (< 30 s)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=20000, help="chased reads per round (default 20000)")
    ap.add_argument("--region-mib", type=int, default=16, help="the served region / window (default 16 MiB)")
    ap.add_argument("--seconds", type=float, default=0.3, help="per goodput point (default 0.3)")
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    ap.add_argument("--outstanding", type=int, nargs="+", default=OUTSTANDING)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", default="pspin", help="the NIC model of the NIC-served series (default pspin)")
    ap.add_argument("--prefix", default=os.environ.get("SS_NS_PREFIX", "") + "cb",
                    help="the cluster's prefix (default $SS_NS_PREFIX + 'cb')")
    ap.add_argument("--out", help="results file (default bench/results/cluster-<UTC time>.json; "
                                  "with --check target/bench-cluster/check.json)")
    ap.add_argument("--plot", metavar="FILE", help="only redraw the plots from this results file")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already in target/release")
    ap.add_argument("--self-test", action="store_true", help="test the checks on made-up results (no root)")
    args = ap.parse_args()
    if args.self_test:
        print(f"cluster_bench.py --self-test: {self_test()}")
        return
    if args.plot:
        with open(args.plot) as f:
            plot(json.load(f), PLOT_LAT, PLOT_BW)
        return
    if args.check:
        args.rounds, args.count, args.region_mib, args.seconds = 1, 2000, 1, 0.05
        args.sizes, args.outstanding = [8, 4096, 1 << 20], [1, 16]
    args.region = args.region_mib << 20
    if any(s > args.region for s in args.sizes):
        raise SystemExit(f"a message size is larger than the region ({args.region} bytes)")
    if os.geteuid() != 0:
        if args.check:
            print("SKIPPED: bench/cluster_bench.py --check needs root (network namespaces)")
            return
        raise SystemExit("cluster_bench.py needs root (network namespaces)")
    # SIGTERM unwinds like Ctrl-C, so the cluster comes down either way.
    signal.signal(signal.SIGTERM, on_sigterm)
    t0 = time.monotonic()
    load_before = os.getloadavg()
    build(args.no_build)
    rounds, tcp_counts, sabotage = baselines(args, args.sizes, args.outstanding)
    why = nic_series_missing()
    if why:
        print(f"NIC-served series skipped: {why}")
        nic = {"skipped": why}
    else:
        nic = nic_series(args, args.sizes, args.outstanding)
    # Other work on the machine shows in the numbers: say how much there was.
    res = {"machine": {**machine(), "loadavg_1_5_15_before": load_before, "loadavg_1_5_15_after": os.getloadavg()},
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "config": {k: getattr(args, k) for k in ("rounds", "count", "region", "seconds", "sizes", "outstanding",
                                                     "seed", "check")},
           "ports": {**{k: port for k, _, port, _ in HOST_SERIES}, "tcp": TCP_PORT}, "diad": DIAD, "summary": summarise(rounds, nic),
           "tcp_receiver_counts": tcp_counts, "nic": nic, "rounds": rounds}
    if sabotage is not None:
        res["sabotage"] = {"rc": sabotage["rc"], "mismatches": sabotage.get("mismatches"),
                           "probe": sabotage["probe"], "server": sabotage["server"]}
    problems = check(rounds, tcp_counts, sabotage, args, nic)
    res["problems"] = problems
    out = args.out or (os.path.join(OUT, "check.json") if args.check else
                       os.path.join(RESULTS, time.strftime("cluster-%Y%m%dT%H%MZ.json", time.gmtime())))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    try:
        if args.check:  # the plotting code runs in CI too, into target/
            plot(res, os.path.join(OUT, "latency.png"), os.path.join(OUT, "goodput.png"))
        else:
            plot(res, PLOT_LAT, PLOT_BW)
    except ImportError:
        print("no matplotlib: plots not drawn (make test-deps installs it in .venv)")
    print_tables(res)
    print(f"\nresults: {os.path.relpath(out, ROOT)} ({time.monotonic() - t0:.1f} s)")
    if problems:
        print("INCONSISTENT:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    if args.check:
        print("cluster benchmark check: consistent (every chased value verified, read-back equal, "
              "byte counts equal, hostile requests refused, a bit-flipping server caught)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        sys.exit(f"interrupted ({str(e) or 'SIGINT'}): the cluster was torn down")
