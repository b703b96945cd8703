"""The RMA target handler (issue 27, item 2): request frames in, response
frames and host memory out, without a network. Requests are encoded here
from docs/rma.md's field table (struct, not softspin_wire), and a reference
target written here from the same page serves them against its own copy of
host memory: every response must equal the reference's byte for byte, and
host memory too, also after refused requests (which must write nothing)."""

import json
import pathlib
import random
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import softspin

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLI = ROOT / "target" / "release" / "softspin"
sys.path.insert(0, str(ROOT / "tests" / "py"))
from packets import DF, eth, ethernet_frames, ipv4, udp, write_pcap  # noqa: E402

PORT = 0x5350
HDR = "!BBBBHHIIIIQII"  # docs/rma.md "Header": 40 bytes, big-endian
HDR_LEN = struct.calcsize(HDR)
MAX_PAYLOAD = 1500 - 20 - 8 - HDR_LEN
DATA, ACK, NACK, UNACK = range(4)
WRITE, READ, FADD32, FADD64, CAS32, CAS64 = range(1, 7)
RESPONSE = 0x80
OK, BAD_KEY, OUT_OF_WINDOW, PERMISSION, MALFORMED, UNALIGNED, FAILED = range(7)
BAD_FRAME, NOT_REQUEST, SEND_FAILED = 7, 8, 9  # handler.c's other counters
RESPONSE_DROPPED = 10  # spin_rma_ops.h: a response no entry of the initiator's table expects
R, W, A = 1, 2, 4
WINDOW = "<IIQQ"  # one window-table entry in NIC memory (little-endian)
WIDTH = {FADD32: 4, FADD64: 8, CAS32: 4, CAS64: 8}

PEER_MAC, NIC_MAC = bytes.fromhex("02000000cc01"), bytes.fromhex("02000000cc02")
PEER_IP, NIC_IP = bytes([10, 27, 0, 1]), bytes([10, 27, 0, 2])


def request(op, key, offset, length, payload=b"", *, txn=1, src=3, dst=0, seq=0, ack=0, kind=DATA, status=0,
            version=1, sport=40000):
    body = struct.pack(HDR, version, kind, op, status, src, dst, seq, ack, txn, key, offset, length, 0) + payload
    return eth(NIC_MAC, PEER_MAC, ipv4(PEER_IP, NIC_IP, 17, udp(PEER_IP, NIC_IP, sport, PORT, body), ident=7))


def write(key, off, data, **kw):
    return request(WRITE, key, off, len(data), data, **kw)


def read(key, off, n, **kw):
    return request(READ, key, off, n, **kw)


def atomic(op, key, off, *operands, **kw):
    w = WIDTH[op]
    return request(op, key, off, w, b"".join(v.to_bytes(w, "big") for v in operands), **kw)


class Reference:
    """A target NIC as docs/rma.md describes it: checks in the documented
    order, then the operation on its own host memory."""

    def __init__(self, host: bytearray, windows):
        self.host, self.windows = host, windows  # windows: {key: (base, size, perms)}

    def serve(self, frame):
        """(response frame or None, counter index)."""
        if len(frame) < 42 + HDR_LEN:
            return None, BAD_FRAME
        ip_len, = struct.unpack_from("!H", frame, 16)
        sport, dport, udp_len = struct.unpack_from("!HHH", frame, 34)
        frag, = struct.unpack_from("!H", frame, 20)
        if (frame[12:14] != b"\x08\x00" or frame[14] != 0x45 or frame[23] != 17 or frag & 0x3FFF
                or ip_len > len(frame) - 14 or udp_len + 20 > ip_len or udp_len < 8 + HDR_LEN):
            return None, BAD_FRAME
        v, kind, op, status, src, dst, seq, ack, txn, key, off, length, _ = struct.unpack_from(HDR, frame, 42)
        payload = frame[42 + HDR_LEN:34 + udp_len]
        if v != 1:
            return None, BAD_FRAME
        if kind != DATA:
            return None, NOT_REQUEST
        if op & RESPONSE:  # this node initiated nothing: no entry expects it
            return None, RESPONSE_DROPPED
        st, data = self._check(op, status, key, off, length, payload), b""
        if st == OK:
            base = self.windows[key][0] + off
            if op == WRITE:
                self.host[base:base + length] = payload
            elif op == READ:
                data = bytes(self.host[base:base + length])
            else:
                w = WIDTH[op]
                old = int.from_bytes(self.host[base:base + w], "little")
                a = int.from_bytes(payload[:w], "big")
                new = (old + a) % (1 << 8 * w) if op in (FADD32, FADD64) else (
                    int.from_bytes(payload[w:], "big") if old == a else old)
                self.host[base:base + w] = new.to_bytes(w, "little")
                data = old.to_bytes(w, "big")
        hdr = struct.pack(HDR, 1, DATA, op | RESPONSE, st, dst, src, 0, 0, txn, key, off, length, 0)
        sip, dip = frame[26:30], frame[30:34]
        seg = udp(dip, sip, dport, sport, hdr + data)
        return eth(frame[6:12], frame[0:6], ipv4(dip, sip, 17, seg, ident=0, ttl=64, tos=0, flags_frag=DF)), st

    def _check(self, op, status, key, off, length, payload):
        w = WIDTH.get(op, 0)
        if status != 0 or not 1 <= op <= 6:
            return MALFORMED
        if op == WRITE and len(payload) != length:
            return MALFORMED
        if op == READ and (payload or length > MAX_PAYLOAD):
            return MALFORMED
        if w and (length != w or len(payload) != w * (2 if op in (CAS32, CAS64) else 1)):
            return MALFORMED
        if key == 0 or key not in self.windows:
            return BAD_KEY
        base, size, perms = self.windows[key]
        if off + length > size or base + size > len(self.host):
            return OUT_OF_WINDOW
        need = {WRITE: W, READ: R}.get(op, A)
        if not perms & need:
            return PERMISSION
        if w and off % w:
            return UNALIGNED
        return OK


def build(tmp, *defines):
    out = tmp / ("rma_target" + "".join("-" + d for d in defines) + ".elf")
    cmd = [str(CLI), "build", "--profile", "fpspin", str(HERE / "handler.c"), "-o", str(out)]
    for d in defines:
        cmd += ["-D", d]
    subprocess.run(cmd, check=True)
    return out


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return build(tmp_path_factory.mktemp("rma"))


HOST_SIZE = 1 << 16
# key: (base, size, perms); key 9 names a window beyond host memory (a bad
# table entry the handler must not trust).
WINDOWS = {1: (0, 0x4000, R | W | A), 2: (0x4000, 0x1000, R), 3: (0x5000, 0x1000, W), 4: (0x6000, 0x100, A),
           5: (0x8000, 0x8000, R | W | A), 9: (0xF000, 0x2000, R | W | A)}


# What the handler needs to build responses in L1: NB_CORES (8) x 1536 bytes.
SCRATCHPAD = 8 * 1536


class Target:
    """A simulated NIC running rma_target_ph beside the reference; with a
    scratchpad (SCRATCHPAD) the handler builds responses in L1, else in L2."""

    def __init__(self, image, windows=WINDOWS, seed=0, scratchpad=None):
        self.nic = softspin.Nic("fpspin")
        self.img = self.nic.load_image(image)
        self.win = self.nic.host_array(HOST_SIZE)
        self.e = self.nic.install(self.img, ph="rma_target_ph", host_window=self.win, scratchpad=scratchpad)
        for i, (key, (base, size, perms)) in enumerate(windows.items()):
            self.nic.nic_write(self.img.symbol("rma_windows") + 24 * i, struct.pack(WINDOW, key, perms, base, size))
        self.nic.activate(self.e)
        init = random.Random(seed).randbytes(HOST_SIZE)
        self.win.buffer[:] = np.frombuffer(init, dtype=np.uint8)
        self.ref = Reference(bytearray(init), windows)
        self.msg = 0

    def feed(self, frames, batch=1):
        """Frames `batch` at a time (each its own message, any HPU)."""
        out = []
        for i in range(0, len(frames), batch):
            for f in frames[i:i + batch]:
                self.nic.send_packet(f, msg_id=self.msg)
                self.msg += 1
            self.nic.run_until_idle()
            out += [x.frame for x in self.nic.events() if isinstance(x, softspin.OutboundPacket)]
        assert self.nic.report()["errors"] == []
        return out

    def counters(self):
        return {i: c for i, _, c in self.nic.counters(self.e)}

    def host(self):
        return bytes(self.win.buffer)


@pytest.mark.parametrize("scratchpad", [None, SCRATCHPAD])
def test_requests_byte_exact(image, scratchpad):
    """Writes, reads, FAA and CAS of both widths, one at a time, in random
    order over every window: responses and host memory exactly the
    reference's."""
    rng = random.Random(1)
    t = Target(image, seed=1)
    frames = []
    for n in range(300):
        key = rng.choice([1, 5])
        size = WINDOWS[key][1]
        op = rng.choice([WRITE, READ, FADD32, FADD64, CAS32, CAS64])
        if op == WRITE:
            ln = rng.choice([0, 1, 7, 64, rng.randrange(MAX_PAYLOAD + 1)])
            frames.append(write(key, rng.randrange(size - ln + 1), rng.randbytes(ln), txn=n))
        elif op == READ:
            ln = rng.choice([0, 1, 8, MAX_PAYLOAD, rng.randrange(MAX_PAYLOAD + 1)])
            frames.append(read(key, rng.randrange(size - ln + 1), ln, txn=n))
        else:
            w = WIDTH[op]
            off = rng.randrange(0, 64, w) if rng.random() < 0.5 else rng.randrange(0, size, w)
            ops = [rng.randrange(1 << 8 * w)]
            if op in (CAS32, CAS64):
                # Half the time the value there, so the swap happens.
                cur = int.from_bytes(t.ref.host[WINDOWS[key][0] + off:][:w], "little")
                ops = [cur if rng.random() < 0.5 else ops[0], rng.randrange(1 << 8 * w)]
            frames.append(atomic(op, key, off, *ops, txn=n))
        # The reference serves as it goes, so a CAS above sees the state before it.
        t.ref.serve(frames[-1])
    # Serve again from the start on a fresh reference for the expected responses.
    t2 = Target(image, seed=1, scratchpad=scratchpad)
    expect = [t2.ref.serve(f)[0] for f in frames]
    got = t2.feed(frames)
    assert got == expect
    assert t2.host() == bytes(t2.ref.host)
    assert t2.counters() == {OK: len(frames)}
    # The response buffer is where the scratchpad says: L1 takes the L2
    # accesses down to the window table's and the locks'.
    l2 = t2.nic.report()["handlers"][0]["l2_accesses_mean"]
    assert (l2 < 20) == (scratchpad is not None), l2
    swaps = sum(1 for f, r in zip(frames, expect) if f[44] in (CAS32, CAS64) and r[42 + HDR_LEN:] == f[82:82 + WIDTH[f[44]]])
    assert 10 < swaps < 100


@pytest.mark.parametrize("scratchpad", [None, SCRATCHPAD])
def test_refused_requests_write_nothing(image, scratchpad):
    """Every error case gets its status and counter and leaves host memory
    as it was; frames with no request get no response."""
    t = Target(image, seed=2, scratchpad=scratchpad)
    good = write(1, 0, b"abcdefgh")
    cases = {
        BAD_KEY: [write(7, 0, b"x"), write(0, 0, b"x"), read(8, 0, 4)],
        OUT_OF_WINDOW: [write(1, 0x4000 - 3, b"abcd"), read(2, 0x1000, 1), write(1, (1 << 64) - 2, b"abcd"),
                        read(1, 0x3FFF, 0xFFFFFFFF & MAX_PAYLOAD), atomic(FADD64, 4, 0x100, 1),
                        write(9, 0, b"x"), read(5, 0x8000 - 7, 8)],
        PERMISSION: [write(2, 0, b"x"), read(3, 0, 4), atomic(FADD32, 2, 0, 1), atomic(CAS64, 3, 8, 0, 1),
                     write(4, 0, b"x"), read(4, 0, 4)],
        MALFORMED: [request(WRITE, 1, 0, 9, b"12345678"), request(WRITE, 1, 0, 7, b"12345678"),
                    read(1, 0, MAX_PAYLOAD + 1), request(READ, 1, 0, 4, b"data"),
                    request(FADD32, 4, 0, 8, bytes(8)), request(CAS64, 4, 0, 8, bytes(8)),
                    request(FADD64, 4, 0, 8, bytes(16)), request(7, 1, 0, 0), request(0, 1, 0, 0),
                    write(1, 0, b"x", status=OK + 3)],
        UNALIGNED: [atomic(FADD32, 4, 2, 1), atomic(FADD64, 4, 4, 1), atomic(CAS32, 1, 1, 0, 1),
                    atomic(CAS64, 5, 12, 0, 1)],
        BAD_FRAME: [good[:81], good[:20], good[:12] + b"\x86\xdd" + good[14:], write(1, 0, b"x", version=2),
                    good[:16] + struct.pack("!H", 2000) + good[18:],  # IP length beyond the frame
                    good[:38] + struct.pack("!H", 47) + good[40:],  # UDP length below the RMA header
                    good[:20] + b"\x20\x00" + good[22:]],  # a fragment (MF)
        NOT_REQUEST: [request(0, 1, 0, 0, kind=ACK), request(0, 1, 0, 0, kind=NACK),
                      request(0, 1, 0, 0, kind=UNACK)],
        RESPONSE_DROPPED: [request(WRITE | RESPONSE, 1, 0, 0), request(READ | RESPONSE, 1, 0, 8, b"8 bytes!")],
    }
    frames = [f for fs in cases.values() for f in fs]
    before = t.host()
    expect = [t.ref.serve(f) for f in frames]
    assert [st for _, st in expect] == [k for k, fs in cases.items() for _ in fs]
    got = t.feed(frames)
    assert got == [r for r, _ in expect if r is not None]
    assert t.host() == before == bytes(t.ref.host)
    assert t.counters() == {k: len(fs) for k, fs in cases.items()}


def mutate(frame, rng):
    """A hostile variant of a request: header fields (RMA, UDP, IP lengths)
    overwritten with edge values or random bytes, or the frame cut short."""
    f = bytearray(frame)
    for _ in range(rng.randrange(1, 4)):
        what = rng.random()
        if what < 0.5:  # an RMA field, often an edge value
            at, n = rng.choice([(42, 1), (43, 1), (44, 1), (45, 1), (62, 4), (66, 8), (74, 4), (82, 8)])
            edge = rng.choice([0, 1, 4, 8, (1 << 8 * n) - 1, (1 << 8 * n) - 8, 0x4000, MAX_PAYLOAD + 1,
                               rng.randrange(1 << 8 * n)]) % (1 << 8 * n)
            if at + n <= len(f):
                f[at:at + n] = edge.to_bytes(n, "big")
        elif what < 0.7:  # UDP or IP length
            at = rng.choice([16, 38])
            if at + 2 <= len(f):
                f[at:at + 2] = rng.randrange(65536).to_bytes(2, "big")
        elif what < 0.85:
            if len(f) > 1:
                del f[rng.randrange(1, len(f)):]
        elif f:
            f[rng.randrange(len(f))] = rng.randrange(256)
    return bytes(f)


def test_hostile_requests_match_the_reference(image):
    """2000 mutated requests (forged lengths, keys, offsets near 2^64, ops,
    kinds, cut frames) in random order: responses, counters and host memory
    exactly the reference's; in particular nothing written outside a window."""
    rng = random.Random(7)
    t = Target(image, seed=7, scratchpad=SCRATCHPAD)
    base = [write(k, o, rng.randbytes(n)) for k, o, n in [(1, 0x3FF0, 16), (2, 0, 4), (3, 0xFF0, 16), (5, 0, 100)]]
    base += [read(k, o, n) for k, o, n in [(1, 0x3F00, 256), (2, 0xFF8, 8), (4, 0, 8)]]
    base += [atomic(FADD64, 4, 0xF8, 1), atomic(CAS32, 5, 0x7FFC, 0, 1), atomic(CAS64, 1, 0, 0, 1)]
    frames = [mutate(rng.choice(base), rng) for _ in range(2000)]
    expect = [t.ref.serve(f) for f in frames]
    got = t.feed(frames)
    assert got == [r for r, _ in expect if r is not None]
    assert t.host() == bytes(t.ref.host)
    want = {}
    for _, st in expect:
        want[st] = want.get(st, 0) + 1
    assert t.counters() == want
    assert len(want) >= 8, want  # the mutations reach every check


def test_rma_post_from_python_refuses_clearly(image):
    """Nic.rma_post needs the transport and a node table (the operations
    themselves are tested between NICs in crates/host/tests/rma_initiator.rs
    and crates/cli/tests/rma_cli.rs): without them, and with an unknown op,
    a clear error; nothing is outstanding or completed."""
    nic = softspin.Nic("fpspin")
    img = nic.load_image(image)
    win = nic.host_array(HOST_SIZE)
    e = nic.install(img, ph="rma_target_ph", host_window=win, scratchpad=SCRATCHPAD)
    nic.activate(e)
    with pytest.raises(softspin.Error, match="RMA transport"):
        nic.rma_post(e, 1, 1, 0, "get", local=0, len=8)
    with pytest.raises(softspin.InvalidArgumentError, match="RMA op `erase`"):
        nic.rma_post(e, 1, 1, 0, "erase")
    assert nic.rma_outstanding(e) == 0 and nic.rma_completions(e) == []


def test_export_window_from_python(image):
    """Nic.export_window writes the table entry docs/rma.md describes (the
    bytes packed here), requests are served through it, and withdrawing the
    key refuses them; bad exports raise."""
    nic = softspin.Nic("fpspin")
    img = nic.load_image(image)
    win = nic.host_array(HOST_SIZE)
    e = nic.install(img, ph="rma_target_ph", host_window=win, scratchpad=SCRATCHPAD)
    nic.activate(e)
    nic.export_window(e, 7, 0x2000, 0x100, R | W)
    assert nic.nic_read(img.symbol("rma_windows"), 24) == struct.pack(WINDOW, 7, R | W, 0x2000, 0x100)
    assert nic.rma_windows(e)[0] == (7, R | W, 0x2000, 0x100)
    ref = Reference(bytearray(HOST_SIZE), {7: (0x2000, 0x100, R | W)})

    def serve(frame):
        nic.send_packet(frame)
        nic.run_until_idle()
        out = [x.frame for x in nic.events() if isinstance(x, softspin.OutboundPacket)]
        assert out == [ref.serve(frame)[0]]
        return out[0][45]

    assert serve(write(7, 0xFC, b"abcd")) == OK and bytes(win.buffer[0x20FC:0x2100]) == b"abcd"
    assert serve(read(7, 0xFC, 4)) == OK
    assert serve(atomic(FADD32, 7, 0, 1)) == PERMISSION
    nic.unexport_window(e, 7)
    ref.windows = {}
    assert serve(read(7, 0xFC, 4)) == BAD_KEY
    assert bytes(win.buffer) == bytes(ref.host)
    for args in [(0, 0, 8, R), (1, 0, 8, 0), (1, 0, 8, 8)]:  # key 0, no rights, unknown rights
        with pytest.raises(softspin.InvalidArgumentError):
            nic.export_window(e, *args)
    with pytest.raises(softspin.LimitError):
        nic.export_window(e, 1, HOST_SIZE - 4, 8, R)


def test_bounds_check_bites(image, tmp_path):
    """Built with SOFTSPIN_SABOTAGE (the bounds check one byte short), a
    write one byte past a window's end is served and the test sees it."""
    t = Target(build(tmp_path, "SOFTSPIN_SABOTAGE"), seed=3)
    f = write(2 + 1, 0x1000 - 3, b"abcd")
    before = t.host()
    assert t.ref.serve(f)[1] == OUT_OF_WINDOW
    got = t.feed([f])
    assert t.host() != before and got[0][45] == OK


@pytest.mark.parametrize("scratchpad", [None, SCRATCHPAD])
@pytest.mark.parametrize("op,w", [(FADD32, 4), (FADD64, 8)])
def test_parallel_fetch_add_is_atomic(image, op, w, scratchpad):
    """200 fetch-and-adds on one word and its neighbour, all in flight at
    once on every HPU: the words end at the sums and the old values
    returned are exactly the distinct partial sums (no update lost)."""
    t = Target(image, seed=4, scratchpad=scratchpad)
    rng = random.Random(5)
    adds = [[rng.randrange(1, 1 << 20) for _ in range(100)] for _ in range(2)]
    frames = [atomic(op, 4, 8 * k, a, txn=k << 16 | i) for i in range(100) for k in range(2) for a in [adds[k][i]]]
    base = WINDOWS[4][0]
    start = [int.from_bytes(t.ref.host[base + 8 * k:][:w], "little") for k in range(2)]
    got = t.feed(frames, batch=len(frames))
    mask = (1 << 8 * w) - 1
    for k in range(2):
        olds = sorted(int.from_bytes(r[82:82 + w], "big") for r in got if struct.unpack_from("!I", r, 58)[0] >> 16 == k)
        assert len(olds) == 100
        final = int.from_bytes(t.host()[base + 8 * k:][:w], "little")
        assert final == (start[k] + sum(adds[k])) & mask
        # Each old value is the start plus the adds served before it.
        assert len(set(olds)) == 100 and (start[k] & mask) in olds
    assert t.counters() == {OK: len(frames)}


# ---- through the CLI: pcap in, responses and host memory out


def test_cli_sim_pcap(tmp_path):
    """`softspin sim --pcap` with a build that exports key 1 over the first
    32 KiB: writes, then reads and atomics of what they wrote, then refused
    requests; the responses (--pcap-out) and the host window (--dump-host)
    exactly the reference's."""
    img = build(tmp_path, "RMA_DEFAULT_WINDOW_SIZE=32768")
    rng = random.Random(6)
    frames = [write(1, 0x100 * k, rng.randbytes(rng.randrange(1, 300)), txn=k) for k in range(20)]
    frames += [read(1, 0x80 * k, rng.randrange(0, 500), txn=100 + k) for k in range(20)]
    frames += [atomic(FADD32, 1, 0x200, 5), atomic(FADD64, 1, 0x208, 1 << 40), atomic(CAS32, 1, 0x300, 0, 9),
               atomic(CAS64, 1, 0x308, 1, 2)]
    # Refused: out of window, overflowing offset, wrong key, unaligned, too
    # long a read, forged lengths; no response: cut short, a NACK, a response.
    frames += [write(1, 32768 - 1, b"xy"), write(1, (1 << 64) - 1, b"xy"), write(2, 0, b"x"),
               atomic(CAS32, 1, 3, 0, 1), read(1, 0, 1433), request(WRITE, 1, 0, 100, b"short"),
               request(FADD64, 1, 0, 4, bytes(8))]
    cut = write(1, 0, b"cut short")
    frames += [cut[:60], request(0, 0, 0, 0, kind=NACK), request(READ | RESPONSE, 1, 0, 0)]
    ref = Reference(bytearray(1 << 16), {1: (0, 32768, R | W | A)})
    served = [ref.serve(f) for f in frames]
    expect = [r for r, _ in served if r is not None]
    assert [st for _, st in served[-10:]] == [OUT_OF_WINDOW, OUT_OF_WINDOW, BAD_KEY, UNALIGNED, MALFORMED, MALFORMED,
                                              MALFORMED, BAD_FRAME, NOT_REQUEST, RESPONSE_DROPPED]
    write_pcap(tmp_path / "in.pcap", frames, gap_us=2000)  # fpspin HPUs are slow: one at a time
    r = subprocess.run([str(CLI), "sim", "--profile", "fpspin", "--image", str(img), "--ph", "rma_target_ph",
                        "--pcap", str(tmp_path / "in.pcap"), "--frame", "eth", "--host-size", str(1 << 16),
                        "--pcap-out", str(tmp_path / "out.pcap"), "--dump-host", str(tmp_path / "host.bin"),
                        "--json", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["errors"] == []
    assert ethernet_frames(tmp_path / "out.pcap") == expect
    assert (tmp_path / "host.bin").read_bytes() == bytes(ref.host)
    if shutil.which("tshark"):
        # The dissector reads the handler's responses as the reference built them.
        out = subprocess.run(["tshark", "-X", f"lua_script:{ROOT / 'tools/wireshark/rma.lua'}", "-r",
                              str(tmp_path / "out.pcap"), "-T", "fields", "-E", "separator=|", "-e", "rma.op.code",
                              "-e", "rma.op.response", "-e", "rma.status", "-e", "rma.txn", "-e", "rma.length"],
                             check=True, capture_output=True, text=True).stdout
        want = ["|".join(str(v) for v in (f[44] & 0x7F, f[44] >> 7, f[45], *struct.unpack_from("!I", f, 58),
                                          *struct.unpack_from("!I", f, 74))) for f in expect]
        assert out.splitlines() == want


def test_cli_sim_rma_transport(tmp_path):
    """`softspin sim --rma --nodes F --rank 0`: the transport block in front of the
    handler. In-order requests are served once; a duplicate and an
    out-of-order one are dropped (re-ACK, NACK) and counted; responses
    carry the block's seq and ack; without --rma the report has no `rma`."""
    img = build(tmp_path, "RMA_DEFAULT_WINDOW_SIZE=32768")
    rng = random.Random(27)
    frames = [write(1, 0x100 * k, rng.randbytes(50), txn=k, seq=k) for k in range(10)]
    frames.insert(5, frames[3])  # a duplicate (its ACK was lost)
    frames.append(write(1, 0x2000, b"ahead", seq=20))  # seq 10..19 lost
    ref = Reference(bytearray(1 << 16), {1: (0, 32768, R | W | A)})
    for f in frames[:5] + frames[6:11]:
        ref.serve(f)
    write_pcap(tmp_path / "in.pcap", frames, gap_us=2000)

    def sim(*extra, status=0):
        r = subprocess.run([str(CLI), "sim", "--profile", "fpspin", "--image", str(img), "--ph", "rma_target_ph",
                            "--pcap", str(tmp_path / "in.pcap"), "--frame", "eth", "--host-size", str(1 << 16),
                            "--pcap-out", str(tmp_path / "out.pcap"), "--dump-host", str(tmp_path / "host.bin"),
                            "--json", "--quiet", *extra], capture_output=True, text=True)
        assert r.returncode == status, r.stderr
        return json.loads(r.stdout)

    # Rank 0 of a node table of four (the requests come from rank 3).
    nodes = tmp_path / "nodes.toml"
    nodes.write_text("".join(f'[[node]]\nrank = {k}\niface = "sEn{k}"\nipv4 = "10.27.9.{k + 1}"\n'
                             f'mac = "02:00:00:00:27:0{k + 1}"\nudp_port = {PORT}\n' for k in range(4)))
    # A pcap peer never acknowledges: the block declares rank 3 failed, and
    # the run says so with exit status 4 (a transfer that did not finish).
    stats = sim("--rma", "--nodes", str(nodes), "--rank", "0", status=4)
    assert [f["rank"] for f in stats["rma"]["failed"]] == [3]
    rma = stats["rma"]
    assert rma["rank"] == 0
    t = rma["transport"]
    assert (t["delivered"], t["duplicates"], t["out_of_order"], t["nacks_sent"]) == (10, 1, 1, 1)
    assert rma["drops"] == {"rma duplicate": 1, "rma out of order": 1}
    assert (tmp_path / "host.bin").read_bytes() == bytes(ref.host)
    out = ethernet_frames(tmp_path / "out.pcap")
    data = [f for f in out if f[43] == DATA]
    # Ten responses, seq 0..9 to rank 3, each acknowledging its request.
    assert [struct.unpack_from("!HHII", f, 46) for f in data] == [(0, 3, k, k + 1) for k in range(10)]
    # The NACK names the next expected number: 10.
    nacks = [f for f in out if f[43] == NACK]
    assert len(nacks) == 1 and struct.unpack_from("!I", nacks[0], 54)[0] == 10
    # Without the block: no `rma` in the report, and the duplicate is served twice.
    assert "rma" not in sim()


@pytest.mark.parametrize("rank", [None, 2])
def test_transport_from_python(image, rank):
    """install(rma_rank=K) puts the RMA transport in front of the ECTX: a
    request that arrives twice (the same seq) is served once, the duplicate
    dropped and counted in the report's `rma` section; without it both
    copies are served and the report has no such section."""
    nic = softspin.Nic("fpspin")
    img = nic.load_image(image)
    win = nic.host_array(HOST_SIZE)
    e = nic.install(img, ph="rma_target_ph", host_window=win, scratchpad=SCRATCHPAD, rma_rank=rank)
    nic.activate(e)
    nic.export_window(e, 1, 0, HOST_SIZE, R | W | A)
    f = atomic(FADD64, 1, 0, 5, src=3, dst=2, seq=0)
    for m in range(2):
        nic.send_packet(f, msg_id=m)
        nic.run_until_idle()
    assert int.from_bytes(bytes(win.buffer[:8]), "little") == (10 if rank is None else 5)
    rep = nic.report()
    if rank is None:
        assert "rma" not in rep or rep["rma"] is None
    else:
        t = rep["rma"]["transport"]
        assert rep["rma"]["rank"] == 2 and (t["delivered"], t["duplicates"]) == (1, 1), rep["rma"]
    for bad in (-1, 1 << 16):
        with pytest.raises(OverflowError):
            nic.install(img, ph="rma_target_ph", rma_rank=bad)
