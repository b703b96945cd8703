#!/usr/bin/env python3
"""Peer-side clients and servers for crates/cli/tests/live.rs: kernel
sockets only (the independent side of every check). Each prints one JSON
line of counts; the Rust test judges them.

  peer.py echo IP PORT N SEED           N datagrams of random sizes 1..1472,
                                        each reply must equal what was sent
  peer.py contain IP PORT N SEED        as echo, with a faulting ('X') and a
                                        looping ('L') datagram every 10th,
                                        which must get no reply
  peer.py send IP PORT FILE             send the datagrams of FILE (u16 LE
                                        length + bytes each), 1 ms apart
  peer.py tcp_server PORT OUT           accept one connection, save all bytes
  peer.py tcp_client IP PORT FILE       send FILE over TCP
"""
import json
import random
import socket
import struct
import sys
import time


def warm_up(s, addr, deadline_s=10.0):
    """Resend a probe until the NIC echoes it: the NIC is attached and its
    rules are in. Returns the probes sent (the NIC may count them)."""
    end = time.time() + deadline_s
    sent = 0
    while time.time() < end:
        s.sendto(b"probe", addr)
        sent += 1
        try:
            d, a = s.recvfrom(4096)
            if d == b"probe" and a == addr:
                return sent
        except (socket.timeout, ConnectionRefusedError):
            pass
    print(json.dumps({"error": f"no echo from {addr} within {deadline_s} s"}))
    sys.exit(2)


def echo(ip, port, n, seed, contain=False):
    addr = (ip, int(port))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    probes = warm_up(s, addr)
    s.settimeout(2.0)
    rng = random.Random(int(seed))
    ok = bad = lost = special = 0
    for i in range(int(n)):
        if contain and i % 10 == 5:
            # No reply is expected: a stray one shows up as `bad` below.
            s.sendto(b"X" + rng.randbytes(rng.randint(0, 100)), addr)
            s.sendto(b"L" + rng.randbytes(rng.randint(0, 100)), addr)
            special += 2
        data = rng.randbytes(rng.randint(1, 1472))
        if contain and data[:1] in (b"X", b"L"):
            data = b"n" + data[1:]
        s.sendto(data, addr)
        try:
            d, a = s.recvfrom(4096)
        except (socket.timeout, ConnectionRefusedError):
            lost += 1
            continue
        if d == data and a == addr:
            ok += 1
        else:
            bad += 1
    # Late strays (e.g. a reply to an 'X') would land here.
    s.settimeout(0.3)
    stray = 0
    try:
        while True:
            s.recvfrom(4096)
            stray += 1
    except (socket.timeout, ConnectionRefusedError):
        pass
    print(json.dumps({"probes": probes, "ok": ok, "bad": bad, "lost": lost, "stray": stray, "special": special}))


def send(ip, port, path):
    addr = (ip, int(port))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    buf = open(path, "rb").read()
    i = sent = 0
    while i < len(buf):
        (n,) = struct.unpack_from("<H", buf, i)
        s.sendto(buf[i + 2 : i + 2 + n], addr)
        i += 2 + n
        sent += 1
        time.sleep(0.001)
    print(json.dumps({"sent": sent}))


def tcp_server(port, out):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(port)))
    ls.listen(1)
    ls.settimeout(15)
    c, _ = ls.accept()
    c.settimeout(15)
    chunks = []
    while True:
        d = c.recv(65536)
        if not d:
            break
        chunks.append(d)
    data = b"".join(chunks)
    open(out, "wb").write(data)
    print(json.dumps({"received": len(data)}))


def tcp_client(ip, port, path):
    data = open(path, "rb").read()
    end = time.time() + 10
    while True:
        try:
            s = socket.create_connection((ip, int(port)), timeout=2)
            break
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)
    s.sendall(data)
    s.close()
    print(json.dumps({"sent": len(data)}))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "echo":
        echo(*args)
    elif cmd == "contain":
        echo(*args, contain=True)
    elif cmd == "send":
        send(*args)
    elif cmd == "tcp_server":
        tcp_server(*args)
    elif cmd == "tcp_client":
        tcp_client(*args)
    else:
        sys.exit(f"peer.py: unknown command {cmd}")
