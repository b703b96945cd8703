"""softspin.slmp_send (issue 12: the SLMP sender from the host API) against
an SLMP receiver written here from seed 000 §5.1's wire format: a UDP
socket that ACKs every SYN segment by echoing its header with the ACK flag
and reassembles messages by offset. It drops the first copy of some
segments and duplicates others, so the sender must retransmit, and the
messages must still arrive byte-exact."""

import random
import socket
import struct
import threading

import pytest

import softspin

EOM, SYN, ACK = 0x8000, 0x4000, 0x2000


class Receiver(threading.Thread):
    def __init__(self, drop_every=0, dup_every=0, ack=True):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.drop_every, self.dup_every, self.ack = drop_every, dup_every, ack
        self.msgs = {}  # msg_id -> {offset: bytes}
        self.length = {}  # msg_id -> length (from the EOM segment)
        self.seen = set()
        self.dropped = 0
        self.stop = threading.Event()

    def run(self):
        n = 0
        while not self.stop.is_set():
            try:
                data, peer = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            flags, mid, off = struct.unpack(">HII", data[:10])
            n += 1
            key = (mid, off)
            if self.drop_every and n % self.drop_every == 0 and key not in self.seen:
                self.seen.add(key)
                self.dropped += 1
                continue
            self.seen.add(key)
            self.msgs.setdefault(mid, {})[off] = data[10:]
            if flags & EOM:
                self.length[mid] = off + len(data) - 10
            if flags & SYN and self.ack:
                a = struct.pack(">HII", ACK, mid, off)
                for _ in range(2 if self.dup_every and n % self.dup_every == 0 else 1):
                    self.sock.sendto(a, peer)

    def message(self, mid):
        parts = self.msgs[mid]
        buf = bytearray(self.length[mid])
        for off, p in parts.items():
            buf[off : off + len(p)] = p
        return bytes(buf)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.join()
        self.sock.close()


def test_messages_arrive_byte_exact_despite_drops_and_duplicate_acks():
    rng = random.Random(12)
    msgs = [rng.randbytes(n) for n in (0, 1, 1462, 1463, 300_000)]
    with Receiver(drop_every=7, dup_every=5) as r:
        st = softspin.slmp_send(f"127.0.0.1:{r.port}", msgs, first_msg_id=40)
    assert r.dropped > 0
    assert st["delivery_confirmed"] is True
    assert st["messages"] == len(msgs) and st["bytes"] == sum(map(len, msgs))
    # Every dropped segment was sent again.
    assert st["retransmitted"] >= r.dropped
    assert st["duplicate_acks"] > 0
    for i, m in enumerate(msgs):
        assert r.message(40 + i) == m


def test_one_bytes_like_message_and_fixed_window():
    data = bytearray(range(256)) * 100
    with Receiver() as r:
        st = softspin.slmp_send(f"127.0.0.1:{r.port}", memoryview(data), window="1", segment=1000)
    assert st["segments"] == 26 and st["window"]["max"] == 1
    assert r.message(1) == bytes(data)


def test_gives_up_with_statistics_when_nothing_acks():
    with Receiver(ack=False) as r:
        with pytest.raises(softspin.SlmpGaveUpError) as e:
            softspin.slmp_send(f"127.0.0.1:{r.port}", b"x" * 5000, give_up_s=0.3)
    assert isinstance(e.value, softspin.NetError)
    assert "gave up" in str(e.value)
    assert e.value.stats["packets_sent"] >= 4 and e.value.stats["acks_received"] == 0


@pytest.mark.parametrize(
    "kw, word",
    [
        (dict(window="0"), "window"),
        (dict(window="fast"), "window"),
        (dict(sync="some"), "sync"),
        (dict(segment=0), "segment"),
        (dict(give_up_s=-1.0), "give_up_s"),
    ],
)
def test_bad_settings_are_invalid_argument_errors(kw, word):
    with pytest.raises(softspin.InvalidArgumentError, match=word):
        softspin.slmp_send("127.0.0.1:9", b"x", **kw)


def test_bad_messages_and_peer():
    with pytest.raises(softspin.InvalidArgumentError, match="messages"):
        softspin.slmp_send("127.0.0.1:9", [b"ok", 3])
    with pytest.raises(softspin.InvalidArgumentError, match="peer"):
        softspin.slmp_send("no such host.invalid", b"x")
