#!/usr/bin/env python3
"""ping_pong host program: send Ethernet/IPv4/UDP pings to the NIC, whose
payload handler (handler.c, pingpong_ph) sends each one back with source and
destination swapped; print the reply latency of every ping and a summary.

    .venv/bin/python examples/ping_pong/host.py [--count N] [--sizes 64,128,...]

Pings go one at a time, as with ping(8): send, run the NIC until idle, take
the reply, send the next. The latency is the reply's time on the wire out of
the NIC minus the time the ping was handed to the NIC.
"""

import argparse
import pathlib
import struct
import sys
import tempfile

import softspin

HERE = pathlib.Path(__file__).resolve().parent
SIZES = [64, 128, 256, 512, 1024, 1500]
HOST_MAC = bytes.fromhex("020000000a01")
NIC_MAC = bytes.fromhex("020000000a02")
HOST_IP = bytes([192, 168, 1, 10])
NIC_IP = bytes([192, 168, 1, 20])
ECHO_PORT = 7


def ip_checksum(header: bytes) -> int:
    s = sum(struct.unpack(f">{len(header) // 2}H", header))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def make_ping(seq: int, size: int) -> bytes:
    """An Ethernet II / IPv4 / UDP frame of `size` bytes (UDP checksum 0)."""
    if not 42 + 4 <= size <= 1514:
        raise ValueError(f"ping size {size} outside 46..1514")
    ip_len = size - 14
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, ip_len, seq & 0xFFFF, 0x4000, 64, 17, 0, HOST_IP, NIC_IP))
    ip[10:12] = struct.pack(">H", ip_checksum(bytes(ip)))
    udp = struct.pack(">HHHH", 40000 + seq % 1000, ECHO_PORT, ip_len - 20, 0)
    body = struct.pack(">I", seq) + bytes((seq + k) & 0xFF for k in range(size - 46))
    return NIC_MAC + HOST_MAC + b"\x08\x00" + bytes(ip) + udp + body


def build_image(out_dir) -> pathlib.Path:
    return softspin.build(HERE / "handler.c", pathlib.Path(out_dir) / "ping_pong.elf")


def run(count=12, sizes=SIZES, image=None, profile="pspin"):
    """Send `count` pings; returns [(seq, ping, reply or None, latency_ns)]."""
    with tempfile.TemporaryDirectory() as tmp:
        nic = softspin.Nic(profile)
        img = nic.load_image(image or build_image(tmp))
        ectx = nic.install(img, ph="pingpong_ph", name="ping_pong")
        nic.activate(ectx)
        results = []
        for seq in range(count):
            ping = make_ping(seq, sizes[seq % len(sizes)])
            sent = nic.now_ns
            nic.send_packet(ping, msg_id=seq)
            nic.run_until_idle()
            replies = [e for e in nic.events() if isinstance(e, softspin.OutboundPacket)]
            reply = replies[0] if len(replies) == 1 else None
            results.append((seq, ping, reply.frame if reply else None, reply.time_ns - sent if reply else None))
        return results, nic.report()


def looks_swapped(ping: bytes, reply: bytes) -> bool:
    """Quick sanity check (the test compares every byte)."""
    return (len(reply) == len(ping) and reply[0:6] == ping[6:12] and reply[26:30] == ping[30:34]
            and reply[34:36] == ping[36:38] and ip_checksum(reply[14:34]) == 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="frame sizes in bytes, cycled")
    ap.add_argument("--profile", default="pspin", choices=["pspin", "fpspin"])
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        image = softspin.build(HERE / "handler.c", pathlib.Path(tmp) / "ping_pong.elf", profile=a.profile)
        results, report = run(a.count, sizes, image, a.profile)
    ip = ".".join(map(str, NIC_IP))
    lat, bad = [], 0
    print(f"PING {ip}: {a.count} pings of {','.join(map(str, sizes))} bytes to the sPIN NIC ({a.profile})")
    for seq, ping, reply, ns in results:
        if reply is None or not looks_swapped(ping, reply):
            bad += 1
            print(f"{len(ping)} bytes: seq={seq} {'no reply' if reply is None else 'BAD REPLY'}")
            continue
        lat.append(ns)
        print(f"{len(reply)} bytes from {ip}: seq={seq} time={ns:.1f} ns")
    print(f"--- {ip} ping statistics ---")
    print(f"{a.count} sent, {len(lat)} good replies, {bad} bad or missing")
    if lat:
        print(f"latency min/avg/max = {min(lat):.1f}/{sum(lat) / len(lat):.1f}/{max(lat):.1f} ns")
    h = report["handlers"][0]
    print(f"handler {h['name']}: {h['invocations']} calls, {h['cycles_mean']:.1f} cycles and "
          f"{h['instructions_mean']:.1f} instructions on average")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
