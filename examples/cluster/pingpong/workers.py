"""Workers of the pingpong use case (run inside a node's namespace by
common.Cluster.worker as "pingpong/ROLE"; each returns one JSON-able dict)."""
import socket
import time

from common import (BASELINE_PORT, BYE, HDR, MAX_TRIES, ROUND_TIMEOUT_S, UC, bye, client_mem, packets,
                    recv_message, udp_socket, wait_u64, with_retries)



def w_pinger(a: dict) -> dict:
    """Offload ping-pong: send the ping to node `to`'s NIC; the pong lands in
    this node's host memory (device, host) or comes back as datagrams (stream)."""
    import numpy as np
    rng = np.random.default_rng(a["seed"])
    mode = {"device": UC["UC_MODE_DEVICE"], "host": UC["UC_MODE_HOST"], "stream": UC["UC_MODE_STREAM"]}[a["mode"]]
    c, mem = client_mem(a["control"])
    s = udp_socket()
    dst = (a["ip"], UC["UC_PORT"])
    size, seq = a["size"], a["seq"]
    lat, errors, retries, ok = [], [], 0, True

    def ping(seq, data):
        """One try: (the pong, ns), or None."""
        mem[UC["UC_PONG"]:UC["UC_PONG"] + size] = 0
        pkts = packets(data, seq, a["from"], mode)
        t0 = time.perf_counter_ns()
        for p in pkts:
            s.sendto(p, dst)
        if mode == UC["UC_MODE_STREAM"]:
            pong, _ = recv_message(s, seq, size, ROUND_TIMEOUT_S)
            return None if pong is None else (pong, time.perf_counter_ns() - t0)
        if wait_u64(mem, UC["UC_DONE"], seq, ROUND_TIMEOUT_S):
            t1 = time.perf_counter_ns()
            return mem[UC["UC_PONG"]:UC["UC_PONG"] + size].tobytes(), t1 - t0
        return None

    for _ in range(a["rounds"]):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        got, failed, seq = with_retries(ping, seq, data)
        retries += failed
        if got is None:
            ok = False
            errors.append(f"no pong after {MAX_TRIES} tries (seq {seq})")
            continue
        pong, ns = got
        lat.append(ns)
        ref = bytearray(data)
        if a["sabotage"]:
            ref[len(ref) // 2] ^= 0x01
        if pong != bytes(ref):
            ok = False
            bad = next(i for i in range(size) if pong[i] != ref[i])
            errors.append(f"pong byte {bad} is {pong[bad]}, the ping's {ref[bad]}")
    c.close()
    return {"from": a["from"], "to": a["to"], "lat_ns": lat, "verified": ok, "retries": retries,
            "errors": errors}


def w_echo_server(a: dict) -> dict:
    """Baseline ping-pong peer: receive each whole message on a kernel
    socket, then send it back (the host CPU does what the handlers did)."""
    s = udp_socket(BASELINE_PORT)
    print("ready", flush=True)
    served, deadline = 0, time.perf_counter() + a["idle_s"]
    msgs: dict[int, dict] = {}
    while served < a["messages"] and time.perf_counter() < deadline:
        s.settimeout(max(0.01, deadline - time.perf_counter()))
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            break
        if d == BYE:
            break
        magic, _msg, _fl, seq, total, off, _src, _mode = HDR.unpack_from(d)
        if magic != UC["UC_MAGIC"]:
            continue
        m = msgs.setdefault(seq, {"got": 0, "parts": {}})
        if off not in m["parts"]:
            m["parts"][off] = d
            m["got"] += len(d) - HDR.size
        if m["got"] == total:
            for o in sorted(m["parts"]):
                s.sendto(m["parts"][o], peer)
            del msgs[seq]
            served += 1
            deadline = time.perf_counter() + a["idle_s"]
    return {"served": served}


def w_pinger_baseline(a: dict) -> dict:
    import numpy as np
    rng = np.random.default_rng(a["seed"])
    s = udp_socket()
    dst = (a["ip"], BASELINE_PORT)
    size, seq = a["size"], a["seq"]
    lat, errors, retries, ok = [], [], 0, True

    def ping(seq, data):
        """One try: (the echo, ns), or None."""
        t0 = time.perf_counter_ns()
        for p in packets(data, seq, a["from"], 0):
            s.sendto(p, dst)
        pong, _ = recv_message(s, seq, size, ROUND_TIMEOUT_S)
        return None if pong is None else (pong, time.perf_counter_ns() - t0)

    for _ in range(a["rounds"]):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        got, failed, seq = with_retries(ping, seq, data)
        retries += failed
        if got is None:
            ok = False
            errors.append(f"no echo after {MAX_TRIES} tries")
            continue
        pong, ns = got
        lat.append(ns)
        if pong != data:
            ok = False
            errors.append("the echo differs from the ping")
    bye(s, dst)
    return {"from": a["from"], "to": a["to"], "lat_ns": lat, "verified": ok, "retries": retries,
            "errors": errors}


WORKERS = {"pinger": w_pinger, "echo-server": w_echo_server, "pinger-baseline": w_pinger_baseline}
