"""A host program beside a ``softspin nic`` process (docs/host-interface.md).

``NicClient(path)`` connects to the NIC's control socket (``softspin nic
--control PATH``) and maps the host memory it shares (``--host-shm``):
``host_mem`` is a NumPy array over the mapping itself, so what the NIC's
handlers DMA-write is there without a copy, and what the program stores is
what they DMA-read. Messages: a 4-byte little-endian length, then one JSON
object; requests carry ``v`` (the protocol version) and ``op``.
"""

import json
import mmap
import socket
import struct

import numpy as np

from ._native import Error

PROTOCOL_VERSION = 1
MAX_MESSAGE = 64 * 1024  # hostif::MAX_MESSAGE; tests/test_nic_client.py checks it against the server


class NicClient:
    """A connection to a NIC process, with its shared host memory mapped."""

    def __init__(self, path):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(str(path))
        self._map = None
        self.host_mem = None
        self.hello = self.request("hello")
        self.ectxs = self.hello["ectxs"]
        shm = self.hello.get("shm")
        if shm:
            with open(shm["path"], "r+b") as f:
                self._map = mmap.mmap(f.fileno(), shm["size"], mmap.MAP_SHARED)
            # In place: a view of the mapping, no copy.
            self.host_mem = np.frombuffer(self._map, dtype=np.uint8)

    def close(self):
        """Close the socket; ``host_mem`` stays valid while referenced."""
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _recv_exact(self, n):
        b = bytearray()
        while len(b) < n:
            chunk = self._sock.recv(n - len(b))
            if not chunk:
                raise Error("control socket: the NIC closed the connection")
            b += chunk
        return bytes(b)

    def request(self, op, **args):
        """Send one request; its response's fields, or softspin.Error."""
        body = json.dumps({**args, "v": PROTOCOL_VERSION, "op": op}).encode()
        self._sock.sendall(struct.pack("<I", len(body)) + body)
        (n,) = struct.unpack("<I", self._recv_exact(4))
        if n > MAX_MESSAGE:
            raise Error(f"control socket: message length {n} is above {MAX_MESSAGE}")
        r = json.loads(self._recv_exact(n))
        if r.get("ok") is not True:
            raise Error(f"NIC: {op}: {r.get('error', 'a response without ok or error')}")
        return r

    def ectx(self, name):
        """The ECTX (hello's entry) called ``name``."""
        for e in self.ectxs:
            if e["name"] == name:
                return e
        raise Error(f"the NIC has no ECTX `{name}`")

    def window_mem(self, ectx):
        """The ECTX's host window within ``host_mem`` (a view)."""
        for e in self.ectxs:
            if e["ectx"] == ectx and e.get("shm_offset") is not None:
                off = e["shm_offset"]
                return self.host_mem[off:off + e["host_size"]]
        raise Error(f"ECTX {ectx}'s host window is not in shared memory")

    def export_window(self, ectx, key, offset, size, perms):
        self.request("export_window", ectx=ectx, key=key, offset=offset, size=size, perms=perms)

    def unexport_window(self, ectx, key):
        self.request("unexport_window", ectx=ectx, key=key)

    def windows(self, ectx=None):
        return self.request("windows", ectx=ectx)["windows"]

    def counters(self, ectx=None):
        """[(index, sum, count)] the ECTX's handlers pushed."""
        return [(c["index"], c["sum"], c["count"]) for c in self.request("counters", ectx=ectx)["counters"]]

    def status(self):
        return self.request("status")

    def wait_notification(self, timeout):
        """The next notification (a dict; ``data`` as bytes), or None after ``timeout`` seconds."""
        n = self.request("wait_notification", timeout_ms=max(0, int(timeout * 1000)))["notification"]
        if n is not None:
            n["data"] = bytes(n["data"])
        return n

    def respond(self, id, value):
        self.request("respond", id=id, value=value)
