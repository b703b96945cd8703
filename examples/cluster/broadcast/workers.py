"""Workers of the broadcast use case (run inside a node's namespace by
common.Cluster.worker as "broadcast/ROLE"; each returns one JSON-able dict).

`root` (rank 0) sends the message to its children in the binomial tree
and waits until every node has all of it; `relay` is a non-root node's
host process in the host-CPU baseline. The tree is broadcast.h's,
computed here again for the hosts' side.
"""
import os
import socket
import struct
import time
from pathlib import Path

from common import (BASELINE_PORT, BYE, HDR, MAX_TRIES, UC, bye, client_mem, defines, packets, set_u64, u64,
                    udp_socket)

BC = defines(Path(__file__).resolve().parent / "broadcast.h")
ROOT = BC["UC_BC_ROOT"]
MODES = {"store": UC["UC_MODE_BC_STORE"], "stream": UC["UC_MODE_BC_STREAM"]}
# A round not complete at every node within this is sent again: a tree of
# 16 interpreted NICs on two cores forwards 64 KiB in well under a second.
ROUND_TIMEOUT_S = 3.0
SRC_OFF = 22  # the source rank's offset in the header (HDR: magic, msg, flags, seq, total, offset, src)
assert struct.calcsize(">HIIIII") == SRC_OFF
# Sent by the root to every node's kernel (no one listens there): the
# answers (ICMP port unreachable) teach the bridge every node's MAC, so
# it stops flooding frames to nodes that never sent one (broadcast.h).
ANNOUNCE_PORT = BASELINE_PORT + 1


def bc_parent(r: int) -> int:
    """Rank r's parent (r > 0): r without its highest set bit."""
    return r - (1 << (r.bit_length() - 1))


def bc_children(r: int, n: int) -> list[int]:
    """Rank r's children among n nodes, largest subtree first: r + 2^k for
    2^k > r, smallest k first (child r + 2^k heads ~n / 2^(k+1) nodes)."""
    out, b = [], 1
    while b <= r:
        b <<= 1
    while r + b < n:
        out.append(r + b)
        b <<= 1
    return out


def to_child(d: bytes, src: int, child: int) -> bytes:
    """Datagram `d` as `src` sends it to `child`: the message id names the
    child (broadcast.h), the source rank is `src`."""
    seq = HDR.unpack_from(d)[3]
    msg = UC["UC_MSG_BIT"] | child << BC["UC_BC_RANK_SHIFT"] | (seq & BC["UC_BC_SEQ_MASK"])
    return d[:2] + struct.pack(">I", msg) + d[6:SRC_OFF] + struct.pack(">H", src) + d[SRC_OFF + 2:]


def for_children(pkts: list[bytes], src: int, dsts: list[tuple[int, tuple]]) -> list[tuple[tuple, list[bytes]]]:
    """Node `src`'s datagrams for each of its children (rank, address)."""
    return [(addr, [to_child(p, src, c) for p in pkts]) for c, addr in dsts]


def send_message(s: socket.socket, per_child: list[tuple[tuple, list[bytes]]], stream: bool) -> None:
    """A node's sends to its children: the whole message per child (store),
    or each packet to every child before the next (stream)."""
    if stream:
        for i in range(len(per_child[0][1]) if per_child else 0):
            for addr, ps in per_child:
                s.sendto(ps[i], addr)
    else:
        for addr, ps in per_child:
            for p in ps:
                s.sendto(p, addr)


def w_root(a: dict) -> dict:
    """Rank 0: each round, fresh random bytes into its own UC_RX, every other
    node's UC_RX cleared, the message sent to its children (to their NICs,
    or with `baseline` to their host processes); then it polls every node's
    UC_DONE (each node's shm window, as that node's host would poll its own)
    until all show the round's seq, and compares every node's bytes with
    the reference."""
    import numpy as np
    rng = np.random.default_rng(a["seed"])
    n, size, seq, stream = len(a["ips"]), a["size"], a["seq"], a["mode"] == "stream"
    port = BASELINE_PORT if a["baseline"] else UC["UC_PORT"]
    mode = MODES[a["mode"]]
    clients = [client_mem(p) for p in a["controls"]]
    mems = [m for _, m in clients]
    rx = slice(UC["UC_RX"], UC["UC_RX"] + size)
    dsts = [(c, (a["ips"][c], port)) for c in bc_children(ROOT, n)]
    s = udp_socket()
    for r, ip in enumerate(a["ips"]):
        if r != ROOT:
            s.sendto(b"", (ip, ANNOUNCE_PORT))
    time.sleep(0.05)
    lat, errors, retries, ok = [], [], 0, True
    node_ok = [True] * n
    # Round 0 warms up (ARP, the bridge, the NICs' first messages): checked, not timed.
    for rnd in range(a["rounds"] + 1):
        data = rng.integers(0, 256, size, dtype=np.uint8)
        mems[ROOT][rx] = data
        for _try in range(MAX_TRIES):
            seq += 1
            for r in range(n):
                if r != ROOT:
                    mems[r][rx] = 0
            per_child = for_children(packets(data.tobytes(), seq, ROOT, mode), ROOT, dsts)
            pending = [r for r in range(n) if r != ROOT]
            t0 = time.perf_counter_ns()
            send_message(s, per_child, stream)
            end = time.perf_counter() + ROUND_TIMEOUT_S
            while pending and time.perf_counter() < end:
                pending = [r for r in pending if u64(mems[r], UC["UC_DONE"]) != seq]
                os.sched_yield()  # two cores, shared with every node's NIC
            t1 = time.perf_counter_ns()
            if not pending:
                break
            retries += 1
        else:
            ok = False
            errors.append(f"nodes {pending} incomplete after {MAX_TRIES} tries (seq {seq})")
            continue
        if rnd:
            lat.append(t1 - t0)
        ref = bytearray(data.tobytes())  # the reference: the bytes generated above, not the root's memory
        if a["sabotage"]:
            ref[len(ref) // 2] ^= 0x01
        ref = np.frombuffer(bytes(ref), dtype=np.uint8)
        for r in range(n):
            got = mems[r][rx]
            bad = np.flatnonzero(got != ref)
            if bad.size:
                ok = node_ok[r] = False
                errors.append(f"node {r} byte {bad[0]} is {got[bad[0]]}, the root's {ref[bad[0]]}")
    for c, _ in clients:
        c.close()
    if a["baseline"]:
        for d in [(ip, BASELINE_PORT) for r, ip in enumerate(a["ips"]) if r != ROOT]:
            bye(s, d)
    return {"from": ROOT, "to": [r for r in range(n) if r != ROOT], "lat_ns": lat, "verified": ok,
            "retries": retries, "errors": errors, "nodes_verified": node_ok}


def w_relay(a: dict) -> dict:
    """Baseline: node `rank`'s host process. Receives the message from its
    parent on a kernel socket, forwards it to its children (each datagram as
    it arrives in stream mode, the whole message once complete in store
    mode), then puts it into its host memory (UC_RX, then UC_DONE = seq)."""
    import numpy as np
    rank, ips, stream = a["rank"], a["ips"], a["mode"] == "stream"
    parent, n = bc_parent(rank), len(ips)
    dsts = [(c, (ips[c], BASELINE_PORT)) for c in bc_children(rank, n)]
    c, mem = client_mem(a["control"])
    s = udp_socket(BASELINE_PORT)
    print("ready", flush=True)
    served, dropped = 0, 0
    msgs: dict[int, dict] = {}
    deadline = time.perf_counter() + a["idle_s"]
    while time.perf_counter() < deadline:
        s.settimeout(max(0.01, deadline - time.perf_counter()))
        try:
            d, _ = s.recvfrom(65536)
        except socket.timeout:
            break
        if d == BYE:
            break
        if len(d) <= HDR.size:
            dropped += 1
            continue
        magic, _msg, _fl, seq, total, off, src, _mode = HDR.unpack_from(d)
        body = d[HDR.size:]
        if magic != UC["UC_MAGIC"] or src != parent or not 0 < total <= UC["UC_MAX_SIZE"] \
                or off + len(body) > total:
            dropped += 1
            continue
        m = msgs.setdefault(seq, {"got": 0, "parts": {}})
        if off in m["parts"]:
            continue
        m["parts"][off] = d
        m["got"] += len(body)
        if stream:
            send_message(s, for_children([d], rank, dsts), True)
        if m["got"] == total:
            parts = [m["parts"][o] for o in sorted(m["parts"])]
            msg = b"".join(p[HDR.size:] for p in parts)
            if not stream:  # the children first, as the NICs do
                send_message(s, for_children(parts, rank, dsts), False)
            mem[UC["UC_RX"]:UC["UC_RX"] + total] = np.frombuffer(msg, dtype=np.uint8)
            set_u64(mem, UC["UC_DONE"], seq)
            del msgs[seq]
            served += 1
        while len(msgs) > 64:  # rounds that never completed (lost datagrams)
            del msgs[min(msgs)]
        deadline = time.perf_counter() + a["idle_s"]
    c.close()
    return {"rank": rank, "served": served, "dropped": dropped}


def w_hostile(a: dict) -> dict:
    """The test's bad input at node `ips[to]`'s NIC (`to` > 0): broadcast
    packets from a rank that is not its parent, from an unknown rank, to the
    root; another use case's mode; a store message missing its middle; a
    repeated stream packet; a frame to another MAC; sizes too large;
    malformed datagrams. Returns
    how many of each kind it sent."""
    s = udp_socket()
    to, n = a["to"], len(a["ips"])
    dst, root = (a["ips"][to], UC["UC_PORT"]), (a["ips"][ROOT], UC["UC_PORT"])
    store, stream, chunk = MODES["store"], MODES["stream"], UC["UC_CHUNK"]
    not_parent = next(r for r in range(n) if r not in (to, bc_parent(to)))
    seq, sent = a["seq"], {"not_parent": 0, "bad_mode": 0, "incomplete": 0, "repeat": 0, "malformed": 0}

    def send(kind, pkts, d=dst):
        for p in pkts:
            s.sendto(p, d)
        sent[kind] += 1

    for src, d in ((not_parent, dst), (4000, dst), (to, root)):
        seq += 1
        send("not_parent", packets(bytes(100), seq, src, store), d)
    seq += 1
    send("bad_mode", packets(bytes(64), seq, bc_parent(to), UC["UC_MODE_DEVICE"]))
    seq += 1
    pk = packets(bytes(3 * chunk), seq, bc_parent(to), store)
    send("incomplete", [pk[0], pk[2]])
    seq += 1
    pk = packets(bytes(2 * chunk), seq, bc_parent(to), stream)
    send("repeat", [pk[0], pk[0], pk[1]])
    # To node `to`'s address but a MAC no node has: the bridge floods it to
    # every node (given `iface`, the sender's interface, and its `mac`).
    if a.get("iface"):
        import sys
        from common import REPO
        sys.path.insert(0, str(REPO / "tests" / "py"))
        from packets import PROTO_UDP, eth, ipv4, udp
        seq += 1
        body = packets(bytes(32), seq, bc_parent(to), store)[0]
        src_ip, dst_ip = socket.inet_aton(a["src_ip"]), socket.inet_aton(a["ips"][to])
        frame = eth(bytes.fromhex("02ff00000001"), bytes.fromhex(a["mac"].replace(":", "")),
                    ipv4(src_ip, dst_ip, PROTO_UDP, udp(src_ip, dst_ip, UC["UC_PORT"], UC["UC_PORT"], body)))
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind((a["iface"], 0))
            raw.send(frame)
        sent["not_mine"] = 1
    magic = UC["UC_MAGIC"]
    for d in (b"", b"UC", HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 8, 0, bc_parent(to), store),  # no data
              HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 2 * UC["UC_MAX_SIZE"], 0, bc_parent(to), store) + bytes(8),
              HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 4, 0, bc_parent(to), stream) + bytes(8),  # past total
              HDR.pack(magic ^ 1, UC["UC_MSG_BIT"], 1, 0, 8, 0, bc_parent(to), store) + bytes(8)):
        send("malformed", [d])
    return sent


WORKERS = {"root": w_root, "relay": w_relay, "hostile": w_hostile}
