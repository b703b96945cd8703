"""Message matching with rendezvous on a 4-node cluster (run, workers.py,
host.c). Root only (namespaces); about 40 s.

`run` verifies every node's receives byte for byte for eager and
rendezvous sizes, posted and unexpected, and a sabotaged reference must
fail; on one cluster: posts raced against arrivals in every order between
all nodes (exact and wildcard receives, every buffer checked), the C host
API's five cases, and hostile datagrams plus a flood of unexpected messages
dropped and counted without a handler error. Nothing is left behind.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import common  # noqa: E402
from uctest import left_behind, run_json  # noqa: E402

PFX = os.environ.get("SS_TEST_NS_PREFIX", "sX") + "mt"
MT = {**common.UC, **common.defines(HERE / "matching.h")}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="SKIPPED: the matching use case needs root (softspin cluster up)")


def run(*args, rounds):
    return run_json(HERE / "run", PFX + "r", *args, rounds=rounds)[0]


def test_run_eager_and_rendezvous_posted_and_unexpected():
    out = run("--size", "100,3000", "--mode", "posted,unexpected", rounds=2)
    assert out["verified"], json.dumps(out, indent=1)
    assert [(p["mode"], p["protocol"]) for p in out["points"]] == [
        ("posted", "eager"), ("posted", "rendezvous"), ("unexpected", "eager"), ("unexpected", "rendezvous")]
    for p in out["points"]:
        assert len(p["pairs"]) == 4 and all(x["verified"] for x in p["pairs"]), p
        assert len(p["baseline_pairs"]) == 4 and p["baseline_latency_us"] > 0, p
        assert p["matched"] == {p["mode"]: 8}, p  # every receive on the path its round asked for
        assert isinstance(p["nic_time_share"], float) and p["nic_time_share"] > 0, p


def test_sabotaged_reference_is_caught():
    out = run("--size", "64", "--mode", "posted", "--sabotage", "--no-baseline", rounds=1)
    assert out["verified"] is False
    assert all(not x["verified"] and x["errors"] for x in out["points"][0]["pairs"]), out


def test_bad_arguments_are_refused():
    for args in (["--size", str(MT["UC_MT_MAX"] + 1)], ["--mode", "eager"], ["--lossy", "--loss 0.1"]):
        p = subprocess.run([sys.executable, str(HERE / "run"), *args], capture_output=True, text=True)
        assert p.returncode == 2 and "run: error:" in p.stderr, (args, p.stderr)


@pytest.fixture(scope="module")
def cluster():
    prefix = PFX + "c"
    with common.Cluster(4, prefix, HERE / "handler.c", "matching_hh", "matching_ph", "matching_th") as cl:
        yield cl, prefix, [n["ipv4"] for n in cl.table()]
    assert left_behind(prefix) == []


def nic_errors(prefix, rank):
    import softspin
    with softspin.NicClient(str(common.control_path(prefix, rank))) as c:
        return c.status()["errors"], {i: (s, n) for i, s, n in c.counters()}


def test_posts_race_arrivals_in_every_order(cluster):
    cl, prefix, ips = cluster
    controls = [str(common.control_path(prefix, k)) for k in range(4)]
    r = cl.worker(0, "matching/race", {"nodes": 4, "ips": ips, "controls": controls, "seed": 28, "rounds": 1,
                                       "netns": [f"{prefix}{k}" for k in range(4)],
                                       "sizes": [1, 64, 1408, 1409, 5000, 50000]})
    assert r["verified"], r
    # Both protocols took both paths (the message first, the receive first).
    for k in ("eager/posted", "eager/unexpected", "rndv/posted", "rndv/unexpected"):
        assert r["how"].get(k, 0) > 0, r["how"]
    assert sum(r["how"].values()) == 12 + 12 + 8  # exact, one wildcard each, any-any
    for k in range(4):
        assert nic_errors(prefix, k)[0] == 0


@pytest.fixture(scope="module")
def host_c(tmp_path_factory):
    """host.c built against libsoftspin (pkg-config, as examples/host-c.mk)."""
    root = HERE.parent.parent.parent
    subprocess.run([str(root / "scripts" / "c-env.sh")], check=True, stdout=subprocess.DEVNULL)
    env = {**os.environ, "PKG_CONFIG_PATH": str(root / "build" / "c")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "softspin"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    exe = tmp_path_factory.mktemp("mt") / "host"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", str(HERE / "host.c"), "-o", str(exe),
                    *flags, f"-Wl,-rpath,{root / 'target' / 'release'}"], check=True)
    return exe


@pytest.mark.parametrize("sabotage", [False, True])
def test_c_host_api(cluster, host_c, sabotage):
    cl, prefix, ips = cluster
    cmd = [common.softspin_bin(), "cluster", "exec", "2", "--prefix", prefix, "--", str(host_c),
           str(common.control_path(prefix, 2)), str(common.control_path(prefix, 3)), "2", "3", ips[3], "4"]
    p = subprocess.run(cmd + (["--sabotage"] if sabotage else []), capture_output=True, text=True, timeout=60)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["cases"] == 5
    if sabotage:
        assert p.returncode == 1 and not out["verified"] and "case 0" in out["errors"][0], out
    else:
        assert p.returncode == 0 and out["verified"], (out, p.stderr)


def test_hostile_datagrams_are_dropped_and_counted(cluster):
    cl, prefix, ips = cluster
    tag = 0xABCDE
    _, before = nic_errors(prefix, 1)
    r = cl.worker(0, "matching/hostile", {"from": 0, "to": 1, "ip": ips[1], "tag": tag})
    errors, ctrs = nic_errors(prefix, 1)
    assert errors == 0
    dropped = ctrs.get(MT["UC_MT_CTR_DROPPED"], (0, 0))[1] - before.get(MT["UC_MT_CTR_DROPPED"], (0, 0))[1]
    # Each malformed one, and the flood's messages beyond the unexpected slots.
    assert dropped == r["malformed"] + r["flood"] - MT["UC_MT_SLOTS"], (r, ctrs)
    # The slots' messages are all there, in order, and the NIC goes on.
    got = cl.worker(0, "matching/drain", {"control": str(common.control_path(prefix, 1)), "rank": 1, "ips": ips,
                                          "tag": tag, "count": MT["UC_MT_SLOTS"]})
    assert got["values"] == list(range(MT["UC_MT_SLOTS"])), got
