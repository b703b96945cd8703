"""Shared code of the multi-node use cases (examples/cluster/NAME/run).

The cluster's lifecycle (`softspin cluster up --rma --image ...`, always
torn down), the use cases' wire format and host-memory layout (read from
uc.h, so the handlers and these scripts share one definition), access to
each node's host memory through `softspin.NicClient`, the workers that run
inside a node's namespace (`softspin cluster exec`; started as
`python common.py worker NAME/ROLE JSON`; each use case's roles are in its
NAME/workers.py), the host-CPU baselines over kernel
UDP sockets, statistics and the one JSON object a run prints.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def defines(path: Path) -> dict[str, int]:
    """The integer #defines of uc.h (the handlers' own definitions)."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#define (UC_\w+) (0x[0-9a-fA-F]+|\d+)u?\b", line)
        if m:
            out[m.group(1)] = int(m.group(2), 0)
    return out


UC = defines(HERE / "uc.h")
# The header after UDP (uc.h): magic, msg id, flags, seq, total, offset, src rank, mode.
HDR = struct.Struct(">HIIIIIHH")
assert HDR.size == UC["UC_HDR"], "uc.h's UC_HDR and the header's fields disagree"
# The host baselines' UDP port: not UC_PORT or RMA's, which each node's XDP
# program steers to its NIC; this one reaches the kernel.
BASELINE_PORT = UC["UC_PORT"] + 100
ROUND_TIMEOUT_S = 0.5  # no completion within this: the round is sent again (lost packets)
MAX_TRIES = 6
BYE = b"BYE"  # a baseline client's last datagram: its server exits
PROFILE = "fpspin"  # the NICs' model, unless --profile says otherwise


def ensure_python() -> None:
    """Re-run under the repository's venv (NumPy, softspin) if this Python lacks them."""
    try:
        import numpy  # noqa: F401
        import softspin  # noqa: F401
    except ImportError:
        venv = REPO / ".venv" / "bin" / "python"
        # sys.prefix, not the executable: a venv's python is a symlink to the system's.
        if venv.is_file() and Path(sys.prefix).resolve() != venv.parent.parent.resolve():
            os.execv(str(venv), [str(venv), *sys.argv])
        sys.exit("examples/cluster needs NumPy and the softspin module: run scripts/setup.sh (it makes .venv)")


def softspin_bin() -> str:
    return os.environ.get("SOFTSPIN") or str(REPO / "target" / "release" / "softspin")


def run_dir() -> Path:
    return Path(os.environ.get("SOFTSPIN_RUN_DIR", "/run/softspin"))


def control_path(prefix: str, rank: int) -> Path:
    """Node `rank`'s control socket (docs/cluster.md "Names")."""
    return run_dir() / f"cluster-{prefix}" / f"{rank}.sock"


def rules_toml() -> str:
    """The NIC's ruleset for the use cases' messages (uc.h's fields)."""
    return (
        "[[ruleset]]\n"
        'name = "usecase"\n'
        f'match = ["ip", "udp", "udp_dport:{UC["UC_PORT"]}"]\n'
        "# end of message: bit 0 of the flags word at byte 48 (unit 12)\n"
        f'eom = {{ index = 12, mask = {UC["UC_EOM"]}, start = {UC["UC_EOM"]}, end = {UC["UC_EOM"]} }}\n'
        "msg_id = { offset = 44, size = 4 }\n"
    )


class Cluster:
    """`softspin cluster up --rma` with a use case's image on every node,
    removed on exit (also after an error, Ctrl-C or SIGTERM)."""

    def __init__(self, nodes: int, prefix: str, handler: Path, hh: str, ph: str, th: str,
                 lossy: str | None = None, profile: str | None = None) -> None:
        self.nodes, self.prefix = nodes, prefix
        self.profile = profile or PROFILE
        self.handler, self.hh, self.ph, self.th, self.lossy = handler, hh, ph, th, lossy
        self.tmp = tempfile.TemporaryDirectory(prefix=f"uc-{prefix}-")
        self.up = False

    def __enter__(self) -> Cluster:
        signal.signal(signal.SIGTERM, _sigterm)
        tmp = Path(self.tmp.name)
        elf = tmp / "usecase.elf"
        sh([softspin_bin(), "build", "--profile", self.profile, str(REPO / "examples/rma_target/handler.c"),
            str(self.handler), "-o", str(elf)])
        rules = tmp / "rules.toml"
        rules.write_text(rules_toml())
        cmd = [softspin_bin(), "cluster", "up", "--nodes", str(self.nodes), "--prefix", self.prefix,
               "--rma", "--window", str(UC["UC_WINDOW"]), "--profile", self.profile, "--image", str(elf),
               "--hh", self.hh, "--ph", self.ph, "--th", self.th]
        if self.lossy:
            cmd += ["--lossy", self.lossy]
        # Messages of up to 1 MiB from a Python sender take longer than the
        # default message timeout (1 ms); a completion handler putting 1 MiB
        # spins on its RMA waits longer than the default watchdog.
        cmd += ["--", "--rules", str(rules), "--timeout-ns", "2000000000", "--watchdog", "200000000"]
        self.up = True
        sh(cmd, quiet=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.up:
            subprocess.run([softspin_bin(), "cluster", "down", "--prefix", self.prefix],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        self.tmp.cleanup()

    def table(self) -> list[dict]:
        import tomllib
        with open(run_dir() / f"cluster-{self.prefix}" / "nodes.toml", "rb") as f:
            return sorted(tomllib.load(f)["node"], key=lambda n: n["rank"])

    def hpu_busy_ns(self) -> float:
        """The model's handler time so far, over every HPU of every node
        (the NICs' status, `hpu_busy_ns`)."""
        import softspin
        total = 0.0
        for k in range(self.nodes):
            c = softspin.NicClient(str(control_path(self.prefix, k)))
            try:
                total += float(c.status()["hpu_busy_ns"])
            finally:
                c.close()
        return total

    def worker(self, rank: int, role: str, args: dict, background: bool = False):
        """Run `role` (find_worker: ROLE or NAME/ROLE) in node `rank`'s namespace;
        its JSON result, or the process when `background`."""
        cmd = [softspin_bin(), "cluster", "exec", str(rank), "--prefix", self.prefix, "--",
               sys.executable, str(HERE / "common.py"), "worker", role, json.dumps(args)]
        # A session of its own: on Ctrl-C the worker and everything it runs
        # (cluster exec, ip netns exec, Python) are killed as one group, so
        # none outlives the run holding our stdout/stderr open.
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        if background:
            return p
        try:
            out, _ = p.communicate()
        except BaseException:
            kill_group(p)
            raise
        if p.returncode != 0:
            raise RuntimeError(f"worker {role} on node {rank} exited {p.returncode}")
        return json.loads(out.strip().splitlines()[-1])


def kill_group(p: subprocess.Popen) -> None:
    """Kill a worker started by Cluster.worker and all it runs."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def _sigterm(signum, frame):  # noqa: ANN001
    raise KeyboardInterrupt("SIGTERM")


def sh(cmd: list[str], quiet: bool = False) -> None:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    if not quiet and p.stderr.strip():
        print(p.stderr.strip(), file=sys.stderr)


def base_parser(name: str, modes: list[str], default_mode: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"examples/cluster/{name}/run")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--size", default="1024", help="message bytes; several with commas")
    ap.add_argument("--mode", default=default_mode, help=f"{', '.join(modes)}; several with commas")
    ap.add_argument("--prefix", default=os.environ.get("SS_NS_PREFIX", "") + "uc" + name[:2],
                    help="the cluster's names (namespaces PREFIX0..)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lossy", help="softspin-lossy flags for every link (cluster up --lossy)")
    ap.add_argument("--profile", default=PROFILE,
                    help="the NICs' model (cluster up --profile): fpspin, FPsPIN's 40 MHz HPUs (default); "
                         "pspin, PsPIN's 1 GHz")
    ap.add_argument("--no-baseline", action="store_true", help="skip the host-CPU baseline")
    ap.add_argument("--sabotage", action="store_true",
                    help="perturb the reference: verified must come out false (the check can fail)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (else a table)")
    ap.modes = modes  # type: ignore[attr-defined]
    return ap


def parse_common(ap: argparse.ArgumentParser) -> argparse.Namespace:
    global PROFILE
    a = ap.parse_args()
    PROFILE = a.profile  # every Cluster of this run
    a.sizes = [int(s) for s in a.size.split(",")]
    a.modes = a.mode.split(",")
    for m in a.modes:
        if m not in ap.modes:  # type: ignore[attr-defined]
            ap.error(f"--mode {m}: one of {', '.join(ap.modes)}")  # type: ignore[attr-defined]
    for s in a.sizes:
        if not 1 <= s <= UC["UC_MAX_SIZE"]:
            ap.error(f"--size {s}: 1 to {UC['UC_MAX_SIZE']} bytes")
    if a.nodes < 2:
        ap.error("--nodes: at least 2")
    if a.rounds < 1:
        ap.error("--rounds: at least 1")
    if os.geteuid() != 0:
        sys.exit(f"{ap.prog} needs root (softspin cluster up: namespaces)")
    return a


def nic_time_share(busy_ns: float, lat_ns: list[int]) -> float | None:
    """The NIC-time share of an offload: the handler time the NICs' model
    counted over its rounds (all HPUs of all nodes) over the rounds' summed
    wall-clock latency. Below 1, the rest of the time went to the software
    datapath, the host side and waiting; above 1, handlers ran in parallel."""
    total = sum(lat_ns)
    return round(busy_ns / total, 4) if total else None


def median_us(ns: list[int]) -> float | None:
    return round(statistics.median(ns) / 1000, 2) if ns else None


def gbps(size: int, lat_us: float | None) -> float | None:
    return round(size * 8 / (lat_us * 1000), 4) if lat_us else None


def report(a: argparse.Namespace, points: list[dict], verified: bool, extra: dict) -> int:
    """Print the run's JSON object (or a table); the exit status: 0 only if verified."""
    last = points[-1] if points else {}
    out = {
        "verified": verified,
        "nodes": a.nodes,
        "size": a.sizes[0] if len(a.sizes) == 1 else a.sizes,
        "mode": a.modes[0] if len(a.modes) == 1 else a.modes,
        "rounds": a.rounds,
        "lossy": a.lossy,
        "profile": a.profile,
        "sabotage": a.sabotage,
        # The last point's numbers at the top; every point below.
        "offload_latency_us": last.get("offload_latency_us"),
        "baseline_latency_us": last.get("baseline_latency_us"),
        "offload_goodput_gbps": last.get("offload_goodput_gbps"),
        "baseline_goodput_gbps": last.get("baseline_goodput_gbps"),
        "points": points,
        **extra,
    }
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{'mode':8} {'size':>8} {'offload us':>11} {'baseline us':>12} {'off Gb/s':>9} {'base Gb/s':>9} ok")
        for p in points:
            print(f"{p['mode']:8} {p['size']:>8} {p['offload_latency_us'] or '-':>11} "
                  f"{p['baseline_latency_us'] or '-':>12} {p['offload_goodput_gbps'] or '-':>9} "
                  f"{p['baseline_goodput_gbps'] or '-':>9} {p['verified']}")
        print("verified" if verified else "NOT verified")
    return 0 if verified else 1


def point(mode: str, size: int, off: list[dict], base: list[dict], busy_ns: float | None = None) -> dict:
    """One (mode, size): the pairs' workers' results merged."""
    off_ns = [x for r in off for x in r["lat_ns"]]
    base_ns = [x for r in base for x in r["lat_ns"]]
    ol, bl = median_us(off_ns), median_us(base_ns)
    return {
        "mode": mode, "size": size,
        "verified": all(r["verified"] for r in off + base) and bool(off),
        "pairs": [{"from": r["from"], "to": r["to"], "verified": r["verified"], "retries": r["retries"],
                   "errors": r["errors"][:3]} for r in off],
        "baseline_pairs": [{"from": r["from"], "to": r["to"], "verified": r["verified"],
                            "retries": r["retries"], "errors": r["errors"][:3]} for r in base],
        "offload_latency_us": ol, "baseline_latency_us": bl,
        "offload_goodput_gbps": gbps(size, ol), "baseline_goodput_gbps": gbps(size, bl),
        "nic_time_share": None if busy_ns is None else nic_time_share(busy_ns, off_ns),
    }


# ---------------------------------------------------------------------------
# Workers: run inside a node's namespace. Each prints one JSON line.


def packets(data: bytes, seq: int, src: int, mode: int) -> list[bytes]:
    """The datagrams of one message (uc.h); the last has the EOM flag."""
    chunk, n = UC["UC_CHUNK"], len(data)
    msg = UC["UC_MSG_BIT"] | (src << 20) | (seq & 0xFFFFF)
    out = []
    for off in range(0, n, chunk):
        last = off + chunk >= n
        hdr = HDR.pack(UC["UC_MAGIC"], msg, UC["UC_EOM"] if last else 0, seq, n, off, src, mode)
        out.append(hdr + data[off:off + chunk])
    return out


def udp_socket(bind_port: int = 0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (getattr(socket, "SO_RCVBUFFORCE", 33), getattr(socket, "SO_SNDBUFFORCE", 32)):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
        except OSError:
            pass
    s.bind(("0.0.0.0", bind_port))
    return s


def client_mem(path: str):
    import softspin
    c = softspin.NicClient(path)
    e = next(x for x in c.ectxs if x.get("rma"))
    return c, c.window_mem(e["ectx"])


def u64(mem, off: int) -> int:
    return int(mem[off:off + 8].view("<u8")[0])


def set_u64(mem, off: int, v: int) -> None:
    mem[off:off + 8].view("<u8")[0] = v


def wait_u64(mem, off: int, want: int, timeout: float) -> bool:
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        if u64(mem, off) == want:
            return True
        # The nodes' NICs share this machine's cores: let them run.
        os.sched_yield()
    return False


def recv_message(s: socket.socket, seq: int, total: int, timeout: float) -> tuple[bytes | None, tuple | None]:
    """Reassemble message `seq` of `total` bytes from datagrams (others are dropped)."""
    buf, got, peer = bytearray(total), 0, None
    seen: set[int] = set()
    end = time.perf_counter() + timeout
    while got < total:
        left = end - time.perf_counter()
        if left <= 0:
            return None, peer
        s.settimeout(left)
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            return None, peer
        if len(d) < HDR.size:
            continue
        magic, _msg, _fl, sq, tot, off, _src, _mode = HDR.unpack_from(d)
        body = d[HDR.size:]
        if magic != UC["UC_MAGIC"] or sq != seq or tot != total or off in seen or off + len(body) > total:
            continue
        seen.add(off)
        buf[off:off + len(body)] = body
        got += len(body)
    return bytes(buf), peer


def bye(s: socket.socket, dst: tuple) -> None:
    for _ in range(3):
        s.sendto(BYE, dst)


def with_retries(attempt, seq: int, *args):
    """One round, sent again while it goes unanswered (lost packets): up to
    MAX_TRIES calls of `attempt(seq, *args)`, each with the next seq (a late
    answer to an earlier try is not taken for this one), each sending and
    waiting, returning the answer or None. (The answer or None, how many
    tries went unanswered, the last seq used.)"""
    for failed in range(MAX_TRIES):
        seq += 1
        r = attempt(seq, *args)
        if r is not None:
            return r, failed, seq
    return None, MAX_TRIES, seq


def w_flood(a: dict) -> dict:
    """Hostile traffic at node `to`'s NIC (the tests'): a burst of
    device-mode pings without waiting, and malformed use-case datagrams."""
    s = udp_socket()
    dst = (a["ip"], UC["UC_PORT"])
    src, seq, sent = a["from"], a["seq"], 0
    magic, chunk, mx = UC["UC_MAGIC"], UC["UC_CHUNK"], UC["UC_MAX_SIZE"]
    bad = [
        b"", b"U", HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 8, 0, src, 1),           # no data
        HDR.pack(magic ^ 1, UC["UC_MSG_BIT"], 1, 0, 8, 0, src, 1) + bytes(8),        # wrong magic
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 4, 0, src, 1) + bytes(8),            # data past total
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 2 * mx, 0, src, 2) + bytes(8),       # total too large
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 100, 2**32 - 4, src, 2) + bytes(8),  # offset wraps
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 8, 0, 4000, 1) + bytes(8),           # unknown rank
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 8, 0, a["to"], 1) + bytes(8),        # the NIC's own rank
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 8, 0, src, 99) + bytes(8),           # unknown mode
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 17, 1, src, 4) + bytes(16),          # accumulate, unaligned
        HDR.pack(magic, UC["UC_MSG_BIT"], 1, 0, 2 * chunk, 0, src, 1) + bytes(chunk + 8),  # over a chunk
    ]
    for d in bad:
        s.sendto(d, dst)
        sent += 1
    for _ in range(a["count"]):
        seq += 1
        for p in packets(bytes(64), seq, src, UC["UC_MODE_DEVICE"]):
            s.sendto(p, dst)
            sent += 1
    return {"sent": sent}


WORKERS = {"flood": w_flood}


def find_worker(role: str):
    """`ROLE` (a shared worker above) or `NAME/ROLE` (WORKERS of the use
    case's own examples/cluster/NAME/workers.py)."""
    if "/" not in role:
        return WORKERS.get(role)
    import importlib.util
    name, fn = role.split("/", 1)
    path = HERE / name / "workers.py"
    if not re.fullmatch(r"\w+", name) or not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"uc_{name}_workers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, "WORKERS", {}).get(fn)


def run_baseline(cl: Cluster, server_role: str, client_role: str, server_rank: int, client_rank: int,
                 server_args: dict, client_args: dict) -> dict:
    """A host-CPU baseline: its server in one namespace, its client in another."""
    srv = cl.worker(server_rank, server_role, server_args, background=True)
    try:
        if srv.stdout.readline().strip() != "ready":
            raise RuntimeError(f"baseline server {server_role} on node {server_rank} did not start")
        return cl.worker(client_rank, client_role, client_args)
    finally:
        try:
            srv.wait(timeout=5)
        except BaseException:
            kill_group(srv)


def main(name: str, a: argparse.Namespace, handlers: tuple[str, str, str],
         offload_role: str, server_role: str, baseline_role: str) -> int:
    """A use case's run: its cluster; per mode and size, node i against node
    (i+1) % N for every i, offload then the host baseline; one report."""
    hh, ph, th = handlers
    points: list[dict] = []
    extra: dict = {}
    seq = 0
    try:
        with Cluster(a.nodes, a.prefix, HERE / name / "handler.c", hh, ph, th, a.lossy) as cl:
            nodes = cl.table()
            tmp = Path(cl.tmp.name)
            for mode in a.modes:
                for size in a.sizes:
                    off, base, busy = [], [], 0.0
                    for i in range(a.nodes):
                        j = (i + 1) % a.nodes
                        args = {"from": i, "to": j, "ip": nodes[j]["ipv4"], "mode": mode, "size": size,
                                "rounds": a.rounds, "seed": (i << 32) ^ size ^ seq, "sabotage": a.sabotage,
                                "control": str(control_path(a.prefix, i)),
                                "dst_control": str(control_path(a.prefix, j)),
                                "out": str(tmp / f"baseline-{j}.bin")}
                        seq += 1 << 16
                        b0 = cl.hpu_busy_ns()
                        off.append(cl.worker(i, offload_role, {**args, "seq": seq}))
                        busy += cl.hpu_busy_ns() - b0
                        if not a.no_baseline:
                            seq += 1 << 16
                            base.append(run_baseline(cl, server_role, baseline_role, j, i,
                                                     {"idle_s": 10.0, "messages": a.rounds * MAX_TRIES,
                                                      "out": args["out"]}, {**args, "seq": seq}))
                    points.append(point(mode, size, off, base, busy))
    except KeyboardInterrupt:
        print("interrupted; cluster removed", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, json.JSONDecodeError) as e:
        extra["error"] = str(e)
        print(f"{name}: {e}", file=sys.stderr)
        report(a, points, False, extra)
        return 1
    verified = bool(points) and all(p["verified"] for p in points)
    return report(a, points, verified, extra)


if __name__ == "__main__":
    # The use cases' workers.py import this module as `common`: the same one.
    sys.modules["common"] = sys.modules[__name__]
    worker = find_worker(sys.argv[2]) if len(sys.argv) == 4 and sys.argv[1] == "worker" else None
    if worker:
        print(json.dumps(worker(json.loads(sys.argv[3]))), flush=True)
    else:
        sys.exit("usage: common.py worker ROLE JSON (started by examples/cluster/NAME/run)")
