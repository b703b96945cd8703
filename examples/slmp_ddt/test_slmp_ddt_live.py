"""slmp_ddt live (root): host.py on its own veth pair (scripts/netns.sh with a
prefix unique to this process, always torn down), a few small messages of
both of seed 000's types, offload and baseline. Every message must be
byte-exact against ddt.unpack, and the handler's counters must show the
segments went through it."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

live = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, XDP)")
SEGMENT, COMPLETE, BAD_DESC = 0, 3, 13


@live
def test_host_py_live_small():
    prefix = f"dd{os.getpid() % 10000}"
    env = dict(os.environ, SS_NS_PREFIX=prefix, SS_NET=f"10.97.{os.getpid() % 200 + 20}")
    ns = [str(ROOT / "scripts/netns.sh")]
    subprocess.run(ns + ["up"], env=env, check=True, capture_output=True)
    try:
        r = subprocess.run(ns + ["exec", "nic", sys.executable, str(HERE / "host.py"), "--iface", f"{prefix}0",
                                 "--peer-ns", f"{prefix}peer", "--to", env["SS_NET"] + ".1", "--messages", "2",
                                 "--elements", "3", "--repeat", "1", "--dim", "128", "--timeout", "60", "--json"],
                           env=env, capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(ns + ["down"], env=env, capture_output=True)
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(r.stdout)
    assert d["ok"] and len(d["runs"]) == 4
    for run in d["runs"]:
        assert run["verified"] and run["bad_messages"] == [], run
        ctr = {int(k): v for k, v in run["nic_counters"].items()}
        assert ctr[SEGMENT][0] == run["bytes"] and ctr[COMPLETE][1] == 2, ctr  # all through the handler, 2 notes
        assert BAD_DESC not in ctr
        assert 0 < run["overlap_ratio"] <= 1
    modes = {(run["type"], run["run"]): run["mode"] for run in d["runs"]}
    assert modes[("complex", "offload")] == "message" and modes[("simple", "offload")] == "packet"
    base = [run for run in d["runs"] if run["run"] == "baseline"]
    assert all(run["unpack_mbps"] > 0 for run in base)
