"""ping_pong: every byte of every reply equals a reply computed here
independently, through the Python host API and through `softspin sim`."""

import importlib.util
import json
import pathlib
import struct
import subprocess
import sys

import pytest

import softspin

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLI = ROOT / "target" / "release" / "softspin"
sys.path.insert(0, str(ROOT / "tests" / "py"))
from packets import csum, eth, ipv4, read_pcap, udp, write_pcap  # noqa: E402

spec = importlib.util.spec_from_file_location("ping_pong_host", HERE / "host.py")
host = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("pp") / "ping_pong.elf"
    subprocess.run([str(CLI), "build", str(HERE / "handler.c"), "-o", str(out)], check=True)
    return out


def udp_frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, ident, body, flags_frag=0x4000):
    """Ethernet II + IPv4 (checksum computed) + UDP (checksum 0) + body."""
    seg = udp(src_ip, dst_ip, sport, dport, body, checksum=False)
    return eth(dst_mac, src_mac, ipv4(src_ip, dst_ip, 17, seg, ident, flags_frag=flags_frag))


def swapped(frame: bytes) -> bytes:
    """The expected reply of any frame, field by field."""
    dst, src, etype = frame[0:6], frame[6:12], struct.unpack("!H", frame[12:14])[0]
    rest = bytearray(frame[14:])
    if etype == 0x0800 and len(rest) >= 20 and rest[0] >> 4 == 4:
        ihl = (rest[0] & 15) * 4
        if 20 <= ihl <= len(rest):
            s_ip, d_ip = bytes(rest[12:16]), bytes(rest[16:20])
            rest[12:16], rest[16:20] = d_ip, s_ip
            frag = struct.unpack("!H", rest[6:8])[0] & 0x1FFF
            if rest[9] in (6, 17) and frag == 0 and len(rest) >= ihl + 4:
                sp, dp = struct.unpack_from("!HH", rest, ihl)
                struct.pack_into("!HH", rest, ihl, dp, sp)
    return src + dst + frame[12:14] + bytes(rest)


def ip_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 15) * 4
    return csum(frame[14:14 + ihl]) == 0


def test_host_program_replies_byte_exact(image):
    sizes = [64, 65, 100, 128, 333, 512, 1024, 1500, 1514]
    results, report = host.run(count=2 * len(sizes), sizes=sizes, image=image)
    assert len(results) == 2 * len(sizes)
    for seq, ping, reply, ns in results:
        size = sizes[seq % len(sizes)]
        body = struct.pack("!I", seq) + bytes((seq + k) & 0xFF for k in range(size - 46))
        # The ping is what we think it is...
        assert ping == udp_frame(host.HOST_MAC, host.NIC_MAC, host.HOST_IP, host.NIC_IP, 40000 + seq, 7, seq, body)
        # ...and the reply is that frame built from the NIC's side, from scratch.
        expect = udp_frame(host.NIC_MAC, host.HOST_MAC, host.NIC_IP, host.HOST_IP, 7, 40000 + seq, seq, body)
        assert reply == expect, f"seq {seq}"
        assert reply == swapped(ping) and ip_ok(reply)
        assert 0 < ns < 10_000
    lat = {len(p): ns for _, p, _, ns in results}
    assert lat[64] < lat[1514]  # sending the reply takes longer for longer frames
    assert report["packets"] == len(results) and report["outbound_packets"] == len(results)
    assert report["errors"] == []


def odd_frames():
    base = udp_frame(b"\x0a" * 6, b"\x0b" * 6, bytes([1, 2, 3, 4]), bytes([5, 6, 7, 8]), 1111, 2222, 9, b"x" * 40)
    tcp = bytearray(base)
    tcp[23] = 6  # protocol TCP (checksum recomputed below)
    frag = bytearray(udp_frame(b"\x0a" * 6, b"\x0b" * 6, bytes([1, 2, 3, 4]), bytes([5, 6, 7, 8]), 1, 2, 3, b"y" * 30,
                               flags_frag=0x0010))
    opts = bytearray(base[:14]) + bytes([0x46]) + base[15:34] + b"\x01\x01\x01\x00" + base[34:]
    struct.pack_into("!H", opts, 16, len(opts) - 14)
    arp = b"\xff" * 6 + b"\x0c" * 6 + b"\x08\x06" + bytes(range(46))
    out = []
    for f in (tcp, frag, opts):
        ihl = (f[14] & 15) * 4
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", csum(bytes(f[14:14 + ihl])))
        out.append(bytes(f))
    return [base] + out + [arp]


def test_other_frames(image):
    nic = softspin.Nic()
    e = nic.install(nic.load_image(image), ph="pingpong_ph")
    nic.activate(e)
    frames = odd_frames()
    got = []
    for i, f in enumerate(frames):
        nic.send_packet(f, msg_id=i)
        nic.run_until_idle()
        (o,) = [x for x in nic.events() if isinstance(x, softspin.OutboundPacket)]
        got.append(o.frame)
    for f, r in zip(frames, got):
        assert r == swapped(f)
    tcp, frag, opts, arp = frames[1:]
    assert got[2][34:38] == frag[34:38]  # not a first fragment: no ports to swap
    assert got[3][38:42] == opts[40:42] + opts[38:40]  # ports after 24 bytes of IP header
    assert got[4][12:] == arp[12:]
    assert all(ip_ok(r) for r in got[:4])


def test_pspin_ip_frames(image):
    """pingpong_ip_ph on PsPIN's IP-first frames (send_message builds them)."""
    nic = softspin.Nic()
    e = nic.install(nic.load_image(image), ph="pingpong_ip_ph", udp_dst_port=4242)
    nic.activate(e)
    nic.send_message(e, 0, bytes(range(200)), 1024)
    nic.run_until_idle()
    (o,) = [x for x in nic.events() if isinstance(x, softspin.OutboundPacket)]
    f = o.frame
    # The request: 10.0.0.1:9330 -> 10.0.0.2:4242, fields little-endian (PsPIN).
    assert f[0] == 0x54 and struct.unpack_from("<H", f, 2)[0] == len(f) == 228
    assert f[12:16] == bytes([2, 0, 0, 10]) and f[16:20] == bytes([1, 0, 0, 10])
    assert struct.unpack_from("<HH", f, 20) == (4242, 9330)
    assert f[28:] == bytes(range(200))
    assert csum(f[:20]) == 0


def test_cli_pcap_in_pcap_out(image, tmp_path):
    pings = [host.make_ping(i, s) for i, s in enumerate([64, 200, 777, 1500])] + odd_frames()
    write_pcap(tmp_path / "pings.pcap", pings)
    r = subprocess.run([str(CLI), "sim", "--image", str(image), "--ph", "pingpong_ph", "--pcap", str(tmp_path / "pings.pcap"),
                        "--frame", "eth", "--pcap-out", str(tmp_path / "pongs.pcap"), "--json"],
                       check=True, capture_output=True, text=True)
    assert json.loads(r.stdout)["outbound_packets"] == len(pings)
    linktype, pongs = read_pcap(tmp_path / "pongs.pcap")
    assert linktype == 1  # Ethernet
    assert sorted(pongs) == sorted(swapped(p) for p in pings)


def test_cli_generator(image, tmp_path):
    out = tmp_path / "pongs.pcap"
    subprocess.run([str(CLI), "sim", "--image", str(image), "--ph", "pingpong_ph", "--frame", "eth",
                    "--messages", "8", "--size", "256", "--pcap-out", str(out), "--quiet"], check=True,
                   capture_output=True)
    _, pongs = read_pcap(out)
    assert len(pongs) == 8
    for p in pongs:
        ping = swapped(p)  # the swap is its own inverse
        assert len(p) == 256 and ip_ok(p) and ip_ok(ping)
        assert ping[26:30] == bytes([10, 0, 0, 1]) and ping[30:34] == bytes([10, 0, 0, 2])
        assert p[26:30] == bytes([10, 0, 0, 2]) and p[30:34] == bytes([10, 0, 0, 1])
        assert p[0:6] == ping[6:12] and p[6:12] == ping[0:6] != p[0:6]
