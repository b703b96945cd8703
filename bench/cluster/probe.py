#!/usr/bin/env python3
"""Hostile requests to hostserver (bench/cluster_bench.py --check runs it in
node 0): each must get the error response the NIC's target handler gives
(docs/rma.md "Status codes"), or none when it is not an RMA request, and
none may write. The header is built here from docs/rma.md's field table
(struct), not from hostrma.h, so the server is checked against the
document.

    probe.py HOST PORT REGION_BYTES

Prints one JSON object: per case the status received (null: no response)
and the expected one; exit 0 when all match and the region's first bytes
are unchanged, 1 otherwise.
"""
import json
import socket
import struct
import sys

HDR = "!BBBBHHIIIIQII"  # version kind op status src dst seq ack txn key offset length reserved
DATA, WRITE, READ, RESPONSE = 0, 1, 2, 0x80
OK, BAD_KEY, OUT_OF_WINDOW, PERMISSION, MALFORMED = 0, 1, 2, 3, 4
FADD64 = 4


def req(op, key, off, length, payload=b"", txn=1, version=1, kind=DATA, status=0):
    return struct.pack(HDR, version, kind, op, status, 0, 1, 0, 0, txn, key, off, length, 0) + payload


def main():
    host, port, region = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    s.settimeout(0.5)

    def ask(pkt):
        s.send(pkt)
        try:
            r = s.recv(2048)
        except socket.timeout:
            return None, b""
        f = struct.unpack_from(HDR, r)
        return f, r[struct.calcsize(HDR):]

    _, before = ask(req(READ, 1, 0, 16, txn=100))
    cases = [  # name, request, expected status (None: no response)
        ("wrong key", req(READ, 7, 0, 8, txn=1), BAD_KEY),
        ("key 0", req(WRITE, 0, 0, 8, b"\xff" * 8, txn=2), BAD_KEY),
        ("read past the end", req(READ, 1, region - 4, 8, txn=3), OUT_OF_WINDOW),
        ("offset + length overflows", req(WRITE, 1, 2 ** 64 - 4, 8, b"\xff" * 8, txn=4), OUT_OF_WINDOW),
        ("write shorter than its length", req(WRITE, 1, 0, 16, b"\xff" * 8, txn=5), MALFORMED),
        ("read of 1433 bytes", req(READ, 1, 0, 1433, txn=6), MALFORMED),
        ("read with a payload", req(READ, 1, 0, 8, b"\xff", txn=7), MALFORMED),
        ("status set in a request", req(WRITE, 1, 0, 8, b"\xff" * 8, txn=8, status=3), MALFORMED),
        ("unknown op", req(9, 1, 0, 8, txn=9), MALFORMED),
        ("fetch-and-add (no atomics here)", req(FADD64, 1, 0, 8, b"\x00" * 7 + b"\x01", txn=10), PERMISSION),
        ("10-byte datagram", req(READ, 1, 0, 8)[:10], None),
        ("version 2", req(READ, 1, 0, 8, version=2), None),
        ("an ACK", req(0, 1, 0, 0, kind=1), None),
        ("a response", req(READ | RESPONSE, 1, 0, 8), None),
    ]
    out, ok = {}, True
    for name, pkt, want in cases:
        f, _ = ask(pkt)
        got = None if f is None else f[3]
        # A response echoes the txn and marks the op.
        echoes = f is None or (f[8] == struct.unpack_from(HDR, pkt)[8] and f[2] == pkt[2] | RESPONSE)
        out[name] = {"status": got, "expected": want, "echoes": echoes}
        ok &= got == want and echoes
    _, after = ask(req(READ, 1, 0, 16, txn=101))
    out["unchanged"] = len(before) == 16 and before == after
    ok &= out["unchanged"]
    print(json.dumps(out))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
