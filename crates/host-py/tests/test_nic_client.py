"""softspin.NicClient: a Python host program beside a `softspin nic` process
(docs/host-interface.md), on lo in socket mode (no root). RMA requests are
encoded here from docs/rma.md's field table; every byte the NIC serves or
writes is checked against the test's own copy of host memory."""

import json
import mmap
import os
import signal
import socket
import struct
import subprocess
import time

import numpy as np
import pytest

import softspin
from softspin import client as client_mod

from conftest import CLI, ROOT, build

HDR = "!BBBBHHIIIIQII"  # docs/rma.md "Header": 40 bytes, big-endian
WRITE, READ = 1, 2
OK, BAD_KEY, OUT_OF_WINDOW = 0, 1, 2
HOST = 65536


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def rma_elf(tmp_path_factory):
    return build([ROOT / "examples" / "rma_target" / "handler.c"], tmp_path_factory.mktemp("img") / "rma.elf",
                 "--profile", "fpspin")


@pytest.fixture
def nic(rma_elf, tmp_path):
    port = free_port()
    ctl = tmp_path / "nic.sock"
    shm = f"sF-py-{os.getpid()}"
    p = subprocess.Popen([str(CLI), "nic", "--iface", "lo", "--mode", "socket", "--json", "--image", str(rma_elf),
                          "--ph", "rma_target_ph", "--match", f"udp:{port}", "--scratchpad", "12288",
                          "--host-size", str(HOST), "--host-shm", shm, "--control", str(ctl)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    end = time.monotonic() + 20
    while not ctl.exists():
        assert p.poll() is None, p.stderr.read().decode()
        assert time.monotonic() < end, "no control socket after 20 s"
        time.sleep(0.02)
    n = {"proc": p, "ctl": ctl, "port": port, "shm": f"/dev/shm/{shm}"}
    yield n
    if p.poll() is None:
        p.kill()
        p.wait()


def stop(n):
    p = n["proc"]
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err.decode()
    assert not n["ctl"].exists() and not os.path.exists(n["shm"]), "left behind"
    return json.loads(out)


def rma(sock, port, op, txn, key, off, length, payload=b""):
    req = struct.pack(HDR, 1, 0, op, 0, 3, 0, 0, 0, txn, key, off, length, 0) + payload
    sock.sendto(req, ("127.0.0.1", port))
    r = sock.recv(2048)
    assert r[2] == op | 0x80 and r[16:20] == req[16:20], r[:40].hex()
    return r[3], r[40:]


def test_host_mem_is_the_nics_host_memory(nic):
    c = softspin.NicClient(nic["ctl"])
    (e,) = c.ectxs
    assert c.hello["shm"] == {"path": nic["shm"], "size": HOST}
    assert isinstance(c.host_mem, np.ndarray) and c.host_mem.size == HOST and c.host_mem.flags.writeable
    assert c.window_mem(e["ectx"]).size == HOST
    base, size = 8192, 16384
    c.export_window(e["ectx"], 5, base, size, 3)
    assert c.windows() == [{"key": 5, "perms": 3, "offset": base, "size": size}]

    rng = np.random.default_rng(27)
    model = rng.integers(0, 256, HOST, dtype=np.uint8)
    c.host_mem[:] = model
    # No copy: another mapping of the same file sees the stores at once.
    with open(nic["shm"], "r+b") as f, mmap.mmap(f.fileno(), HOST) as m:
        assert m[:HOST] == model.tobytes()

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(5)
    for txn, (off, n) in enumerate([(0, 8), (1000, 1432), (size - 8, 8)]):
        st, data = rma(sock, nic["port"], READ, txn, 5, off, n)
        assert st == OK and data == model[base + off:base + off + n].tobytes()
    payload = rng.integers(0, 256, 900, dtype=np.uint8).tobytes()
    st, _ = rma(sock, nic["port"], WRITE, 10, 5, 4000, 900, payload)
    assert st == OK
    model[base + 4000:base + 4900] = np.frombuffer(payload, dtype=np.uint8)
    st, _ = rma(sock, nic["port"], WRITE, 11, 5, size - 4, 8, b"\xee" * 8)
    assert st == OUT_OF_WINDOW
    assert np.array_equal(c.host_mem, model)

    # A second client at once sees the same memory and the same NIC.
    with softspin.NicClient(nic["ctl"]) as c2:
        assert np.array_equal(c2.host_mem, model)
        assert c2.counters() == c.counters() == [(0, 8 + 1432 + 8 + 900, 4), (2, 8, 1)]
        s = c2.status()
        assert s["packets"] == 5 and s["wire"]["matched"] == 5 and s["control"]["clients"] == 2, s
        assert s["dma_to_host_bytes"] == 900 and s["dma_from_host_bytes"] == 8 + 1432 + 8, s

    with pytest.raises(softspin.Error, match="unknown op `nope`"):
        c.request("nope")
    with pytest.raises(softspin.Error, match="passes the end"):
        c.export_window(e["ectx"], 6, 60000, 8192, 1)
    c.unexport_window(e["ectx"], 5)
    assert rma(sock, nic["port"], READ, 12, 5, 0, 8)[0] == BAD_KEY
    assert c.wait_notification(0.05) is None
    c.close()

    v = stop(nic)
    assert v["counters"]["rma"] == [{"index": 0, "sum": 2348, "count": 4}, {"index": 1, "sum": 8, "count": 1},
                                    {"index": 2, "sum": 8, "count": 1}]
    assert v["control"]["errors"] == 2


def test_garbled_requests_get_errors(nic):
    good = softspin.NicClient(nic["ctl"])
    for frame, want in [(struct.pack("<I", client_mod.MAX_MESSAGE + 1), f"above the protocol's {client_mod.MAX_MESSAGE}"),
                        (struct.pack("<I", 3) + b"{]}", "not JSON"),
                        (struct.pack("<I", 2) + b"[]", "one JSON object")]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(nic["ctl"]))
        s.settimeout(5)
        s.sendall(frame)
        (n,) = struct.unpack("<I", s.recv(4))
        r = json.loads(s.recv(n))
        assert r["ok"] is False and want in r["error"], r
        assert s.recv(1) == b"", "closed after garbage"
        assert good.status()["ok"] is True
    # Gone mid-request.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(nic["ctl"]))
    s.sendall(struct.pack("<I", 100) + b'{"v": 1')
    s.close()
    assert good.status()["control"]["errors"] == 3
    good.close()
    assert stop(nic)["control"]["errors"] == 3
