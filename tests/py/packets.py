#!/usr/bin/env python3
"""Bytes on the wire for the Python tests, written once and apart from the
code under test: the Internet checksum (RFC 1071), IPv4 and UDP headers
with their checksums, Ethernet II framing, classic pcap files. The Rust
tests' counterpart is crates/testkit.

A test adds this directory to sys.path:

    sys.path.insert(0, str(ROOT / "tests" / "py"))
    from packets import csum, ipv4, udp, eth, read_pcap, ethernet_frames, write_pcap

    python3 tests/py/packets.py --self-test
"""
import pathlib
import struct
import sys

ETHERTYPE_IPV4 = 0x0800
PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17
# IPv4 flags/fragment word: Don't Fragment, as Linux sends datagrams.
DF = 0x4000
LINKTYPE_ETHERNET = 1


def csum(data: bytes) -> int:
    """RFC 1071 over big-endian 16-bit words, an odd byte padded with zero."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(src, dst, proto, payload, ident=0, ttl=64, tos=0, flags_frag=DF, options=b""):
    """An IPv4 header (checksum computed; `options` a multiple of 4 bytes)
    followed by `payload`."""
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(payload), ident, flags_frag, ttl, proto, 0,
                      src, dst) + options
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + payload


def udp(src_ip, dst_ip, sport, dport, body, checksum=True):
    """A UDP header and `body`; the checksum over the pseudo-header (a
    computed 0 is sent as 0xFFFF, RFC 768), or 0 (none) without `checksum`."""
    seg = struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body
    if not checksum:
        return seg
    c = csum(src_ip + dst_ip + struct.pack("!BBH", 0, PROTO_UDP, len(seg)) + seg) or 0xFFFF
    return seg[:6] + struct.pack("!H", c) + seg[8:]


def eth(dst_mac, src_mac, payload, ethertype=ETHERTYPE_IPV4, pad_to=0):
    """An Ethernet II frame (no FCS), zero-padded to `pad_to` bytes."""
    f = dst_mac + src_mac + struct.pack("!H", ethertype) + payload
    return f + bytes(max(0, pad_to - len(f)))


def read_pcap(path):
    """(linktype, frames) of a classic pcap file, either byte order and
    timestamp resolution; a file that is not one raises ValueError."""
    data = pathlib.Path(path).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file ({len(data)} bytes)")
    magic = struct.unpack_from("<I", data)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        order = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        order = ">"
    else:
        raise ValueError(f"{path}: not a pcap file (magic {magic:#010x})")
    linktype = struct.unpack_from(order + "I", data, 20)[0]
    frames, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError(f"{path}: record header cut at byte {off}")
        _, _, incl, _ = struct.unpack_from(order + "IIII", data, off)
        if off + 16 + incl > len(data):
            raise ValueError(f"{path}: record at byte {off} cut short")
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return linktype, frames


def ethernet_frames(path):
    """The frames of a pcap file that must hold Ethernet (link type 1)."""
    linktype, frames = read_pcap(path)
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: link type {linktype}, not Ethernet")
    return frames


def write_pcap(path, frames, gap_us=10):
    """A little-endian microsecond pcap of Ethernet `frames`, `gap_us` apart."""
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET)
    for i, f in enumerate(frames):
        t = i * gap_us
        data += struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(f), len(f)) + f
    pathlib.Path(path).write_bytes(data)


def self_test():
    import tempfile
    # RFC 1071 §3's example words sum to 0xddf2.
    assert csum(bytes.fromhex("0001f203f4f5f6f7")) == ~0xDDF2 & 0xFFFF
    assert csum(b"\xff") == ~0xFF00 & 0xFFFF
    src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    seg = udp(src, dst, 40000, 7, b"hello")
    pkt = ipv4(src, dst, PROTO_UDP, seg, ident=1)
    assert csum(pkt[:20]) == 0 and len(pkt) == 20 + 8 + 5
    # The UDP checksum verifies over pseudo-header + segment (sums to zero).
    assert csum(src + dst + struct.pack("!BBH", 0, PROTO_UDP, len(seg)) + seg) == 0
    assert udp(src, dst, 1, 2, b"", checksum=False)[6:8] == b"\0\0"
    # 10.0.0.1:40000 -> 10.0.0.2:7, "hello", IP id 1, DF, TTL 64, with
    # both checksums summed by hand (0x26c9 over the IPv4 header, 0x0bb8
    # over pseudo-header and segment).
    assert pkt.hex() == "45000021000140004011" "26c9" "0a0000010a000002" "9c400007000d" "0bb8" + b"hello".hex()
    f = eth(b"\2" * 6, b"\4" * 6, pkt, pad_to=60)
    assert len(f) == 60 and f[12:14] == b"\x08\x00"
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "t.pcap"
        write_pcap(p, [f, b"\1\2\3"], gap_us=1_500_000)
        assert read_pcap(p) == (1, [f, b"\1\2\3"]) and ethernet_frames(p) == [f, b"\1\2\3"]
        assert struct.unpack_from("<II", p.read_bytes(), 24 + 16 + 60) == (1, 500_000)
        p.write_bytes(b"not a pcap file at all, no....")
        try:
            read_pcap(p)
            raise AssertionError("junk read as pcap")
        except ValueError as e:
            assert "not a pcap" in str(e)
    print("packets.py self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        sys.exit(__doc__)
