"""The use cases live on a 4-node cluster (examples/cluster/NAME/run).

Each run makes its own cluster, checks every node's result against the
reference its script computes independently (the ping's bytes; NumPy's
products) and must say `verified`; a sabotaged reference must not; the
RMA-carried pongs survive lossy links; nothing is left behind, also after
Ctrl-C. Root only (namespaces); about 30 s.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402
from uctest import interrupt_mid_run, left_behind, run_json  # noqa: E402

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sM")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: the use cases need root (softspin cluster up)")


def run(name, *args, expect_ok=True):
    out, err = run_json(HERE / name / "run", PFX + name[:2] + "x", *args)
    if expect_ok:
        assert out["verified"], json.dumps(out, indent=1) + err
        for pt in out["points"]:
            assert len(pt["pairs"]) == 4 and all(x["verified"] for x in pt["pairs"]), pt
            assert pt["offload_latency_us"] > 0
            if "--no-baseline" not in args:
                assert len(pt["baseline_pairs"]) == 4 and pt["baseline_latency_us"] > 0, pt
    return out


def test_pingpong_three_ways_single_packet():
    out = run("pingpong", "--mode", "device,host,stream", "--size", "64")
    assert [p["mode"] for p in out["points"]] == ["device", "host", "stream"]


def test_pingpong_multi_packet():
    # 5000 bytes: 4 packets, the last one short.
    out = run("pingpong", "--mode", "host,stream", "--size", "5000")
    assert [p["size"] for p in out["points"]] == [5000, 5000]


def test_pingpong_through_lossy_links():
    # The pongs are RMA puts: the transport resends what the links lose;
    # lost pings are sent again by the pinger (counted in `retries`).
    run("pingpong", "--mode", "device", "--size", "200", "--no-baseline",
        "--lossy", "--loss 0.03 --reorder 0.25 --reorder-max-us 2000 --dup 0.01 --seed 5")


def test_accumulate_matches_numpy():
    out = run("accumulate", "--size", "1024,8192")
    assert [p["size"] for p in out["points"]] == [1024, 8192]


@pytest.mark.parametrize("name,args", [("pingpong", ["--mode", "device", "--size", "64"]),
                                       ("accumulate", ["--size", "1024"])])
def test_sabotaged_reference_is_caught(name, args):
    out = run(name, *args, "--sabotage", expect_ok=False)
    assert out["verified"] is False
    assert all(not x["verified"] and x["errors"] for x in out["points"][0]["pairs"]), out


def test_bad_arguments_are_refused():
    for args in (["--mode", "device", "--size", "5000"], ["--mode", "warp"], ["--nodes", "1"],
                 ["--size", "0"]):
        p = subprocess.run([sys.executable, str(HERE / "pingpong" / "run"), *args], capture_output=True, text=True)
        assert p.returncode == 2 and "run: error:" in p.stderr, (args, p.stderr)
    p = subprocess.run([sys.executable, str(HERE / "accumulate" / "run"), "--size", "100"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "multiple of 16" in p.stderr


def test_ctrl_c_removes_the_cluster():
    interrupt_mid_run(HERE / "pingpong" / "run", PFX + "intx", "--size", "64", nodes=2)


def test_hostile_traffic_leaves_the_nic_answering():
    """Malformed use-case datagrams and a burst of pings that would make
    every HPU wait for RMA: no handler error, and the next pings verify."""
    prefix = PFX + "flx"
    with common.Cluster(2, prefix, HERE / "pingpong" / "handler.c", "pingpong_hh", "pingpong_ph",
                        "pingpong_th") as cl:
        ip = cl.table()[1]["ipv4"]
        args = {"from": 0, "to": 1, "ip": ip, "control": str(common.control_path(prefix, 0))}
        assert cl.worker(0, "flood", {**args, "seq": 1 << 20, "count": 300})["sent"] > 300
        r = cl.worker(0, "pingpong/pinger", {**args, "mode": "device", "size": 64, "rounds": 3, "seed": 1,
                                    "sabotage": False, "seq": 2 << 20})
        assert r["verified"] and len(r["lat_ns"]) == 3, r
        import softspin
        with softspin.NicClient(str(common.control_path(prefix, 1))) as c:
            st, ctrs = c.status(), {i: n for i, _, n in c.counters()}
        assert st["errors"] == 0, st
        # The burst met the cap on waiting handlers (refused, counted), not a stall.
        assert ctrs.get(common.UC["UC_CTR_BUSY"], 0) > 0, ctrs
    assert left_behind(prefix) == []


def test_with_retries_gives_each_try_a_fresh_seq_and_counts_the_unanswered():
    seqs = []

    def answer_third(seq, tag):
        seqs.append(seq)
        return (tag, seq) if len(seqs) == 3 else None
    assert common.with_retries(answer_third, 10, "x") == (("x", 13), 2, 13)
    assert seqs == [11, 12, 13]
    seqs.clear()
    assert common.with_retries(lambda seq: seqs.append(seq), 0) == (None, common.MAX_TRIES, common.MAX_TRIES)
    assert seqs == list(range(1, common.MAX_TRIES + 1))
