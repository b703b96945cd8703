"""Workers of the matching use case (run inside a node's namespace by
common.Cluster.worker as "matching/ROLE"; each returns one JSON-able dict).

- `pair`: node `from` sends to node `to` through the NICs (mtapi.py), the
  receive posted before the send (`posted`) or after the message arrived
  (`unexpected`); wildcard source on odd rounds, wildcard tag every third.
- `server` / `client`: the host-CPU baseline, the same matching and
  rendezvous done by Python on kernel UDP sockets.
- `race`: posts against arrivals in every order between every pair of
  nodes, exact and wildcard receives, every buffer checked.
- `hostile`: malformed datagrams and a flood of unexpected messages;
  `drain` receives what the flood left.
"""
import random
import socket
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from mtapi import ANY, MT, Endpoint, MatchError, packet, rts  # noqa: E402

UNEXPECTED_WAIT_S = 0.2  # after a send: its message is at the NIC (or the baseline's host) before the post
TIMEOUT_S = 5.0


def _round(rng: random.Random, r: int, i: int, size: int) -> tuple[bytes, int, int, int]:
    """A round's message, its tag and the receive's source and tag (wildcards on some rounds)."""
    data = rng.randbytes(size)
    tag = rng.randrange(MT["UC_MT_TAG_MAX"] + 1)
    return data, tag, ANY if r % 2 else i, ANY if r % 3 == 2 else tag


def _check(got: bytes, data: bytes, res: dict, i: int, tag: int, sabotage: bool) -> str | None:
    ref = bytearray(data)
    if sabotage:
        ref[len(ref) // 2] ^= 1
    if (res["len"], res["src"], res["tag"]) != (len(data), i, tag):
        return f"completion says {res['len']} bytes from {res['src']} tag {res['tag']}, sent {len(data)} from {i} tag {tag}"
    if got != bytes(ref):
        k = next(x for x in range(len(ref)) if got[x] != ref[x])
        return f"byte {k} of {len(ref)} is {got[k]}, sent {ref[k]}"
    return None


def w_pair(a: dict) -> dict:
    rng = random.Random(a["seed"])
    i, j, size = a["from"], a["to"], a["size"]
    snd = Endpoint(a["control"], i, a["ips"], common.udp_socket())
    rcv = Endpoint(a["dst_control"], j, a["ips"])
    lat, errors, how = [], [], {}
    for r in range(a["rounds"]):
        data, tag, want_src, want_tag = _round(rng, r, i, size)
        buf = rcv.buffer(size)
        buf[:] = 0xA5  # not the data: a receive that writes nothing fails the check
        try:
            if a["mode"] == "posted":
                rq = rcv.irecv(want_src, want_tag, buf)
                t0 = time.perf_counter_ns()
                sd = snd.isend(j, tag, data)
            else:
                sd = snd.isend(j, tag, data)
                time.sleep(UNEXPECTED_WAIT_S)
                t0 = time.perf_counter_ns()
                rq = rcv.irecv(want_src, want_tag, buf)
            res = rq.wait(TIMEOUT_S)
            sd.wait(TIMEOUT_S)
        except MatchError as e:
            errors.append(str(e))
            continue
        lat.append(rq.t_done - t0)
        how[res["how"]] = how.get(res["how"], 0) + 1
        err = _check(buf.tobytes(), data, res, i, tag, a["sabotage"])
        if err is None and res["how"] != a["mode"]:
            err = f"round {r} matched as {res['how']}, the round was {a['mode']}"
        if err:
            errors.append(err)
    snd.close()
    rcv.close()
    return {"from": i, "to": j, "lat_ns": lat, "verified": not errors and bool(lat), "retries": 0,
            "errors": errors, "how": how}


# --- host-CPU baseline -----------------------------------------------------
# Datagrams besides the messages (uc.h's, as the NICs get them): P post
# (rid, src, tag, cap), K posted (rid), C clear to send (cookie), D data
# (cookie, offset) + bytes, F finished (rid, time ns, src, tag, len).
POST, CHUNK = struct.Struct("<cIIII"), 1400


def w_server(a: dict) -> dict:
    """The receiving host: posted list and unexpected queue in Python."""
    s = common.udp_socket(common.BASELINE_PORT)
    print("ready", flush=True)
    posted: list[tuple] = []      # (rid, src, tag, cap, peer), in post order
    unexpected: list[dict] = []   # in arrival order
    pulling: dict[tuple, dict] = {}  # (peer, cookie) -> rendezvous being received
    served = 0

    def finish(rid, m, data, peer):
        nonlocal served
        t = time.perf_counter_ns()
        Path(a["out"]).write_bytes(data)  # for the client's check, before F
        s.sendto(b"F" + struct.pack("<IQIII", rid, t, m["src"], m["tag"], len(data)), peer)
        served += 1

    def start(rid, m, peer):
        if m["kind"] == "eager":
            finish(rid, m, m["data"], peer)
        else:  # rendezvous: ask the sender for the data
            pulling[(m["from"], m["cookie"])] = {**m, "rid": rid, "buf": bytearray(m["len"]), "got": 0, "peer": peer}
            s.sendto(b"C" + struct.pack("<I", m["cookie"]), m["from"])

    while served < a["messages"]:
        s.settimeout(a["idle_s"])
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            break
        if d == common.BYE:
            break
        if d[:1] == b"P" and len(d) == POST.size:
            _, rid, src, tag, cap = POST.unpack(d)
            m = next((m for m in unexpected if (src in (ANY, m["src"])) and (tag in (ANY, m["tag"]))), None)
            s.sendto(b"K" + struct.pack("<I", rid), peer)
            if m:
                unexpected.remove(m)
                start(rid, m, peer)
            else:
                posted.append((rid, src, tag, cap, peer))
        elif d[:1] == b"D" and len(d) > 9:
            cookie, off = struct.unpack_from("<II", d, 1)
            p = pulling.get((peer, cookie))
            if p and off + len(d) - 9 <= p["len"]:
                p["buf"][off:off + len(d) - 9] = d[9:]
                p["got"] += len(d) - 9
                if p["got"] >= p["len"]:
                    del pulling[(peer, cookie)]
                    finish(p["rid"], p, bytes(p["buf"]), p["peer"])
        elif len(d) >= common.HDR.size:
            magic, _msg, flags, _seq, total, _off, src, mode = common.HDR.unpack_from(d)
            body = d[common.HDR.size:]
            if magic != MT["UC_MAGIC"] or mode not in (MT["UC_MODE_EAGER"], MT["UC_MODE_RNDV"]):
                continue
            m = {"src": src, "tag": flags >> MT["UC_MT_TAG_SHIFT"], "len": total, "from": peer}
            if mode == MT["UC_MODE_EAGER"]:
                m.update(kind="eager", data=body)
            else:
                m.update(kind="rndv", cookie=struct.unpack_from(">I", body, 4)[0])
            p = next((p for p in posted if p[1] in (ANY, m["src"]) and p[2] in (ANY, m["tag"])), None)
            if p:
                posted.remove(p)
                start(p[0], m, p[4])
            else:
                unexpected.append(m)
    return {"served": served}


def _expect(s: socket.socket, prefix: bytes, key: bytes, timeout: float) -> bytes | None:
    end = time.perf_counter() + timeout
    while (left := end - time.perf_counter()) > 0:
        s.settimeout(left)
        try:
            d = s.recvfrom(65536)[0]
        except socket.timeout:
            return None
        if d[:1] == prefix and d[1:1 + len(key)] == key:
            return d
    return None


def w_client(a: dict) -> dict:
    rng = random.Random(a["seed"])
    i, size = a["from"], a["size"]
    s = common.udp_socket()
    dst = (a["ip"], common.BASELINE_PORT)
    lat, errors = [], []
    for r in range(a["rounds"]):
        data, tag, want_src, want_tag = _round(rng, r, i, size)
        rid = a["seq"] + r
        eager = size <= MT["UC_MT_EAGER_MAX"]
        msg = packet(i, rid, tag, MT["UC_MODE_EAGER"], size, data) if eager else \
            packet(i, rid, tag, MT["UC_MODE_RNDV"], size, rts(0, rid))
        post = POST.pack(b"P", rid, want_src, want_tag, size)
        try:
            if a["mode"] == "posted":
                s.sendto(post, dst)
                if not _expect(s, b"K", struct.pack("<I", rid), TIMEOUT_S):
                    raise MatchError(f"round {r}: the post was not acknowledged")
                t0 = time.perf_counter_ns()
                s.sendto(msg, dst)
            else:
                s.sendto(msg, dst)
                time.sleep(UNEXPECTED_WAIT_S)
                t0 = time.perf_counter_ns()
                s.sendto(post, dst)
            if not eager:
                if not _expect(s, b"C", struct.pack("<I", rid), TIMEOUT_S):
                    raise MatchError(f"round {r}: no clear-to-send")
                for off in range(0, size, CHUNK):
                    s.sendto(b"D" + struct.pack("<II", rid, off) + data[off:off + CHUNK], dst)
            f = _expect(s, b"F", struct.pack("<I", rid), TIMEOUT_S)
            if not f:
                raise MatchError(f"round {r}: the receive did not complete")
        except MatchError as e:
            errors.append(str(e))
            continue
        _, t1, src, rtag, n = struct.unpack_from("<IQIII", f, 1)
        lat.append(t1 - t0)
        err = _check(Path(a["out"]).read_bytes(), data, {"len": n, "src": src, "tag": rtag}, i, tag, a["sabotage"])
        if err:
            errors.append(err)
    common.bye(s, dst)
    return {"from": i, "to": a["to"], "lat_ns": lat, "verified": not errors and bool(lat), "retries": 0,
            "errors": errors}


# --- tests' workers ----------------------------------------------------------


def _phase(eps, msgs, rng, stats) -> list[str]:
    """Post and send `msgs` (dst, src, tag, data, want_src, want_tag) in a
    random schedule, each message posted-first, unexpected-first or both at
    once; wait for all; check every buffer and that each message was
    received exactly once by a receive it matches."""
    events = []
    for n, m in enumerate(msgs):
        order, t = rng.choice(["posted", "unexpected", "together"]), rng.uniform(0, 0.03)
        d = {"posted": rng.uniform(0.005, 0.02), "unexpected": -rng.uniform(0.06, 0.1), "together": 0}[order]
        events += [(t, rng.random(), "post", n), (t + d, rng.random(), "send", n)]
    events.sort()
    t0, recvs, sends, errors = time.perf_counter(), {}, [], []
    base = min(e[0] for e in events)
    for t, _, what, n in events:
        while time.perf_counter() - t0 < t - base:
            pass
        dst, src, tag, data, ws, wt = msgs[n]
        if what == "post":
            cap = max(len(x[3]) for x in msgs if x[0] == dst)
            buf = eps[dst].buffer(cap)
            buf[:] = 0xA5
            recvs[n] = (eps[dst].irecv(ws, wt, buf), buf)
        else:
            sends.append(eps[src].isend(dst, tag, data))
    left = {n: m for n, m in enumerate(msgs)}
    for n, (rq, buf) in recvs.items():
        dst, _, _, _, ws, wt = msgs[n]
        try:
            res = rq.wait(TIMEOUT_S)
        except MatchError as e:
            errors.append(str(e))
            continue
        k = next((k for k, m in left.items() if (m[0], m[1], m[2]) == (dst, res["src"], res["tag"])), None)
        if k is None:
            errors.append(f"node {dst} received from {res['src']} tag {res['tag']}: no such message (left)")
            continue
        m = left.pop(k)
        if ws not in (ANY, m[1]) or wt not in (ANY, m[2]):
            errors.append(f"receive ({ws}, {wt}) took the message from {m[1]} tag {m[2]}")
        err = _check(buf[:len(m[3])].tobytes(), m[3], res, m[1], m[2], False)
        if err:
            errors.append(f"node {dst} from {m[1]}: {err}")
        key = ("eager" if len(m[3]) <= MT["UC_MT_EAGER_MAX"] else "rndv") + "/" + str(res["how"])
        stats[key] = stats.get(key, 0) + 1
    for sd in sends:
        try:
            sd.wait(TIMEOUT_S)
        except MatchError as e:
            errors.append(str(e))
    return errors


def socket_in(netns: str) -> socket.socket:
    """A UDP socket in network namespace `netns` (this thread goes there
    and back), so one worker sends each node's messages from its node."""
    import ctypes
    import os
    libc, newnet = ctypes.CDLL(None, use_errno=True), 0x40000000  # CLONE_NEWNET
    home, there = os.open("/proc/self/ns/net", os.O_RDONLY), os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if libc.setns(there, newnet) != 0:
            raise OSError(ctypes.get_errno(), f"setns {netns}")
        try:
            return common.udp_socket()
        finally:
            if libc.setns(home, newnet) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(home)
        os.close(there)


def w_race(a: dict) -> dict:
    rng = random.Random(a["seed"])
    n, sizes = a["nodes"], a["sizes"]
    eps = [Endpoint(a["controls"][k], k, a["ips"], socket_in(a["netns"][k])) for k in range(n)]
    tags = iter(rng.sample(range(MT["UC_MT_TAG_MAX"] + 1), 10000))
    stats: dict = {}
    errors: list[str] = []
    pairs = [(j, k) for j in range(n) for k in range(n) if k != j]
    for _ in range(a["rounds"]):
        # Exact receives; then one wildcard per message (source, tag, or
        # neither; each matches only its own message in the phase); then
        # receives of any source and tag, which may take the messages in
        # any order.
        exact = [(j, k, t, rng.randbytes(rng.choice(sizes))) for (j, k), t in zip(pairs, tags)]
        errors += _phase(eps, [(j, k, t, d, k, t) for j, k, t, d in exact], rng, stats)
        wild = [(j, k, t, rng.randbytes(rng.choice(sizes))) for (j, k), t in zip(pairs, tags)]
        errors += _phase(eps, [(j, k, t, d, *rng.choice([(k, ANY), (ANY, t), (k, t)])) for j, k, t, d in wild],
                         rng, stats)
        anyany = [(j, k, next(tags), rng.randbytes(rng.choice(sizes))) for j in range(n)
                  for k in rng.sample([x for x in range(n) if x != j], 2)]
        errors += _phase(eps, [(j, k, t, d, ANY, ANY) for j, k, t, d in anyany], rng, stats)
    for e in eps:
        e.close()
    return {"verified": not errors, "errors": errors[:10], "how": stats}


def w_hostile(a: dict) -> dict:
    """Malformed matching datagrams at node `to`, then more unexpected
    eager messages than it has slots; then receives for every one it kept."""
    to, src = a["to"], a["from"]
    s = common.udp_socket()
    dst = (a["ip"], MT["UC_PORT"])
    E, R, eom = MT["UC_MODE_EAGER"], MT["UC_MODE_RNDV"], MT["UC_EOM"]
    H, magic, bit = common.HDR, MT["UC_MAGIC"], MT["UC_MSG_BIT"]
    bad = [
        packet(4000, 1, 5, E, 8, bytes(8)),                                   # unknown rank
        packet(to, 2, 5, E, 8, bytes(8)),                                     # the NIC's own rank
        H.pack(magic, bit | 3, eom | 2, 3, 8, 0, src, E) + bytes(8),          # reserved flag bit
        H.pack(magic, bit | 4, eom, 4, 16, 0, src, E) + bytes(8),             # eager, half a message
        H.pack(magic, bit | 5, 0, 5, 8, 0, src, E) + bytes(8),                # eager, no end of message
        packet(src, 6, 5, R, 50000, bytes(4)),                                # rendezvous header too short
        packet(src, 7, 5, R, MT["UC_MT_MAX"] + 1, rts(MT["UC_MT_SEND"], 1)),  # too large
        packet(src, 8, 5, R, 5000, rts(0, 1)),                                # exposes the control area
        packet(src, 9, 5, R, 5000, rts(MT["UC_MT_END"] - 10, 1)),             # past the send area
    ]
    for d in bad:
        s.sendto(d, dst)
    extra = 6
    for k in range(MT["UC_MT_SLOTS"] + extra):
        s.sendto(packet(src, 100 + k, a["tag"], E, 8, struct.pack("<Q", k)), dst)
        time.sleep(0.002)  # the handlers take them one by one, under the lock
    return {"malformed": len(bad), "flood": MT["UC_MT_SLOTS"] + extra}


def w_drain(a: dict) -> dict:
    """Receive `count` messages of `tag` from any source at node `rank`:
    their 8-byte values, in the order received."""
    ep = Endpoint(a["control"], a["rank"], a["ips"])
    values = []
    for _ in range(a["count"]):
        buf = ep.buffer(8)
        ep.recv(ANY, a["tag"], buf, TIMEOUT_S)
        values.append(struct.unpack("<Q", buf.tobytes())[0])
    ep.close()
    return {"values": values}


WORKERS = {"pair": w_pair, "server": w_server, "client": w_client, "race": w_race, "hostile": w_hostile,
           "drain": w_drain}
