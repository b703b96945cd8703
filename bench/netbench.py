"""What the live benchmarks (live_bench.py, slmp_bench.py) share: paths and
running commands, in namespaces or not, failing loudly."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
NETNS = os.path.join(ROOT, "scripts", "netns.sh")
DOCS = os.path.join(ROOT, "docs")


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def in_ns(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]
