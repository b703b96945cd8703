"""Echo handlers on Ethernet frames as the live NIC sees them (issue 11):
icmp_echo_ph answers what ping(8) sends, pingpong_ph echoes UDP datagrams of
every frame size. Each reply is compared byte for byte with a reply built
here from scratch (headers packed with struct, checksums summed again), not
derived from the request."""

import json
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
from packets import csum, eth, ethernet_frames, ipv4, udp, write_pcap  # noqa: E402

PEER_MAC = bytes.fromhex("02000000aa01")  # the pinging host
NIC_MAC = bytes.fromhex("02000000aa02")
PEER_IP = bytes([10, 11, 0, 1])
NIC_IP = bytes([10, 11, 0, 2])
# Counter indices of icmp_echo_ph (handler.c).
REPLIED, IGNORED = 0, 1


def icmp(typ, code, ident, seq, data):
    msg = struct.pack("!BBHHH", typ, code, 0, ident, seq) + data
    return msg[:2] + struct.pack("!H", csum(msg)) + msg[4:]


def ping_data(n, rng):
    """iputils ping's payload: a struct timeval (16 B on 64-bit Linux) when it
    fits, then byte i = i."""
    data = bytearray(i & 0xFF for i in range(n))
    if n >= 16:
        data[0:16] = struct.pack("<qq", rng.randrange(1 << 31), rng.randrange(10 ** 6))
    return bytes(data)


def echo_request(ident, seq, data, ip_id=0, options=b"", pad_to=0, src=PEER_IP, dst=NIC_IP):
    f = NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(src, dst, 1, icmp(8, 0, ident, seq, data), ip_id, options=options)
    return f + bytes(max(0, pad_to - len(f)))


def echo_reply(req: bytes) -> bytes:
    """The reply a host sends (RFC 792), from the request's fields: new headers
    with their checksums computed over the whole message."""
    ihl = (req[14] & 15) * 4
    total, ip_id, frag, ttl = struct.unpack_from("!xxHHHB", req, 14)
    src, dst = req[26:30], req[30:34]
    ident, seq = struct.unpack_from("!HH", req, 14 + ihl + 4)
    data = req[14 + ihl + 8:14 + total]
    ip = ipv4(dst, src, 1, icmp(0, 0, ident, seq, data), ip_id, ttl=ttl, flags_frag=frag, options=req[34:14 + ihl])
    return req[6:12] + req[0:6] + b"\x08\x00" + ip + req[14 + total:]


def checksums_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 15) * 4
    total = struct.unpack_from("!H", frame, 16)[0]
    return csum(frame[14:14 + ihl]) == 0 and csum(frame[14 + ihl:14 + total]) == 0


def with_checksum(ident, seq, n, target, rng):
    """An echo request of n >= 2 data bytes whose ICMP checksum is `target`:
    the last data word is solved for (checksum edge cases)."""
    data = bytearray(ping_data(n, rng))
    k = (n - 2) & ~1  # a word-aligned data position
    for w in range(0x10000):
        data[k:k + 2] = struct.pack("!H", w)
        msg = icmp(8, 0, ident, seq, bytes(data))
        if struct.unpack_from("!H", msg, 2)[0] == target:
            return echo_request(ident, seq, bytes(data), ip_id=seq)
    raise AssertionError(f"no data word gives checksum {target:#06x}")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("echo") / "ping_pong.elf"
    subprocess.run([str(CLI), "build", str(HERE / "handler.c"), "-o", str(out)], check=True)
    return out


def run(image, ph, frames):
    """Each frame alone through the NIC; returns ([replies of each frame], counters)."""
    nic = softspin.Nic()
    e = nic.install(nic.load_image(image), ph=ph)
    nic.activate(e)
    out = []
    for i, f in enumerate(frames):
        nic.send_packet(f, msg_id=i)
        nic.run_until_idle()
        out.append([x.frame for x in nic.events() if isinstance(x, softspin.OutboundPacket)])
    assert nic.report()["errors"] == []
    return out, {i: (s, c) for i, s, c in nic.counters(e)}


def linux_pings(rng):
    """What `ping` and `ping -s 1472` send: random identifier, rising sequence
    numbers, rising IP ids."""
    frames = []
    for n in (56, 1472):
        ident, seq0, ip_id = rng.randrange(1 << 16), rng.randrange(1 << 16), rng.randrange(1 << 16)
        for k in range(8):
            frames.append(echo_request(ident, (seq0 + k) & 0xFFFF, ping_data(n, rng), (ip_id + k) & 0xFFFF))
    return frames


def test_icmp_echo_replies_byte_exact(image):
    rng = random.Random(11)
    reqs = linux_pings(rng)
    reqs += [echo_request(rng.randrange(1 << 16), rng.randrange(1 << 16), ping_data(n, rng), rng.randrange(1 << 16))
             for n in [0, 1, 2, 3, 15, 16, 17] + [rng.randrange(1473) for _ in range(20)]]
    # Checksums next to the incremental update's edge cases (0x0000/0xffff,
    # carries out of the high byte).
    reqs += [with_checksum(7, 9, 40, t, rng) for t in (0x0000, 0x0001, 0x07FF, 0x0800, 0x0801, 0xF7FF, 0xF800, 0xFFFE)]
    reqs.append(echo_request(5, 6, b"x" * 20, options=b"\x01\x01\x01\x00"))  # IP options (IHL 6)
    reqs.append(echo_request(5, 7, b"", pad_to=60))  # Ethernet padding: echoed, not summed
    reqs.append(echo_request(5, 8, b"pad", pad_to=64))
    got, counters = run(image, "icmp_echo_ph", reqs)
    for i, (req, replies) in enumerate(zip(reqs, got)):
        assert checksums_ok(req), i
        assert replies == [echo_reply(req)], f"request {i}"
        assert checksums_ok(replies[0]) and replies[0][14 + (req[14] & 15) * 4] == 0
    assert counters == {REPLIED: (sum(map(len, reqs)), len(reqs))}


def other_frames(rng):
    """Frames icmp_echo_ph must leave alone."""
    good = echo_request(1, 2, ping_data(56, rng), 3)
    out = [
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 1, icmp(0, 0, 1, 2, b"reply"), 4),  # echo reply
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 1, icmp(8, 1, 1, 2, b"code 1"), 4),
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 1, icmp(13, 0, 1, 2, bytes(12)), 4),  # timestamp
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 1, icmp(8, 0, 1, 2, b"a" * 64), 4, flags_frag=0x2000),
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 1, b"b" * 64, 4, flags_frag=0x0008),  # later fragment
        NIC_MAC + PEER_MAC + b"\x08\x00" + ipv4(PEER_IP, NIC_IP, 17, icmp(8, 0, 1, 2, b"udp"), 4),  # not ICMP
        b"\xff" * 6 + PEER_MAC + b"\x08\x06" + bytes(28),  # ARP
        NIC_MAC + PEER_MAC + b"\x86\xdd" + good[14:],  # IPv6 ethertype
        good[:60],  # truncated: IP total length beyond the frame
        good[:40],  # shorter than the headers
        good[:14] + bytes([0x44]) + good[15:],  # IHL 4
        good[:14] + bytes([0x65]) + good[15:],  # version 6
        good[:16] + struct.pack("!H", 27) + good[18:],  # total length shorter than IP + ICMP headers
    ]
    return out


def test_icmp_echo_ignores_other_frames(image):
    frames = other_frames(random.Random(12))
    got, counters = run(image, "icmp_echo_ph", frames)
    assert got == [[]] * len(frames)
    assert counters == {IGNORED: (len(frames), len(frames))}


def test_icmp_echo_check_bites(tmp_path):
    """Built without the checksum fix (SOFTSPIN_SABOTAGE), every reply must fail."""
    bad = softspin.build(HERE / "handler.c", tmp_path / "sabotaged.elf", define=["SOFTSPIN_SABOTAGE"])
    reqs = linux_pings(random.Random(13))
    got, _ = run(bad, "icmp_echo_ph", reqs)
    for req, replies in zip(reqs, got):
        assert len(replies) == 1 and replies[0] != echo_reply(req) and not checksums_ok(replies[0])


# ---- through the CLI, pcap in and out (what `softspin sim` and later the live NIC see)


def sim(image, ph, frames, tmp_path):
    write_pcap(tmp_path / "in.pcap", frames)
    r = subprocess.run([str(CLI), "sim", "--image", str(image), "--ph", ph, "--pcap", str(tmp_path / "in.pcap"),
                        "--frame", "eth", "--pcap-out", str(tmp_path / "out.pcap"), "--json"],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout), ethernet_frames(tmp_path / "out.pcap")


def test_icmp_echo_cli_pcap(image, tmp_path):
    rng = random.Random(14)
    reqs = linux_pings(rng)
    others = other_frames(rng)
    stats, replies = sim(image, "icmp_echo_ph", reqs + others, tmp_path)
    assert stats["outbound_packets"] == len(reqs) and stats["packets"] == len(reqs) + len(others)
    assert sorted(replies) == sorted(echo_reply(r) for r in reqs)


def udp_datagram(size, ident, with_csum, rng, options=b""):
    """An Ethernet/IPv4/UDP frame of `size` bytes from a kernel UDP socket:
    checksum over the pseudo-header (0 sent as 0xffff), or 0 (none)."""
    n = size - 42 - len(options)
    sport, dport = rng.randrange(1024, 1 << 16), rng.randrange(1, 1 << 16)
    return udp_frame(PEER_MAC, NIC_MAC, PEER_IP, NIC_IP, sport, dport, ident, rng.randbytes(n), with_csum, options)


def udp_frame(smac, dmac, sip, dip, sport, dport, ident, body, with_csum, options=b""):
    seg = udp(sip, dip, sport, dport, body, checksum=with_csum)
    return eth(dmac, smac, ipv4(sip, dip, 17, seg, ident, options=options))


def udp_echo_reply(req: bytes) -> bytes:
    """The echo server's answer, built from the request's fields."""
    ihl = (req[14] & 15) * 4
    ident = struct.unpack_from("!H", req, 18)[0]
    sport, dport, _, c = struct.unpack_from("!HHHH", req, 14 + ihl)
    body = req[14 + ihl + 8:]
    return udp_frame(req[0:6], req[6:12], req[30:34], req[26:30], dport, sport, ident, body, c != 0, req[34:14 + ihl])


def udp_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 15) * 4
    seg = frame[14 + ihl:]
    if struct.unpack_from("!H", seg, 6)[0] == 0:
        return True  # no checksum
    return csum(frame[26:34] + struct.pack("!BBH", 0, 17, len(seg)) + seg) == 0


def test_udp_echo_every_size(image, tmp_path):
    """pingpong_ph on every Ethernet frame size 42..1514, with and without a
    UDP checksum: the reply is the echo server's, byte for byte."""
    rng = random.Random(15)
    reqs = [udp_datagram(size, (2 * size + c) & 0xFFFF, c, rng) for size in range(42, 1515) for c in (False, True)]
    reqs += [udp_datagram(size, 7, True, rng, options=b"\x01\x01\x01\x00") for size in (46, 333, 1514)]
    stats, replies = sim(image, "pingpong_ph", reqs, tmp_path)
    assert stats["outbound_packets"] == len(reqs) and stats["errors"] == []
    expect = [udp_echo_reply(r) for r in reqs]
    assert all(udp_ok(r) and checksums_ok_ip(r) for r in expect + reqs)
    assert sorted(replies) == sorted(expect)


def checksums_ok_ip(frame: bytes) -> bool:
    return csum(frame[14:14 + (frame[14] & 15) * 4]) == 0
