"""Checks every use case's tests share (examples/cluster/test_*.py and
NAME/test_*.py; not named test_* so that pytest does not collect it).

`run_json` runs a use case's `run --json` and checks what every run must
hold: the report's keys, the node count, an exit status that agrees with
`verified`, no cluster left behind; the caller asserts what is its own.
`interrupt_mid_run` is the Ctrl-C test: exit 130 and nothing left behind.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import common

# What every run's JSON report holds (common.report).
KEYS = ["verified", "nodes", "size", "mode", "offload_latency_us", "baseline_latency_us",
        "offload_goodput_gbps", "baseline_goodput_gbps", "points"]


def left_behind(prefix: str) -> list[str]:
    """The cluster's namespaces (P<digits>, Pbr) and shm files still there."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return [n for n in ns if re.fullmatch(re.escape(prefix) + r"(\d+|br)", n)] + \
        [f for f in os.listdir("/dev/shm") if f.startswith(f"softspin-{prefix}-")]


def run_json(script: Path, prefix: str, *args: str, nodes: int = 4, rounds: int = 2) -> tuple[dict, str]:
    """`script --nodes N --prefix P --rounds R --json ARGS`: its last line
    parsed, after the checks above; (the report, stderr)."""
    p = subprocess.run([sys.executable, str(script), "--nodes", str(nodes), "--prefix", prefix,
                        "--rounds", str(rounds), "--json", *args], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip(), p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    for k in KEYS:
        assert k in out, f"{k} missing from {out}"
    assert out["nodes"] == nodes, out
    assert (p.returncode == 0) == out["verified"], (p.returncode, out)  # the exit status tells the truth
    assert left_behind(prefix) == [], "the run left its cluster behind"
    return out, p.stderr


def interrupt_mid_run(script: Path, prefix: str, *args: str, nodes: int, settle_s: float = 1.0) -> None:
    """Start a run of many rounds, wait for its last node's control socket
    (the cluster is up), SIGINT it `settle_s` later (mid-run): it must exit
    130 and leave nothing behind."""
    # SIGINT's default action in the run: the test itself may have been
    # started with SIGINT ignored (a background job of a script), which the
    # run would inherit and then never see the interrupt.
    p = subprocess.Popen([sys.executable, str(script), "--nodes", str(nodes), "--prefix", prefix,
                          "--rounds", "100000", "--json", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    sock = common.control_path(prefix, nodes - 1)
    end = time.time() + 60
    while not sock.exists() and time.time() < end and p.poll() is None:
        time.sleep(0.1)
    assert sock.exists(), "the cluster never came up"
    time.sleep(settle_s)  # in the middle of the rounds
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert left_behind(prefix) == []
