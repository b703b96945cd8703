"""Broadcast on a binomial tree, live on a softspin cluster (run; README.md).

Every node's host memory must hold the root's bytes after each round, in
both NIC modes and through the host baseline; a sabotaged reference must
be caught; bad input to the handlers is dropped and counted while the
next broadcast still verifies; nothing is left behind, also after
Ctrl-C. Root only (namespaces); about 30 s.
"""
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from uctest import interrupt_mid_run, left_behind, run_json  # noqa: E402

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sB") + "bc"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: broadcast needs root (softspin cluster up)")


def run(tag, *args, nodes=4):
    return run_json(HERE / "run", PFX + tag, *args, nodes=nodes)


def test_tree_matches_the_binomial_definition():
    """workers.py's tree (the hosts' side; handler.c has its own): every
    rank but the root has one parent, which lists it as a child, and rank
    r is as deep as r has bits set (binomial: each hop adds one)."""
    import importlib.util
    # A name of its own: other use cases' tests may load their workers.py too.
    spec = importlib.util.spec_from_file_location("uc_broadcast_workers_test", HERE / "workers.py")
    workers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workers)
    for n in range(2, 33):
        kids = {r: workers.bc_children(r, n) for r in range(n)}
        assert sorted(c for cs in kids.values() for c in cs) == list(range(1, n))
        for r in range(1, n):
            assert r in kids[workers.bc_parent(r)]
        depth = {0: 0}
        for r in range(1, n):
            depth[r] = depth[workers.bc_parent(r)] + 1
        assert all(d == bin(r).count("1") for r, d in depth.items()), (n, depth)
    # Largest subtree first: child 1 heads 8 of 16 nodes, child 8 only itself.
    assert workers.bc_children(0, 16) == [1, 2, 4, 8] and workers.bc_children(1, 16) == [3, 5, 9]


def test_both_modes_and_the_baseline_verify():
    # 8 B: one packet (store mode forwards it from device); 5000 B: 4
    # packets (from host memory, or streamed in order).
    out, err = run("a", "--mode", "store,stream", "--size", "8,5000")
    assert out["verified"], json.dumps(out, indent=1) + err
    assert [(p["mode"], p["size"]) for p in out["points"]] == \
        [("store", 8), ("store", 5000), ("stream", 8), ("stream", 5000)]
    for pt in out["points"]:
        assert pt["nodes_verified"] == [True] * 4, pt
        assert pt["offload_latency_us"] > 0 and pt["baseline_latency_us"] > 0, pt
        assert pt["pairs"][0]["to"] == [1, 2, 3] and pt["baseline_pairs"][0]["verified"], pt
        assert isinstance(pt["nic_time_share"], float) and pt["nic_time_share"] > 0, pt


def test_eight_nodes_three_hops():
    # Node 7 gets the message from 3, which got it from 1, from the root.
    out, err = run("e", "--mode", "store,stream", "--size", "3000", "--no-baseline", nodes=8)
    assert out["verified"], json.dumps(out, indent=1) + err
    assert all(pt["nodes_verified"] == [True] * 8 for pt in out["points"]), out


def test_sabotaged_reference_is_caught():
    out, _ = run("s", "--mode", "stream", "--size", "8", "--no-baseline", "--sabotage")
    assert out["verified"] is False
    pt = out["points"][0]
    assert pt["nodes_verified"] == [False] * 4 and pt["pairs"][0]["errors"], pt


def test_bad_input_is_dropped_and_counted():
    """Forged, foreign and malformed packets at a node and at the root: no
    handler error, each kind counted, and the next broadcast verifies."""
    import common
    import softspin
    prefix = PFX + "h"
    bc = common.defines(HERE / "broadcast.h")
    with common.Cluster(4, prefix, HERE / "handler.c", "broadcast_hh", "broadcast_ph", "broadcast_th") as cl:
        table = cl.table()
        ips = [x["ipv4"] for x in table]
        # From node 1's namespace: a node's own address would not pass its NIC.
        sent = cl.worker(1, "broadcast/hostile", {"ips": ips, "to": 3, "seq": 1 << 20, "iface": table[1]["iface"],
                                                  "mac": table[1]["mac"], "src_ip": ips[1]})
        assert all(sent.values()), sent
        controls = [str(common.control_path(prefix, r)) for r in range(4)]
        r = cl.worker(0, "broadcast/root", {"ips": ips, "controls": controls, "mode": "stream", "size": 3000,
                                            "rounds": 2, "seed": 7, "sabotage": False, "seq": 2 << 20,
                                            "baseline": False})
        assert r["verified"] and len(r["lat_ns"]) == 2, r
        ctrs = {}
        for k in (0, 3):
            with softspin.NicClient(controls[k]) as c:
                assert c.status()["errors"] == 0, (k, c.status())
                ctrs[k] = {i: n for i, _, n in c.counters()}
    assert ctrs[3].get(bc["UC_BC_CTR_NOT_PARENT"]) == 2, ctrs  # from a non-parent, from rank 4000 (1 packet each)
    assert ctrs[0].get(bc["UC_BC_CTR_NOT_PARENT"]) == 1, ctrs  # the root takes none
    assert ctrs[3].get(bc["UC_BC_CTR_BAD_MODE"]) == 1, ctrs
    # The frame to a MAC no node has reached every node (flooded): none took it.
    assert ctrs[3].get(bc["UC_BC_CTR_NOT_MINE"]) == 1 and ctrs[0].get(bc["UC_BC_CTR_NOT_MINE"]) == 1, ctrs
    # The store message missing its middle; the stream message with a
    # packet twice (its byte count is over).
    assert ctrs[3].get(common.UC["UC_CTR_INCOMPLETE"]) == 2, ctrs
    assert ctrs[3].get(bc["UC_BC_CTR_UNORDERED"]) == 1, ctrs  # the repeated stream packet, not sent on
    assert ctrs[3].get(7, 0) >= sent["malformed"], ctrs  # rma_target's bad frames (RMA_CTR_BAD_FRAME)
    assert left_behind(prefix) == []


def test_ctrl_c_removes_the_cluster():
    interrupt_mid_run(HERE / "run", PFX + "i", "--size", "8", "--mode", "stream", nodes=4)
