"""A host program beside a ``softspin nic`` process (docs/host-interface.md).

``NicClient(path)`` connects to the NIC's control socket (``softspin nic
--control PATH``) and maps the host memory it shares (``--host-shm``):
``host_mem`` is a NumPy array over the mapping itself, so what the NIC's
handlers DMA-write is there without a copy, and what the program stores is
what they DMA-read. Messages: a 4-byte little-endian length, then one JSON
object; requests carry ``v`` (the protocol version) and ``op``.
"""

from __future__ import annotations

import json
import mmap
import socket
import struct

import os
from typing import Any

import numpy as np

from ._native import Error

PROTOCOL_VERSION = 1
MAX_MESSAGE = 64 * 1024  # hostif::MAX_MESSAGE; tests/test_nic_client.py checks it against the server


class NicClient:
    """A connection to a NIC process, with its shared host memory mapped."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(str(path))
        self._map: mmap.mmap | None = None
        #: The shared host memory as a NumPy uint8 array over the mapping (None: the NIC shares none).
        self.host_mem: np.ndarray | None = None
        self.hello = self.request("hello")
        self.ectxs = self.hello["ectxs"]
        shm = self.hello.get("shm")
        if shm:
            with open(shm["path"], "r+b") as f:
                self._map = mmap.mmap(f.fileno(), shm["size"], mmap.MAP_SHARED)
            # In place: a view of the mapping, no copy.
            self.host_mem = np.frombuffer(self._map, dtype=np.uint8)

    def close(self) -> None:
        """Close the socket; ``host_mem`` stays valid while referenced."""
        self._sock.close()

    def __enter__(self) -> NicClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv_exact(self, n: int) -> bytes:
        b = bytearray()
        while len(b) < n:
            chunk = self._sock.recv(n - len(b))
            if not chunk:
                raise Error("control socket: the NIC closed the connection")
            b += chunk
        return bytes(b)

    def request(self, op: str, **args: Any) -> dict[str, Any]:
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

    def ectx(self, name: str) -> dict[str, Any]:
        """The ECTX (hello's entry) called ``name``."""
        for e in self.ectxs:
            if e["name"] == name:
                return e
        raise Error(f"the NIC has no ECTX `{name}`")

    def window_mem(self, ectx: int) -> np.ndarray:
        """The ECTX's host window within ``host_mem`` (a view)."""
        for e in self.ectxs:
            if e["ectx"] == ectx and e.get("shm_offset") is not None:
                off = e["shm_offset"]
                return self.host_mem[off:off + e["host_size"]]
        raise Error(f"ECTX {ectx}'s host window is not in shared memory")

    def export_window(self, ectx: int, key: int, offset: int, size: int, perms: int) -> None:
        """Export an RMA window (docs/rma.md "Windows and keys")."""
        self.request("export_window", ectx=ectx, key=key, offset=offset, size=size, perms=perms)

    def unexport_window(self, ectx: int, key: int) -> None:
        """Withdraw the window exported under ``key``."""
        self.request("unexport_window", ectx=ectx, key=key)

    def windows(self, ectx: int | None = None) -> list[dict[str, int]]:
        """The exported windows (``key``, ``perms``, ``offset``, ``size``)."""
        return self.request("windows", ectx=ectx)["windows"]

    def counters(self, ectx: int | None = None) -> list[tuple[int, int, int]]:
        """[(index, sum, count)] the ECTX's handlers pushed."""
        return [(c["index"], c["sum"], c["count"]) for c in self.request("counters", ectx=ectx)["counters"]]

    def status(self) -> dict[str, Any]:
        """Engine figures, the port's counters (``wire``) and the control socket's (``control``)."""
        return self.request("status")

    def wait_notification(self, timeout: float) -> dict[str, Any] | None:
        """The next notification (a dict; ``data`` as bytes), or None after ``timeout`` seconds."""
        n = self.request("wait_notification", timeout_ms=max(0, int(timeout * 1000)))["notification"]
        if n is not None:
            n["data"] = bytes(n["data"])
        return n

    def respond(self, id: int, value: int) -> None:
        """Answer notification ``id``: the waiting handler goes on with ``value``."""
        self.request("respond", id=id, value=value)
