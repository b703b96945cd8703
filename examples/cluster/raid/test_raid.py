"""RAID-5 parity live on a 6-node cluster (examples/cluster/raid/run):
the client, the parity node, four data nodes.

Every run makes its own cluster and checks every data node's store and the
parity byte for byte against the NumPy model its client keeps; the C
client verifies as the Python one does; a sabotaged reference must not
verify; malformed writes are dropped and counted; killing the parity
node's NIC mid-run gives the client errors and no data node an OK ack for
a write the parity lacks; lossy links only cost retries; nothing is left
behind. Root only; about 30 s.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from uctest import run_json  # noqa: E402

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sR") + "rd"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: the use cases need root (softspin cluster up)")


def run(tag, *args, expect_ok=True, rounds=2):
    out, err = run_json(HERE / "run", PFX + tag, *args, nodes=5, rounds=rounds)
    assert out["cluster_nodes"] == 6 and out["data_ranks"] == [2, 3, 4, 5], out
    if expect_ok:
        assert out["verified"], json.dumps(out, indent=1) + err
        for pt in out["points"]:
            assert pt["offload_latency_us"] > 0, pt
            if "--kill-parity" not in args:  # the killed NIC's handler time is gone: no share
                assert isinstance(pt["nic_time_share"], float) and pt["nic_time_share"] > 0, pt
            if "--no-baseline" not in args:
                assert pt["baseline_latency_us"] > 0 and pt["baseline_pairs"][0]["verified"], pt
    return out


def test_writes_update_the_parity_and_hostile_writes_are_counted():
    # 64 B: 16 B a data node, one packet; 20000 B: 5000 B, four packets.
    out = run("a", "--size", "64,20000", "--hostile")
    assert [p["size"] for p in out["points"]] == [64, 20000]
    for where, h in out["hostile"].items():
        assert h["errors"] == 0, (where, h)  # no handler fault
        assert (h["count"], h["sum"]) == (h["want"]["count"], h["want"]["sum"]), (where, h)


def test_writes_through_lossy_links():
    # Deltas and acks are RMA (the transport resends what the links lose);
    # a lost or repeated write packet makes its write be sent again.
    run("l", "--size", "64", "--no-baseline",
        "--lossy", "--loss 0.03 --reorder 0.25 --reorder-max-us 2000 --dup 0.01 --seed 5")


def test_the_c_client_verifies():
    out = run("c", "--client", "c", "--size", "8192", "--no-baseline")
    assert out["client"] == "c"


def test_sabotaged_reference_is_caught():
    out = run("s", "--size", "4096", "--sabotage", expect_ok=False, rounds=1)
    pt = out["points"][0]
    assert out["verified"] is False
    assert not pt["pairs"][0]["verified"] and pt["pairs"][0]["errors"], pt
    assert not pt["baseline_pairs"][0]["verified"] and pt["baseline_pairs"][0]["errors"], pt


def test_killing_the_parity_node_gives_the_client_errors_and_no_false_ack():
    out = run("k", "--size", "4096", "--kill-parity", "1", "--no-baseline", rounds=3)
    f = out["fault"]
    assert f["killed_rank"] == 1 and f["round"] == 1, f
    # Every write a data node acked OK is in the parity (the rest may be, in part).
    assert f["parity_holds_acked"], f
    # After the kill no data node acks OK, and the client sees the failure
    # as a status (7: the parity node failed), not only as silence.
    assert f["after"] and all(st != 0 for x in f["after"] for st in x.values()), f
    assert f["client_error"] and 7 in [*f["acks"].values(), *f["after"][0].values()], f


def test_bad_arguments_are_refused():
    for args, why in ((["--nodes", "4"], "--nodes 5"), (["--size", "6"], "multiple of 4"),
                      (["--kill-parity", "1", "--rounds", "2"], "before the last")):
        p = subprocess.run([sys.executable, str(HERE / "run"), *args], capture_output=True, text=True)
        assert p.returncode == 2 and why in p.stderr, (args, p.stderr)
