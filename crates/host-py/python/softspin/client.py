"""A host program beside a ``softspin nic`` process (docs/host-interface.md).

``NicClient(path)`` connects to the NIC's control socket (``softspin nic
--control PATH``) and maps the host memory it shares (``--host-shm``):
``host_mem`` is a NumPy array over the mapping itself, so what the NIC's
handlers DMA-write is there without a copy, and what the program stores is
what they DMA-read. Messages: a 4-byte little-endian length, then one JSON
object; requests carry ``v`` (the protocol version) and ``op``.

RMA (docs/host-interface.md "RMA"): ``put``/``get``/``fetch_add``/``cas``
block until the NIC completes the operation; ``post`` returns a handle to
``wait`` or ``test`` for. A put sends bytes of the RMA ECTX's host window
(``window_mem``) and a get lands there: store with NumPy before posting,
read the array after the completion, no copies.
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
        #: The ECTX RMA operations are posted on (None: the one with the RMA handlers).
        self.rma_ectx: int | None = None
        #: Seconds blocking RMA calls wait (None: until the NIC completes the operation, which its
        #: transport bounds by declaring a silent peer failed).
        self.rma_timeout: float | None = None
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

    def post(self, rank: int, key: int, offset: int, op: str, **args: int) -> int:
        """Post an RMA operation without waiting; its handle (this client's).

        ``op`` is ``put`` or ``get`` (with ``local``, ``len``: bytes of the RMA
        ECTX's host window), ``fetch_add`` (``width``, ``addend``) or ``cas``
        (``width``, ``compare``, ``swap``).
        """
        req = {"rank": rank, "key": key, "offset": offset, "op": op, **args}
        return int(self.request("rma_post", ectx=self.rma_ectx, request=req)["handle"])

    def test(self, handle: int) -> dict[str, Any] | None:
        """The completion of ``handle`` (``handle``, ``status``, ``value``, ``error`` if not OK) if it came."""
        c = self.request("rma_test", handles=[handle])["completions"]
        return c[0] if c else None

    def wait(self, handle: int, timeout: float) -> dict[str, Any] | None:
        """Wait at most ``timeout`` seconds for the completion of ``handle`` (None: not yet)."""
        c = self.request("rma_wait", handles=[handle], timeout_ms=max(0, int(timeout * 1000)))["completions"]
        return c[0] if c else None

    def wait_any(self, handles: list[int] | None = None, timeout: float = 0.0) -> list[dict[str, Any]]:
        """Wait until some of ``handles`` (None: any of this client's) complete; the completions that came."""
        return self.request("rma_wait", handles=handles, timeout_ms=max(0, int(timeout * 1000)))["completions"]

    def _blocking(self, rank: int, key: int, offset: int, op: str, **args: int) -> int:
        h = self.post(rank, key, offset, op, **args)
        c = None
        if self.rma_timeout is None:
            while c is None:
                c = self.wait(h, 3600.0)
        else:
            c = self.wait(h, self.rma_timeout)
        if c is None:
            raise Error(f"RMA {op} to rank {rank}: no completion within {self.rma_timeout} s")
        if c["status"] != 0:
            raise Error(c.get("error") or f"RMA {op} to rank {rank}: status {c['status']}")
        return int(c["value"])

    def put(self, rank: int, key: int, offset: int, local: int, len: int) -> None:
        """Write ``len`` bytes of the RMA ECTX's host window at ``local`` to rank ``rank``'s window ``key`` at ``offset``."""
        self._blocking(rank, key, offset, "put", local=local, len=len)

    def get(self, rank: int, key: int, offset: int, local: int, len: int) -> None:
        """Read ``len`` bytes of rank ``rank``'s window ``key`` at ``offset`` into the host window at ``local``."""
        self._blocking(rank, key, offset, "get", local=local, len=len)

    def fetch_add(self, rank: int, key: int, offset: int, width: int, addend: int) -> int:
        """Fetch-and-add on the ``width``-byte (4 or 8) word at ``offset``: the old word."""
        return self._blocking(rank, key, offset, "fetch_add", width=width, addend=addend)

    def cas(self, rank: int, key: int, offset: int, width: int, compare: int, swap: int) -> int:
        """Compare-and-swap on the ``width``-byte word at ``offset``: the old word (swapped iff it equalled ``compare``)."""
        return self._blocking(rank, key, offset, "cas", width=width, compare=compare, swap=swap)
