"""Allreduce and barrier live on a softspin cluster (examples/cluster/allreduce/run).

Every host's sum must equal, bit for bit, the NumPy reference the script
adds in the NICs' order (int32, float, double), on 4 nodes and on 5 (not a
power of two, the hosts' side in C); no host may leave the barrier before the delayed last one
arrives; malformed datagrams are dropped and counted exactly; a sabotaged
reference (the sum, the barrier's last arrival) gives `verified: false`;
nothing is left behind, also after Ctrl-C. Root only (namespaces); about 20 s.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from uctest import interrupt_mid_run, run_json  # noqa: E402

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sA") + "arx"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: the use cases need root (softspin cluster up)")


def run(*args, nodes=4):
    return run_json(HERE / "run", PFX, *args, nodes=nodes)[0]


def test_allreduce_every_type_and_barrier_on_4_nodes():
    # 3000 bytes: three packets per vector, the last one short; malformed datagrams first.
    out = run("--mode", "int32,float,double,barrier", "--size", "3000", "--hostile")
    assert out["verified"], json.dumps(out, indent=1)
    assert [(p["mode"], p["size"]) for p in out["points"]] == [("int32", 3000), ("float", 3000),
                                                              ("double", 3000), ("barrier", 4)]
    for p in out["points"]:
        assert p["offload_latency_us"] > 0 and p["baseline_latency_us"] > 0, p
        assert isinstance(p["nic_time_share"], float) and p["nic_time_share"] > 0, p
    assert out["steps"] == 2 and out["extras"] == 0
    for nic in out["hostile"]["nics"]:  # every bad datagram dropped and counted, no handler error
        assert nic["ok"] and nic["dropped"] == nic["expected_dropped"] > 10, nic


def test_five_nodes_not_a_power_of_two_from_the_c_host_program():
    out = run("--dtype", "double", "--size", "1408", "--host-api", "c", nodes=5)
    assert out["verified"], json.dumps(out, indent=1)
    assert out["steps"] == 2 and out["extras"] == 1 and out["host_api"] == "c"


def test_sabotaged_references_are_caught():
    out = run("--mode", "float,barrier", "--size", "1024", "--sabotage", "--no-baseline")
    assert out["verified"] is False
    flt, bar = out["points"]
    assert not flt["verified"] and "NumPy's" in flt["errors"][0], flt
    assert not bar["verified"] and "left the barrier" in bar["errors"][0], bar


def test_bad_arguments_are_refused():
    for args in (["--mode", "double", "--size", "12"], ["--size", "70000"], ["--nodes", "33"],
                 ["--mode", "sum"], ["--lossy", "--loss 0.01"], ["--host-api", "rust"]):
        p = subprocess.run([sys.executable, str(HERE / "run"), *args], capture_output=True, text=True)
        assert p.returncode == 2 and "run: error:" in p.stderr, (args, p.stderr)


def test_ctrl_c_mid_round_removes_the_cluster_and_workers():
    interrupt_mid_run(HERE / "run", PFX[:-1] + "i", "--size", "1024", nodes=3, settle_s=1.5)
