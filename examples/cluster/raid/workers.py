"""Workers of the RAID-5 use case (run inside a node's namespace by
common.Cluster.worker as "raid/ROLE"; each returns one JSON-able dict),
and what the driver (run) shares with them: the layout (raid.h), the
plan of a run's writes and the reference model they are checked against."""
import json
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from common import BASELINE_PORT, BYE, HDR, UC, bye, client_mem, defines, packets, u64, udp_socket

R = defines(Path(__file__).resolve().parent / "raid.h")
assert R["UC_RAID_PER_PKT"] == UC["UC_CHUNK"] - R["UC_RAID_ADDR_LEN"], "raid.h's UC_RAID_PER_PKT"
DATA = list(range(R["UC_RAID_FIRST_DATA"], R["UC_RAID_FIRST_DATA"] + R["UC_RAID_DATA_NODES"]))
PARITY, CLIENT = R["UC_RAID_PARITY"], R["UC_RAID_CLIENT"]
STORE, SIZE = R["UC_RAID_STORE"], R["UC_RAID_STORE_SIZE"]
# A try's wait for the acks: above the RMA transport's failure bound
# (~0.4 s, docs/rma.md "Reliability"), so a failed parity node's error ack
# comes before the write is sent again.
TRY_S = 1.0
TRIES = 6
ACK = struct.Struct(">4sII")  # the baseline's acks: tag, seq, status (tag b"RACK" data -> client, b"PACK" parity -> data)
PEER_FAILED = 7  # RMA_STATUS_PEER_FAILED (spin_rma_ops.h): the parity node did not answer


# ---------------------------------------------------------------------------
# The plan and the reference (NumPy, independent of the handlers).


def plan(seed: int, size: int, rounds: int):
    """The data nodes' stores before the run and each round's write
    (store address, SIZE bytes striped over the data nodes)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    strip = size // len(DATA)
    stores = rng.integers(0, 256, (len(DATA), SIZE), dtype=np.uint8)
    writes = [(int(rng.integers(0, SIZE - strip + 1)), rng.integers(0, 256, size, dtype=np.uint8))
              for _ in range(rounds)]
    return stores, writes


def apply(stores, addr: int, data) -> list:
    """Apply a write to the model; each data node's delta (old XOR new)."""
    strip = len(data) // len(DATA)
    deltas = []
    for k in range(len(DATA)):
        new = data[k * strip:(k + 1) * strip]
        deltas.append(stores[k, addr:addr + strip] ^ new)
        stores[k, addr:addr + strip] = new
    return deltas


def parity_of(stores):
    import numpy as np
    return np.bitwise_xor.reduce(stores, axis=0)


def compare(what: str, got, want, sabotage: bool) -> str | None:
    import numpy as np
    if sabotage:
        want = want.copy()
        want[len(want) // 2] ^= 1
    if np.array_equal(got, want):
        return None
    i = int(np.flatnonzero(got != want)[0])
    return f"{what}: byte {i} is {int(got[i])}, the reference's {int(want[i])}"


def write_packets(addr: int, data: bytes, seq: int, src: int, mode: int) -> list[bytes]:
    """A write's datagrams (raid.h): each packet's data is the store address, then its bytes."""
    per = R["UC_RAID_PER_PKT"]
    stream = b"".join(struct.pack(">I", addr) + data[i:i + per] for i in range(0, len(data), per))
    return packets(stream, seq, src, mode)


# ---------------------------------------------------------------------------
# Offload: the client on rank CLIENT; the data and parity nodes' NICs do the rest.


def _acks_py(s, a, mem, addr, data, seq, kill=None) -> tuple[dict, int, int, int]:
    """One write by Python: send each data node its part, wait for their
    ack words (sending again to the silent ones); ({k: status}, next seq,
    retries, ns). `kill`: a pid to SIGKILL once the write is sent."""
    strip = len(data) // len(DATA)
    sent: dict[int, set] = {k: set() for k in range(len(DATA))}
    acks: dict[int, int] = {}
    retries = 0
    t0 = time.perf_counter_ns()
    for attempt in range(TRIES):
        pending = [k for k in range(len(DATA)) if k not in acks]
        if not pending:
            break
        retries += attempt > 0
        for k in pending:
            sent[k].add(seq)
            for p in write_packets(addr, data[k * strip:(k + 1) * strip].tobytes(), seq, CLIENT,
                                   UC["UC_MODE_RAID_WRITE"]):
                s.sendto(p, (a["ips"][k], UC["UC_PORT"]))
            seq += 1
        if kill and attempt == 0:
            os.kill(kill, signal.SIGKILL)  # the parity node's NIC, while this write is on its way
        end = time.perf_counter() + TRY_S
        while time.perf_counter() < end and len(acks) < len(DATA):
            for k in pending:
                w = u64(mem, R["UC_RAID_ACK"] + 8 * DATA[k])
                if k not in acks and (w & 0xFFFFFFFF) in sent[k]:
                    acks[k] = w >> 32
    return acks, seq, retries, time.perf_counter_ns() - t0


def _acks_c(a, addr, data, seq, tmp: Path) -> tuple[dict, int, int, int]:
    """One write by the C client (client.c): the same protocol."""
    f = tmp / f"write-{seq}.bin"
    f.write_bytes(data.tobytes())
    p = subprocess.run([a["c_client"], a["controls"][str(CLIENT)], a["ectx_name"], str(seq), str(addr), str(f),
                        *a["ips"]],
                       capture_output=True, text=True, timeout=TRIES * TRY_S + 10)
    f.unlink()
    if p.returncode not in (0, 1, 3) or not p.stdout.strip():
        raise RuntimeError(f"client.c exited {p.returncode}: {p.stderr.strip()[-500:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    acks = {k: st for k, st in enumerate(r["status"]) if st >= 0}
    return acks, r["next_seq"], r["retries"], r["lat_ns"]


def _statuses(acks: dict) -> dict:
    """{data rank: status, None if it never acked}."""
    return {DATA[k]: acks.get(k) for k in range(len(DATA))}


def w_client(a: dict) -> dict:
    """The offload's client: set every store (data nodes) and the parity
    (parity node) through their NicClients, then write each round's block
    over the data nodes; after each write's acks check every data node's
    bytes and the parity against the model, and all of it at the end.
    With `kill_round`, the parity node's NIC is killed while that round's
    write is on its way (`fault` in the result): from then on the client
    must get errors, and every write a data node acknowledged must be in
    the parity."""
    import numpy as np
    stores, writes = plan(a["seed"], a["size"], a["rounds"])
    clients = {int(r): client_mem(path) for r, path in a["controls"].items()}
    mems = {r: m for r, (_c, m) in clients.items()}
    mem = mems[CLIENT]
    a["ectx_name"] = next(x["name"] for x in clients[CLIENT][0].ectxs if x.get("rma"))
    for k, r in enumerate(DATA):
        mems[r][STORE:STORE + SIZE] = stores[k]
    mems[PARITY][STORE:STORE + SIZE] = parity_of(stores)
    mem[R["UC_RAID_ACK"]:R["UC_RAID_ACK"] + 8 * R["UC_RAID_RANKS"]] = 0
    s = udp_socket()
    strip = a["size"] // len(DATA)
    seq, lat, errors, retries, ok, fault = a["seq"], [], [], 0, True, None
    for rnd, (addr, data) in enumerate(writes):
        killing = a.get("kill_round") == rnd
        if killing:
            before = mems[PARITY][STORE:STORE + SIZE].copy()
            acks, seq, rt, ns = _acks_py(s, a, mem, addr, data, seq, a["kill_pid"])
        elif a["impl"] == "c":
            acks, seq, rt, ns = _acks_c(a, addr, data, seq, Path(a["tmp"]))
        else:
            acks, seq, rt, ns = _acks_py(s, a, mem, addr, data, seq)
        retries += rt
        deltas = apply(stores, addr, data)
        if killing:
            # Acked deltas must be in the parity, the others in it or not,
            # byte by byte (a put of several packets may have been cut);
            # nothing else of the parity may have changed.
            par = mems[PARITY][STORE:STORE + SIZE].copy()
            cands = [before[addr:addr + strip] ^ np.bitwise_xor.reduce(
                [deltas[k] for k, st in acks.items() if st == 0] + [np.zeros(strip, np.uint8)])]
            for k in range(len(DATA)):
                if acks.get(k) != 0:
                    cands += [c ^ deltas[k] for c in cands]
            rest = np.ones(SIZE, bool)
            rest[addr:addr + strip] = False
            holds = bool(np.any(np.stack(cands) == par[addr:addr + strip], axis=0).all()
                         and np.array_equal(par[rest], before[rest]))
            fault = {"killed_rank": PARITY, "round": rnd, "acks": _statuses(acks), "parity_holds_acked": holds,
                     "after": []}
            if not holds:
                ok = False
                errors.append(f"round {rnd}: the parity lacks a write a data node acknowledged")
            continue
        if fault is not None:
            fault["after"].append(_statuses(acks))
            if any(st == 0 for st in acks.values()):
                ok = False
                errors.append(f"round {rnd}: a data node acknowledged a write after the parity node died: "
                              f"{_statuses(acks)}")
            continue
        if any(st != 0 for st in _statuses(acks).values()):
            ok = False
            errors.append(f"round {rnd}: data node acks {_statuses(acks)} (status; None: none after {TRIES} tries)")
            continue
        lat.append(ns)
        for k, r in enumerate(DATA):
            e = compare(f"round {rnd}, data node {r}", mems[r][STORE + addr:STORE + addr + strip],
                        stores[k, addr:addr + strip], a["sabotage"])
            if e:
                ok = False
                errors.append(e)
        e = compare(f"round {rnd}, parity", mems[PARITY][STORE + addr:STORE + addr + strip],
                    parity_of(stores[:, addr:addr + strip]), a["sabotage"])
        if e:
            ok = False
            errors.append(e)
    if fault is None:
        # Everything, at the end: every store and the parity, byte for byte.
        for k, r in enumerate(DATA):
            e = compare(f"data node {r}'s store", mems[r][STORE:STORE + SIZE], stores[k], False)
            if e:
                ok = False
                errors.append(e)
        e = compare("the parity", mems[PARITY][STORE:STORE + SIZE], parity_of(stores), False)
        if e:
            ok = False
            errors.append(e)
    else:
        # The client got an error: an ack with a failed status, not only silence.
        fault["client_error"] = any(st not in (0, None) for x in [fault["acks"], *fault["after"]] for st in x.values())
        if not fault["after"] or not fault["client_error"]:
            ok = False
            errors.append("no round after the kill, or no error status reached the client")
    for c, _m in clients.values():
        c.close()
    return {"from": CLIENT, "to": DATA, "lat_ns": lat, "verified": ok, "retries": retries, "errors": errors,
            "next_seq": seq, "fault": fault}


# ---------------------------------------------------------------------------
# Baseline: the same protocol by the host CPUs over kernel UDP sockets.


def _messages(s: socket.socket, idle_s: float):
    """Whole messages arriving on `s`: (mode, src, seq, addr, bytes, peer);
    None at a BYE or after `idle_s` without a datagram."""
    parts: dict[tuple, dict] = {}
    while True:
        s.settimeout(idle_s)
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            yield None
            return
        if d == BYE:
            yield ("bye", 0, 0, 0, b"", peer)
            continue
        if len(d) < HDR.size + 4:
            continue
        magic, _msg, _fl, seq, total, off, src, mode = HDR.unpack_from(d)
        if magic != UC["UC_MAGIC"]:
            continue
        m = parts.setdefault((src, seq), {"got": 0, "chunks": {}})
        if off in m["chunks"]:
            continue
        m["chunks"][off] = d[HDR.size:]
        m["got"] += len(d) - HDR.size
        if m["got"] == total:
            del parts[(src, seq)]
            chunks = [m["chunks"][o] for o in sorted(m["chunks"])]
            addr = struct.unpack_from(">I", chunks[0])[0]
            yield (mode, src, seq, addr, b"".join(c[4:] for c in chunks), peer)


def w_data_server(a: dict) -> dict:
    """Baseline data node: a whole write from the client, then old XOR new
    (NumPy), the store updated, the delta sent to the parity node's host,
    and the client acked once the parity node acked (status 7 if it never
    did). The store goes to a file at the end."""
    import numpy as np
    stores, _ = plan(a["seed"], a["size"], 0)
    store = stores[DATA.index(a["rank"])].copy()
    s = udp_socket(BASELINE_PORT)
    ps = udp_socket()  # to the parity node: its acks do not mix with the client's writes
    parity = (a["parity_ip"], BASELINE_PORT)
    print("ready", flush=True)
    served = 0
    for m in _messages(s, a["idle_s"]):
        if m is None or m[0] == "bye":
            break
        mode, _src, seq, addr, data, peer = m
        if mode != UC["UC_MODE_RAID_WRITE"] or addr + len(data) > SIZE:
            continue
        new = np.frombuffer(data, np.uint8)
        delta = store[addr:addr + len(new)] ^ new
        store[addr:addr + len(new)] = new
        status = PEER_FAILED
        for _ in range(TRIES):
            for p in write_packets(addr, delta.tobytes(), seq, a["rank"], UC["UC_MODE_RAID_DELTA"]):
                ps.sendto(p, parity)
            ps.settimeout(TRY_S / 4)
            try:
                while True:
                    tag, sq, st = ACK.unpack(ps.recvfrom(64)[0][:ACK.size])
                    if tag == b"PACK" and sq == seq:
                        status = st
                        break
            except (socket.timeout, struct.error):
                continue
            break
        s.sendto(ACK.pack(b"RACK", seq, status), peer)
        served += 1
    bye(ps, parity)
    Path(a["out"]).write_bytes(store.tobytes())
    return {"served": served}


def w_parity_server(a: dict) -> dict:
    """Baseline parity node: each data node's delta XORed into the parity
    once (a repeated message is acked again, not applied again)."""
    stores, _ = plan(a["seed"], a["size"], 0)
    par = parity_of(stores)
    s = udp_socket(BASELINE_PORT)
    print("ready", flush=True)
    applied, byes = set(), 0
    import numpy as np
    for m in _messages(s, a["idle_s"]):
        if m is None:
            break
        if m[0] == "bye":
            byes += 1
            if byes >= len(DATA):
                break
            continue
        mode, src, seq, addr, data, peer = m
        if mode != UC["UC_MODE_RAID_DELTA"] or addr + len(data) > SIZE:
            continue
        if (src, seq) not in applied:
            par[addr:addr + len(data)] ^= np.frombuffer(data, np.uint8)
            applied.add((src, seq))
        s.sendto(ACK.pack(b"PACK", seq, 0), peer)
    Path(a["out"]).write_bytes(par.tobytes())
    return {"applied": len(applied)}


def w_client_baseline(a: dict) -> dict:
    """Baseline client: the same writes to the data nodes' hosts; a write
    completes when every data node acked it (after its parity update)."""
    _stores, writes = plan(a["seed"], a["size"], a["rounds"])
    s = udp_socket()
    strip = a["size"] // len(DATA)
    seq, lat, errors, retries, ok = a["seq"], [], [], 0, True
    for rnd, (addr, data) in enumerate(writes):
        acks: dict[int, int] = {}
        seqs: dict[int, int] = {}
        t0 = time.perf_counter_ns()
        for attempt in range(TRIES):
            pending = [k for k in range(len(DATA)) if k not in acks]
            if not pending:
                break
            retries += attempt > 0
            for k in pending:
                seq += 1
                seqs[seq] = k
                for p in write_packets(addr, data[k * strip:(k + 1) * strip].tobytes(), seq, CLIENT,
                                       UC["UC_MODE_RAID_WRITE"]):
                    s.sendto(p, (a["ips"][k], BASELINE_PORT))
            end = time.perf_counter() + TRY_S
            while len(acks) < len(DATA) and time.perf_counter() < end:
                s.settimeout(max(0.001, end - time.perf_counter()))
                try:
                    tag, sq, st = ACK.unpack(s.recvfrom(64)[0][:ACK.size])
                except (socket.timeout, struct.error):
                    continue
                if tag == b"RACK" and sq in seqs:
                    acks[seqs[sq]] = st
        t1 = time.perf_counter_ns()
        bad = {DATA[k]: acks.get(k) for k in range(len(DATA)) if acks.get(k) != 0}
        if bad:
            ok = False
            errors.append(f"round {rnd}: data node acks {bad}")
            continue
        lat.append(t1 - t0)
    for ip in a["ips"]:
        bye(s, (ip, BASELINE_PORT))
    return {"from": CLIENT, "to": DATA, "lat_ns": lat, "verified": ok, "retries": retries, "errors": errors}


def w_hostile(a: dict) -> dict:
    """Malformed writes at a data node's NIC and at the parity node's (the
    tests'): each must be dropped and counted, none may fault a handler."""
    s = udp_socket()
    magic, chunk, mx = UC["UC_MAGIC"], UC["UC_CHUNK"], UC["UC_MAX_SIZE"]
    w, msg, sent = UC["UC_MODE_RAID_WRITE"], UC["UC_MSG_BIT"] | (CLIENT << 20), 0
    addr = struct.pack(">I", 0)
    cases = [  # (destination, datagram, the reason it is dropped for)
        ("data", HDR.pack(magic, msg | 1, 1, 1, 8, 0, CLIENT, 99) + addr + bytes(4), R["UC_RAID_BAD_MODE"]),
        ("parity", HDR.pack(magic, msg | 2, 1, 2, 8, 0, CLIENT, w) + addr + bytes(4), R["UC_RAID_BAD_RANK"]),
        ("data", HDR.pack(magic, msg | 3, 1, 3, 8, 4, CLIENT, w) + addr, R["UC_RAID_BAD_GRID"]),  # off the grid
        ("data", HDR.pack(magic, msg | 4, 1, 4, 4, 0, CLIENT, w) + addr, R["UC_RAID_BAD_GRID"]),  # no bytes
        ("data", HDR.pack(magic, msg | 5, 1, 5, 12, 0, CLIENT, w) + struct.pack(">I", SIZE - 4) + bytes(8),
         R["UC_RAID_BAD_ADDR"]),  # past the store's end
        ("data", HDR.pack(magic, msg | 6, 1, 6, 12, 0, CLIENT, w) + struct.pack(">I", 2**32 - 4) + bytes(8),
         R["UC_RAID_BAD_ADDR"]),  # address wraps
        ("data", HDR.pack(magic, msg | 7, 0, 7, 2 * chunk, 0, CLIENT, w) + addr + bytes(chunk - 4),
         None),  # first packet of a message whose second carries another address
        ("data", HDR.pack(magic, msg | 7, 1, 7, 2 * chunk, chunk, CLIENT, w) + struct.pack(">I", 64)
         + bytes(chunk - 4), R["UC_RAID_BAD_SAME"]),
        ("data", HDR.pack(magic, msg | 8, 1, 8, mx + 1, 0, CLIENT, w) + addr + bytes(4), None),  # uc_parse refuses
        ("data", HDR.pack(magic, msg | 9, 0, 9, 2 * chunk, 0, CLIENT, w) + addr + bytes(chunk - 4), None),
        ("data", HDR.pack(magic, msg | 9, 0, 9, 2 * chunk, 0, CLIENT, w) + addr + bytes(chunk - 4),
         R["UC_RAID_BAD_REPEAT"]),  # the same packet again
        ("data", HDR.pack(magic, msg | 10, 1, 5, 8, 0, CLIENT, w) + addr + bytes(4),
         R["UC_RAID_BAD_STALE"]),  # a write older (seq 5) than one taken (seq 9): a late duplicate
    ]
    for dst, d, _why in cases:
        s.sendto(d, (a["ips"][dst], UC["UC_PORT"]))
        sent += 1
        time.sleep(0.002)  # in order: the message of two packets
    # Counters keep a count and a sum per index: the drops, and their reasons added up.
    want = {d: {"count": sum(1 for x, _d, why in cases if x == d and why),
                "sum": sum(why for x, _d, why in cases if x == d and why)} for d in ("data", "parity")}
    return {"sent": sent, "want": want}


WORKERS = {"client": w_client, "data-server": w_data_server, "parity-server": w_parity_server,
           "client-baseline": w_client_baseline, "hostile": w_hostile}
