"""`softspin sweep` (docs/sweep.md): a grid of `softspin sim` points on a local
Dask cluster, checked against the same points run one by one; resume counted
by a wrapper around the binary; failed points; bad grid files.

The runner is loaded from this tree's file (not an installed copy), as
`softspin sweep` runs it."""

import csv
import importlib.util
import json
import os
import pathlib
import re
import stat
import subprocess
import sys

import pytest

from conftest import CLI, ROOT, build

RUNNER = ROOT / "crates" / "host-py" / "python" / "softspin" / "sweep.py"
_spec = importlib.util.spec_from_file_location("softspin_sweep_under_test", RUNNER)
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


@pytest.fixture(scope="module")
def empty_elf(tmp_path_factory):
    return build([ROOT / "examples" / "empty" / "handler.c"], tmp_path_factory.mktemp("sweep") / "empty.elf")


def write(path, text):
    path.write_text(text)
    return path


def cli_sweep(grid, *args, **kw):
    return subprocess.run([str(CLI), "sweep", str(grid), "--workers", "2", *args], capture_output=True,
                          text=True, timeout=240, **kw)


def runner(grid, binary, *args):
    """The runner itself, with another binary for the points (a wrapper, a fake)."""
    return subprocess.run([sys.executable, "-P", str(RUNNER), str(grid), "--softspin", str(binary),
                           "--workers", "2", *args], capture_output=True, text=True, timeout=240)


def sim_direct(elf, **params):
    argv = [str(CLI), "sim", "--image", str(elf), "--ph", "empty_ph"]
    for k, v in params.items():
        argv += [f"--{k}", str(v)]
    p = subprocess.run(argv + ["--json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def test_hundred_points_equal_single_runs(tmp_path, empty_elf):
    """The CI smoke: 100 points of `softspin sim` on a local Dask cluster."""
    grid = write(tmp_path / "g.toml", f"""
command = "sim"
[args]
image = "{empty_elf}"
ph = "empty_ph"
[grid]
messages = [1, 2, 3, 4, 5]
packets = [1, 2, 3, 4]
size = [64, 128, 256, 512, 1024]
[output]
fields = ["sim_time_ns", "latency_ns.p50", "packets", "handlers.0.invocations", "bytes"]
[[plot]]
x = "size"
y = "sim_time_ns"
series = "messages"
where = {{ packets = 2 }}
logx = true
""")
    p = cli_sweep(grid, "--json", "--out", str(tmp_path / "out"))
    assert p.returncode == sweep.EXIT_OK, p.stderr
    summary = json.loads(p.stdout)
    assert (summary["points"], summary["ran"], summary["failed"]) == (100, 100, 0)
    rows = json.loads((tmp_path / "out" / "results.json").read_text())
    with open(tmp_path / "out" / "results.csv") as f:
        csv_rows = list(csv.DictReader(f))
    assert len(rows) == len(csv_rows) == 100
    # Grid order: the last axis varies fastest.
    assert [(r["messages"], r["packets"], r["size"]) for r in rows[:2]] == [(1, 1, 64), (1, 1, 128)]
    for r in rows:
        assert r["status"] == "ok" and r["exit"] == 0
        # Each row holds its own point's results: counts follow from its parameters. (`packets`
        # is an axis, per message, and a field, the total: the axis has the column.)
        assert r["handlers.0.invocations"] == r["messages"] * r["packets"]
        assert r["bytes"] == r["messages"] * r["packets"] * r["size"]
    for r, c in zip(rows, csv_rows):
        assert float(c["sim_time_ns"]) == r["sim_time_ns"] and int(c["size"]) == r["size"]
    # The same points run one by one give the same numbers, exactly.
    for r in (rows[0], rows[37], rows[99]):
        direct = sim_direct(empty_elf, messages=r["messages"], packets=r["packets"], size=r["size"])
        assert r["sim_time_ns"] == direct["sim_time_ns"]
        assert r["latency_ns.p50"] == direct["latency_ns"]["p50"]
        assert r["bytes"] == direct["bytes"]
    png = tmp_path / "out" / "sim_time_ns-vs-size.png"
    assert summary["plots"] == [str(png)] and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_netsim_points(tmp_path):
    """A grid of `softspin netsim` broadcasts: every point verified, and a point's
    simulated time equal to the same run on its own."""
    grid = write(tmp_path / "n.toml", """
command = "netsim"
[args]
workload = "broadcast"
size = 8
[grid]
nodes = [2, 4, 8, 16]
mode = ["streaming", "store"]
[output]
fields = ["verified", "completion_ns", "engines"]
""")
    p = cli_sweep(grid, "--json", "--out", str(tmp_path / "out"))
    assert p.returncode == sweep.EXIT_OK, p.stderr
    rows = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(rows) == 8
    for r in rows:
        assert r["status"] == "ok" and r["verified"] is True and r["engines"] == r["nodes"] - 1
    r = rows[-1]
    direct = subprocess.run([str(CLI), "netsim", "--workload", "broadcast", "--size", "8", "--nodes",
                             str(r["nodes"]), "--mode", r["mode"], "--json"],
                            capture_output=True, text=True, check=True)
    assert json.loads(direct.stdout)["completion_ns"] == r["completion_ns"]


def counting_wrapper(tmp_path):
    """A softspin that logs each point it runs, then runs the real one."""
    log = tmp_path / "runs.log"
    w = tmp_path / "softspin-counting"
    w.write_text(f'#!/bin/sh\ncase " $* " in *" --json "*) echo "$*" >> "{log}";; esac\nexec "{CLI}" "$@"\n')
    w.chmod(w.stat().st_mode | stat.S_IXUSR)
    return w, log


def runs(log):
    return log.read_text().splitlines() if log.exists() else []


def test_resume_skips_finished_points(tmp_path, empty_elf):
    w, log = counting_wrapper(tmp_path)
    body = f'command = "sim"\n[args]\nimage = "{empty_elf}"\nph = "empty_ph"\n[grid]\nmessages = [1, 2, 3]\n'
    grid = write(tmp_path / "g.toml", body + "size = [64, 128]\n")
    p = runner(grid, w, "--json")
    assert p.returncode == 0, p.stderr
    assert len(runs(log)) == 6 and json.loads(p.stdout)["ran"] == 6
    first = (tmp_path / "g.out" / "results.json").read_text()
    assert len(list((tmp_path / "g.out" / "points").glob("*.json"))) == 6

    p = runner(grid, w, "--json")
    assert p.returncode == 0, p.stderr
    assert len(runs(log)) == 6, "a rerun ran finished points again"
    assert json.loads(p.stdout)["kept"] == 6
    assert (tmp_path / "g.out" / "results.json").read_text() == first

    # A grown grid runs only its new points.
    write(grid, body + "size = [64, 128, 256]\n")
    p = runner(grid, w)
    assert p.returncode == 0, p.stderr
    new = runs(log)[6:]
    assert len(new) == 3 and all("--size 256" in r for r in new)

    mine = tmp_path / "g.out" / "points" / "notes.json"
    mine.write_text("{}")
    p = runner(grid, w, "--fresh")
    assert p.returncode == 0, p.stderr
    assert len(runs(log)) == 9 + 9
    assert mine.exists(), "--fresh removed a file that is no point record"


FAKE = r"""#!/bin/sh
# A softspin whose `sim` points succeed, print bad JSON or hang, by --mode.
case "$1" in sim) ;; *) echo "unrecognized subcommand '$1'" >&2; exit 2;; esac
case " $* " in *" --help "*) echo "Options: --mode <MODE> --n <N> --json"; exit 0;; esac
case " $* " in
  *" --mode ok "*) echo '{"value": {"n": 7}, "list": [1, 2]}';;
  *" --mode badjson "*) echo 'not json';;
  *" --mode fail "*) echo '{"value": {"n": 1}}'; echo 'softspin: error: it broke' >&2; exit 5;;
  *" --mode hang "*) exec sleep 30;;
esac
"""


def fake(tmp_path):
    f = tmp_path / "softspin-fake"
    f.write_text(FAKE)
    f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return f


def test_failed_points_are_reported(tmp_path):
    grid = write(tmp_path / "g.toml", """
command = "sim"
timeout_s = 1.5
[grid]
mode = ["ok", "badjson", "fail", "hang"]
n = [1, 2]
""")
    p = runner(grid, fake(tmp_path), "--json")
    assert p.returncode == sweep.EXIT_POINTS_FAILED
    assert "6 of 8 points failed" in p.stderr
    assert json.loads(p.stdout)["failed"] == 6
    rows = json.loads((tmp_path / "g.out" / "results.json").read_text())
    by_mode = {r["mode"]: r for r in rows if r["n"] == 1}
    assert by_mode["ok"]["status"] == "ok" and by_mode["ok"]["value.n"] == 7 and by_mode["ok"]["list.1"] == 2
    assert by_mode["badjson"]["status"] == "failed" and by_mode["badjson"]["error"].startswith("bad JSON")
    assert by_mode["fail"]["error"] == "exit status 5: softspin: error: it broke"
    assert by_mode["fail"]["exit"] == 5 and by_mode["fail"]["value.n"] == 1  # its JSON is kept
    assert by_mode["hang"]["error"] == "timeout: no result after 1.5 s" and by_mode["hang"]["exit"] is None

    # accept_exit makes a status a success; failed points run again on resume.
    grid.write_text(grid.read_text().replace("timeout_s", "accept_exit = [0, 5]\ntimeout_s")
                    .replace('"badjson", ', "").replace(', "hang"', ""))
    p = runner(grid, fake(tmp_path), "--json")
    assert p.returncode == sweep.EXIT_OK, p.stderr
    s = json.loads(p.stdout)
    assert (s["points"], s["kept"], s["ran"]) == (4, 2, 2)


def test_real_failing_point_via_cli(tmp_path, empty_elf):
    grid = write(tmp_path / "g.toml", f"""
command = "sim"
[args]
image = "{empty_elf}"
ph = "empty_ph"
[grid]
size = [512, 4096]
""")
    p = cli_sweep(grid, "--quiet")
    assert p.returncode == sweep.EXIT_POINTS_FAILED
    assert "1 of 2 points failed" in p.stderr and "pkt_slot_size" in p.stderr


BAD_GRIDS = [
    ('command = "sim"\nfoo = 1\n[grid]\nsize = [1]\n', "unknown key 'foo' in the grid file"),
    ('command = "simm"\n[grid]\nsize = [1]\n', "command = 'simm': must be one of sim, netsim"),
    ('command = "sim"\n[grid]\nsize = []\n', "[grid] size is an empty list"),
    ('command = "sim"\n', "[grid] is missing or empty"),
    ('command = "sim"\n[grid]\nsize = 64\n', "[grid] size = 64: must be a list"),
    ('command = "sim"\n[grid]\nsize = [1, 1]\n', "[grid] size: repeated value"),
    ('command = "sim"\n[args]\nsize = 1\n[grid]\nsize = [1]\n', "[grid] size is also in [args]"),
    ('command = "sim"\n[grid]\na = [%s]\nb = [%s]\n' % (",".join(map(str, range(400))), ",".join(map(str, range(251)))),
     "the grid has 100400 points (axes x repetitions), more than 100000"),
    ('command = "sim"\n[repeat]\ncount = 0\n[grid]\nsize = [1]\n', "[repeat] count = 0"),
    ('command = "sim"\n[repeat]\ncuont = 2\n[grid]\nsize = [1]\n', "unknown key 'cuont' in [repeat]"),
    ('command = "sim"\n[grid]\nsize = [1]\n[output]\nfield = ["x"]\n', "unknown key 'field' in [output]"),
    ('command = "sim"\n[grid]\nsize = [1, 2]\nn = [1, 2]\n[[plot]]\nx = "size"\ny = "t"\n',
     "grid axis n varies but is not x or series"),
    ('command = "sim"\n[grid]\nsize = [1]\n[[plot]]\nx = "size"\ny = "t"\nseries = "m"\n', "series = 'm' is not a grid axis"),
    ('command = "sim"\n[grid]\nsize = [1]\n[[plot]]\nx = "size"\n', "y is required"),
    ('command = "sim"\n[grid]\nsize = [1]\n[output]\nfields = ["a"]\n[[plot]]\nx = "size"\ny = "b"\n',
     "y = 'b' is neither a grid axis nor in [output] fields"),
    ('command = "sim"\ntimeout_s = -1\n[grid]\nsize = [1]\n', "timeout_s = -1"),
    ('command = "sim"\n[grid\n', "not valid TOML"),
]


@pytest.mark.parametrize("text,message", BAD_GRIDS)
def test_bad_grid_files(tmp_path, text, message):
    g = write(tmp_path / "bad.toml", text)
    with pytest.raises(sweep.GridError) as e:
        sweep.load_grid(str(g))
    assert message in str(e.value) and str(g) in str(e.value)


def test_bad_grid_via_cli(tmp_path):
    g = write(tmp_path / "bad.toml", 'command = "sim"\n[grid]\nsize = []\n')
    p = cli_sweep(g)
    assert p.returncode == sweep.EXIT_FAILURE
    assert f"{g}: [grid] size is an empty list" in p.stderr and not (tmp_path / "bad.out").exists()
    # An option the subcommand does not have, before any point runs.
    g = write(tmp_path / "typo.toml", 'command = "sim"\n[grid]\nsizee = [64]\n')
    p = cli_sweep(g)
    assert p.returncode == sweep.EXIT_FAILURE and "softspin sim has no option --sizee" in p.stderr
    p = cli_sweep(tmp_path / "absent.toml")
    assert p.returncode == sweep.EXIT_FAILURE and "cannot read" in p.stderr


def test_missing_subcommand(tmp_path):
    g = write(tmp_path / "n.toml", 'command = "netsim"\n[grid]\nnodes = [2]\n')
    p = runner(g, fake(tmp_path))
    assert p.returncode == sweep.EXIT_FAILURE and "has no such subcommand" in p.stderr


def test_help_lists_the_runners_exit_statuses():
    h = subprocess.run([str(CLI), "sweep", "--help"], capture_output=True, text=True, check=True).stdout
    listed = {int(m) for m in re.findall(r"^\s+(\d+)\s", h.split("Exit status:")[1], re.M)}
    assert listed == {sweep.EXIT_OK, sweep.EXIT_FAILURE, sweep.EXIT_USAGE, sweep.EXIT_POINTS_FAILED,
                      sweep.EXIT_INTERRUPTED}


def test_no_python_is_a_clear_error(tmp_path):
    g = write(tmp_path / "g.toml", 'command = "sim"\n[grid]\nsize = [64]\n')
    p = cli_sweep(g, env=dict(os.environ, SOFTSPIN_PYTHON=str(tmp_path / "none")))
    assert p.returncode == 1 and "SOFTSPIN_PYTHON" in p.stderr


def test_flatten():
    assert sweep.flatten({"a": {"b": 1}, "c": [{"d": 2}, 3], "e": [], "f": None}) == \
        {"a.b": 1, "c.0.d": 2, "c.1": 3, "f": None}


def test_points_and_repetitions(tmp_path):
    g = sweep.load_grid(str(write(tmp_path / "g.toml", """
command = "sim"
[args]
quiet = true
jit = false
gdb-break = ["a", "b"]
[grid]
until_ns = [10, 20]
[repeat]
count = 2
seed_arg = "seed"
seed_base = 5
""")))
    pts = list(g.points())
    assert g.n_points == len(pts) == 4
    assert pts[3] == ({"until_ns": 20}, 1, ["sim", "--quiet", "--gdb-break", "a", "--gdb-break", "b",
                                           "--until-ns", "20", "--seed", "6", "--json"])
    assert len({sweep.point_key(a, r) for _, r, a in pts}) == 4


def test_mangled_grid_files_give_grid_errors(tmp_path):
    """A fuzz in small: mutations of a full grid file are accepted or refused
    with a GridError, never another exception."""
    import random

    good = """command = "sim"
timeout_s = 30
accept_exit = [0, 5]
out = "o"
[args]
image = "h.elf"
quiet = true
[grid]
size = [64, 1024]
messages = [1, 2]
[repeat]
count = 2
seed_arg = "seed"
[output]
fields = ["sim_time_ns"]
[[plot]]
x = "size"
y = "sim_time_ns"
series = "messages"
logx = true
title = "t"
file = "a.png"
where = { }
"""
    sweep.Grid("g", __import__("tomllib").loads(good))
    values = ['""', "0", "-1", "1.5", "true", "[]", "[1, 1]", '["a"]', "{ }", "{ a = 1 }", "[[1]]", '"sim"',
              '"size"', "[{ a = 1 }]", "1e300"]
    rng = random.Random(29)
    lines = good.splitlines()
    g = tmp_path / "m.toml"
    for _ in range(1500):
        m = list(lines)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(m))
            if "=" in m[i] and rng.random() < 0.8:
                m[i] = m[i].split("=")[0] + "= " + rng.choice(values)
            else:
                del m[i]
        g.write_text("\n".join(m) + "\n")
        try:
            sweep.load_grid(str(g))
        except sweep.GridError:
            pass


def test_remote_scheduler(tmp_path, empty_elf):
    """--scheduler: the points run on another cluster's workers (here one
    on loopback, its workers separate processes that import no runner)."""
    import logging

    import distributed

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=None,
                                  silence_logs=logging.ERROR, host="127.0.0.1") as cluster:
        grid = write(tmp_path / "g.toml", f"""
command = "sim"
[args]
image = "{empty_elf}"
ph = "empty_ph"
[grid]
messages = [1, 3]
size = [64, 1024]
""")
        p = subprocess.run([str(CLI), "sweep", str(grid), "--scheduler", cluster.scheduler_address, "--json"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["ran"] == 4
        with distributed.Client(cluster) as c:
            # The points were that scheduler's tasks (keys softspin-HASH).
            done = c.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.task_prefixes["softspin"].state_counts["memory"])
            assert done == 4
    rows = json.loads((tmp_path / "g.out" / "results.json").read_text())
    direct = sim_direct(empty_elf, messages=3, size=1024)
    assert rows[3]["sim_time_ns"] == direct["sim_time_ns"]
    # --workers is for the local cluster only.
    p = cli_sweep(grid, "--scheduler", "tcp://127.0.0.1:1")
    assert p.returncode == 2 and "--workers" in p.stderr


def test_interrupt_keeps_finished_points(tmp_path):
    import signal
    import time

    grid = write(tmp_path / "g.toml", 'command = "sim"\n[grid]\nmode = ["ok", "hang"]\nn = [1, 2]\n')
    p = subprocess.Popen([sys.executable, "-P", str(RUNNER), str(grid), "--softspin", str(fake(tmp_path)),
                          "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         # SIGINT's default action even when the tests run as a background job,
                         # which inherits SIGINT ignored (Python then installs no handler).
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    points = tmp_path / "g.out" / "points"
    deadline = time.monotonic() + 60
    while len(list(points.glob("*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list(points.glob("*.json"))) == 2, "the ok points never finished"
    os.killpg(p.pid, signal.SIGINT)  # as Ctrl-C does: the whole process group
    _, err = p.communicate(timeout=60)
    assert p.returncode == sweep.EXIT_INTERRUPTED, err
    assert "finished points are kept" in err
    grid.write_text('command = "sim"\n[grid]\nmode = ["ok"]\nn = [1, 2]\n')
    q = runner(grid, fake(tmp_path), "--json")
    assert q.returncode == 0 and json.loads(q.stdout)["kept"] == 2
