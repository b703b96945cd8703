"""The SLMP receive handler (issue 12, receiver side): FPsPIN-format frames in,
ACK frames and host memory out. ACKs are compared byte for byte with ACKs
built here from the data frame's fields (FPsPIN's prepare_hdrs_ack: addresses
and ports swapped, lengths for a 10-byte payload, IP checksum summed again,
UDP checksum 0, flags = ACK); messages are compared with the bytes sent and
completion with what a set of distinct segments says."""

import json
import pathlib
import random
import re
import struct
import subprocess
import sys

import pytest

import softspin

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLI = ROOT / "target" / "release" / "softspin"
sys.path.insert(0, str(ROOT / "tests" / "py"))
from packets import csum, eth, ethernet_frames, ipv4, udp, write_pcap  # noqa: E402

PEER_MAC = bytes.fromhex("02000000bb01")
NIC_MAC = bytes.fromhex("02000000bb02")
PEER_IP = bytes([10, 12, 0, 1])
NIC_IP = bytes([10, 12, 0, 2])
EOM, SYN, ACK = 0x8000, 0x4000, 0x2000

# Counter indices and table geometry of handler.c.
(SEGMENT, DUPLICATE, ACKS, COMPLETE, BAD_FRAME, MISALIGNED, OUT_OF_WINDOW, TOO_LARGE, SLOT_BUSY, EOM_CONFLICT,
 AFTER_DONE, CMD_FAILED, NOT_DATA) = range(13)
SLOTS, SEGS_MAX = 16, 65536
# slmp.h: slot header words, tags, done values, config flags.
H_TAG, H_RECEIVED, H_TOTAL, H_DONE, H_MSG, H_PEER_IP, H_PEER_PORT, H_SEEN = range(8)
TAG_RETIRING, TAG_EVICTED, TAG_DELIVERED = 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFC
DONE_STORED = 2
CFG_ACK_AFTER_HOST = 1


def slmp_port_of(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, pattern
    return int(m.group(1))


def test_udp_port_has_one_value():
    """sdk/include/slmp.h and softspin_wire (crates/wire) agree on the port."""
    c = slmp_port_of((ROOT / "sdk/include/slmp.h").read_text(), r"#define SLMP_UDP_PORT (\d+)")
    rust = slmp_port_of((ROOT / "crates/wire/src/slmp.rs").read_text(), r"pub const UDP_PORT: u16 = (\d+);")
    assert c == rust == 9330


def data_frame(msg_id, offset, payload, flags, *, sport=40000, ident=0, ttl=64, tos=0, udp_csum=True, pad_to=0,
               smac=PEER_MAC, dmac=NIC_MAC, sip=PEER_IP, dip=NIC_IP):
    """What FPsPIN's sender (a kernel UDP socket to port 9330) puts on the wire."""
    body = struct.pack("!HII", flags, msg_id, offset) + payload
    seg = udp(sip, dip, sport, 9330, body, checksum=udp_csum)
    return eth(dmac, smac, ipv4(sip, dip, 17, seg, ident, ttl, tos), pad_to=pad_to)


def reference_ack(data: bytes) -> bytes:
    """FPsPIN's ACK of a data frame, from the frame's fields."""
    tos, ident, frag, ttl = data[15], *struct.unpack_from("!HHB", data, 18)
    sip, dip = data[26:30], data[30:34]
    sport, dport = struct.unpack_from("!HH", data, 34)
    msg_id, offset = struct.unpack_from("!II", data, 44)
    slmp = struct.pack("!HII", ACK, msg_id, offset)
    seg = udp(dip, sip, dport, sport, slmp, checksum=False)
    return eth(data[6:12], data[0:6], ipv4(dip, sip, 17, seg, ident, ttl, tos, frag))


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return softspin.build(HERE / "handler.c", tmp_path_factory.mktemp("slmp") / "slmp_recv.elf", profile="fpspin")


class Receiver:
    """A simulated FPsPIN NIC running slmp_ph with its config written."""

    def __init__(self, image, seg=1024, stride=1 << 18, window=SLOTS << 18):
        self.nic = softspin.Nic("fpspin")
        self.img = self.nic.load_image(image)
        self.win = self.nic.host_array(window)
        self.e = self.nic.install(self.img, ph="slmp_ph", host_window=self.win)
        self.nic.nic_write(self.img.symbol("slmp_config"), struct.pack("<II", seg, stride))
        self.nic.activate(self.e)
        self.seg, self.stride = seg, stride
        self.pkt = 0
        self.acks = []
        self.notes = []

    def feed(self, frames, batch=48):
        """Frames in the given order, `batch` at a time in flight (each its
        own sPIN message, as a pcap gives them: any HPU, any order)."""
        for i in range(0, len(frames), batch):
            for f in frames[i:i + batch]:
                self.nic.send_packet(f, msg_id=self.pkt)
                self.pkt += 1
            self.nic.run_until_idle()
            self.acks += [x.frame for x in self.nic.events() if isinstance(x, softspin.OutboundPacket)]
            self.notes += self.nic.poll_notifications()
        assert self.nic.report()["errors"] == []

    def counters(self):
        return {i: (s, c) for i, s, c in self.nic.counters(self.e)}

    def count(self, idx):
        return self.counters().get(idx, (0, 0))[1]

    def message(self, msg_id, n):
        base = (msg_id % SLOTS) * self.stride
        return bytes(self.win.buffer[base:base + n])

    def release(self, slot):
        """What a host does after consuming a message: zero its slot."""
        nbytes = struct.unpack("<I", self.nic.nic_read(self.img.symbol("slmp_slot_bytes"), 4))[0]
        self.nic.nic_write(self.img.symbol("slmp_slots") + slot * nbytes, bytes(nbytes))

    def completions(self):
        return [(struct.unpack("<III", n.data), n.host_ref) for n in self.notes]

    def slot_addr(self, slot):
        nbytes = struct.unpack("<I", self.nic.nic_read(self.img.symbol("slmp_slot_bytes"), 4))[0]
        return self.img.symbol("slmp_slots") + slot * nbytes, nbytes

    def header(self, slot):
        return struct.unpack("<8I", self.nic.nic_read(self.slot_addr(slot)[0], 32))

    def set_word(self, slot, word, value):
        self.nic.nic_write(self.slot_addr(slot)[0] + 4 * word, struct.pack("<I", value))

    def retire(self, slot, tomb):
        """What `softspin slmp recv` does: the key kept under a tombstone,
        everything else zero."""
        h = self.header(slot)
        addr, nbytes = self.slot_addr(slot)
        b = bytearray(nbytes)
        for w, v in ((H_TAG, tomb), (H_MSG, h[H_MSG]), (H_PEER_IP, h[H_PEER_IP]), (H_PEER_PORT, h[H_PEER_PORT])):
            struct.pack_into("<I", b, 4 * w, v)
        self.nic.nic_write(addr, bytes(b))


def segments(msg_id, data, seg, syn="all", **kw):
    """The frames of one message: fixed-size segments, EOM on the last;
    SYN on all, on first and last ("msg", FPsPIN's message mode) or none."""
    offs = list(range(0, len(data), seg)) or [0]
    out = []
    for k, off in enumerate(offs):
        last = k == len(offs) - 1
        s = syn == "all" or (syn == "msg" and (k == 0 or last))
        out.append(data_frame(msg_id, off, data[off:off + seg], (EOM if last else 0) | (SYN if s else 0), **kw))
    return out


def test_acks_are_fpspins_byte_for_byte(image):
    """Data frames with SYN get exactly FPsPIN's ACK, in any header variety;
    frames without SYN get none."""
    rng = random.Random(21)
    r = Receiver(image, seg=512)
    frames, expect = [], []
    for m in range(SLOTS):
        data = rng.randbytes(rng.randrange(1, 6 * 512))
        kw = dict(sport=rng.randrange(1024, 65536), ident=rng.randrange(65536), ttl=rng.randrange(1, 256),
                  tos=rng.randrange(256), udp_csum=rng.random() < 0.5, pad_to=60,
                  smac=rng.randbytes(6), sip=rng.randbytes(4))
        for f in segments(m * 1000 + m, data, 512, syn=rng.choice(["all", "msg", "none"]), **kw):
            frames.append(f)
            if struct.unpack_from("!H", f, 42)[0] & SYN:
                expect.append(reference_ack(f))
    # One at a time, so ACKs come out in frame order.
    r.feed(frames, batch=1)
    assert len(expect) > 10 and len(expect) < len(frames)
    assert r.acks == expect
    for a in r.acks:
        assert len(a) == 52 and csum(a[14:34]) == 0 and struct.unpack_from("!H", a, 40)[0] == 0
    assert r.count(ACKS) == len(expect) and r.count(COMPLETE) == SLOTS


def test_ack_check_bites(image, tmp_path):
    """Built with SOFTSPIN_SABOTAGE (SYN echoed in the ACK), every ACK differs."""
    bad = softspin.build(HERE / "handler.c", tmp_path / "sab.elf", profile="fpspin", define=["SOFTSPIN_SABOTAGE"])
    r = Receiver(bad)
    frames = segments(3, bytes(range(200)) * 10, 1024)
    r.feed(frames, batch=1)
    assert len(r.acks) == len(frames)
    assert all(a != reference_ack(f) for a, f in zip(r.acks, frames))


def shuffled_with_dups(frames, rng, dup=0.10):
    out = frames + [rng.choice(frames) for _ in range(max(1, int(len(frames) * dup)))]
    rng.shuffle(out)
    return out


def test_message_shuffled_with_duplicates(image):
    """100 KiB in 1408-byte segments, shuffled, 10 % duplicated: byte-exact,
    one notification with msg_id and length, duplicates not counted."""
    rng = random.Random(22)
    data = rng.randbytes(100 * 1024)
    msg_id = 0xDEADBEEF
    frames = segments(msg_id, data, 1408)
    fed = shuffled_with_dups(frames, rng)
    r = Receiver(image, seg=1408)
    r.feed(fed)
    slot = msg_id % SLOTS
    assert r.message(msg_id, len(data)) == data
    assert r.completions() == [((msg_id, len(data), slot), r.win.base + slot * r.stride)]
    c = r.counters()
    assert c[SEGMENT] == (len(data), len(frames))
    assert c[DUPLICATE][1] == len(fed) - len(frames)
    assert c[ACKS][1] == len(fed)  # every SYN answered, duplicates too (an ACK may be lost)
    # Nothing written past the message.
    assert not any(r.win.buffer[slot * r.stride + len(data):(slot + 1) * r.stride])


@pytest.mark.parametrize("missing", ["first", "middle", "eom"])
def test_no_completion_with_a_segment_missing(image, missing):
    """Duplicates of the others (even adding up to the message's length) do
    not complete it early; the missing segment, when it comes, does."""
    rng = random.Random(23)
    data = rng.randbytes(50 * 1000 + 17)
    frames = segments(77, data, 1000)
    k = {"first": 0, "middle": len(frames) // 2, "eom": len(frames) - 1}[missing]
    rest = frames[:k] + frames[k + 1:]
    r = Receiver(image, seg=1000)
    r.feed(shuffled_with_dups(rest, rng, dup=0.5))
    assert r.notes == [] and r.count(COMPLETE) == 0
    r.feed([frames[k]])
    assert r.completions() == [((77, len(data), 77 % SLOTS), r.win.base + (77 % SLOTS) * r.stride)]
    assert r.message(77, len(data)) == data


def test_two_messages_interleaved(image):
    rng = random.Random(24)
    a, b = rng.randbytes(30000), rng.randbytes(12345)
    fa, fb = segments(5, a, 1024, syn="msg"), segments(22, b, 1024, syn="none")
    r = Receiver(image)
    r.feed(shuffled_with_dups(fa + fb, rng))
    assert r.message(5, len(a)) == a and r.message(22, len(b)) == b
    got = sorted(n for n, _ in r.completions())
    assert got == [(5, len(a), 5), (22, len(b), 6)]


def test_slot_collision_refused_then_released(image):
    """Message 23 shares message 7's slot: refused (counted, not written, not
    ACKed) until the host releases the slot, then received."""
    rng = random.Random(25)
    a, b = rng.randbytes(5000), rng.randbytes(3000)
    r = Receiver(image)
    r.feed(segments(7, a, 1024))
    r.feed(segments(23, b, 1024))
    assert r.count(SLOT_BUSY) == 3 and r.message(7, len(a)) == a
    assert len(r.acks) == 5
    # A late duplicate of the completed message: ACKed, not written.
    r.feed([segments(7, a, 1024)[1]])
    assert r.count(AFTER_DONE) == 1 and len(r.acks) == 6
    r.release(7)
    r.feed(segments(23, b, 1024))
    assert r.message(23, len(b)) == b
    assert [n for n, _ in r.completions()] == [(7, len(a), 7), (23, len(b), 7)]


def test_a_message_is_its_senders(image):
    """Message id 3 from two senders (another UDP port, another address):
    while the first holds the slot the others are refused (counted, not
    written, not ACKed), never mixed in; each arrives whole in its turn."""
    rng = random.Random(31)
    a, b, c = rng.randbytes(5000), rng.randbytes(4000), rng.randbytes(3000)
    other_ip = bytes([10, 12, 0, 9])
    r = Receiver(image)
    fa, fb, fc = segments(3, a, 1024), segments(3, b, 1024, sport=40001), segments(3, c, 1024, sip=other_ip)
    r.feed(fa[:2] + fb + fc, batch=1)
    assert r.count(SLOT_BUSY) == len(fb) + len(fc) and r.acks == [reference_ack(f) for f in fa[:2]]
    r.feed(fa[2:])
    assert r.message(3, len(a)) == a and r.completions() == [((3, len(a), 3), r.win.base + 3 * r.stride)]
    h = r.header(3)
    assert (h[H_MSG], h[H_PEER_IP].to_bytes(4, "little"), h[H_PEER_PORT]) == (3, PEER_IP, 40000)
    for f, d in ((fb, b), (fc, c)):
        r.release(3)
        r.feed(f)
        assert r.message(3, len(d)) == d
    assert [n for n, _ in r.completions()] == [(3, len(a), 3), (3, len(b), 3), (3, len(c), 3)]


def test_ack_after_host_and_tombstones(image):
    """With SLMP_CFG_ACK_AFTER_HOST the segment that completes a message is
    not ACKed until the host has stored it (done = STORED); a slot being
    retired refuses everything; a DELIVERED tombstone ACKs its message's
    retransmissions and is taken by the next message; an EVICTED one
    refuses its own message and is taken by another."""
    rng = random.Random(32)
    a, b = rng.randbytes(3000), rng.randbytes(2000)
    r = Receiver(image)
    r.nic.nic_write(r.img.symbol("slmp_config"), struct.pack("<III", 1024, r.stride, CFG_ACK_AFTER_HOST))
    fa = segments(5, a, 1024)
    r.feed(fa, batch=1)
    assert r.message(5, len(a)) == a and len(r.completions()) == 1
    assert r.acks == [reference_ack(f) for f in fa[:-1]]  # the completing one waits
    r.feed([fa[-1]])
    assert len(r.acks) == 2 and r.count(AFTER_DONE) == 1  # not stored yet: still no ACK
    r.set_word(5, H_DONE, DONE_STORED)
    r.feed([fa[-1]])
    assert r.acks[-1] == reference_ack(fa[-1]) and len(r.acks) == 3
    r.set_word(5, H_TAG, TAG_RETIRING)
    busy = r.count(SLOT_BUSY)
    r.feed([fa[0]])
    assert len(r.acks) == 3 and r.count(SLOT_BUSY) == busy + 1
    r.retire(5, TAG_DELIVERED)
    r.feed([fa[1]])
    assert r.acks[-1] == reference_ack(fa[1]) and len(r.completions()) == 1 and r.header(5)[H_TAG] == TAG_DELIVERED
    # Message 21 (same slot) takes the tombstone.
    fb = segments(21, b, 1024)
    r.feed(fb, batch=1)
    assert r.message(21, len(b)) == b and [n for n, _ in r.completions()][-1] == (21, len(b), 5)
    # Evicted, incomplete: its own segments are refused, another sender's taken.
    r.release(5)
    r.feed(fa[:1])
    r.retire(5, TAG_EVICTED)
    n_acks, busy = len(r.acks), r.count(SLOT_BUSY)
    r.feed(fa[1:])
    assert len(r.acks) == n_acks and r.count(SLOT_BUSY) == busy + len(fa) - 1
    fc = segments(5, a, 1024, sport=40002)
    r.feed(fc, batch=1)
    assert r.message(5, len(a)) == a and [n for n, _ in r.completions()][-1] == (5, len(a), 5)
    assert len(r.acks) == n_acks + len(fc) - 1


def test_empty_message(image):
    r = Receiver(image)
    f = data_frame(9, 0, b"", EOM | SYN)
    r.feed([f])
    assert r.completions() == [((9, 0, 9), r.win.base + 9 * r.stride)] and r.acks == [reference_ack(f)]


def test_bad_frames_counted(image):
    """Frames that are no SLMP segment, or that it cannot place, are counted
    by cause, not written, not ACKed, and break nothing."""
    seg, stride = 1024, 1 << 14
    r = Receiver(image, seg=seg, stride=stride, window=3 * stride + 1000)  # slot 3 partly, 4.. not at all
    good = data_frame(1, 0, b"x" * seg, SYN)
    bad = {
        BAD_FRAME: [good[:51], good[:14], NIC_MAC + PEER_MAC + b"\x86\xdd" + good[14:],  # short, IPv6
                    good[:16] + struct.pack("!H", 2000) + good[18:],  # IP length beyond the frame
                    good[:38] + struct.pack("!H", 17) + good[40:],  # UDP length below the SLMP header
                    good[:14] + b"\x46" + good[15:],  # IHL 6
                    good[:20] + b"\x20\x00" + good[22:]],  # a fragment (MF)
        MISALIGNED: [data_frame(1, 100, b"x" * seg, SYN), data_frame(1, seg, b"x" * 10, SYN),  # short non-EOM
                     data_frame(1, 0, b"x" * (seg + 1), SYN | EOM)],
        OUT_OF_WINDOW: [data_frame(1, stride, b"x" * seg, SYN), data_frame(3, seg, b"x" * seg, SYN),
                        data_frame(4, 0, b"x" * 8, SYN | EOM)],
        NOT_DATA: [reference_ack(good)],
    }
    frames = [f for fs in bad.values() for f in fs]
    r.feed(frames, batch=4)
    c = r.counters()
    for idx, fs in bad.items():
        assert c.get(idx, (0, 0))[1] == len(fs), idx
    assert r.acks == [] and r.notes == [] and not r.win.buffer.any()
    assert sum(n for _, (_, n) in c.items()) == len(frames)
    # A message larger than the bitmap: refused by index.
    stride = (SEGS_MAX + 1) * 16
    r2 = Receiver(image, seg=16, stride=stride, window=SLOTS * stride)
    assert struct.unpack("<I", r2.nic.nic_read(r2.img.symbol("slmp_segs_max"), 4))[0] == SEGS_MAX
    r2.feed([data_frame(2, SEGS_MAX * 16, b"y" * 16, EOM)])
    assert r2.count(TOO_LARGE) == 1 and not r2.win.buffer.any()


def test_eom_conflict_never_completes(image):
    """A malformed sender: a segment past the EOM makes the byte count equal
    the length with segment 1 missing (the bitmap check refuses), then a
    second EOM with another length. Never complete, conflicts counted."""
    r = Receiver(image)
    r.feed([data_frame(4, 3072, b"c" * 1024, 0), data_frame(4, 0, b"a" * 1024, 0),
            data_frame(4, 2048, b"b" * 10, EOM)], batch=1)
    assert r.count(EOM_CONFLICT) == 1
    r.feed([data_frame(4, 2048, b"b" * 20, EOM), data_frame(4, 1024, b"d" * 1024, 0)], batch=1)
    # The second EOM: its own conflict, and the hole seen again.
    assert r.notes == [] and r.count(EOM_CONFLICT) == 3


# ---- through the CLI: pcap in, ACK frames out (the "Done when")


# From FPsPIN's own capture (spcl/FPsPIN fpga/app/pspin/tb/pspin_pkt_match/
# slmp.pcap): the 52 header bytes of the first data segment of a message
# (SYN, offset 0, 1462 payload bytes) and the ACK FPsPIN's receiver sent for
# it, 52 bytes plus the 8 bytes of padding the MAC adds to reach 60.
FPSPIN_DATA_HDR = bytes.fromhex("2ecdeb3c75d1d272115744a30800450005dc02ec400040111e230a0000020a000001bb65247205c819dc"
                                "4000543cfc6c00000000")
FPSPIN_ACK = bytes.fromhex("d272115744a32ecdeb3c75d108004500002602ec4000401123d90a0000010a0000022472bb6500120000"
                           "2000543cfc6c000000000000000000000000")


def sim_acks(image, frames, tmp_path):
    write_pcap(tmp_path / "in.pcap", frames)
    r = subprocess.run([str(CLI), "sim", "--profile", "fpspin", "--image", str(image), "--ph", "slmp_ph", "--pcap",
                        str(tmp_path / "in.pcap"), "--frame", "eth", "--host-size", str(16 << 20), "--pcap-out",
                        str(tmp_path / "out.pcap"), "--json", "--quiet"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout), ethernet_frames(tmp_path / "out.pcap")


def test_reference_ack_is_fpspins():
    """The test's reference ACK against the ACK FPsPIN really sent."""
    frame = FPSPIN_DATA_HDR + bytes(1462)
    assert reference_ack(frame) == FPSPIN_ACK[:52] and FPSPIN_ACK[52:] == bytes(8)


def test_cli_sim_acks_fpspin_capture(image, tmp_path):
    """FPsPIN's data frame through `softspin sim --frame eth` with the default
    config (1462-byte segments) gives the ACK FPsPIN's receiver sent."""
    frame = FPSPIN_DATA_HDR + random.Random(27).randbytes(1462)
    stats, acks = sim_acks(image, [frame], tmp_path)
    assert stats["errors"] == [] and acks == [FPSPIN_ACK[:52]]


def test_cli_sim_pcap_acks(image, tmp_path):
    """`softspin sim --frame eth --pcap`: SYN data frames in, FPsPIN's ACKs out
    (default config: 1462-byte segments, 1 MiB per slot, so a 16 MiB window)."""
    rng = random.Random(26)
    frames = []
    for m in (0, 1, 2):
        frames += segments(m, rng.randbytes(rng.randrange(1, 12000)), 1462, syn=["all", "msg", "none"][m],
                           ident=rng.randrange(65536))
    stats, acks = sim_acks(image, frames, tmp_path)
    expect = [reference_ack(f) for f in frames if struct.unpack_from("!H", f, 42)[0] & SYN]
    assert stats["errors"] == [] and stats["outbound_packets"] == len(expect)
    assert sorted(acks) == sorted(expect)
