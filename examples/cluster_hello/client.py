#!/usr/bin/env python3
"""Client of examples/cluster_hello, run inside one node of a cluster
(`softspin cluster exec RANK -- python3 THIS TARGETS...`).

Sends one UDP request to each target IP:PORT from an unconnected socket and
prints one JSON line per target with the reply's source and the fields of
its hello_reply_t (examples/cluster_hello/handler.c). Lost requests or
replies (a lossy link) are retried, up to --tries times; the line says how
many tries it took. Exit status 1 if a target never answered.
"""
import argparse
import json
import socket
import struct
import sys


def entry(b):
    ipv4 = socket.inet_ntoa(b[0:4])
    mac = ":".join(f"{x:02x}" for x in b[4:10])
    (port,) = struct.unpack(">H", b[10:12])
    (rank,) = struct.unpack("<I", b[12:16])
    return {"ipv4": ipv4, "mac": mac, "udp_port": port, "rank": rank}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="+", help="IP:PORT")
    ap.add_argument("--tries", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=0.5)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 0))
    failed = False
    for t in a.targets:
        ip, port = t.rsplit(":", 1)
        dest = (ip, int(port))
        out = {"target": t, "answered": False}
        for n in range(1, a.tries + 1):
            s.sendto(b"hello %d" % n, dest)
            s.settimeout(a.timeout)
            try:
                while True:
                    d, src = s.recvfrom(2048)
                    if src == dest:
                        break
            except socket.timeout:
                continue
            magic, my_rank, num_nodes, sender_rank = struct.unpack("<4siIi", d[:16])
            out = {
                "target": t,
                "answered": True,
                "tries": n,
                "from": f"{src[0]}:{src[1]}",
                "len": len(d),
                "magic": magic.decode("latin-1"),
                "my_rank": my_rank,
                "num_nodes": num_nodes,
                "sender_rank": sender_rank,
                "sender": entry(d[16:32]),
                "me": entry(d[32:48]),
            }
            break
        failed |= not out["answered"]
        print(json.dumps(out), flush=True)
    # Late duplicates of earlier replies may still arrive: ignored.
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
