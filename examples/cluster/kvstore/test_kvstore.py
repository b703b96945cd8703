"""The key-value store live on a 4-node cluster (examples/cluster/kvstore/run).

Every get (Python and C clients, offload and host baseline) must return
what a Python dict holds after the same puts, with overwrites, missing keys
and keys that collide in one bucket; every owner's table, read from its
host memory, must equal the reference; a sabotaged reference must fail;
bad requests and a cycle in a table are dropped and counted, not a fault or
a hang; lossy links change nothing; nothing is left behind. Root only
(namespaces); about 40 s.
"""
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import common  # noqa: E402
from uctest import left_behind, run_json  # noqa: E402

sys.modules["common"] = common
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("uc_kvstore_workers", HERE / "workers.py")
kvw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kvw)
KV = kvw.KV

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sK") + "kv"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: the key-value store needs root (softspin cluster up)")


def run(tag, *args):
    return run_json(HERE / "run", PFX + tag, *args)[0]


@needs_root
def test_puts_and_gets_match_a_dict():
    out = run("a", "--size", "64,1024")
    assert out["verified"], json.dumps(out, indent=1)
    assert [p["size"] for p in out["points"]] == [64, 1024]
    for pt in out["points"]:
        # Two phases per node, the C client on each, the baseline alike.
        assert len(pt["clients"]) == 8 and len(pt["c_clients"]) == 4 and len(pt["baseline_clients"]) == 8, pt
        assert pt["tables"] == [] and pt["baseline_tables"] == []
        assert pt["gets"] > pt["puts"] > 0 and pt["offload_latency_us"] > 0 and pt["baseline_latency_us"] > 0
        assert isinstance(pt["nic_time_share"], float) and pt["nic_time_share"] > 0, pt
        for n in pt["nics"]:  # well-formed traffic: nothing dropped as bad
            assert n["handler_errors"] == 0, n
            for c in ("UC_KV_CTR_BAD", "UC_KV_CTR_NOT_OWNER", "UC_KV_CTR_FULL", "UC_KV_CTR_CHAIN"):
                assert str(KV[c]) not in n["counters"], (c, n)


@needs_root
def test_through_lossy_links():
    # Lost requests are sent again with the next seq, duplicated ones are
    # dropped as stale (a late copy must not undo a newer put), replies
    # are RMA puts the transport resends; the baseline alike over UDP.
    out = run("l", "--size", "64", "--no-c-client",
              "--lossy", "--loss 0.03 --reorder 0.25 --reorder-max-us 2000 --dup 0.05 --seed 5")
    assert out["verified"], json.dumps(out, indent=1)


def test_workload_forces_collisions_overwrites_and_misses():
    """What the run's check covers is in the workload (independent of the NICs)."""
    ops = kvw.workload(1, 2, 4, 2, 64, 0)
    puts = [k for op, k, _ in ops if op == "put"]
    coll = [k for k in puts if kvw.bucket(k, 4) == kvw.COLLIDE_BUCKET and kvw.owner(k, 4) == 0]
    assert len(set(coll)) >= kvw.COLLIDE_KEYS
    assert len(puts) > len(set(puts))  # overwrites
    assert any(op == "get" and k not in puts for op, k, _ in ops)  # misses
    assert all(kvw.owner(k, 4) != 2 for _, k, _ in ops)  # never the requester itself
    ref, asked = kvw.everyone({"seed": 1, "nodes": 4, "rounds": 2, "size": 64, "point": 0})
    # Every node's colliding keys meet in one owner's bucket.
    assert len({k for k in ref if kvw.bucket(k, 4) == kvw.COLLIDE_BUCKET and kvw.owner(k, 4) == 0}) >= \
        3 * kvw.COLLIDE_KEYS


def test_c_client_hash_agrees_with_python():
    common.sh(["make", "-s", "-C", str(HERE)], quiet=True)
    client = common.REPO / "build" / "examples" / "cluster-kvstore" / "client"
    rng = random.Random(5)
    for _ in range(60):
        key, nodes = rng.randbytes(rng.randint(1, KV["UC_KV_KEY_MAX"])), rng.randint(1, 17)
        out = subprocess.run([str(client), "hash", str(nodes), key.hex()], capture_output=True, text=True, check=True)
        assert out.stdout.split() == [str(kvw.owner(key, nodes)), str(kvw.bucket(key, nodes))], key
    for bad in (["hash", "0", "61"], ["hash", "4", "6"], ["hash", "4", "zz"], ["hash", "4", " 1"], ["hash", "4", ""],
                ["x"]):
        assert subprocess.run([str(client), *bad], capture_output=True).returncode == 2, bad


@needs_root
def test_sabotaged_reference_is_caught():
    out = run("s", "--size", "64", "--sabotage")
    assert out["verified"] is False
    pt = out["points"][0]
    assert all(not c["verified"] and c["errors"] for c in pt["clients"] + pt["c_clients"] + pt["baseline_clients"])
    assert pt["tables"] and pt["baseline_tables"]


@needs_root
def test_bad_requests_and_a_cyclic_table_are_counted():
    prefix = PFX + "h"
    with common.Cluster(3, prefix, HERE / "handler.c", "kvstore_hh", "kvstore_ph", "kvstore_th") as cl:
        ips = [n["ipv4"] for n in cl.table()]
        r = cl.worker(0, "kvstore/hostile", {"nodes": 3, "rank": 0, "to": 1, "ips": ips, "seq": 1 << 20,
                                              "control": str(common.control_path(prefix, 0)),
                                              "dst_control": str(common.control_path(prefix, 1))})
        assert r["chain_status"] == KV["UC_KV_CHAIN"], r
        assert r["after"]["verified"], r  # the NIC still serves
        import softspin
        with softspin.NicClient(str(common.control_path(prefix, 1))) as c:
            end = time.time() + 15
            while True:
                # The duplicate was the worker's last datagram; the request
                # without its last packet stays open until the MPQ timeout
                # (2 s of NIC time, common.Cluster), which the engine
                # records as the one handler error.
                st, ctrs = c.status(), {i: n for i, _, n in c.counters()}
                if (KV["UC_KV_CTR_STALE"] in ctrs and st["message_timeouts"]) or time.time() > end:
                    break
                time.sleep(0.1)
            # The duplicate was not applied: the value stays.
            c2, mem = common.client_mem(str(common.control_path(prefix, 1)))
            table, errs = kvw.walk_table(mem[:kvw.TABLE_END].tobytes(), 1, 3)
            c2.close()
        assert not errs and list(table.values()) == [b"after the cycle"], (table, errs)
        assert st["message_timeouts"] == 1 and st["errors"] == 1, st  # no fault of a handler
        assert ctrs.get(KV["UC_KV_CTR_BAD"]) == r["bad"], ctrs
        assert ctrs.get(KV["UC_KV_CTR_NOT_OWNER"]) == r["not_owner"], ctrs
        assert ctrs.get(KV["UC_KV_CTR_CHAIN"]) == 1, ctrs
        assert ctrs.get(KV["UC_KV_CTR_STALE"]) == 1, ctrs
    assert left_behind(prefix) == []


@needs_root
def test_bad_arguments_are_refused():
    for args, msg in ((["--size", str(KV["UC_KV_VAL_MAX"] + 1)], "at most"), (["--nodes", "1"], "at least 2"),
                      (["--nodes", "64", "--rounds", "100"], "entries")):
        p = subprocess.run([sys.executable, str(HERE / "run"), *args], capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)
