"""copy_to_host_eth_ph: UDP datagrams on Ethernet frames (as a kernel UDP
socket sends them, what the live NIC hands its handlers) land byte for byte
in a lent host buffer, at the offset each carries. The expected buffer is
filled here from what was sent, independently of the handler."""

import pathlib
import random
import struct
import subprocess
import sys

import pytest

import softspin

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLI = ROOT / "target" / "release" / "softspin"
sys.path.insert(0, str(ROOT / "tests" / "py"))
from packets import eth, ipv4, udp, write_pcap  # noqa: E402
PH = "copy_to_host_eth_ph"
COPIED, IGNORED = 0, 1  # counter indices of copy_to_host_eth_ph (handler.c)
WINDOW = 256 * 1024

SRC_MAC, DST_MAC = bytes.fromhex("02000000bb01"), bytes.fromhex("02000000bb02")
SRC_IP, DST_IP = bytes([10, 12, 0, 1]), bytes([10, 12, 0, 2])


def datagram(payload, ident=1, with_csum=True, options=b"", pad_to=0, proto=17, flags_frag=0x4000):
    """Ethernet II / IPv4 / UDP carrying `payload`, as the kernel builds it."""
    seg = udp(SRC_IP, DST_IP, 40000, 5555, payload, checksum=with_csum)
    ip = ipv4(SRC_IP, DST_IP, proto, seg, ident, flags_frag=flags_frag, options=options)
    return eth(DST_MAC, SRC_MAC, ip, pad_to=pad_to)


def layout(rng, count, window):
    """`count` (offset, data) pieces at random non-overlapping places."""
    pieces, off = [], rng.randrange(64)
    for _ in range(count):
        data = rng.randbytes(rng.choice([0, 1, 2, 3, rng.randrange(1469), 1468]))  # 1468 + 4 = 1472: a full datagram
        if off + len(data) > window:
            break
        pieces.append((off, data))
        off += len(data) + rng.randrange(0, 40)
    return pieces


def frames_for(pieces, rng):
    """One datagram per piece, sent in random order, with and without UDP
    checksums, some with IP options, short ones padded to 60 bytes."""
    out = []
    for i, (off, data) in enumerate(pieces):
        opts = b"\x01\x01\x01\x00" if i % 7 == 3 else b""
        out.append(datagram(struct.pack("<I", off) + data, ident=i, with_csum=i % 2 == 0, options=opts, pad_to=60))
    rng.shuffle(out)
    return out


def ignored_frames():
    """Frames the handler must leave alone: no copy, counted as ignored."""
    full = datagram(struct.pack("<I", 0) + b"\xee" * 100)
    return [
        datagram(b"\x00\x00\x00", pad_to=60),  # payload shorter than the offset
        datagram(struct.pack("<I", 0) + b"\xee" * 50, proto=6),  # TCP
        datagram(struct.pack("<I", 0) + b"\xee" * 50, flags_frag=0x2000),  # first fragment (MF)
        datagram(struct.pack("<I", 0) + b"\xee" * 50, flags_frag=0x0010),  # later fragment
        b"\xff" * 6 + SRC_MAC + b"\x08\x06" + bytes(46),  # ARP
        full[:80],  # truncated: IP total length beyond the frame
        full[:38] + struct.pack("!H", 200) + full[40:],  # UDP length beyond the IP datagram
        full[:38] + struct.pack("!H", 7) + full[40:],  # UDP length below its header
        full[:12] + b"\x86\xdd" + full[14:],  # IPv6 ethertype
    ]


def expected(pieces, size, base=0):
    buf = bytearray(size)
    for off, data in pieces:
        buf[base + off:base + off + len(data)] = data
    return bytes(buf)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("c2h") / "copy_to_host.elf"
    subprocess.run([str(CLI), "build", str(HERE / "handler.c"), "-o", str(out)], check=True)
    return out


def open_nic(image, size=WINDOW):
    nic = softspin.Nic()
    img = nic.load_image(image)
    buf = bytearray(size)
    w = nic.lend(buf)
    e = nic.install(img, ph=PH, host_window=w)
    return nic, img, e, buf


def test_payloads_land_byte_exact(image):
    rng = random.Random(21)
    pieces = layout(rng, 300, WINDOW)
    assert len(pieces) > 150
    frames = frames_for(pieces, rng)
    others = ignored_frames()
    mixed = frames + others
    rng.shuffle(mixed)
    nic, _, e, buf = open_nic(image)
    nic.activate(e)
    for i, f in enumerate(mixed):
        # Message ids as a live matcher might assign them: with msg_stride 0
        # they do not move the data.
        nic.send_packet(f, msg_id=rng.randrange(1 << 20))
        if i % 16 == 15:
            nic.run_until_idle()
    nic.run_until_idle()
    r = nic.report()
    assert r["errors"] == []
    data = sum(len(d) for _, d in pieces)
    assert r["dma_to_host_bytes"] == data
    assert nic.counters(e) == [(COPIED, data, len(pieces)), (IGNORED, len(others), len(others))]
    assert bytes(buf) == expected(pieces, WINDOW)


def test_msg_stride_places_messages(image):
    """With msg_stride set, message m's datagrams go to m * msg_stride + offset,
    as copy_ph does for PsPIN frames."""
    rng = random.Random(22)
    stride = 16 * 1024
    nic, img, e, buf = open_nic(image, 4 * stride)
    nic.nic_write(img.symbol("msg_stride"), struct.pack("<I", stride))
    nic.activate(e)
    want = bytearray(4 * stride)
    for m in (3, 0, 2):
        pieces = layout(rng, 20, stride)
        for f in frames_for(pieces, rng):
            nic.send_packet(f, msg_id=m)
        nic.run_until_idle()
        want[m * stride:(m + 1) * stride] = expected(pieces, stride)
    assert nic.report()["errors"] == []
    assert bytes(buf) == bytes(want)


def test_outside_window_is_rejected_and_counted(image):
    """A datagram whose data would end past the window is refused by the NIC
    (counted as an error), the buffer is untouched, and the next is copied."""
    nic, _, e, buf = open_nic(image, 4096)
    nic.activate(e)
    nic.send_packet(datagram(struct.pack("<I", 4090) + b"\x55" * 7))
    nic.run_until_idle()
    nic.send_packet(datagram(struct.pack("<I", 4089) + b"\x66" * 7))
    nic.run_until_idle()
    errs = [x for x in nic.events() if isinstance(x, softspin.HandlerError)]
    assert len(errs) == 1 and nic.report()["errors"][0]["total"] == 1
    assert bytes(buf) == bytes(4089) + b"\x66" * 7


def test_cli_pcap_dump_host(image, tmp_path):
    rng = random.Random(23)
    pieces = layout(rng, 100, WINDOW)
    write_pcap(tmp_path / "in.pcap", frames_for(pieces, rng) + ignored_frames())
    subprocess.run([str(CLI), "sim", "--image", str(image), "--ph", PH, "--pcap", str(tmp_path / "in.pcap"), "--frame",
                    "eth", "--host-size", str(WINDOW), "--dump-host", str(tmp_path / "host.bin"), "--quiet"],
                   check=True, capture_output=True)
    assert (tmp_path / "host.bin").read_bytes() == expected(pieces, WINDOW)
