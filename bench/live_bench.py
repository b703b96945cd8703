#!/usr/bin/env python3
"""The live NIC measured on a veth pair (issue 11, "Measured"): softspin's
handlers against the kernel doing the same job, side by side in one run.

    make bench-live        (or: sudo .venv/bin/python bench/live_bench.py)

1. Round-trip time, one request in flight, >= 10,000 round trips per server:
   - UDP: bench/live/udp_pingpong (C client, peer namespace) against
     softspin's echo handler (examples/ping_pong pingpong_ph) and against a C
     kernel-socket echo server (bench/live/udp_echo_server) in the NIC
     namespace;
   - ICMP: iputils ping against the kernel's own echo responder, against
     softspin's icmp_echo_ph (on the default fpspin model and on --profile pspin)
     and against a bare AF_XDP responder (bench/live/afxdp_drop echo: no engine,
     a loop that never sleeps), the floor of any AF_XDP user-space responder.
2. Receive rate at 64 B frames (60 B + FCS): softspin with the empty handler,
   a raw AF_XDP receive-and-drop loop (bench/live/afxdp_drop xsk, the ceiling
   of any AF_XDP receiver), XDP_DROP in the driver (afxdp_drop drop, the
   interface's ceiling) and a recvmmsg UDP socket (bench/live/udp_sink). The
   load: bench/live/udp_flood in AF_PACKET mode (prebuilt frames,
   PACKET_QDISC_BYPASS, sendmmsg), several in parallel in the peer namespace;
   their send rate over the receiver's own window is reported beside every
   receive rate, with the send calls that found the veth queue full (the
   receiver, not the sender, was then the limit).
3. Ping-pong against payload size (seed 000 §6.3.1): examples/ping_pong/rtt.py's
   measure() on the same namespaces -- ICMP and UDP echo at 64..1472 B,
   softspin's handlers (one NIC, both ECTXs) against the kernel, every reply
   checked, the responder proven; plot docs/img/ping_pong_rtt.png.

Every case runs --rounds times, interleaved; the tables give the median of
the rounds. Writes docs/live_rtt.png, docs/live_rate.png and the results as
JSON (target/bench-live/results.json); docs/live.md quotes them.
Needs root (namespaces, XDP). The namespaces are always removed on exit.
"""
import argparse
import importlib.util
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from netbench import DOCS, NETNS, ROOT, SOFTSPIN, in_ns, run

SRC = os.path.join(ROOT, "bench", "live")
OUT = os.path.join(ROOT, "target", "bench-live")
PREFIX = os.environ.get("SS_NS_PREFIX", "lb")
NIC_NS, PEER_NS, NIC_IF, PEER_IF = PREFIX + "nic", PREFIX + "peer", PREFIX + "0", PREFIX + "1"
NIC_IP, PEER_IP = "10.77.0.1", "10.77.0.2"
UDP_PORT, SINK_PORT = 7, 9000
# softspin nic --rx-coalesce-us in the receive-rate case that uses it
# (docs/live.md, "Receive rate").
RX_COALESCE_US = 200
C_PROGS = ["udp_echo_server", "udp_pingpong", "udp_sink", "udp_flood", "afxdp_drop"]
PP_PLOT = os.path.join(DOCS, "img", "ping_pong_rtt.png")


def ping_pong_module():
    """examples/ping_pong/rtt.py, the ping-pong host program (one copy of it)."""
    spec = importlib.util.spec_from_file_location("pp_rtt", os.path.join(ROOT, "examples", "ping_pong", "rtt.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def bin_(name):
    return os.path.join(OUT, name)


def build():
    run(["cargo", "build", "--release", "-q", "-p", "softspin-cli"], cwd=ROOT)
    os.makedirs(OUT, exist_ok=True)
    for p in C_PROGS:
        run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin_(p), os.path.join(SRC, p + ".c")])
    for name, src in [("pp", "examples/ping_pong/handler.c"), ("empty", "examples/empty/handler.c")]:
        run([SOFTSPIN, "build", "--profile", "fpspin", os.path.join(ROOT, src), "-o", bin_(name + ".elf")])
    # The same echo handlers for the 1 GHz model (`nic --profile pspin`).
    run([SOFTSPIN, "build", "--profile", "pspin", os.path.join(ROOT, "examples/ping_pong/handler.c"),
         "-o", bin_("pp_pspin.elf")])


def nic_mac():
    out = run(["ip", "-n", NIC_NS, "-j", "link", "show", NIC_IF]).stdout
    return json.loads(out)[0]["address"]


def xdp_attached():
    out = run(["ip", "-n", NIC_NS, "-j", "link", "show", NIC_IF]).stdout
    return "xdp" in json.loads(out)[0]


def wait_attached(p):
    """Whether process `p` attached its XDP program to the NIC's interface
    within 10 s (False: it exited or took longer)."""
    t_end = time.time() + 10
    while not xdp_attached():
        if p.poll() is not None or time.time() > t_end:
            return False
        time.sleep(0.05)
    time.sleep(0.3)  # the AF_XDP socket is bound around the attach; let it (and ARP) settle
    return True


class Softspin:
    """`softspin nic` in the NIC namespace, stopped with SIGINT; its --json."""

    def __init__(self, image, ph, match, duration=60, binary=SOFTSPIN, extra=()):
        self.p = subprocess.Popen(
            in_ns(NIC_NS, binary, "nic", "--iface", NIC_IF, "--image", image, "--ph", ph, "--match", match,
                  "--duration", str(duration), "--json", *extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait_attached(self.p):
            self.stop()
            raise SystemExit("softspin nic did not attach")

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        out, err = self.p.communicate(timeout=30)
        if self.p.returncode not in (0, 5):  # 5: frames dropped (reported as such)
            raise SystemExit(f"softspin nic failed ({self.p.returncode}): {err}")
        if xdp_attached():
            raise SystemExit("softspin nic left an XDP program on the interface")
        return json.loads(out)


def pctl(xs, p):
    xs = sorted(xs)
    return xs[int(p / 100 * (len(xs) - 1) + 0.5)]


# ---- 1. round-trip time ----

def udp_rtt(count, samples):
    r = run(in_ns(PEER_NS, bin_("udp_pingpong"), NIC_IP, str(UDP_PORT), str(count), "32", samples), check=False)
    res = json.loads(r.stdout)
    if r.returncode != 0:
        raise SystemExit(f"udp_pingpong: {res} {r.stderr}")
    with open(samples) as f:
        res["samples_us"] = [int(x) / 1000 for x in f]
    return res


def rtt_softspin_udp(count, samples, binary=SOFTSPIN):
    s = Softspin(bin_("pp.elf"), "pingpong_ph", f"udp:{UDP_PORT}", binary=binary)
    try:
        res = udp_rtt(count, samples)
    finally:
        st = s.stop()
    res["nic"] = {k: st.get(k) for k in ("matched", "tx_frames", "latency_ns", "tx_lag_ns")}
    return res


def rtt_kernel_udp(count, samples):
    p = subprocess.Popen(in_ns(NIC_NS, bin_("udp_echo_server"), str(UDP_PORT)), stderr=subprocess.PIPE)
    time.sleep(0.2)
    try:
        return udp_rtt(count, samples)
    finally:
        p.terminate()
        p.wait()


def ping(count):
    # -i 0.0002: root may send faster than every 10 ms; per-packet lines
    # (no -q) give each RTT (µs resolution below 1 ms).
    r = run(in_ns(PEER_NS, "ping", "-n", "-c", str(count), "-i", "0.0002", "-W", "1", NIC_IP), check=False)
    times = [float(m) * 1000 for m in re.findall(r"time=([0-9.]+) ms", r.stdout)]
    if not times:
        raise SystemExit(f"ping got no replies: {r.stdout[-500:]}{r.stderr}")
    return {"count": count, "received": len(times), "lost": count - len(times),
            "p50_ns": pctl(times, 50) * 1000, "p99_ns": pctl(times, 99) * 1000, "samples_us": times}


def rtt_softspin_icmp(count, binary=SOFTSPIN, profile="fpspin"):
    img = bin_("pp.elf") if profile == "fpspin" else bin_(f"pp_{profile}.elf")
    s = Softspin(img, "icmp_echo_ph", "icmp", binary=binary, extra=("--profile", profile))
    try:
        res = ping(count)
    finally:
        st = s.stop()
    res["nic"] = {k: st.get(k) for k in ("matched", "tx_frames", "latency_ns", "tx_lag_ns")}
    # The kernel would answer too if the NIC let requests through: the
    # handler must have sent every reply the pinger counted.
    if st["tx_frames"] < res["received"]:
        raise SystemExit(f"icmp_echo_ph sent {st['tx_frames']} replies but ping got {res['received']}")
    return res


def rtt_kernel_icmp(count):
    return ping(count)


def rtt_afxdp_icmp(count):
    """The floor of any AF_XDP user-space responder here: afxdp_drop echo
    answers in place in its UMEM from a loop that never sleeps."""
    p = subprocess.Popen(in_ns(NIC_NS, bin_("afxdp_drop"), "echo", NIC_IF, "600"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait_attached(p):
        p.kill()
        raise SystemExit(f"afxdp_drop echo did not attach: {p.communicate()[1]}")
    try:
        res = ping(count)
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    st = json.loads(out)
    if st["replies"] < res["received"]:
        raise SystemExit(f"afxdp_drop echo sent {st['replies']} replies but ping got {res['received']}: {err}")
    return res


# ---- 2. receive rate ----

def floods(n, secs):
    mac = nic_mac()
    return [subprocess.Popen(in_ns(PEER_NS, bin_("udp_flood"), "packet", PEER_IP, NIC_IP, str(SINK_PORT), str(secs),
                                   PEER_IF, mac), stdout=subprocess.PIPE, text=True) for _ in range(n)]


def at(marks, t):
    """A sender's (frames, full-queue calls) at time t, interpolated
    between its progress lines."""
    for (t0, n0, f0), (t1, n1, f1) in zip(marks, marks[1:]):
        if t0 <= t <= t1:
            k = (t - t0) / (t1 - t0) if t1 > t0 else 0
            return n0 + k * (n1 - n0), f0 + k * (f1 - f0)
    raise SystemExit("udp_flood stopped before the receiver's window ended; raise its margin")


def flood_result(ps, t_start, t_end):
    """The senders' rate over exactly the receiver's window."""
    frames = full = 0
    total = []
    for p in ps:
        lines = p.communicate()[0].splitlines()
        total.append(json.loads(lines[-1]))
        marks = [tuple(int(x) for x in ln.split()) for ln in lines[:-1]]
        (n0, f0), (n1, f1) = at(marks, t_start), at(marks, t_end)
        frames += n1 - n0
        full += f1 - f0
    return {"mpps": frames / ((t_end - t_start) / 1e9) / 1e6, "full_queue_calls": round(full),
            "whole_run_mpps": sum(r["mpps"] for r in total)}


def rate_case(kind, window, senders, binary=SOFTSPIN, extra=()):
    """The sender starts first and outlasts the receiver's window, so every
    receiver counts under the same steady load."""
    ps = floods(senders, window + 4)
    time.sleep(0.5)
    try:
        if kind == "softspin":
            s = Softspin(bin_("empty.elf"), "empty_ph", f"udp:{SINK_PORT}", binary=binary, extra=extra)
            time.sleep(window)
            st = s.stop()
            # wall_s runs from attach to just before exit (CLOCK_MONOTONIC,
            # as the C programs' timestamps).
            t_end = time.monotonic_ns()
            t_start = t_end - int(st["wall_s"] * 1e9)
            # Counted from attach to stop, all of it under load: the frames
            # the handlers ran on (`packets`; `matched` is kept beside it).
            res = {"packets": st["packets"], "window_s": st["wall_s"], "mpps": st["packets"] / st["wall_s"] / 1e6,
                   "drops": st["drops"], "matched": st["matched"], "rx_frames": st["rx_frames"]}
        else:
            cmd = {"xsk": [bin_("afxdp_drop"), "xsk", NIC_IF, str(window)],
                   "xdp_drop": [bin_("afxdp_drop"), "drop", NIC_IF, str(window)],
                   "udp_sink": [bin_("udp_sink"), str(SINK_PORT), str(window)]}[kind]
            res = json.loads(run(in_ns(NIC_NS, *cmd)).stdout)
            t_start, t_end = res["t_start_ns"], res["t_end_ns"]
            if "xsk_rx_dropped" in res:  # the raw loop's losses, named as softspin's port names them
                res["drops"] = {"fill_ring_empty": res["xsk_fill_ring_empty"], "rx_ring_full": res["xsk_rx_ring_full"]}
    except BaseException:
        for p in ps:
            p.kill()
            p.wait()
        raise
    res["sender"] = flood_result(ps, t_start, t_end)
    return res


# ---- report ----

def med(xs):
    return statistics.median(xs)


def plot(rtt, rate, order_rate):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, style in [("softspin UDP echo", "-"), ("kernel UDP echo server", "--"),
                        ("softspin ICMP echo", "-"), ("kernel ICMP echo", "--")]:
        xs = sorted(x for r in rtt[name] for x in r["samples_us"])
        ax.plot(xs, [i / (len(xs) - 1) for i in range(len(xs))], style, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("round-trip time (µs, log scale)")
    ax.set_ylabel("fraction of round trips")
    ax.set_title("Ping-pong over veth (2-core VM), all rounds pooled")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "live_rtt.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    vals = [med([r["mpps"] for r in rate[k]]) for k in order_rate]
    send = [med([r["sender"]["mpps"] for r in rate[k]]) for k in order_rate]
    y = range(len(order_rate))
    ax.barh([i + 0.2 for i in y], vals, 0.4, label="received")
    ax.barh([i - 0.2 for i in y], send, 0.4, label="sent (udp_flood, all senders)", alpha=0.5)
    ax.set_yticks(list(y))
    ax.set_yticklabels(order_rate)
    ax.invert_yaxis()
    ax.set_xlabel("Mpps, 64 B frames (median of rounds)")
    ax.set_title("Receive rate over veth (2-core VM)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "live_rate.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every case (median reported)")
    ap.add_argument("--count", type=int, default=10000, help="round trips per ping-pong run")
    ap.add_argument("--window", type=int, default=3, help="seconds each receiver counts")
    ap.add_argument("--senders", type=int, default=2, help="parallel udp_flood processes")
    ap.add_argument("--pp-count", type=int, default=2000,
                    help="ping-pong against size: measured round trips per protocol, size and round")
    ap.add_argument("--pp-sizes", default="64,256,1024,1472", help="ping-pong against size: payload bytes")
    ap.add_argument("--only-ping-pong", action="store_true", help="run only part 3 (ping-pong against size)")
    ap.add_argument("--parts", default="rtt,rate,pp",
                    help="comma-separated parts to run: rtt (1), rate (2), pp (3, ping-pong against size)")
    ap.add_argument("--baseline", metavar="SOFTSPIN",
                    help="another softspin binary (e.g. main's build) run as extra '(baseline)' cases of parts 1 and 2, "
                         "interleaved with this tree's")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--replot", action="store_true", help="only redraw the plots from the last run's samples")
    a = ap.parse_args()
    pp = ping_pong_module()
    if a.replot:
        with open(os.path.join(OUT, "raw.json")) as f:
            raw = json.load(f)
        if raw.get("rtt"):
            plot(raw["rtt"], raw["rate"], list(raw["rate"]))
        if raw.get("ping_pong"):
            pp.plot(raw["ping_pong"], PP_PLOT)
        return
    try:
        pp_sizes = pp.parse_sizes(a.pp_sizes)
    except argparse.ArgumentTypeError as e:
        sys.exit(f"live_bench: {e}")
    if os.geteuid() != 0:
        sys.exit("live_bench: needs root (network namespaces, XDP); run `sudo make bench-live`")
    if a.count < 1 or a.rounds < 1 or a.window < 1 or a.senders < 1 or a.pp_count < 1:
        sys.exit("live_bench: --count, --rounds, --window, --senders and --pp-count must be at least 1")
    parts = set(a.parts.split(","))
    if not parts or parts - {"rtt", "rate", "pp"}:
        sys.exit(f"live_bench: --parts {a.parts}: choose from rtt, rate, pp")
    if a.only_ping_pong:
        parts = {"pp"}
    if a.baseline and not os.access(a.baseline, os.X_OK):
        sys.exit(f"live_bench: --baseline {a.baseline}: not an executable")
    base = " (baseline)"
    # SIGTERM too must reach the finally that removes the namespaces.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("live_bench: terminated"))
    if parts != {"pp"}:
        build()
    pp_out = pp.build(os.path.join(OUT, "ping_pong"))
    env = dict(os.environ, SS_NS_PREFIX=PREFIX)
    b = a.baseline
    cases = [("softspin UDP echo", lambda: rtt_softspin_udp(a.count, samples))]
    cases += [("softspin UDP echo" + base, lambda: rtt_softspin_udp(a.count, samples, b))] if b else []
    cases += [("kernel UDP echo server", lambda: rtt_kernel_udp(a.count, samples)),
              ("softspin ICMP echo", lambda: rtt_softspin_icmp(a.count))]
    cases += [("softspin ICMP echo" + base, lambda: rtt_softspin_icmp(a.count, b))] if b else []
    cases += [("softspin ICMP echo, --profile pspin", lambda: rtt_softspin_icmp(a.count, profile="pspin"))]
    cases += [("raw AF_XDP ICMP echo (floor)", lambda: rtt_afxdp_icmp(a.count))]
    cases += [("kernel ICMP echo", lambda: rtt_kernel_icmp(a.count))]
    rtt = {k: [] for k, _ in cases} if "rtt" in parts else {}
    coalesced = f"softspin empty handler, --rx-coalesce-us {RX_COALESCE_US}"
    order_rate = ["XDP_DROP (driver)", "raw AF_XDP rx+drop", "softspin empty handler", coalesced]
    order_rate += ["softspin empty handler" + base] if b else []
    order_rate += ["kernel UDP recvmmsg"]
    kinds = {"XDP_DROP (driver)": ("xdp_drop", None, ()), "raw AF_XDP rx+drop": ("xsk", None, ()),
             "softspin empty handler": ("softspin", SOFTSPIN, ()),
             coalesced: ("softspin", SOFTSPIN, ("--rx-coalesce-us", str(RX_COALESCE_US))),
             "softspin empty handler" + base: ("softspin", b, ()),
             "kernel UDP recvmmsg": ("udp_sink", None, ())}
    rate = {k: [] for k in order_rate} if "rate" in parts else {}
    pp_summary = pp_samples = None
    try:
        run([NETNS, "up"], env=env)
        samples = os.path.join(OUT, "rtt_samples.txt")
        for i in range(a.rounds if rtt or rate else 0):
            print(f"round {i + 1}/{a.rounds}", file=sys.stderr)
            # Alternate the order so neither side always runs first.
            for name, f in (cases if i % 2 == 0 else cases[::-1]) if rtt else []:
                r = f()
                r["loadavg1"] = os.getloadavg()[0]  # the machine is shared: record how busy it was
                rtt[name].append(r)
                print(f"  {name:36s} p50 {r['p50_ns'] / 1000:7.1f} µs  p99 {r['p99_ns'] / 1000:7.1f} µs  "
                      f"lost {r['lost']}", file=sys.stderr)
            for name in (order_rate if i % 2 == 0 else order_rate[::-1]) if rate else []:
                kind, binary, extra = kinds[name]
                r = rate_case(kind, a.window, a.senders, binary or SOFTSPIN, extra)
                r["loadavg1"] = os.getloadavg()[0]
                rate[name].append(r)
                print(f"  {name:26s} {r['mpps']:.3f} Mpps  (sent {r['sender']['mpps']:.3f} Mpps, "
                      f"full-queue calls {r['sender']['full_queue_calls']})", file=sys.stderr)
        if "pp" in parts:
            print("ping-pong against payload size", file=sys.stderr)
            pp_summary, pp_samples = pp.measure(pp.Names(PREFIX), a.pp_count, pp_sizes, a.rounds, out=pp_out)
    finally:
        run([NETNS, "down"], env=env, check=False)

    if pp_summary is not None:
        with open(os.path.join(OUT, "ping_pong.json"), "w") as f:
            json.dump(pp_summary, f, indent=1)
        print(pp.text_table(pp_summary), file=sys.stderr)
        if not a.no_plot:
            pp.plot(pp_summary, PP_PLOT)
    if parts == {"pp"}:
        with open(os.path.join(OUT, "raw.json"), "w") as f:
            json.dump({"ping_pong": pp_summary, "ping_pong_samples": pp_samples}, f)
        print(json.dumps({k: v for k, v in pp_summary.items() if k != "phases"}, indent=1))
        sys.exit(0 if pp_summary["ok"] else 1)

    summary = {
        "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release, "link": "veth pair between two namespaces",
                    "loadavg1_per_case": [r["loadavg1"] for v in list(rtt.values()) + list(rate.values()) for r in v]},
        "params": vars(a),
        "rtt": {k: {"p50_us": med([r["p50_ns"] for r in v]) / 1000, "p99_us": med([r["p99_ns"] for r in v]) / 1000,
                    "round_trips": sum(r["received"] for r in v), "lost": sum(r["lost"] for r in v),
                    "rounds_p50_us": [r["p50_ns"] / 1000 for r in v],
                    "nic_latency_ns_p50": [r["nic"]["latency_ns"]["p50"] for r in v if "nic" in r],
                    "nic_tx_lag_ns_p50": [r["nic"]["tx_lag_ns"]["p50"] for r in v if (r.get("nic") or {}).get("tx_lag_ns")]}
                for k, v in rtt.items()},
        "rate": {k: {"mpps": med([r["mpps"] for r in v]), "sent_mpps": med([r["sender"]["mpps"] for r in v]),
                     "rounds_mpps": [r["mpps"] for r in v],
                     "full_queue_calls": [r["sender"]["full_queue_calls"] for r in v],
                     "drops": [r.get("drops") for r in v if r.get("drops")]}
                 for k, v in rate.items()},
    }
    if pp_summary is not None:
        summary["ping_pong"] = {k: pp_summary[k] for k in ("table", "checks", "problems", "ok")}
    goals = summary["goals"] = {}
    if rate:
        ceiling = summary["rate"]["raw AF_XDP rx+drop"]["mpps"]
        ss = summary["rate"]["softspin empty handler"]["mpps"]
        ssc = summary["rate"][coalesced]["mpps"]
        sock = summary["rate"]["kernel UDP recvmmsg"]["mpps"]
        goals["empty handler / raw AF_XDP"] = ss / ceiling if ceiling else None
        goals["empty handler >= 80% of raw AF_XDP"] = ss >= 0.8 * ceiling
        goals["empty handler / kernel socket"] = ss / sock if sock else None
        goals["empty handler ahead of kernel socket"] = ss >= sock
        goals["empty handler, coalescing / kernel socket"] = ssc / sock if sock else None
        goals["empty handler, coalescing, ahead of kernel socket"] = ssc >= sock
    if rtt:
        p50 = {k: v["p50_us"] for k, v in summary["rtt"].items()}
        goals["echo handler RTT p50 ahead of kernel UDP server"] = p50["softspin UDP echo"] < p50["kernel UDP echo server"]
        goals["ICMP echo p50 at or below the kernel's"] = p50["softspin ICMP echo"] <= p50["kernel ICMP echo"]
        # Whether any AF_XDP responder could be: the bare one's p50 against
        # the kernel's, and what softspin adds on top of that floor.
        floor = p50["raw AF_XDP ICMP echo (floor)"]
        goals["AF_XDP floor ICMP p50 at or below the kernel's"] = floor <= p50["kernel ICMP echo"]
        goals["ICMP p50 over the AF_XDP floor, us (fpspin, pspin)"] = [
            p50["softspin ICMP echo"] - floor, p50["softspin ICMP echo, --profile pspin"] - floor]
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump({"summary": summary, "rtt": {k: [{x: y for x, y in r.items() if x != "samples_us"} for r in v]
                                               for k, v in rtt.items()}, "rate": rate}, f, indent=1)
    with open(os.path.join(OUT, "raw.json"), "w") as f:
        # every sample: --replot draws from it
        json.dump({"rtt": rtt, "rate": rate, "ping_pong": pp_summary, "ping_pong_samples": pp_samples}, f)
    print(json.dumps(summary, indent=1))
    if not a.no_plot and rtt and rate:
        plot(rtt, rate, order_rate)


if __name__ == "__main__":
    main()
