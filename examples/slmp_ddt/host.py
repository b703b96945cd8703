#!/usr/bin/env python3
"""slmp_ddt live: MPI datatypes unpacked by the NIC while the host computes
(seed 000 §6.3.2, issue 12 demo 3).

Run it in the NIC's namespace of scripts/netns.sh (root):

    scripts/netns.sh up
    scripts/netns.sh exec nic .venv/bin/python examples/slmp_ddt/host.py --iface ss0 --peer-ns sspeer

Three processes, as in FPsPIN's setup: the *NIC* (a child process: the
softspin engine attached to the interface with XDP, running slmp_ddt_ph; its
host window is a shared-memory buffer, so handler DMA lands straight in the
host's memory), the *host* (this process: a GEMM loop with NumPy's OpenBLAS on
one thread, polling a completion record in shared memory once per GEMM
call) and the *sender* (`softspin.slmp_send` in the peer namespace: the
messages as SLMP, window auto, SYN on every segment; started when the host
"sends the RTS", seed 000's timing).

Runs, each with the same messages:
  offload   slmp_ddt_ph unpacks; the host only polls. Overlap ratio
            T_GEMM / (T_GEMM + T_poll) and GEMM slow-down against GEMM alone.
  baseline  slmp_recv's slmp_ph writes the packed stream contiguously; the
            host unpacks each message on its own thread when it polls it
            (ddt.unpack: the typemap's blocks copied one by one, MPI's serial
            unpack); the unpack time counts against the GEMM.
Every message is checked byte for byte (the whole slot, gaps included)
against ddt.unpack of the stream the sender sent.

Seed 000's Simple type unpacks packet-level (any order, window auto). Its
Complex type overlaps itself, so the offload run uses message-level mode and
the window of 1 packet that FPsPIN used.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import pathlib
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import ddt  # noqa: E402

SLOTS = 16  # slmp.h SLMP_SLOTS: at most this many messages per run (no slot reuse)
FILL = 0xA5
# Control block in shared memory, u32 words: NIC state, notes posted, then
# (msg_id, length, slot) per note; the host sets STOP.
C_STATE, C_NOTES, C_STOP, C_REC = 0, 1, 2, 4
ST_READY, ST_FAILED = 1, 2


def nic_process(a, kind, shm_win, shm_ctl, result_q):
    """The NIC: the engine on the interface, handler DMA into shared memory.
    Posts each completion as a record the host polls."""
    import numpy as np
    from multiprocessing import shared_memory

    import softspin
    if a["nic_cpus"]:
        os.sched_setaffinity(0, a["nic_cpus"])
    win = shared_memory.SharedMemory(name=shm_win)
    ctl = shared_memory.SharedMemory(name=shm_ctl)
    c = np.ndarray((C_REC + 3 * SLOTS,), np.uint32, buffer=ctl.buf)
    buf = np.ndarray((win.size,), np.uint8, buffer=win.buf)
    try:
        nic = softspin.Nic.attach(a["iface"], mode="xdp", wait_timeout=0.05)
        src = HERE / "handler.c" if kind == "offload" else ROOT / "examples/slmp_recv/handler.c"
        img = nic.load_image(softspin.build(src, pathlib.Path(a["tmp"]) / f"{kind}.elf", profile="fpspin"))
        hw = nic.lend(buf)
        e = nic.install(img, ph="slmp_ddt_ph" if kind == "offload" else "slmp_ph", host_window=hw,
                        match=[f"udp:{a['port']}"])  # each segment its own engine message (as slmp recv)
        nic.nic_write(img.symbol("slmp_config"), struct.pack("<II", a["segment"], a["stride"]))
        if kind == "offload":
            nic.nic_write(img.symbol("ddt_desc"), bytes.fromhex(a["desc"]))
            nic.nic_write(img.symbol("ddt_mode"), struct.pack("<I", a["mode"]))
        nic.activate(e)
        c[C_STATE] = ST_READY
        deadline = time.monotonic() + a["timeout"]
        while not c[C_STOP] and time.monotonic() < deadline:
            for n in nic.wait_notifications():
                i = int(c[C_NOTES])
                if i < SLOTS:
                    c[C_REC + 3 * i:C_REC + 3 * i + 3] = struct.unpack("<III", n.data[:12])
                    c[C_NOTES] = i + 1  # after the record: the host reads the count first
        result_q.put({"counters": {i: [s, n] for i, s, n in nic.counters(e)}, "live": nic.live_stats(),
                      "errors": nic.report()["errors"]})
    except Exception as ex:  # the host reports it; never leave it waiting
        c[C_STATE] = ST_FAILED
        result_q.put({"error": f"{type(ex).__name__}: {ex}"})
    finally:
        del c, buf
        win.close()
        ctl.close()


def sender_main(a):
    """The sender side (run in the peer namespace): the messages in DIR as
    SLMP, ids from 1 (or only message --only); prints the statistics as JSON."""
    import softspin
    files = sorted(pathlib.Path(a.send).glob("msg-*.bin"))
    first = 1
    if a.only:
        files, first = files[a.only - 1:a.only], a.only
    msgs = [f.read_bytes() for f in files]
    st = softspin.slmp_send(a.to, msgs, window=a.window, sync="all", segment=a.segment, give_up_s=20.0,
                            first_msg_id=first)
    print(json.dumps({k: st[k] for k in ("retransmitted", "goodput_bps") if k in st}))


def cpu_times():
    """Per-CPU jiffies from /proc/stat: user, system, softirq, idle, other."""
    out = {}
    for line in pathlib.Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0].startswith("cpu") and f[0] != "cpu":
            v = list(map(int, f[1:]))
            user, nice, system, idle, iowait, irq, softirq = v[:7]
            out[f[0]] = {"user": user + nice, "system": system, "softirq": softirq + irq, "idle": idle + iowait,
                         "other": sum(v[7:])}
    return out


def gemm_setup(dim):
    import numpy as np
    rng = np.random.default_rng(1)
    return rng.random((dim, dim)), rng.random((dim, dim)), np.zeros((dim, dim))


def gemm_alone(mats, n):
    import numpy as np
    a, b, c = mats
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        ts.append(time.perf_counter() - t)
    return ts


def run(a, kind, t, streams, mats):
    """One run: NIC process up, RTS (start the sender), GEMM + rare polls
    until every message is complete; then verify. Returns the figures."""
    import numpy as np
    from multiprocessing import shared_memory

    k = len(streams)
    extent = t.extent if kind == "offload" else t.size
    stride = (max(extent, 4096) + 4095) // 4096 * 4096
    win = shared_memory.SharedMemory(create=True, size=SLOTS * stride)
    ctl = shared_memory.SharedMemory(create=True, size=4 * (C_REC + 3 * SLOTS))
    buf = np.ndarray((win.size,), np.uint8, buffer=win.buf)
    c = np.ndarray((C_REC + 3 * SLOTS,), np.uint32, buffer=ctl.buf)
    buf[:] = FILL
    c[:] = 0
    mode = 1 if (kind == "offload" and ddt.overlaps(t)) else 0
    window = "1" if mode == 1 else a.window
    args = {"iface": a.iface, "port": a.port, "segment": a.segment, "stride": stride, "desc": t.serialise().hex(),
            "mode": mode, "tmp": a.tmp, "timeout": a.timeout, "nic_cpus": a.nic_cpus}
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=nic_process, args=(args, kind, win.name, ctl.name, q))
    p.start()
    out = {"run": kind, "mode": ["packet", "message"][mode], "window": window}
    senders, notes = [], None
    try:
        t0 = time.monotonic()
        while c[C_STATE] == 0 and time.monotonic() - t0 < 120 and p.is_alive():
            time.sleep(0.01)
        if c[C_STATE] != ST_READY:
            raise RuntimeError(f"NIC process did not start: {q.get(timeout=5) if not q.empty() else 'no report'}")
        taskset = ["taskset", "-c", ",".join(map(str, a.nic_cpus))] if a.nic_cpus else []
        cmd = taskset + ["ip", "netns", "exec", a.peer_ns, sys.executable, str(pathlib.Path(__file__).resolve()),
                         "--send", a.tmp, "--to", a.to, "--window", window, "--segment", str(a.segment)]
        # Message-level mode: one sender per message, each with window 1, in
        # parallel (seed 000's message-level parallelism); else one sender.
        cmds = [cmd + ["--only", str(m)] for m in range(1, k + 1)] if mode == 1 else [cmd]
        # RTS: the senders start now; so does the clock (seed 000 §6.3.2).
        cpu0 = cpu_times()
        rts = time.perf_counter()
        senders = [subprocess.Popen(c_, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c_ in cmds]
        t_gemm = t_poll = t_unpack = 0.0
        gemm_times, poll_times, seen, done_at = [], [], 0, None
        unpacked = {}
        plan = ddt.pieces(t)
        notes = ctl.buf.cast("I")  # a plain memoryview: cheaper to read than a NumPy scalar
        while seen < k:
            g = time.perf_counter()
            np.matmul(mats[0], mats[1], out=mats[2])
            p0 = time.perf_counter()
            gemm_times.append(p0 - g)
            t_gemm += p0 - g
            n = notes[C_NOTES]  # the poll: one read of host memory
            new = list(range(seen, n))
            seen = n
            p1 = time.perf_counter()
            t_poll += p1 - p0
            poll_times.append(p1 - p0)
            for i in new:
                msg_id, length, slot = (int(x) for x in c[C_REC + 3 * i:C_REC + 3 * i + 3])
                if kind == "baseline":
                    # No offload: the host unpacks the packed stream itself.
                    dst = bytearray([FILL]) * stride
                    ddt.unpack(t, buf[slot * stride:slot * stride + length], dst, plan)
                    unpacked[msg_id] = dst
            t_unpack += time.perf_counter() - p1
            if n >= k:
                done_at = time.perf_counter()
            if time.perf_counter() - rts > a.timeout:
                raise RuntimeError(f"{seen} of {k} messages after {a.timeout} s")
            for sp in senders:
                if sp.poll() not in (None, 0):
                    raise RuntimeError(f"sender failed: {sp.stderr.read()[-2000:]}")
        elapsed = done_at - rts
        cpu1 = cpu_times()
        out["cpu_share"] = {cpu: {k: round((cpu1[cpu][k] - cpu0[cpu][k]) / max(1e-9, sum(cpu1[cpu].values()) - sum(
            cpu0[cpu].values())), 3) for k in cpu0[cpu]} for cpu in cpu0}
        souts = [sp.communicate(timeout=60)[0] for sp in senders]
        c[C_STOP] = 1
        rep = q.get(timeout=30)
        p.join(timeout=30)
        if "error" in rep:
            raise RuntimeError(rep["error"])
        # Verify: every slot byte against the reference unpack of what was sent.
        bad = []
        for m, s in enumerate(streams, start=1):
            slot = m % SLOTS
            want = bytes(ddt.unpack(t, s, bytearray([FILL]) * stride, plan))
            got = bytes(unpacked[m]) if kind == "baseline" else bytes(buf[slot * stride:(slot + 1) * stride])
            if kind == "baseline" and bytes(buf[slot * stride:slot * stride + len(s)]) != s:
                bad.append(m)
            if got != want:
                bad.append(m)
        nbytes = sum(len(s) for s in streams)
        out.update({
            "messages": k, "bytes": nbytes, "verified": not bad, "bad_messages": sorted(set(bad)),
            "elapsed_s": elapsed, "goodput_mbps": nbytes * 8 / elapsed / 1e6,
            "gemm_calls": len(gemm_times), "t_gemm_s": t_gemm, "t_poll_s": t_poll, "t_unpack_s": t_unpack,
            "overlap_ratio": t_gemm / (t_gemm + t_poll + t_unpack),
            "gemm_ms_median": statistics.median(gemm_times) * 1e3,
            "poll_us_median": statistics.median(poll_times) * 1e6, "poll_us_max": max(poll_times) * 1e6,
            "unpack_mbps": nbytes * 8 / t_unpack / 1e6 if kind == "baseline" and t_unpack > 0 else None,
            "senders": [json.loads(o.strip().splitlines()[-1]) if o.strip() else None for o in souts],
            "nic_counters": rep["counters"], "nic_errors": rep["errors"], "live": rep["live"],
        })
        return out
    finally:
        c[C_STOP] = 1
        for sp in senders:
            if sp.poll() is None:
                sp.kill()
                sp.wait()
        if p.is_alive():
            p.join(timeout=10)
        if p.is_alive():
            p.kill()
        if notes is not None:
            notes.release()
        del buf, c
        win.close()
        win.unlink()
        ctl.close()
        ctl.unlink()


TYPES = {"simple": ddt.SIMPLE, "complex": ddt.COMPLEX}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iface", help="the NIC's interface (netns.sh: PREFIX0)")
    ap.add_argument("--peer-ns", default="sspeer", help="the sender's namespace (netns.sh: PREFIXpeer)")
    ap.add_argument("--to", default="10.77.0.1", help="the NIC's address, as the sender sees it")
    ap.add_argument("--port", type=int, default=9330)
    ap.add_argument("--type", choices=sorted(TYPES) + ["both"], default="both", help="seed 000 Fig. 6.5's datatypes")
    ap.add_argument("--elements", type=int, default=20, help="elements per message (20: 2160 KB, seed 000 Fig. 6.8)")
    ap.add_argument("--messages", type=int, default=8, help=f"messages per run, 1..{SLOTS - 1}")
    ap.add_argument("--dim", type=int, default=384, help="GEMM matrix dimension (one call ~5 ms here)")
    ap.add_argument("--window", default="auto", help="sender window for packet-level runs")
    ap.add_argument("--segment", type=int, default=1462)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repetitions (medians reported)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the host to CPU 0 and NIC + sender to the others")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--send", help=argparse.SUPPRESS)  # internal: be the sender
    ap.add_argument("--only", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.send:
        return sender_main(a)
    if not a.iface:
        ap.error("--iface is required")
    if not 1 <= a.messages < SLOTS:
        ap.error(f"--messages {a.messages}: 1..{SLOTS - 1} (one slot each, ids from 1)")
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")
    if a.elements < 1:
        ap.error("--elements must be >= 1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The NIC is a software model here, not a device: give it (and the
    # sender, the "network") their own CPU, and the host's GEMM the other.
    cpus = sorted(os.sched_getaffinity(0))
    a.nic_cpus = [] if a.no_pin or len(cpus) < 2 else cpus[1:]
    if a.nic_cpus:
        os.sched_setaffinity(0, cpus[:1])
    mats = gemm_setup(a.dim)
    gemm_alone(mats, 3)
    rows = []
    with tempfile.TemporaryDirectory(prefix="slmp_ddt-") as tmp:
        os.chmod(tmp, 0o755)
        work = []
        for name in (sorted(TYPES) if a.type == "both" else [a.type]):
            t = ddt.message(a.elements, TYPES[name])
            rng = random.Random(12)
            streams = [rng.randbytes(t.size) for _ in range(a.messages)]
            d = pathlib.Path(tmp, name)
            d.mkdir()
            os.chmod(d, 0o755)
            for m, s in enumerate(streams, start=1):
                (d / f"msg-{m:04d}.bin").write_bytes(s)
            work.append((name, t, streams, str(d)))
        # Interleaved repetitions: the machine is shared, medians tell more.
        for rep in range(a.repeat):
            for name, t, streams, d in work:
                for kind in ("offload", "baseline"):
                    a.tmp = d
                    ref = gemm_alone(mats, 40)
                    r = run(a, kind, t, streams, mats)
                    r.update(type=name, rep=rep, gemm_ms_alone=statistics.median(ref) * 1e3)
                    r["gemm_slowdown"] = r["gemm_ms_median"] / r["gemm_ms_alone"] - 1
                    rows.append(r)
    ok = all(r["verified"] for r in rows)
    keys = ("goodput_mbps", "overlap_ratio", "gemm_ms_median", "gemm_ms_alone", "gemm_slowdown", "poll_us_median",
            "unpack_mbps")
    summary = []
    for name, *_ in work:
        for kind in ("offload", "baseline"):
            rs = [r for r in rows if r["type"] == name and r["run"] == kind]
            med = {k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else None for k in keys}
            summary.append({"type": name, "run": kind, "mode": rs[0]["mode"], "window": rs[0]["window"],
                            "bytes": rs[0]["bytes"], "verified": all(r["verified"] for r in rs), "n": len(rs), **med})
    if a.json:
        print(json.dumps({"ok": ok, "dim": a.dim, "elements": a.elements, "messages": a.messages, "summary": summary,
                          "runs": rows}, indent=1))
    else:
        print(f"slmp_ddt live: {a.messages} messages x {a.elements} elements, GEMM {a.dim}^3 (OpenBLAS, 1 thread), "
              f"medians of {a.repeat} interleaved runs")
        hdr = ("type", "run", "mode", "win", "MB", "verified", "Mbit/s", "overlap", "GEMM ms", "alone ms", "slow-down",
               "poll us", "unpack Mbit/s")
        print("  ".join(f"{h:>9}" for h in hdr))
        for r in summary:
            cells = (r["type"], r["run"], r["mode"], r["window"], f"{r['bytes'] / 1e6:.1f}", str(r["verified"]),
                     f"{r['goodput_mbps']:.0f}", f"{100 * r['overlap_ratio']:.2f}%", f"{r['gemm_ms_median']:.2f}",
                     f"{r['gemm_ms_alone']:.2f}", f"{100 * r['gemm_slowdown']:+.0f}%", f"{r['poll_us_median']:.0f}",
                     f"{r['unpack_mbps']:.0f}" if r["unpack_mbps"] else "-")
            print("  ".join(f"{x:>9}" for x in cells))
        print("seed 000: overlap > 99 %, GEMM slow-down 20-30 %; Simple 1162 Mbit/s, Complex 801 Mbit/s (16 HPUs)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
