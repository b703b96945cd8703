"""slmp_ddt (issue 12, demo 3): SLMP segments of a packed MPI datatype in,
the unpacked host buffer out. Every buffer is compared byte for byte, gaps
included, with ddt.unpack (the typemap enumerated in MPI order, not the
handler's seek), ACKs with FPsPIN's ACK built from each data frame (the
SLMP receive tests' reference), and completion with one notification."""

import importlib.util
import pathlib
import random
import struct
import zlib

import numpy as np
import pytest

import softspin

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ddt = _load("slmp_ddt_ddt", HERE / "ddt.py")
# SLMP frames and FPsPIN's ACK: one definition, the SLMP receive tests'.
rx = _load("slmp_recv_tests", ROOT / "examples/slmp_recv/test_slmp_recv.py")
data_frame, segments, reference_ack, shuffled_with_dups = rx.data_frame, rx.segments, rx.reference_ack, rx.shuffled_with_dups
SYN, EOM = rx.SYN, rx.EOM

# Counter indices: slmp.h's receiver core, then handler.c's.
(SEGMENT, DUPLICATE, ACKS, COMPLETE, BAD_FRAME, MISALIGNED, OUT_OF_WINDOW, TOO_LARGE, SLOT_BUSY, EOM_CONFLICT,
 AFTER_DONE, CMD_FAILED, NOT_DATA, BAD_DESC, PIECES, OUT_OF_ORDER, BUSY) = range(17)
E_HEADER, E_NODE, E_SIZE, E_DEPTH = 1, 2, 3, 4
SLOTS = 16
FILL = 0xA5  # the host buffer's bytes before: gaps must keep it


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return softspin.build(HERE / "handler.c", tmp_path_factory.mktemp("ddt") / "slmp_ddt.elf", profile="fpspin")


class Receiver:
    """A simulated FPsPIN NIC running slmp_ddt_ph on a lent, prefilled buffer."""

    def __init__(self, image, t, *, seg=1024, stride=None, mode=0, desc=None):
        self.nic = softspin.Nic("fpspin")
        self.img = self.nic.load_image(image)
        self.stride = stride or max(4096, (t.extent + 4095) // 4096 * 4096)
        self.buf = np.full(SLOTS * self.stride, FILL, np.uint8)
        self.win = self.nic.lend(self.buf)
        self.e = self.nic.install(self.img, ph="slmp_ddt_ph", host_window=self.win)
        self.nic.nic_write(self.img.symbol("slmp_config"), struct.pack("<II", seg, self.stride))
        self.nic.nic_write(self.img.symbol("ddt_desc"), t.serialise() if desc is None else desc)
        self.nic.nic_write(self.img.symbol("ddt_mode"), struct.pack("<I", mode))
        self.nic.activate(self.e)
        self.seg, self.pkt, self.acks, self.notes = seg, 0, [], []

    def feed(self, frames, batch=48):
        acks = []
        for i in range(0, len(frames), batch):
            for f in frames[i:i + batch]:
                self.nic.send_packet(f, msg_id=self.pkt)
                self.pkt += 1
            self.nic.run_until_idle()
            acks += [x.frame for x in self.nic.events() if isinstance(x, softspin.OutboundPacket)]
            self.notes += self.nic.poll_notifications()
        assert self.nic.report()["errors"] == []
        self.acks += acks
        return acks

    def counters(self):
        return {i: (s, c) for i, s, c in self.nic.counters(self.e)}

    def count(self, idx):
        return self.counters().get(idx, (0, 0))[1]

    def slot_bytes(self, msg_id):
        base = (msg_id % SLOTS) * self.stride
        return bytes(self.buf[base:base + self.stride])

    def completions(self):
        return [(struct.unpack("<III", n.data), n.host_ref) for n in self.notes]


def expected(t, stream, stride):
    out = bytearray([FILL]) * stride
    return bytes(ddt.unpack(t, stream, out))


# ---- the types: each exercises one node kind, nested as MPI programs nest them

F = ddt.FLOAT
TYPES = {
    # a 2-D halo column: 40 rows of 3 doubles, row pitch 1000 bytes
    "vector": ddt.message(2, ddt.vec(40, 3, 125, ddt.Bytes(8))),
    # irregular blocks, some shorter than a segment, some spanning several
    "indexed": ddt.message(3, ddt.Indexed([5, 700, 1, 64, 300], [0, 40, 6000, 9000, 13000], ddt.Bytes(4))),
    # struct of a vector of an indexed, a float and a contiguous array (struct-of-vector, nested 4 deep)
    "struct_of_vector": ddt.message(4, ddt.Struct(
        [2, 1, 3],
        [0, 3000, 3100],
        [ddt.hvec(5, 2, 300, ddt.Indexed([1, 3], [0, 40], ddt.Bytes(6))), F, ddt.ctg(50, F)])),
    # seed 000's Simple: 3 elements, one dense run
    "simple": ddt.message(3, ddt.SIMPLE),
    # seed 000's Complex shape (5 levels) with strides widened so it does not overlap
    "complex_spread": ddt.message(2, ddt.hvec(2, 1, 73728, ddt.hvec(2, 1, 36864, ddt.hvec(2, 1, 18432, ddt.vec(
        32, 6, 8, ddt.ctg(18, F)))))),
}


def test_types_are_what_they_claim():
    """Sizes, extents and density of the builder against the typemap."""
    for name, t in TYPES.items():
        ps = ddt.pieces(t)
        assert sum(n for _, n in ps) == t.size, name
        assert max(d + n for d, n in ps) == t.extent, name
        assert not ddt.overlaps(t), name
    assert TYPES["simple"].dense and ddt.pieces(TYPES["simple"]) == [(0, 3 * 110592)]
    c = ddt.COMPLEX
    assert (c.size, c.extent, c.depth()) == (110592, 55152, 5) and ddt.overlaps(c)
    assert ddt.SIMPLE.size == c.size == 110592  # 20 elements: the 2160 KB messages of seed 000 Fig. 6.8


def test_limits_match_the_image(image):
    r = Receiver(image, TYPES["vector"])  # constants are readable once the image is installed
    rd = lambda s: struct.unpack("<I", r.nic.nic_read(r.img.symbol(s), 4))[0]
    assert (rd("ddt_desc_words_max"), rd("ddt_depth_max"), rd("slmp_slot_count")) == (ddt.DESC_WORDS_MAX, ddt.DEPTH_MAX,
                                                                                       SLOTS)


def check_message(r, t, msg_id, stream, frames, fed):
    slot = msg_id % SLOTS
    assert r.slot_bytes(msg_id) == expected(t, stream, r.stride)
    assert r.completions() == [((msg_id, len(stream), slot), r.win.base + slot * r.stride)]
    assert sorted(r.acks) == sorted(reference_ack(f) for f in fed if struct.unpack_from("!H", f, 42)[0] & SYN)
    c = r.counters()
    assert c[SEGMENT] == (len(stream), len(frames))
    assert c.get(DUPLICATE, (0, 0))[1] == len(fed) - len(frames)
    assert set(c) <= {SEGMENT, DUPLICATE, ACKS, COMPLETE, PIECES}


@pytest.mark.parametrize("order", ["in_order", "shuffled", "duplicated"])
@pytest.mark.parametrize("name", list(TYPES))
def test_packet_level(image, name, order):
    """Packet-level parallelism: every segment scattered on its own, in any
    order, duplicates harmless."""
    t = TYPES[name]
    rng = random.Random(zlib.crc32(f"{name}/{order}".encode()))
    stream = rng.randbytes(t.size)
    msg_id = 0x5000 + len(name)
    frames = segments(msg_id, stream, 1462, syn="all")
    fed = {"in_order": frames, "shuffled": rng.sample(frames, len(frames)),
           "duplicated": shuffled_with_dups(frames, rng, dup=0.3)}[order]
    r = Receiver(image, t, seg=1462)
    r.feed(fed, batch=1 if order == "in_order" else 48)
    check_message(r, t, msg_id, stream, frames, fed)


def test_partial_message_is_a_prefix(image):
    """A message shorter than the type (MPI: fewer elements received) fills
    the typemap's prefix; nothing else is written."""
    t = TYPES["struct_of_vector"]
    stream = random.Random(5).randbytes(t.size // 2 + 333)
    frames = segments(9, stream, 1024, syn="msg")
    r = Receiver(image, t)
    r.feed(random.Random(6).sample(frames, len(frames)))
    assert r.slot_bytes(9) == expected(t, stream, r.stride)
    assert r.completions() == [((9, len(stream), 9), r.win.base + 9 * r.stride)]


def test_two_messages_two_slots(image):
    t = TYPES["indexed"]
    rng = random.Random(7)
    a, b = rng.randbytes(t.size), rng.randbytes(t.size)
    fa, fb = segments(1, a, 1024), segments(2, b, 1024, syn="none")
    r = Receiver(image, t)
    r.feed(shuffled_with_dups(fa + fb, rng))
    assert r.slot_bytes(1) == expected(t, a, r.stride) and r.slot_bytes(2) == expected(t, b, r.stride)
    assert sorted(n for n, _ in r.completions()) == [(1, len(a), 1), (2, len(b), 2)]


def window_one_sender(r, frames, rng, dup=0.3, max_rounds=10000):
    """The sender seed 000 uses for message-level parallelism, over a link
    that duplicates and reorders: each round it resends every unACKed
    segment (plus duplicates of ACKed ones), shuffled. The receiver must drop
    out-of-order segments unACKed, so the sender resends them."""
    unacked = {struct.unpack_from("!I", f, 48)[0]: f for f in frames}
    rounds = 0
    while unacked and rounds < max_rounds:
        batch = list(unacked.values())[:4] + [rng.choice(frames) for _ in range(int(dup * 4) + 1)]
        rng.shuffle(batch)
        for a in r.feed(batch):
            unacked.pop(struct.unpack_from("!I", a, 48)[0], None)
        rounds += 1
    assert not unacked, f"{len(unacked)} segments never ACKed"
    return rounds


def test_message_level_complex_overlapping(image):
    """Seed 000's Complex type overlaps itself: MPI's serial unpack leaves
    the last write. Message-level mode applies segments in stream order, so
    under reordering and duplication the buffer equals the serial unpack."""
    t = ddt.message(2, ddt.COMPLEX)
    rng = random.Random(8)
    stream = rng.randbytes(t.size)
    frames = segments(3, stream, 1462, syn="all")
    r = Receiver(image, t, seg=1462, mode=1)
    window_one_sender(r, frames, rng)
    assert r.slot_bytes(3) == expected(t, stream, r.stride)
    assert [n for n, _ in r.completions()] == [(3, len(stream), 3)]
    assert r.count(OUT_OF_ORDER) > 0 and r.count(DUPLICATE) > 0  # the disorder really happened
    assert r.count(SEGMENT) == len(frames)


def test_packet_level_on_overlapping_type_differs(image):
    """Why message-level mode exists: the same Complex message delivered out
    of order in packet-level mode leaves other bytes than the serial unpack
    (the check can fail)."""
    t = ddt.message(1, ddt.COMPLEX)
    rng = random.Random(9)
    stream = rng.randbytes(t.size)
    frames = segments(4, stream, 1462)
    r = Receiver(image, t, seg=1462)
    r.feed(frames[::-1], batch=1)
    assert [n for n, _ in r.completions()] == [(4, len(stream), 4)]
    assert r.slot_bytes(4) != expected(t, stream, r.stride)


def test_message_level_non_overlapping(image):
    t = TYPES["struct_of_vector"]
    rng = random.Random(10)
    stream = rng.randbytes(t.size)
    frames = segments(5, stream, 1024, syn="all")
    r = Receiver(image, t, mode=1)
    window_one_sender(r, frames, rng)
    assert r.slot_bytes(5) == expected(t, stream, r.stride)
    assert [n for n, _ in r.completions()] == [(5, len(stream), 5)]


def test_sabotaged_seek_is_caught(image, tmp_path):
    """Built with SOFTSPIN_SABOTAGE (the binary search wrong at block
    starts), the indexed message is not what the reference says."""
    bad = softspin.build(HERE / "handler.c", tmp_path / "sab.elf", profile="fpspin", define=["SOFTSPIN_SABOTAGE"])
    t = TYPES["indexed"]
    stream = random.Random(11).randbytes(t.size)
    r = Receiver(bad, t)
    r.feed(segments(6, stream, 1024))
    assert r.slot_bytes(6) != expected(t, stream, r.stride) or r.completions() == []


# ---- bad descriptions: counted by cause, nothing written or ACKed, no fault


def words(t):
    return list(struct.unpack(f"<{len(t.serialise()) // 4}I", t.serialise()))


def corrupt(t, fn):
    w = words(t)
    fn(w)
    return struct.pack(f"<{len(w)}I", *w)


def test_bad_descriptions_counted(image):
    # Words: header 0..2, root vector 3..10 (size at 4, child at 10), inner
    # vector 11..18 (size at 12), bytes 19..22.
    t = ddt.message(2, ddt.vec(40, 3, 125, ddt.Bytes(8)))
    assert words(t)[10] == 11 and words(t)[18] == 19
    loop = struct.pack("<11I", ddt.MAGIC, 11, 3, ddt.VECTOR, t.size, t.size, 0, 1, 1, 0, 3)  # a vector of itself
    cases = {
        "none written": (bytes(16), E_HEADER),
        "word count over the limit": (corrupt(t, lambda w: w.__setitem__(1, ddt.DESC_WORDS_MAX + 1)), E_HEADER),
        "root outside": (corrupt(t, lambda w: w.__setitem__(2, 4000)), E_HEADER),
        "unknown kind": (corrupt(t, lambda w: w.__setitem__(11, 9)), E_NODE),
        "child outside": (corrupt(t, lambda w: w.__setitem__(10, 3000)), E_NODE),
        "size inconsistent": (corrupt(t, lambda w: w.__setitem__(12, w[12] - 8)), E_SIZE),
        "child size zero": (corrupt(t, lambda w: w.__setitem__(12, 0)), E_SIZE),
        "a cycle": (loop, E_DEPTH),
    }
    stream = bytes(range(256)) * (t.size // 256 + 1)
    stream = stream[:t.size]
    for what, (desc, code) in cases.items():
        r = Receiver(image, t, desc=desc)
        r.feed(segments(1, stream, 1024))
        c = r.counters()
        assert c.get(BAD_DESC, (0, 0))[1] > 0, what
        assert c[BAD_DESC][0] == code * c[BAD_DESC][1], (what, c[BAD_DESC])
        assert r.acks == [] and r.notes == [], what
        if code == E_HEADER:
            assert not (r.buf != FILL).any(), what


def test_destinations_beyond_the_slot_refused(image):
    """A type whose extent exceeds msg_stride writes nothing past the slot:
    the offending segments are counted out of window, unACKed."""
    t = ddt.message(1, ddt.hvec(4, 1, 8192, ddt.Bytes(1024)))  # extent 25600
    stream = random.Random(12).randbytes(t.size)
    r = Receiver(image, t, stride=16384)
    r.feed(segments(0, stream, 1024))
    assert r.count(OUT_OF_WINDOW) == 2 and r.notes == []  # blocks 2 and 3
    assert not (r.buf[16384:] != FILL).any()
    # A message longer than the type: refused by offset.
    r2 = Receiver(image, t, stride=32768)
    r2.feed([data_frame(1, t.size, b"x" * 1024, SYN | EOM)])
    assert r2.count(OUT_OF_WINDOW) == 1 and r2.acks == []


def test_builder_refuses_what_the_handler_cannot_take():
    with pytest.raises(ddt.DatatypeError, match="disp"):
        ddt.Indexed([1], [-4], F)
    with pytest.raises(ddt.DatatypeError, match="DEPTH_MAX"):
        t = F
        for _ in range(ddt.DEPTH_MAX + 1):
            t = ddt.hvec(2, 1, t.extent, t)
        t.serialise()
    with pytest.raises(ddt.DatatypeError, match="DESC_WORDS_MAX"):
        ddt.Indexed([1] * 2000, list(range(0, 8000, 4)), F).serialise()
    with pytest.raises(ddt.DatatypeError, match="size 0"):
        ddt.Vector(0, 1, 4, F)


def test_random_corruptions_never_fault(image):
    """Random words of a valid description overwritten with random or
    boundary values: the handler may refuse or misplace bytes, but never
    faults (the engine reports no handler error) and never writes outside
    the message's slot."""
    t = TYPES["struct_of_vector"]
    good = words(t)
    rng = random.Random(13)
    stream = rng.randbytes(t.size)
    frames = segments(1, stream, 1024, syn="none")
    r = Receiver(image, t)
    for trial in range(300):
        w = list(good)
        for _ in range(rng.randrange(1, 4)):
            w[rng.randrange(len(w))] = rng.choice([0, 1, 2, 3, 4, 5, 0xFFFFFFFF, 0x80000000, len(w), len(w) - 1,
                                                   rng.randrange(1 << 32), rng.randrange(64)])
        r.nic.nic_write(r.img.symbol("ddt_desc"), struct.pack(f"<{len(w)}I", *w))
        # Free slot 1 (and its message-mode state) for the next trial.
        nbytes = struct.unpack("<I", r.nic.nic_read(r.img.symbol("slmp_slot_bytes"), 4))[0]
        r.nic.nic_write(r.img.symbol("slmp_slots") + nbytes, bytes(nbytes))
        r.feed(frames)  # asserts no handler error
        outside = np.concatenate([r.buf[:r.stride], r.buf[2 * r.stride:]])
        assert not (outside != FILL).any(), trial


def test_message_level_slot_reuse_after_release(image):
    """Message 17 shares message 1's slot: refused until the host frees the
    slot (SLMP state and the message-level offset), then received."""
    t = TYPES["vector"]
    rng = random.Random(14)
    a, b = rng.randbytes(t.size), rng.randbytes(t.size)
    r = Receiver(image, t, mode=1)
    r.feed(segments(1, a, 1024), batch=1)
    r.feed(segments(17, b, 1024)[:1], batch=1)
    assert r.count(SLOT_BUSY) == 1 and r.slot_bytes(1) == expected(t, a, r.stride)
    rd = lambda s: struct.unpack("<I", r.nic.nic_read(r.img.symbol(s), 4))[0]
    r.nic.nic_write(r.img.symbol("slmp_slots") + rd("slmp_slot_bytes"), bytes(rd("slmp_slot_bytes")))
    r.nic.nic_write(r.img.symbol("ddt_msg_state") + rd("ddt_msg_state_bytes"), bytes(rd("ddt_msg_state_bytes")))
    r.feed(segments(17, b, 1024), batch=1)
    assert r.slot_bytes(17) == expected(t, b, r.stride)
    assert [n for n, _ in r.completions()] == [(1, len(a), 1), (17, len(b), 1)]
