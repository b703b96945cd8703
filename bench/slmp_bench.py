#!/usr/bin/env python3
"""SLMP file transfer measured live (issue 12, demo 1; seed 000 §6.3.3):
`softspin slmp send` in one namespace, `softspin slmp recv` (the NIC with the
SLMP receive handlers, examples/slmp_recv) in the other, against kernel TCP
moving the same file over the same veth pair in the same run.

    make bench-slmp        (or: sudo .venv/bin/python bench/slmp_bench.py)

1. Plain veth pair (scripts/netns.sh): --rounds rounds, interleaved; each
   round runs TCP once and SLMP once per window (auto and the fixed windows).
   TCP: a Python sender (socket.sendfile) in the peer namespace and a Python
   receiver in the NIC namespace; elapsed = from just before connect() to the
   receiver holding every byte (both read CLOCK_MONOTONIC, which namespaces
   share); the receiver's sha256 must equal the file's. SLMP: the sender's
   own elapsed_s/goodput_bps, and the received file compared by sha256.
2. Lossy link (scripts/lossy_link.sh, softspin-lossy in the middle
   namespace): window auto at each --lossy-loss, with 25 % reordering and
   1 % duplication as in the issue, then one --big-mib (64 MiB) file at
   5 % loss; kernel TCP moves the same file through the same impaired link
   first; the sender's retransmissions, timeouts, spurious losses and
   window beside the forwarder's drop counts.

`make bench-live` runs this after bench/live_bench.py; `make bench-slmp`
runs it alone. --baseline BIN runs another softspin's sender and receiver
(e.g. a build of the base commit, copied aside) beside this one in every
round, so before/after come from the same run.

Tables give the median of the rounds. Writes target/bench-slmp/results.json
and docs/live_slmp.png; docs/live.md "SLMP file transfer" quotes them.
Needs root. Namespaces are always removed on exit.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

from netbench import DOCS, NETNS, ROOT, SOFTSPIN, in_ns, run

LOSSY = os.path.join(ROOT, "target", "release", "softspin-lossy")
LOSSY_LINK = os.path.join(ROOT, "scripts", "lossy_link.sh")
OUT = os.path.join(ROOT, "target", "bench-slmp")
PREFIX = os.environ.get("SS_NS_PREFIX", "sb")
NIC_NS, PEER_NS, NIC_IF = PREFIX + "nic", PREFIX + "peer", PREFIX + "0"
NET, LOSSY_NET = "10.77.0", "10.78.0"
NIC_IP = NET + ".1"
TCP_PORT = 9331
WINDOWS = ["auto", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024"]

# FPsPIN's file transfer (seed 000 §6.3.3, Fig. 6.9/6.10): VCU1525 FPGA NIC,
# 100 Gbit/s link, 2 sender threads.
FPSPIN = {
    "best_reliable_gbps": 6.29, "best_reliable_window": 512, "threads": 2,
    "iperf3_gbps": 8.3, "ratio_to_iperf3": 0.758,
    "window_1024_failure_rate": 0.459, "window_1024_gbps": 6.4,
}

# A TCP receiver and sender small enough to pass with `python3 -c`.
TCP_RECV = r"""
import socket, sys, time, hashlib, json
n = int(sys.argv[2]); s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[3]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); buf = bytearray(n); mv = memoryview(buf); got = 0
while got < n:
    k = c.recv_into(mv[got:], n - got)
    if k == 0: break
    got += k
t1 = time.monotonic(); c.close()
print(json.dumps({"t1": t1, "bytes": got, "sha256": hashlib.sha256(buf[:got]).hexdigest()}), flush=True)
"""
TCP_SEND = r"""
import socket, sys, time, json
f = open(sys.argv[1], "rb"); t0 = time.monotonic()
s = socket.create_connection((sys.argv[2], int(sys.argv[3]))); s.sendfile(f); s.shutdown(socket.SHUT_WR)
s.recv(1); print(json.dumps({"t0": t0}), flush=True)
"""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tcp_once(file, size, digest, rx_ns=NIC_NS, tx_ns=PEER_NS, ip=NIC_IP):
    rx = subprocess.Popen(in_ns(rx_ns, sys.executable, "-c", TCP_RECV, ip, str(size), str(TCP_PORT)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert rx.stdout.readline().strip() == "ready"
    tx = run(in_ns(tx_ns, sys.executable, "-c", TCP_SEND, file, ip, str(TCP_PORT)), timeout=300)
    out, err = rx.communicate(timeout=120)
    r = json.loads(out.strip().splitlines()[-1])
    t0 = json.loads(tx.stdout.strip().splitlines()[-1])["t0"]
    el = r["t1"] - t0
    ok = r["bytes"] == size and r["sha256"] == digest
    return {"ok": ok, "elapsed_s": el, "goodput_gbps": size * 8 / el / 1e9}


def slmp_once(rx_ns, iface, tx_ns, to, file, digest, window, outfile, binary=SOFTSPIN):
    if os.path.exists(outfile):
        os.remove(outfile)
    rx = subprocess.Popen(in_ns(rx_ns, binary, "slmp", "recv", "--iface", iface, "--out", outfile,
                                "--count", "1", "--timeout", "240", "--json"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The receiver builds its handlers and attaches first; it says so on
    # stderr (a fixed sleep was outlasted under load).
    early = []
    for line in rx.stderr:
        early.append(line)
        if "waiting for" in line:
            break
    tx = run(in_ns(tx_ns, binary, "slmp", "send", file, "--to", to, "--window", window, "--json"),
             check=False, timeout=300)
    try:
        rout, rerr = rx.communicate(timeout=70)
        rerr = "".join(early) + rerr
    except subprocess.TimeoutExpired:
        rx.kill()
        rout, rerr = rx.communicate()
    res = {"window": window, "send_rc": tx.returncode, "recv_rc": rx.returncode}
    try:
        s = json.loads(tx.stdout.strip().splitlines()[0])
    except (IndexError, json.JSONDecodeError):
        res.update(ok=False, error=(tx.stderr or "")[-400:])
        return res
    got = sha256(outfile) if os.path.exists(outfile) else None
    res.update(ok=tx.returncode == 0 and rx.returncode == 0 and got == digest,
               elapsed_s=s["elapsed_s"], goodput_gbps=s["goodput_bps"] / 1e9,
               retransmitted=s["retransmitted"], timeouts=s["timeouts"],
               rack_losses=s.get("fast_retransmits"), spurious_losses=s.get("spurious_losses"),
               window_stats=s.get("window"), rtt=s.get("rtt"), sender=s)
    try:  # the NIC's own counts (drops by cause) say where lost frames went
        res["receiver"] = json.loads(rout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        pass
    if not res["ok"]:
        res["error"] = (tx.stderr + rerr)[-400:]
    return res


def sender_only(file, binary=SOFTSPIN):
    """The sender's own ceiling: --sync none to a port nobody serves (the
    kernel drops the datagrams), so no receiver and no ACK limits it."""
    r = run(in_ns(PEER_NS, binary, "slmp", "send", file, "--to", NIC_IP, "--sync", "none", "--json"), check=False)
    return json.loads(r.stdout.strip().splitlines()[0])["goodput_bps"] / 1e9


def topo(script, net, cmd):
    env = dict(os.environ, SS_NS_PREFIX=PREFIX, SS_NET=net, SS_LOSSY_BIN=LOSSY)
    return run([script, cmd], env=env, check=cmd != "down")


def plain(args, file, size, digest):
    topo(NETNS, NET, "up")
    rounds = []
    try:
        for r in range(args.rounds):
            rnd = {"tcp": tcp_once(file, size, digest), "sender_only_gbps": sender_only(file), "slmp": [],
                   "load_avg": os.getloadavg()}
            print(f"round {r}: tcp {rnd['tcp']['goodput_gbps']:.3f} Gbit/s ok={rnd['tcp']['ok']}, "
                  f"SLMP sender alone {rnd['sender_only_gbps']:.3f} Gbit/s, load {rnd['load_avg'][0]:.1f}",
                  flush=True)
            if args.baseline:
                rnd["base_sender_only_gbps"] = sender_only(file, args.baseline)
                rnd["base_slmp"] = []
            for w in args.windows:
                s = slmp_once(NIC_NS, NIC_IF, PEER_NS, NIC_IP, file, digest, w, os.path.join(OUT, "recv.bin"))
                print(f"round {r}: slmp window {w}: {s.get('goodput_gbps', 0):.3f} Gbit/s "
                      f"retx {s.get('retransmitted')} ok={s['ok']}", flush=True)
                rnd["slmp"].append(s)
                if args.baseline:
                    b = slmp_once(NIC_NS, NIC_IF, PEER_NS, NIC_IP, file, digest, w, os.path.join(OUT, "recv.bin"),
                                  args.baseline)
                    print(f"round {r}: baseline window {w}: {b.get('goodput_gbps', 0):.3f} Gbit/s "
                          f"retx {b.get('retransmitted')} ok={b['ok']}", flush=True)
                    rnd["base_slmp"].append(b)
            rounds.append(rnd)
    finally:
        topo(NETNS, NET, "down")
    return rounds


def lossy(args, runs):
    """runs: (loss, file, size, digest) each."""
    out = []
    for loss, file, size, digest in runs:
        topo(LOSSY_LINK, LOSSY_NET, "up")
        report = os.path.join(OUT, f"link-{loss}.json")
        if os.path.exists(report):
            os.remove(report)
        env = dict(os.environ, SS_NS_PREFIX=PREFIX, SS_NET=LOSSY_NET, SS_LOSSY_BIN=LOSSY)
        fwd = subprocess.Popen([LOSSY_LINK, "fwd", "--loss", str(loss), "--reorder", "0.25", "--dup", "0.01",
                                "--seed", "9", "--report", report], env=env)
        try:
            time.sleep(0.3)
            tcp = tcp_once(file, size, digest, PREFIX + "b", PREFIX + "a", LOSSY_NET + ".1")
            s = slmp_once(PREFIX + "b", PREFIX + "b0", PREFIX + "a", LOSSY_NET + ".1", file, digest, "auto",
                          os.path.join(OUT, "recv-lossy.bin"))
        finally:
            fwd.terminate()  # SIGTERM: the forwarder writes its final report line
            fwd.wait(timeout=10)
            topo(LOSSY_LINK, LOSSY_NET, "down")
        with open(report) as f:
            link = json.loads(f.read().strip().splitlines()[-1])
        s.update(loss=loss, size_bytes=size, link=link, tcp=tcp)
        w = s.get("window_stats") or {}
        print(f"lossy {loss} {size >> 20} MiB: SLMP {s.get('goodput_gbps', 0):.3f} Gbit/s ok={s['ok']} "
              f"(TCP same link {tcp['goodput_gbps']:.3f} ok={tcp['ok']}) retx {s.get('retransmitted')} "
              f"timeouts {s.get('timeouts')} rack {s.get('rack_losses')} spurious {s.get('spurious_losses')} "
              f"window max {w.get('max')} decreases {w.get('decreases')} undos {w.get('undos')} "
              f"dropped a2b {link['a2b']['dropped']} b2a {link['b2a']['dropped']}", flush=True)
        out.append(s)
    return out


def summarise(rounds, args, key="slmp"):
    tcp = statistics.median(r["tcp"]["goodput_gbps"] for r in rounds)
    rows = []
    for i, w in enumerate(args.windows):
        runs = [r[key][i] for r in rounds]
        good = [x["goodput_gbps"] for x in runs if x["ok"]]
        med = statistics.median(good) if good else None
        rows.append({"window": w, "goodput_gbps_median": med, "ratio_to_tcp": med / tcp if med else None,
                     "delivered": sum(x["ok"] for x in runs), "runs": len(runs),
                     "retransmitted_median": statistics.median(x.get("retransmitted", 0) or 0 for x in runs),
                     "timeouts_median": statistics.median(x.get("timeouts", 0) or 0 for x in runs)})
    return tcp, rows


def plot(tcp, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    fixed = [r for r in rows if r["window"] != "auto" and r["goodput_gbps_median"]]
    auto = [r for r in rows if r["window"] == "auto" and r["goodput_gbps_median"]]
    ws = [int(r["window"]) for r in fixed]
    ax.plot(ws, [r["goodput_gbps_median"] for r in fixed], "o-", label="softspin SLMP, fixed window")
    if auto:
        ax.axhline(auto[0]["goodput_gbps_median"], color="C2", ls=":", label="softspin SLMP, window auto")
    ax.axhline(tcp, color="C1", ls="--", label="kernel TCP, same link, same run")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("window (packets)")
    ax.set_ylabel("goodput (Gbit/s, median)")
    ax.set_title("SLMP file transfer, veth pair on this VM")
    ax.legend(fontsize=8)
    # Ratios, so FPsPIN's FPGA (against iperf3) and ours (against TCP) share an axis.
    bx.plot(ws, [100 * r["ratio_to_tcp"] for r in fixed], "o-", label="softspin / kernel TCP")
    if auto:
        bx.axhline(100 * auto[0]["ratio_to_tcp"], color="C2", ls=":", label="softspin auto / kernel TCP")
    f = FPSPIN
    bx.plot([f["best_reliable_window"]], [100 * f["ratio_to_iperf3"]], "s", color="C3",
            label="FPsPIN best reliable / iperf3 (seed 000)")
    bx.plot([1024], [100 * f["window_1024_gbps"] / f["iperf3_gbps"]], "x", color="C3", ms=9,
            label=f"FPsPIN w=1024, {100 * f['window_1024_failure_rate']:.1f} % failed")
    bx.set_xscale("log", base=2)
    bx.set_xlabel("window (packets)")
    bx.set_ylabel("% of the baseline")
    bx.set_ylim(0, 100)
    bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=float, default=16, help="file size in MiB (default 16)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--windows", nargs="+", default=WINDOWS)
    ap.add_argument("--lossy-loss", nargs="*", type=float, default=[0.01, 0.05])
    ap.add_argument("--big-mib", type=float, default=64,
                    help="then one file of this size through the lossy link at 5 %% loss (0: skip)")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already in target/release")
    ap.add_argument("--baseline", metavar="BIN",
                    help="another softspin binary whose SLMP sender and receiver run beside this one's each round")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("slmp_bench.py needs root (network namespaces, XDP)")
    if not args.no_build:
        run(["cargo", "build", "--release", "-q", "-p", "softspin-cli", "-p", "softspin-lossy"], cwd=ROOT)
    os.makedirs(OUT, exist_ok=True)
    size = int(args.size_mib * (1 << 20))
    file = os.path.join(OUT, "file.bin")
    with open(file, "wb") as f:
        f.write(os.urandom(size))
    digest = sha256(file)
    machine = {"cpus": os.cpu_count(), "kernel": os.uname().release}
    try:
        machine["cpu"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except StopIteration:
        pass
    rounds = plain(args, file, size, digest)
    tcp, rows = summarise(rounds, args)
    base_rows = summarise(rounds, args, "base_slmp")[1] if args.baseline else None
    lruns = [(loss, file, size, digest) for loss in args.lossy_loss]
    if args.big_mib > 0:
        big = os.path.join(OUT, "big.bin")
        bsize = int(args.big_mib * (1 << 20))
        with open(big, "wb") as f:
            f.write(os.urandom(bsize))
        lruns.append((0.05, big, bsize, sha256(big)))
    lossy_runs = lossy(args, lruns)
    res = {"size_bytes": size, "rounds": args.rounds, "machine": machine, "tcp_goodput_gbps_median": tcp,
           "tcp_all_ok": all(r["tcp"]["ok"] for r in rounds),
           "sender_only_gbps_median": statistics.median(r["sender_only_gbps"] for r in rounds), "slmp": rows, "fpspin": FPSPIN,
           "load_avg": [r["load_avg"] for r in rounds], "baseline": args.baseline, "baseline_slmp": base_rows,
           "baseline_sender_only_gbps_median": statistics.median(r["base_sender_only_gbps"] for r in rounds)
           if args.baseline else None,
           "lossy": lossy_runs, "raw": rounds}
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    if any(r["window"] != "auto" and r["goodput_gbps_median"] for r in rows):
        plot(tcp, rows, os.path.join(DOCS, "live_slmp.png"))
    print(f"\nTCP {tcp:.3f} Gbit/s (median of {args.rounds}, sha256 ok: {res['tcp_all_ok']}); "
          f"SLMP sender alone (sync none, no receiver) {res['sender_only_gbps_median']:.3f} Gbit/s")
    print("load average per round: " + ", ".join(f"{l[0]:.1f}" for l in res["load_avg"]))
    for name, rs in [("this build", rows)] + ([(f"baseline {args.baseline}", base_rows)] if base_rows else []):
        if name != "this build":
            print(f"{name}: sender alone {res['baseline_sender_only_gbps_median']:.3f} Gbit/s")
        print(f"{name}:")
        print("| window | SLMP Gbit/s | ratio to TCP | delivered | retransmitted | timeouts |")
        for r in rs:
            g = f"{r['goodput_gbps_median']:.3f}" if r["goodput_gbps_median"] else "-"
            q = f"{100 * r['ratio_to_tcp']:.1f} %" if r["ratio_to_tcp"] else "-"
            print(f"| {r['window']} | {g} | {q} | {r['delivered']}/{r['runs']} | {r['retransmitted_median']} "
                  f"| {r['timeouts_median']} |")
    print(f"FPsPIN: {FPSPIN['best_reliable_gbps']} Gbit/s = {100 * FPSPIN['ratio_to_iperf3']:.1f} % of iperf3 "
          f"{FPSPIN['iperf3_gbps']} Gbit/s at window 512, 2 threads; window 1024 fails "
          f"{100 * FPSPIN['window_1024_failure_rate']:.1f} %")


if __name__ == "__main__":
    main()
