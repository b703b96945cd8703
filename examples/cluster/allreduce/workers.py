"""Workers of the allreduce use case (run inside a node's namespace by
common.Cluster.worker as "allreduce/ROLE"). Each starts, prints `ready`,
then for every round waits for the driver's go file (its seq and start
time), sends, waits, and prints one JSON line with its times; the driver
(`run`) writes the inputs and checks every host's result itself."""
import json
import socket
import time
from pathlib import Path

from common import BASELINE_PORT, HDR, MAX_TRIES, UC, client_mem, defines, set_u64, u64, udp_socket

AR = defines(Path(__file__).resolve().parent / "allreduce.h")
DTYPES = {"int32": AR["UC_AR_INT32"], "float": AR["UC_AR_FLOAT"], "double": AR["UC_AR_DOUBLE"]}
NUMPY = {"int32": "<i4", "float": "<f4", "double": "<f8"}
TRY_S = 1.0  # no sum within this: the host sends its vector again (the NICs drop what they had)
GO_WAIT_S = 60.0


def geometry(n: int) -> tuple[int, int, int]:
    """P (the largest power of two <= n), E = n - P extras, steps = log2 P."""
    p = 1 << (n.bit_length() - 1)
    return p, n - p, p.bit_length() - 1


def ar_packets(data: bytes, seq: int, src: int, tag: int, dtype: int, mode: int) -> list[bytes]:
    """One one-packet message per UC_CHUNK of the vector (allreduce.h's flags)."""
    chunk, n, out = UC["UC_CHUNK"], len(data), []
    flags = UC["UC_EOM"] | tag << AR["UC_AR_TAG_SHIFT"] | dtype << AR["UC_AR_DTYPE_SHIFT"]
    for off in range(0, n, chunk):
        msg = UC["UC_MSG_BIT"] | src << 20 | tag << 15 | off // chunk
        out.append(HDR.pack(UC["UC_MAGIC"], msg, flags, seq, n, off, src, mode) + data[off:off + chunk])
    return out


def wait_go(d: Path, r: int) -> dict | None:
    """Round r's go file (run writes it whole): "seq t_ns delay_rank delay_ns"."""
    f, end = d / f"go-{r}", time.perf_counter() + GO_WAIT_S
    while not f.exists():
        if time.perf_counter() > end:
            return None
        time.sleep(0.0005)
    seq, t_ns, delay_rank, delay_ns = (int(x) for x in f.read_text().split())
    return {"seq": seq, "t_ns": t_ns, "delay_rank": delay_rank, "delay_ns": delay_ns}


# Every node's worker waits at once, on cores the NICs share: they sleep
# this long between looks rather than spin, or they would starve the NICs.
POLL_S = 0.0001


def start_at(go: dict, rank: int) -> int:
    """Wait for the round's start (later for the delayed rank); the time sent."""
    t = go["t_ns"] + (go["delay_ns"] if rank == go["delay_rank"] else 0)
    while time.time_ns() < t - 1_000_000:
        time.sleep(POLL_S)
    while time.time_ns() < t:
        pass
    return time.time_ns()


def wait_done(mem, seq: int, timeout: float) -> bool:
    """UC_DONE == seq within `timeout` (common.wait_u64, without spinning)."""
    end = time.perf_counter() + timeout
    while u64(mem, UC["UC_DONE"]) != seq:
        if time.perf_counter() > end:
            return False
        time.sleep(POLL_S)
    return True


def mode_of(a: dict) -> tuple[int, int]:
    if a["mode"] == "barrier":
        return UC["UC_MODE_BARRIER"], AR["UC_AR_INT32"]
    return UC["UC_MODE_ALLREDUCE"], DTYPES[a["mode"]]


def first_nic(rank: int, n: int) -> tuple[int, int]:
    """The NIC host `rank` sends its vector to, and the tag: NIC rank^1
    (IN), or for an extra host P+v, NIC v^1 (EXTRA)."""
    p, _e, _steps = geometry(n)
    return (rank ^ 1, AR["UC_AR_TAG_IN"]) if rank < p else ((rank - p) ^ 1, AR["UC_AR_TAG_EXTRA"])


def w_offload(a: dict) -> dict:
    """Host `rank` of the offload: its vector (UC_AR_SRC of its memory) to
    the NIC that starts from it (first_nic); the NICs do the rest and write
    UC_AR_OUT and UC_DONE here."""
    c, mem = client_mem(a["control"])
    rank, size = a["rank"], a["size"]
    to, tag = first_nic(rank, a["nodes"])
    mode, dtype = mode_of(a)
    s = udp_socket()
    dst = (a["ips"][to], UC["UC_PORT"])
    src = AR["UC_AR_SRC"]
    print("ready", flush=True)
    for r in range(a["rounds"]):
        go = wait_go(Path(a["dir"]), r)
        if go is None:
            break
        pkts = ar_packets(mem[src:src + size].tobytes(), go["seq"], rank, tag, dtype, mode)
        t_send, done, retries = start_at(go, rank), False, 0
        for _try in range(MAX_TRIES):
            for pk in pkts:
                s.sendto(pk, dst)
            if wait_done(mem, go["seq"], TRY_S):
                done = True
                break
            retries += 1
        print(json.dumps({"round": r, "t_send": t_send, "t_done": time.time_ns(), "done": done,
                          "retries": retries}), flush=True)
    c.close()
    return {"rank": rank}


def w_offload_c(a: dict) -> dict:
    """w_offload by the C host program (host.c, built by run): its lines
    go straight to the driver."""
    import subprocess
    import softspin
    with softspin.NicClient(a["control"]) as c:
        ectx = next(e["name"] for e in c.ectxs if e.get("rma"))
    to, tag = first_nic(a["rank"], a["nodes"])
    mode, dtype = mode_of(a)
    rc = subprocess.run([a["binary"], a["control"], ectx, a["ips"][to], str(a["rank"]), str(to), str(tag),
                         str(dtype), str(mode), str(a["size"]), str(a["rounds"]), a["dir"], str(MAX_TRIES),
                         str(int(TRY_S * 1000))], check=False).returncode
    return {"rank": a["rank"], "exit": rc}


def recv_tagged(s: socket.socket, pending: dict, seq: int, tag: int, src: int, total: int,
                timeout: float) -> bytes | None:
    """Message (seq, tag) from `src`; others that come first are kept in `pending`."""
    end = time.perf_counter() + timeout
    while True:
        m = pending.get((seq, tag))
        if m is not None and m["got"] == total:
            del pending[(seq, tag)]
            return bytes(m["buf"])
        left = end - time.perf_counter()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            return None
        if len(d) < HDR.size:
            continue
        magic, _msg, flags, sq, tot, off, sender, _mode = HDR.unpack_from(d)
        t = flags >> AR["UC_AR_TAG_SHIFT"] & 0xFF
        body = d[HDR.size:]
        if magic != UC["UC_MAGIC"] or tot != total or off + len(body) > tot or (t == tag and sender != src):
            continue
        m = pending.setdefault((sq, t), {"buf": bytearray(tot), "got": 0, "seen": set()})
        if off not in m["seen"]:
            m["seen"].add(off)
            m["buf"][off:off + len(body)] = body
            m["got"] += len(body)


def w_baseline(a: dict) -> dict:
    """Host `rank` of the baseline: textbook recursive doubling by the host
    CPU over kernel UDP sockets (the same schedule and order of additions
    as the NICs'), the sum into this host's UC_AR_OUT."""
    import numpy as np
    c, mem = client_mem(a["control"])
    rank, size, n = a["rank"], a["size"], a["nodes"]
    p, e, steps = geometry(n)
    mode, dtype = mode_of(a)
    npt = NUMPY["int32" if a["mode"] == "barrier" else a["mode"]]
    s = udp_socket(BASELINE_PORT)
    src, out = AR["UC_AR_SRC"], AR["UC_AR_OUT"]
    pending: dict = {}
    print("ready", flush=True)
    timeout = TRY_S * MAX_TRIES

    def send(y, to: int, tag: int, seq: int) -> None:
        for pk in ar_packets(y.tobytes(), seq, rank, tag, dtype, mode):
            s.sendto(pk, (a["ips"][to], BASELINE_PORT))

    def get(tag: int, frm: int, seq: int):
        d = recv_tagged(s, pending, seq, tag, frm, size, timeout)
        if d is None:
            raise TimeoutError(f"rank {rank}: tag {tag} from {frm} never came")
        return np.frombuffer(d, npt)

    for r in range(a["rounds"]):
        go = wait_go(Path(a["dir"]), r)
        if go is None:
            break
        seq = go["seq"]
        x = np.frombuffer(mem[src:src + size].tobytes(), npt)
        t_send, done = start_at(go, rank), True
        try:
            with np.errstate(over="ignore"):
                if rank >= p:
                    send(x, rank - p, AR["UC_AR_TAG_EXTRA"], seq)
                    y = get(AR["UC_AR_TAG_RESULT"], rank - p, seq)
                else:
                    y = x + get(AR["UC_AR_TAG_EXTRA"], p + rank, seq) if rank < e else x
                    for k in range(steps):
                        send(y, rank ^ (1 << k), AR["UC_AR_TAG_STEP"] + k, seq)
                        y = y + get(AR["UC_AR_TAG_STEP"] + k, rank ^ (1 << k), seq)
                    if rank < e:
                        send(y, p + rank, AR["UC_AR_TAG_RESULT"], seq)
            mem[out:out + size] = np.frombuffer(y.tobytes(), np.uint8)
            set_u64(mem, UC["UC_DONE"], seq)
        except TimeoutError:
            done = False
        print(json.dumps({"round": r, "t_send": t_send, "t_done": time.time_ns(), "done": done, "retries": 0}),
              flush=True)
    c.close()
    return {"rank": rank}


def w_hostile(a: dict) -> dict:
    """Bad allreduce datagrams at NIC `to` (the test's): each must be dropped
    and counted (UC_AR_CTR_DROPPED, value: the reason); the expected counts
    and reasons are returned for the driver to compare."""
    s = udp_socket()
    dst = (a["ip"], UC["UC_PORT"])
    to, seq = a["to"], a["seq"]
    good_src = to ^ 1  # the host whose vector NIC `to` starts from (to < P: NICs 0 and 1)
    m, b = UC["UC_MODE_ALLREDUCE"], UC["UC_MODE_BARRIER"]
    inp, i32, dbl = AR["UC_AR_TAG_IN"], AR["UC_AR_INT32"], AR["UC_AR_DOUBLE"]
    eom, chunk = UC["UC_EOM"], UC["UC_CHUNK"]

    ids = iter(range(0x7FF00, 0x80000))  # a message id each: the one without EOM stays open alone

    def pkt(flags, total, off, src, mode, body, sq=seq, tag=inp, dtype=i32):
        f = flags | tag << AR["UC_AR_TAG_SHIFT"] | dtype << AR["UC_AR_DTYPE_SHIFT"]
        return HDR.pack(UC["UC_MAGIC"], UC["UC_MSG_BIT"] | next(ids), f, sq, total, off, src, mode) + body

    cases = [  # (datagram, reason)
        (pkt(eom, 8, 0, good_src, m, bytes(8), dtype=9), AR["UC_AR_DROP_FORM"]),              # unknown type
        (pkt(eom, 12, 0, good_src, m, bytes(12), dtype=dbl), AR["UC_AR_DROP_FORM"]),          # not whole doubles
        (pkt(eom, 2 * chunk, 8, good_src, m, bytes(8)), AR["UC_AR_DROP_FORM"]),               # off a chunk's start
        (pkt(eom, 2 * chunk, 0, good_src, m, bytes(8)), AR["UC_AR_DROP_FORM"]),               # short of its chunk
        (pkt(eom, 8, 0, good_src, m, bytes(8), sq=0), AR["UC_AR_DROP_FORM"]),                 # seq 0
        (pkt(0, 8, 0, good_src, m, bytes(8)), AR["UC_AR_DROP_FORM"]),                         # not one packet
        (pkt(eom, 8, 0, good_src, 99, bytes(8)), AR["UC_AR_DROP_FORM"]),                      # unknown mode
        (pkt(eom, AR["UC_AR_MAX"] + 4, 0, good_src, m, bytes(8)), AR["UC_AR_DROP_SIZE"]),     # too large
        (pkt(eom, 8, 0, good_src, b, bytes(8)), AR["UC_AR_DROP_SIZE"]),                       # barrier of 2 ints
        (pkt(eom, 8, 0, 1000, m, bytes(8)), AR["UC_AR_DROP_RANK"]),                           # unknown rank
        (pkt(eom, 8, 0, to, m, bytes(8)), AR["UC_AR_DROP_RANK"]),                             # its own rank
        (pkt(eom, 8, 0, good_src, m, bytes(8), tag=AR["UC_AR_TAG_RESULT"]), AR["UC_AR_DROP_RANK"]),  # not an extra NIC
        (pkt(eom, 8, 0, good_src, m, bytes(8), tag=AR["UC_AR_TAG_STEP"] + 7), AR["UC_AR_DROP_RANK"]),  # no such step
    ]
    # A well-formed vector of a round nobody runs, twice: the second is a duplicate.
    cases += [(pkt(eom, 8, 0, good_src, m, bytes(8)), None),
              (pkt(eom, 8, 0, good_src, m, bytes(8)), AR["UC_AR_DROP_DUPLICATE"])]
    for d, _why in cases:
        s.sendto(d, dst)
        time.sleep(0.002)  # in order: the duplicate after its first
    for d in (b"AR", HDR.pack(UC["UC_MAGIC"], UC["UC_MSG_BIT"] | next(ids), eom, 1, 8, 0, good_src, m)):
        s.sendto(d, dst)  # not use-case packets (uc_parse): handed to the RMA handler, which counts them
    reasons = [w for _d, w in cases if w is not None]
    return {"to": to, "dropped": len(reasons), "reason_sum": sum(reasons)}


WORKERS = {"offload": w_offload, "offload-c": w_offload_c, "baseline": w_baseline, "hostile": w_hostile}
