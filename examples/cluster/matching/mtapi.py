"""The matching use case's host API in Python (README.md): `send(rank, tag,
buf)` / `recv(src|ANY, tag|ANY, buf)` with completion, over one node's
host memory (its `softspin.NicClient`) and a kernel UDP socket.

A receive is posted into the ring in the receiver's host memory that its
NIC reads (matching.h), then the NIC's doorbell is rung by posting an RMA
fetch-and-add of 0 on a peer's UC_MT_KICK word: the control socket has no
bare doorbell, and the RMA op's doorbell frame passes through the
use case's payload handler, which ingests the ring (handler.c). Receive
buffers are slices of that host memory (`buffer`), so the NIC writes into
them in place; an unexpected eager message is copied out by `recv`.
"""
from __future__ import annotations

import struct
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import common  # noqa: E402

MT = {**common.UC, **common.defines(HERE / "matching.h")}
ANY = MT["UC_MT_ANY"]
STATUS = {1: "truncated: the message is larger than the buffer", 2: "bad post (buffer outside the receive area)",
          3: "too many receives outstanding", 4: "the rendezvous get failed", 5: "the NIC was too busy to get"}
KICKS_KEPT = 16  # RMA completions of doorbell kicks left untaken before collecting them


class MatchError(Exception):
    pass


def u32(mem, off: int) -> int:
    return int(mem[off:off + 4].view("<u4")[0])


def set_u32(mem, off: int, v: int) -> None:
    mem[off:off + 4].view("<u4")[0] = v


def put(mem, off: int, data: bytes) -> None:
    import numpy as np
    mem[off:off + len(data)] = np.frombuffer(data, np.uint8)


def rts(soff: int, cookie: int) -> bytes:
    """A rendezvous packet's user header."""
    return struct.pack(">II", soff, cookie)


def packet(src: int, seq: int, tag: int, mode: int, total: int, data: bytes) -> bytes:
    """One message's only datagram (uc.h's header; the tag in the flags)."""
    msg = MT["UC_MSG_BIT"] | (src << 20) | (seq & 0xFFFFF)
    flags = MT["UC_EOM"] | (tag << MT["UC_MT_TAG_SHIFT"])
    return common.HDR.pack(MT["UC_MAGIC"], msg, flags, seq & 0xFFFFFFFF, total, 0, src, mode) + data


class Recv:
    """A posted receive; `test()` completes it."""

    def __init__(self, ep: Endpoint, pid: int, buf, src: int, tag: int) -> None:
        self.ep, self.pid, self.buf, self.src, self.tag = ep, pid, buf, src, tag
        self.result: dict | None = None
        self.t_done = 0

    def test(self) -> dict | None:
        """None until the NIC completed it; then {len, src, tag, how}
        (how: "posted" or "unexpected"); a failed receive raises MatchError."""
        if self.result is not None:
            return self.result
        m, at = self.ep.mem, MT["UC_MT_COMPL"] + (self.pid % MT["UC_MT_POSTS"]) * MT["UC_MT_COMPL_LEN"]
        if u32(m, at + MT["UC_MT_DONE_OFF"]) != (self.pid + 1) & 0xFFFFFFFF:
            return None
        self.t_done = time.perf_counter_ns()
        status, n, src, tag, slot, gen, how = struct.unpack_from("<7I", m[at:at + 28].tobytes())
        if slot != MT["UC_MT_NO_SLOT"]:
            if status == MT["UC_MT_OK"]:  # case III: copy out of the unexpected slot
                s = MT["UC_MT_UNEXP"] + slot * MT["UC_MT_EAGER_MAX"]
                self.buf[:n] = m[s:s + n]
            set_u32(m, MT["UC_MT_ACKS"] + 4 * slot, gen)  # the slot is free again
        self.ep.active.discard(self.pid)
        if status != MT["UC_MT_OK"]:
            raise MatchError(f"receive {self.pid}: {STATUS.get(status, status)}")
        self.result = {"len": n, "src": src, "tag": tag,
                       "how": {MT["UC_MT_HOW_POSTED"]: "posted", MT["UC_MT_HOW_UNEXPECTED"]: "unexpected"}.get(how)}
        return self.result

    def wait(self, timeout: float = 5.0) -> dict:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            r = self.test()
            if r is not None:
                return r
        raise MatchError(f"receive {self.pid} (src {self.src}, tag {self.tag}) not completed in {timeout} s")


class Send:
    """A send; eager ones are complete at once, rendezvous ones when the
    receiver's NIC has put the cookie into our FIN slot."""

    def __init__(self, ep: Endpoint | None, cookie: int) -> None:
        self.ep, self.cookie = ep, cookie

    def test(self) -> bool:
        if self.ep is None:
            return True
        at = MT["UC_MT_FINS"] + (self.cookie % MT["UC_MT_SENDS"]) * 8
        if common.u64(self.ep.mem, at) != self.cookie:
            return False
        self.ep.sending.discard(self.cookie)
        self.ep = None
        return True

    def wait(self, timeout: float = 5.0) -> None:
        end = time.perf_counter() + timeout
        while not self.test():
            if time.perf_counter() > end:
                raise MatchError(f"send {self.cookie}: no FIN in {timeout} s (the receive never matched?)")


class Endpoint:
    """Node `rank`'s matching endpoint: its host memory through its control
    socket; `ips` (rank -> IPv4) and a socket for sending."""

    def __init__(self, control: str, rank: int, ips: list[str], sock=None) -> None:
        self.client, self.mem = common.client_mem(control)
        self.rank, self.ips, self.sock = rank, ips, sock
        self.posted = u32(self.mem, MT["UC_MT_POSTED"])  # the ring's count (another endpoint may have run)
        self.active: set[int] = set()
        self.sending: set[int] = set()
        self.cookie = max(common.u64(self.mem, MT["UC_MT_FINS"] + 8 * k) for k in range(MT["UC_MT_SENDS"]))
        self.seq = self.cookie
        self.kicks = 0
        self.recv_at = self.send_at = 0

    def close(self) -> None:
        self.client.close()

    # Buffers: bump allocators over the receive and send areas.
    def buffer(self, n: int):
        """n bytes of receive area (host memory the NIC writes into)."""
        lo, hi = MT["UC_MT_RECV"], MT["UC_MT_SEND"]
        if self.recv_at + n > hi - lo:
            self.recv_at = 0
        off = lo + self.recv_at
        self.recv_at += (n + 63) & ~63
        return self.mem[off:off + n]

    def _offset(self, buf) -> int:
        off = buf.__array_interface__["data"][0] - self.mem.__array_interface__["data"][0]
        if not 0 <= off <= len(self.mem) - len(buf):
            raise MatchError("a receive buffer must be a slice of this endpoint's host memory (buffer())")
        return off

    def irecv(self, src: int, tag: int, buf) -> Recv:
        """Post a receive for a message from `src` (or ANY) with `tag` (or ANY) into `buf`."""
        if not (src == ANY or 0 <= src < len(self.ips)) or not (tag == ANY or 0 <= tag <= MT["UC_MT_TAG_MAX"]):
            raise MatchError(f"recv: source {src} or tag {tag} out of range")
        if len(self.active) >= MT["UC_MT_POSTS"]:
            raise MatchError(f"recv: {MT['UC_MT_POSTS']} receives outstanding already")
        pid = self.posted
        at = MT["UC_MT_POST"] + (pid % MT["UC_MT_POSTS"]) * MT["UC_MT_POST_LEN"]
        put(self.mem, at, struct.pack("<5I", pid, src, tag, self._offset(buf), len(buf)))
        self.posted += 1
        self.active.add(pid)
        set_u32(self.mem, MT["UC_MT_POSTED"], self.posted)  # after the entry (x86 keeps the stores' order)
        self.kick()
        return Recv(self, pid, buf, src, tag)

    def recv(self, src: int, tag: int, buf, timeout: float = 5.0) -> dict:
        return self.irecv(src, tag, buf).wait(timeout)

    def kick(self) -> None:
        """Ring the NIC's doorbell (an RMA fetch-and-add of 0 on a peer's kick word)."""
        peer = (self.rank + 1) % len(self.ips)
        self.client.post(peer, MT["UC_KEY"], MT["UC_MT_KICK"], "fetch_add", width=8, addend=0)
        self.kicks += 1
        if self.kicks >= KICKS_KEPT:
            self.kicks -= len(self.client.wait_any(None, 0.0))

    def isend(self, dst: int, tag: int, data: bytes) -> Send:
        """Send `data` to `dst` with `tag`: eager up to UC_MT_EAGER_MAX bytes,
        else rendezvous (the data exposed in our send area until the FIN)."""
        if not 0 <= tag <= MT["UC_MT_TAG_MAX"] or not 0 <= dst < len(self.ips) or dst == self.rank:
            raise MatchError(f"send: rank {dst} or tag {tag} out of range")
        if not 1 <= len(data) <= MT["UC_MT_MAX"]:
            raise MatchError(f"send: {len(data)} bytes (1 to {MT['UC_MT_MAX']})")
        self.seq += 1
        to = (self.ips[dst], MT["UC_PORT"])
        if len(data) <= MT["UC_MT_EAGER_MAX"]:
            self.sock.sendto(packet(self.rank, self.seq, tag, MT["UC_MODE_EAGER"], len(data), data), to)
            return Send(None, 0)
        if len(self.sending) >= MT["UC_MT_SENDS"]:
            raise MatchError(f"send: {MT['UC_MT_SENDS']} rendezvous sends in flight already")
        lo, hi = MT["UC_MT_SEND"], MT["UC_MT_END"]
        if self.send_at + len(data) > hi - lo:
            self.send_at = 0
        soff = lo + self.send_at
        self.send_at += (len(data) + 63) & ~63
        put(self.mem, soff, data)
        self.cookie += 1
        self.sending.add(self.cookie)
        self.sock.sendto(packet(self.rank, self.seq, tag, MT["UC_MODE_RNDV"], len(data), rts(soff, self.cookie)), to)
        return Send(self, self.cookie)

    def send(self, dst: int, tag: int, data: bytes, timeout: float = 5.0) -> None:
        self.isend(dst, tag, data).wait(timeout)
