"""softspin.NicClient's RMA calls, run by crates/cli/tests/rma_cli.rs on node 0
of a two-node cluster against node 1 (key 1 exported over its host memory):
rma_client.py CONTROL_SOCKET NODE1_SHM_FILE. Results are checked against node
1's shm file, read here independently of the client."""

import sys

import numpy as np

import softspin

ctl, shm = sys.argv[1], sys.argv[2]
KEY = 1


def target() -> np.ndarray:
    return np.fromfile(shm, dtype=np.uint8)


def word(m: np.ndarray, off: int, width: int) -> int:
    return int.from_bytes(m[off:off + width].tobytes(), "little")


c = softspin.NicClient(ctl)
e = c.ectxs[0]
assert e["rma"], e
win = c.window_mem(e["ectx"])  # a view of the mapping

rng = np.random.default_rng(27)
data = rng.integers(0, 256, 7000, dtype=np.uint8)
win[600000:607000] = data
c.put(1, KEY, 700000, 600000, 7000)
assert (target()[700000:707000] == data).all(), "put"
win[610000:617000] = 0
c.get(1, KEY, 700000, 610000, 7000)
assert (win[610000:617000] == data).all(), "get: in the array, no copy"

old = word(target(), 720000, 8)
assert c.fetch_add(1, KEY, 720000, 8, 2**40 + 3) == old
assert word(target(), 720000, 8) == (old + 2**40 + 3) % 2**64
cur = word(target(), 720008, 4)
assert c.cas(1, KEY, 720008, 4, cur ^ 1, 5) == cur, "no swap"
assert word(target(), 720008, 4) == cur
assert c.cas(1, KEY, 720008, 4, cur, 0xDEADBEEF) == cur, "swap"
assert word(target(), 720008, 4) == 0xDEADBEEF

before = target()
try:
    c.put(1, 99, 0, 600000, 8)
    raise AssertionError("a put to key 99 succeeded")
except softspin.Error as x:
    assert "BAD_KEY" in str(x), x
assert (target() == before).all(), "a refused put wrote"

h = c.post(1, KEY, 700000, "get", local=620000, len=100)
done = c.wait(h, 10.0)
assert done is not None and done["status"] == 0 and done["handle"] == h, done
assert (win[620000:620100] == data[:100]).all()
try:
    c.test(h)
    raise AssertionError("a completion taken twice")
except softspin.Error as x:
    assert "not an operation of this client" in str(x), x
h = c.post(1, 42, 0, "fetch_add", width=8, addend=1)
done = c.wait(h, 10.0)
assert done is not None and done["status"] == 1 and "BAD_KEY" in done["error"], done
c.close()
print("rma_client.py: ok")
