"""The key-value store's shared code and workers (run inside a node's
namespace by common.Cluster.worker as "kvstore/ROLE"; each returns one
JSON-able dict). kvstore.h defines the hash, the messages, the records and
the table; this file reads its #defines (common.defines) and implements the
same FNV-1a hash, so a request the script routes to the wrong owner is
dropped by the owner's NIC and the run fails."""
import random
import socket
import struct
import subprocess
import time
from pathlib import Path

import common
from common import BASELINE_PORT, BYE, HDR, UC, bye, client_mem, packets, udp_socket

KV = common.defines(Path(__file__).resolve().parent / "kvstore.h")
REQ = struct.Struct("<HHHH")     # slot, key length, value length, zero
REC = struct.Struct("<IIII")     # seq, status, value length, check
ENTRY = struct.Struct("<IHH")    # next (index + 1), key length, value length
assert REQ.size == KV["UC_KV_REQ_HDR"] and REC.size == KV["UC_KV_REC_HDR"]
assert ENTRY.size + KV["UC_KV_KEY_MAX"] + KV["UC_KV_VAL_MAX"] == KV["UC_KV_ENTRY"]
TABLE_END = KV["UC_KV_POOL"] + KV["UC_KV_ENTRIES"] * KV["UC_KV_ENTRY"]
assert TABLE_END <= UC["UC_WINDOW"]
KV_TIMEOUT_S = KV["UC_KV_TIMEOUT_MS"] / 1000  # a request without reply this long is sent again (new seq),
TRIES = KV["UC_KV_TRIES"]  # this many times at most
OP_MODE = {"put": UC["UC_MODE_KV_PUT"], "get": UC["UC_MODE_KV_GET"]}
STATUS = {KV["UC_KV_OK"]: "ok", KV["UC_KV_MISS"]: "miss", KV["UC_KV_FULL"]: "full",
          KV["UC_KV_CHAIN"]: "chain", KV["UC_KV_DMA"]: "dma"}
COLLIDE_BUCKET = 5  # the bucket every node's colliding keys share
COLLIDE_KEYS = 3    # per node


def fnv(data: bytes, h: int = KV["UC_KV_FNV_BASIS"]) -> int:
    for b in data:
        h = ((h ^ b) * KV["UC_KV_FNV_PRIME"]) & 0xFFFFFFFF
    return h


def owner(key: bytes, nodes: int) -> int:
    return fnv(key) % nodes


def bucket(key: bytes, nodes: int) -> int:
    return (fnv(key) // nodes) % KV["UC_KV_BUCKETS"]


def record_check(seq: int, status: int, value: bytes) -> int:
    return fnv(value, fnv(struct.pack("<III", seq, status, len(value))))


# ---------------------------------------------------------------------------
# The workload, generated alike by each worker and the driver from the seed.


def _keys(tag: str, rank: int, nodes: int, count: int, want=None) -> list[bytes]:
    """`count` keys named after `tag` and the writer's rank that another node
    owns (a request to oneself would not reach the NIC: loopback), or those
    `want(key)` accepts."""
    out, i = [], 0
    while len(out) < count:
        k = f"{tag}{rank}.{i}".encode()
        i += 1
        if (want(k) if want else owner(k, nodes) != rank):
            out.append(k)
    return out


def workload(seed: int, rank: int, nodes: int, rounds: int, size: int, point: int) -> list[tuple]:
    """Node `rank`'s requests, (op, key, value): per round a put of a new key,
    its get, an overwrite with a value of another length, its get and a get
    of a key never put; first, keys that collide in one bucket of one owner
    with every other node's (put, overwritten, read through the chain)."""
    rng = random.Random(f"{seed}/{rank}/{point}")
    val = lambda n: rng.randbytes(n)  # noqa: E731
    ops: list[tuple] = []
    tgt = 1 if rank == 0 else 0
    coll = _keys(f"c{point}.", rank, nodes, COLLIDE_KEYS,
                 lambda k: owner(k, nodes) == tgt and bucket(k, nodes) == COLLIDE_BUCKET)
    for k in coll:
        ops.append(("put", k, val(size)))
    ops.append(("put", coll[0], val(max(1, size // 2))))
    ops += [("get", k, b"") for k in coll]
    keys = _keys(f"k{point}.", rank, nodes, rounds)
    missing = _keys(f"m{point}.", rank, nodes, rounds)
    for k, m in zip(keys, missing):
        ops += [("put", k, val(size)), ("get", k, b""), ("put", k, val(max(1, size - 1 - rng.randrange(size)))),
                ("get", k, b""), ("get", m, b"")]
    return ops


def reference(ops: list[tuple], ref: dict | None = None) -> dict:
    """A plain dict after the puts, in order."""
    ref = {} if ref is None else ref
    for op, k, v in ops:
        if op == "put":
            ref[k] = v
    return ref


def everyone(a: dict) -> tuple[dict, list[bytes]]:
    """Every node's final values and every key asked for (the union)."""
    ref: dict = {}
    asked: set = set()
    for r in range(a["nodes"]):
        ops = workload(a["seed"], r, a["nodes"], a["rounds"], a["size"], a["point"])
        reference(ops, ref)
        asked.update(k for _, k, _ in ops)
    return ref, sorted(asked)


def walk_table(mem: bytes, rank: int, nodes: int) -> tuple[dict, list[str]]:
    """The table in a host's memory as a dict, and what is wrong with its
    structure (a key in the wrong bucket or node, twice, a chain too long)."""
    out, errs = {}, []
    for b in range(KV["UC_KV_BUCKETS"]):
        head, steps = struct.unpack_from("<I", mem, KV["UC_KV_TABLE"] + 4 * b)[0], 0
        while head:
            if steps > KV["UC_KV_ENTRIES"] or head > KV["UC_KV_ENTRIES"]:
                errs.append(f"bucket {b}: chain broken or cyclic at {head}")
                break
            at = KV["UC_KV_POOL"] + (head - 1) * KV["UC_KV_ENTRY"]
            nxt, kl, vl = ENTRY.unpack_from(mem, at)
            k = bytes(mem[at + ENTRY.size:at + ENTRY.size + kl])
            v = bytes(mem[at + ENTRY.size + KV["UC_KV_KEY_MAX"]:at + ENTRY.size + KV["UC_KV_KEY_MAX"] + vl])
            if k in out:
                errs.append(f"key {k!r} twice")
            if bucket(k, nodes) != b or owner(k, nodes) != rank:
                errs.append(f"key {k!r} in bucket {b} of node {rank}")
            out[k] = v
            head, steps = nxt, steps + 1
    return out, errs


def check_table(got: dict, errs: list[str], ref: dict, rank: int, nodes: int, sabotage: bool) -> list[str]:
    want = {k: v for k, v in ref.items() if owner(k, nodes) == rank}
    if sabotage and want:
        k = min(want)
        want[k] = bytes([want[k][0] ^ 1]) + want[k][1:]
    errs = list(errs)
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            errs.append(f"node {rank}'s table: key {k!r} holds {got.get(k, b'(none)')[:8]!r}..., "
                        f"the reference {want.get(k, b'(none)')[:8]!r}...")
    return errs


# ---------------------------------------------------------------------------
# Clients


def request(seq: int, src: int, op: str, key: bytes, value: bytes, slot: int) -> bytes:
    """A request's one datagram (kvstore.h)."""
    data = REQ.pack(slot, len(key), len(value), 0) + key + value
    (p,) = packets(data, seq, src, OP_MODE[op])
    return p


def parse_record(rec: bytes, seq: int) -> tuple[int, bytes] | None:
    """(status, value) if `rec` is seq's whole record, else None."""
    if len(rec) < REC.size:
        return None
    s, st, n, chk = REC.unpack_from(rec)
    if s != seq or n > KV["UC_KV_VAL_MAX"] or len(rec) < REC.size + n:
        return None
    v = bytes(rec[REC.size:REC.size + n])
    return (st, v) if record_check(s, st, v) == chk else None


class Offload:
    """Requests to the owners' NICs; replies land in this node's window."""

    def __init__(self, a: dict, slot: int = 0):
        self.c, self.mem = client_mem(a["control"])
        self.s, self.ips, self.src, self.seq, self.slot = udp_socket(), a["ips"], a["rank"], a["seq"], slot
        self.at = KV["UC_KV_REPLY"] + slot * KV["UC_KV_SLOT_SIZE"]

    def send(self, op, key, value):
        self.seq += 1
        self.s.sendto(request(self.seq, self.src, op, key, value, self.slot),
                      (self.ips[owner(key, len(self.ips))], UC["UC_PORT"]))
        return self.seq

    def wait(self, seq, timeout):
        end = time.perf_counter() + timeout
        n = KV["UC_KV_SLOT_SIZE"]
        while time.perf_counter() < end:
            # The header first (cheap), the whole record once its seq is there.
            if int(self.mem[self.at:self.at + 4].view("<u4")[0]) == seq:
                r = parse_record(self.mem[self.at:self.at + n].tobytes(), seq)
                if r:
                    return r
        return None

    def close(self):
        self.c.close()


class Baseline:
    """The same requests to the owners' host CPUs (kernel UDP), replies as datagrams."""

    def __init__(self, a: dict, slot: int = 0):
        self.s, self.ips, self.src, self.seq, self.slot = udp_socket(), a["ips"], a["rank"], a["seq"], slot

    def send(self, op, key, value):
        self.seq += 1
        self.s.sendto(request(self.seq, self.src, op, key, value, self.slot),
                      (self.ips[owner(key, len(self.ips))], BASELINE_PORT))
        return self.seq

    def wait(self, seq, timeout):
        end = time.perf_counter() + timeout
        while (left := end - time.perf_counter()) > 0:
            self.s.settimeout(left)
            try:
                r = parse_record(self.s.recvfrom(65536)[0], seq)
            except socket.timeout:
                return None
            if r:
                return r
        return None

    def close(self):
        for r, ip in enumerate(self.ips):
            if r != self.src:  # each server counts the other nodes' BYEs
                bye(self.s, (ip, BASELINE_PORT))
        self.s.close()


def run_ops(cl, ops: list[tuple], ref: dict, sabotage: bool) -> dict:
    """Each request until answered (resent after KV_TIMEOUT_S, TRIES
    times); every get's answer against the reference dict as of then."""
    lat = {"put": [], "get": []}
    errors, retries, sabotaged = [], 0, not sabotage
    for op, k, v in ops:
        for _ in range(TRIES):
            t0 = time.perf_counter_ns()
            r = cl.wait(cl.send(op, k, v), KV_TIMEOUT_S)
            t1 = time.perf_counter_ns()
            if r:
                break
            retries += 1
        else:
            errors.append(f"{op} {k!r}: no reply after {TRIES} tries")
            continue
        lat[op].append(t1 - t0)
        st, got = r
        if op == "put":
            ref[k] = v
            if st != KV["UC_KV_OK"]:
                errors.append(f"put {k!r}: status {STATUS.get(st, st)}")
            continue
        want = ref.get(k)
        if want is not None and not sabotaged:  # the first hit's reference, one bit off
            want, sabotaged = bytes([want[0] ^ 1]) + want[1:], True
        if (st, got) != ((KV["UC_KV_OK"], want) if want is not None else (KV["UC_KV_MISS"], b"")):
            errors.append(f"get {k!r}: status {STATUS.get(st, st)}, {len(got)} bytes {got[:8]!r}..., "
                          f"the reference {'(missing)' if want is None else repr(want[:8]) + '...'}")
    return {"rank": cl.src, "lat_ns": lat, "retries": retries, "errors": errors, "verified": not errors}


def w_client(a: dict) -> dict:
    """Phase `own`: this node's workload, checked against its own dict (no
    other node writes its keys). Phase `all`: a get of every key any node
    asked for that another node owns, against every node's final values."""
    cl = (Offload if a["offload"] else Baseline)(a)
    try:
        if a["phase"] == "own":
            ops = workload(a["seed"], a["rank"], a["nodes"], a["rounds"], a["size"], a["point"])
            return {**run_ops(cl, ops, {}, a["sabotage"]), "phase": "own"}
        ref, asked = everyone(a)
        ops = [("get", k, b"") for k in asked if owner(k, a["nodes"]) != a["rank"]]
        return {**run_ops(cl, ops, ref, a["sabotage"]), "phase": "all"}
    finally:
        if a["phase"] == "all" or a["offload"]:
            cl.close()


def w_c_client(a: dict) -> dict:
    """The C client (client.c) on this node: a put of a key of its own, its
    get, a get of a key of the Python phases, a get of a key never put."""
    ref, asked = everyone(a)
    mine = _keys(f"C{a['point']}.", a["rank"], a["nodes"], 1)[0]
    val = random.Random(f"{a['seed']}/C/{a['rank']}").randbytes(a["size"])
    old = next(k for k in asked if k in ref and owner(k, a["nodes"]) != a["rank"])
    gone = next(k for k in asked if k not in ref and owner(k, a["nodes"]) != a["rank"])
    steps = [("put", mine, val, (KV["UC_KV_OK"], b"")), ("get", mine, b"", (KV["UC_KV_OK"], val)),
             ("get", old, b"", (KV["UC_KV_OK"], ref[old])), ("get", gone, b"", (KV["UC_KV_MISS"], b""))]
    c, _ = client_mem(a["control"])
    ectx = next(x["name"] for x in c.ectxs if x.get("rma"))
    c.close()
    errors, seq = [], a["seq"]
    for op, k, v, want in steps:
        seq += TRIES
        dst = a["ips"][owner(k, a["nodes"])]
        cmd = [a["bin"], a["control"], ectx, dst, str(a["rank"]), "1", str(seq), op, k.hex()]
        cmd += [v.hex()] if op == "put" else []
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            errors.append(f"client {op} {k!r} exited {p.returncode}: {p.stderr.strip()[-300:]}")
            continue
        st, hexval = p.stdout.split()
        got = (int(st), bytes.fromhex(hexval) if hexval != "-" else b"")
        if a["sabotage"] and op == "get" and want[0] == KV["UC_KV_OK"] and not errors:
            want = (want[0], bytes([want[1][0] ^ 1]) + want[1][1:])
        if got != want:
            errors.append(f"client {op} {k!r}: {got[0]}, {got[1][:8]!r}..., "
                          f"the reference {want[0]}, {want[1][:8]!r}...")
    return {"rank": a["rank"], "put": [mine.hex(), val.hex()], "errors": errors, "verified": not errors}


# ---------------------------------------------------------------------------
# The host-CPU baseline's server: the same table in this process's memory.


def serve(mem: bytearray, d: bytes, rank: int, nodes: int, state: dict) -> tuple[int, int, bytes, int] | None:
    """One request against the table as the handler does it: (seq, status,
    value, slot), or None for what the handler drops (counted)."""
    if len(d) < HDR.size + REQ.size:
        return None
    magic, _msg, fl, seq, total, off, src, mode = HDR.unpack_from(d)
    data = d[HDR.size:]
    if magic != UC["UC_MAGIC"] or mode not in OP_MODE.values() or not fl & UC["UC_EOM"] or off or total != len(data):
        return None
    slot, kl, vl, _ = REQ.unpack_from(data)
    is_get = mode == UC["UC_MODE_KV_GET"]
    if (slot >= KV["UC_KV_SLOTS"] or not 0 < kl <= KV["UC_KV_KEY_MAX"] or vl > KV["UC_KV_VAL_MAX"]
            or (is_get and vl) or len(data) != REQ.size + kl + vl):
        return None
    key, val = data[REQ.size:REQ.size + kl], data[REQ.size + kl:]
    if owner(key, nodes) != rank or src >= nodes or src >= KV["UC_KV_MAX_RANKS"] or src == rank:
        return None
    if state["last"].get(src, 0) >= seq:  # a duplicate (kvstore.h)
        return None
    state["last"][src] = seq
    b = bucket(key, nodes)
    head_at = KV["UC_KV_TABLE"] + 4 * b
    head = struct.unpack_from("<I", mem, head_at)[0]
    at, e, steps = 0, head, 0
    while e:
        if steps == KV["UC_KV_MAX_STEPS"] or e > KV["UC_KV_ENTRIES"]:
            return seq, KV["UC_KV_CHAIN"], b"", slot
        p = KV["UC_KV_POOL"] + (e - 1) * KV["UC_KV_ENTRY"]
        nxt, ekl, _ = ENTRY.unpack_from(mem, p)
        if ekl == kl and mem[p + ENTRY.size:p + ENTRY.size + kl] == key:
            at = e
            break
        e, steps = nxt, steps + 1
    val_at = lambda i: KV["UC_KV_POOL"] + (i - 1) * KV["UC_KV_ENTRY"] + ENTRY.size + KV["UC_KV_KEY_MAX"]  # noqa: E731
    if is_get:
        if not at:
            return seq, KV["UC_KV_MISS"], b"", slot
        n = ENTRY.unpack_from(mem, val_at(at) - KV["UC_KV_KEY_MAX"] - ENTRY.size)[2]
        return seq, KV["UC_KV_OK"], bytes(mem[val_at(at):val_at(at) + n]), slot
    p = lambda i: KV["UC_KV_POOL"] + (i - 1) * KV["UC_KV_ENTRY"]  # noqa: E731
    if not at:
        if state["next"] >= KV["UC_KV_ENTRIES"]:
            return seq, KV["UC_KV_FULL"], b"", slot
        state["next"] += 1
        at = state["next"]
        ENTRY.pack_into(mem, p(at), head, kl, vl)
        mem[p(at) + ENTRY.size:p(at) + ENTRY.size + kl] = key
        mem[val_at(at):val_at(at) + vl] = val
        struct.pack_into("<I", mem, head_at, at)
    else:
        struct.pack_into("<H", mem, p(at) + 6, vl)
        mem[val_at(at):val_at(at) + vl] = val
    return seq, KV["UC_KV_OK"], b"", slot


def w_server(a: dict) -> dict:
    """The baseline owner: requests on a kernel socket, served from the
    table (the handler's layout) in this process, a record back as a
    datagram; until every other node's client said BYE (or idle_s)."""
    mem = bytearray(TABLE_END)
    state = {"next": 0, "last": {}}
    s = udp_socket(BASELINE_PORT)
    print("ready", flush=True)
    byes, served, dropped = set(), 0, 0
    while len(byes) < a["nodes"] - 1:
        s.settimeout(a["idle_s"])
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            break
        if d == BYE:
            byes.add(peer[0])
            continue
        r = serve(mem, d, a["rank"], a["nodes"], state)
        if r is None:
            dropped += 1
            continue
        seq, st, v, _slot = r
        s.sendto(REC.pack(seq, st, len(v), record_check(seq, st, v)) + v, peer)
        served += 1
    table, errs = walk_table(mem, a["rank"], a["nodes"])
    return {"served": served, "dropped": dropped, "errors": errs,
            "table": {k.hex(): v.hex() for k, v in table.items()}}


def w_hostile(a: dict) -> dict:
    """Bad requests at node `to`'s NIC (the test's): malformed ones (counted
    UC_KV_CTR_BAD), keys or ranks it does not serve (UC_KV_CTR_NOT_OWNER);
    then a cycle written into its table, which a get must answer with
    UC_KV_CHAIN (bounded steps, no hang); then, the table repaired, a put
    and a get that must work; then a request with the last seq again
    (UC_KV_CTR_STALE, not applied)."""
    import numpy as np
    n, to, frm = a["nodes"], a["to"], a["rank"]
    s = udp_socket()
    dst = (a["ips"][to], UC["UC_PORT"])
    mine = _keys("h", frm, n, 1, lambda k: owner(k, n) == to)[0]
    other = _keys("h", frm, n, 1, lambda k: owner(k, n) not in (to, frm))[0]
    put, get = UC["UC_MODE_KV_PUT"], UC["UC_MODE_KV_GET"]
    kmax, vmax = KV["UC_KV_KEY_MAX"], KV["UC_KV_VAL_MAX"]

    ids = iter(range(UC["UC_MSG_BIT"] | 0x7F000, UC["UC_MSG_BIT"] | 0x80000))  # a message each

    def dgram(data: bytes, mode: int = get, src: int = frm, flags: int = UC["UC_EOM"], off: int = 0) -> bytes:
        return HDR.pack(UC["UC_MAGIC"], next(ids), flags, 1, off + len(data), off, src, mode) + data

    bad = [
        dgram(b"\0\0\0"),                                              # shorter than the request header
        dgram(REQ.pack(KV["UC_KV_SLOTS"], len(mine), 0, 0) + mine),      # no such reply slot
        dgram(REQ.pack(0, 0, 0, 0)),                                     # no key
        dgram(REQ.pack(0, kmax + 1, 0, 0) + bytes(kmax + 1)),            # key too long
        dgram(REQ.pack(0, len(mine), vmax + 1, 0) + mine + bytes(vmax + 1), put),  # value too large
        dgram(REQ.pack(0, len(mine), 4, 0) + mine + bytes(4)),           # a get with a value
        dgram(REQ.pack(0, len(mine) + 1, 0, 0) + mine),                 # lengths disagree with the datagram
        dgram(REQ.pack(0, len(mine), 0, 0) + mine, flags=0),             # not the message's last packet
        dgram(REQ.pack(0, len(mine), 0, 0) + mine, off=8),               # not its first
        dgram(REQ.pack(0, len(mine), 0, 0) + mine, mode=99),             # not a key-value mode
    ]
    not_owner = [
        dgram(REQ.pack(0, len(other), 0, 0) + other),                    # a key another node owns
        dgram(REQ.pack(0, len(mine), 0, 0) + mine, src=4000),            # an unknown rank
        dgram(REQ.pack(0, len(mine), 0, 0) + mine, src=to),              # the owner itself
    ]
    for d in bad + not_owner:
        s.sendto(d, dst)
    # A cycle in the owner's table: its bucket's head -> the last entry -> itself.
    dc, dmem = client_mem(a["dst_control"])
    last = KV["UC_KV_ENTRIES"]
    head_at = KV["UC_KV_TABLE"] + 4 * bucket(mine, n)
    at = KV["UC_KV_POOL"] + (last - 1) * KV["UC_KV_ENTRY"]
    saved = dmem[head_at:head_at + 4].tobytes()
    dmem[at:at + ENTRY.size] = np.frombuffer(ENTRY.pack(last, 1, 0), np.uint8)
    dmem[head_at:head_at + 4] = np.frombuffer(struct.pack("<I", last), np.uint8)
    cl = Offload({**a, "seq": a["seq"]})
    chain = cl.wait(cl.send("get", mine, b""), KV_TIMEOUT_S)
    dmem[head_at:head_at + 4] = np.frombuffer(saved, np.uint8)
    v = b"after the cycle"
    r = run_ops(cl, [("put", mine, v), ("get", mine, b"")], {}, False)
    # The last seq again, a late copy; as a message of its own (the NIC
    # may still hold the original's message id open).
    data = REQ.pack(0, len(mine), 5, 0) + mine + b"stale"
    s.sendto(HDR.pack(UC["UC_MAGIC"], next(ids), UC["UC_EOM"], cl.seq, len(data), 0, frm, put) + data, dst)
    cl.close()
    dc.close()
    return {"bad": len(bad), "not_owner": len(not_owner), "chain_status": chain[0] if chain else None,
            "after": r}


WORKERS = {"hostile": w_hostile, "client": w_client, "c-client": w_c_client, "server": w_server}
