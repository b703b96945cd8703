"""Workers of the accumulate use case (run inside a node's namespace by
common.Cluster.worker as "accumulate/ROLE"; each returns one JSON-able dict)."""
import socket
import struct
import time
from pathlib import Path

from common import (BASELINE_PORT, BYE, HDR, MAX_TRIES, ROUND_TIMEOUT_S, UC, bye, client_mem, packets,
                    udp_socket, wait_u64, with_retries)



def complex_product(d, s):
    """dst * src element-wise in float64, in the handler's order (re = dr sr
    - di si, im = dr si + di sr), each operation rounded (no fused
    multiply-add), as the HPUs' IEEE soft-float does."""
    import numpy as np
    out = np.empty_like(d)
    out.real = d.real * s.real - d.imag * s.imag
    out.imag = d.real * s.imag + d.imag * s.real
    return out


def _arrays(rng, n: int):
    import numpy as np
    # Mixed magnitudes and signs, zeros: products that round.
    d = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)) + 1j * rng.standard_normal(n)
    s = rng.standard_normal(n) + 1j * (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n))
    d[:: 17] = 0
    return d.astype(np.complex128), s.astype(np.complex128)


def _check_product(res, ref, sabotage: bool) -> str | None:
    import numpy as np
    if sabotage:
        ref = ref.copy()
        ref.view(np.uint64)[len(ref)] ^= 1  # the middle element's real part, one bit
    if res.shape != ref.shape:
        return f"{res.size} elements, {ref.size} expected"
    a, b = res.view(np.uint64), ref.view(np.uint64)
    if np.array_equal(a, b):
        return None
    i = int(np.flatnonzero(a != b)[0]) // 2
    return f"element {i} is {res[i]!r}, NumPy's {ref[i]!r}"


def w_acc_sender(a: dict) -> dict:
    """Offload accumulate: set the destination's array (its host memory,
    through its NicClient), send ours; the destination's completion handler
    puts the round's seq into our UC_DONE; then check its array."""
    import numpy as np
    rng = np.random.default_rng(a["seed"])
    c, mem = client_mem(a["control"])
    dc, dmem = client_mem(a["dst_control"])
    s = udp_socket()
    dst = (a["ip"], UC["UC_PORT"])
    n, seq = a["size"] // 16, a["seq"]
    rx = UC["UC_RX"]
    lat, errors, retries, ok = [], [], 0, True

    def accumulate(seq, d, src):
        """One try: ns until the completion, or None."""
        dmem[rx:rx + n * 16] = np.frombuffer(d.tobytes(), np.uint8)  # the destination's array, afresh
        t0 = time.perf_counter_ns()
        for p in packets(src.tobytes(), seq, a["from"], UC["UC_MODE_ACC"]):
            s.sendto(p, dst)
        if wait_u64(mem, UC["UC_DONE"], seq, ROUND_TIMEOUT_S):
            return time.perf_counter_ns() - t0
        return None

    for _ in range(a["rounds"]):
        d, src = _arrays(rng, n)
        ns, failed, seq = with_retries(accumulate, seq, d, src)
        retries += failed
        if ns is None:
            ok = False
            errors.append(f"no completion after {MAX_TRIES} tries")
            continue
        lat.append(ns)
        res = np.frombuffer(dmem[rx:rx + n * 16].tobytes(), np.complex128)
        err = _check_product(res, complex_product(d, src), a["sabotage"])
        if err:
            ok = False
            errors.append(err)
    c.close()
    dc.close()
    return {"from": a["from"], "to": a["to"], "lat_ns": lat, "verified": ok, "retries": retries,
            "errors": errors}


def w_acc_server(a: dict) -> dict:
    """Baseline accumulate destination: receive the whole array on a kernel
    socket, multiply it into this host's array with NumPy, answer `done`;
    each round's result goes to a file for the sender's check."""
    import numpy as np
    s = udp_socket(BASELINE_PORT)
    print("ready", flush=True)
    served, results, dst = 0, [], None
    while served < a["messages"]:
        s.settimeout(a["idle_s"])
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            break
        if d == BYE:
            break
        if d[:4] == b"INIB":  # this host's array, before each round (not timed): offset, total, bytes
            off = struct.unpack_from("<I", d, 4)[0]
            if off == 0:
                dst = np.zeros(struct.unpack_from("<I", d, 8)[0] // 16, np.complex128)
            dst.view(np.uint8)[off:off + len(d) - 12] = np.frombuffer(d[12:], np.uint8)
            s.sendto(b"OK", peer)
            continue
        magic, _msg, _fl, seq, total, off, _src, _mode = HDR.unpack_from(d)
        if magic != UC["UC_MAGIC"] or dst is None or total != dst.nbytes:
            continue
        m = results[-1] if results and results[-1]["seq"] == seq else None
        if m is None:
            m = {"seq": seq, "buf": bytearray(total), "got": 0, "seen": set()}
            results.append(m)
        if off in m["seen"]:
            continue
        m["seen"].add(off)
        body = d[HDR.size:]
        m["buf"][off:off + len(body)] = body
        m["got"] += len(body)
        if m["got"] == total:
            srcv = np.frombuffer(bytes(m["buf"]), np.complex128)
            dst[:] = complex_product(dst, srcv)
            # For the sender's check; before `done`, so it reads this round's.
            Path(a["out"]).write_bytes(dst.tobytes())
            s.sendto(struct.pack(">4sI", b"DONE", seq), peer)
            served += 1
    return {"served": served}


def w_acc_sender_baseline(a: dict) -> dict:
    import numpy as np
    rng = np.random.default_rng(a["seed"])
    s = udp_socket()
    dst = (a["ip"], BASELINE_PORT)
    n, seq = a["size"] // 16, a["seq"]
    lat, errors, retries, ok = [], [], 0, True

    def accumulate(seq, src):
        """One try: ns until the server's DONE for `seq`, or None."""
        t0 = time.perf_counter_ns()
        for p in packets(src.tobytes(), seq, a["from"], UC["UC_MODE_ACC"]):
            s.sendto(p, dst)
        end = time.perf_counter() + ROUND_TIMEOUT_S
        while time.perf_counter() < end:
            s.settimeout(max(0.001, end - time.perf_counter()))
            try:
                r = s.recvfrom(16)[0]
            except socket.timeout:
                return None
            if r == struct.pack(">4sI", b"DONE", seq):
                return time.perf_counter_ns() - t0
        return None

    for _ in range(a["rounds"]):
        d, src = _arrays(rng, n)
        raw = d.tobytes()
        for off in range(0, len(raw), 1400):  # the destination's array (not timed)
            for _try in range(MAX_TRIES):
                s.sendto(b"INIB" + struct.pack("<II", off, len(raw)) + raw[off:off + 1400], dst)
                s.settimeout(ROUND_TIMEOUT_S)
                try:
                    if s.recvfrom(16)[0] == b"OK":
                        break
                except socket.timeout:
                    continue
        ns, failed, seq = with_retries(accumulate, seq, src)
        retries += failed
        if ns is None:
            ok = False
            errors.append(f"no completion after {MAX_TRIES} tries")
            continue
        lat.append(ns)
        res = np.frombuffer(Path(a["out"]).read_bytes(), np.complex128)
        err = _check_product(res, complex_product(d, src), a["sabotage"])
        if err:
            ok = False
            errors.append(err)
    bye(s, dst)
    return {"from": a["from"], "to": a["to"], "lat_ns": lat, "verified": ok, "retries": retries,
            "errors": errors}


WORKERS = {"sender": w_acc_sender, "server": w_acc_server, "sender-baseline": w_acc_sender_baseline}
