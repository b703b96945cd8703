"""softspin sweep: a grid of `softspin sim` / `softspin netsim` runs on Dask
(issue 29, "Sweeps"), one table and plots.

Each point of the grid is one run of ``softspin SUBCOMMAND ARGS... --json`` in
a subprocess, as a Dask task: on a ``distributed.LocalCluster`` (one worker
per core) by default, or on a running scheduler (``--scheduler ADDR``). A
point's JSON object, flattened, becomes a row of ``OUT/results.csv`` and
``OUT/results.json``; plots go to ``OUT/*.png``. Each finished point is kept
in ``OUT/points/`` under a key made from its arguments, so a rerun skips it.

The grid file format, examples and exit statuses: docs/sweep.md. Normally run
as ``softspin sweep GRID.toml`` (which passes its own binary as
``--softspin``); ``python -m softspin.sweep`` works too. Pure Python: no
softspin native code is imported, so the runner is also a plain script.
"""

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import time
import tomllib
import uuid

# Exit statuses (`softspin sweep --help` prints the same; a test checks).
EXIT_OK = 0  # every point ran and exited with an accepted status
EXIT_FAILURE = 1  # bad grid file or options, or a tool failure: no sweep ran
EXIT_USAGE = 2  # usage error (argparse's, as clap's)
EXIT_POINTS_FAILED = 3  # the sweep ran but some points failed (stderr names how many)
EXIT_INTERRUPTED = 130  # Ctrl-C: finished points are kept; rerun to resume

# Subcommands whose points print one JSON object on stdout with --json.
SUBCOMMANDS = ("sim", "netsim")
MAX_POINTS = 100_000
DEFAULT_TIMEOUT_S = 600.0
TOP_KEYS = {"command", "timeout_s", "accept_exit", "out", "args", "grid", "repeat", "output", "plot"}
REPEAT_KEYS = {"count", "seed_arg", "seed_base"}
OUTPUT_KEYS = {"fields"}
PLOT_KEYS = {"x", "y", "series", "logx", "logy", "where", "file", "title"}
# Columns every row has besides its parameters and fields.
META_COLUMNS = ("rep", "status", "exit", "error", "wall_s")
STDERR_TAIL = 2000
KEY_LEN = 20  # hex digits of a point's key


class SweepError(Exception):
    """The sweep cannot run: the message says why."""


class GridError(SweepError):
    """A bad grid file: the message names the file and the key."""


def _err(path, msg):
    return GridError(f"{path}: {msg}")


def _flag(key):
    """The command-line flag of an argument key (`until_ns` and `until-ns` alike)."""
    return "--" + key.replace("_", "-")


def _scalar(v):
    return isinstance(v, (str, int, float, bool))


def _check_keys(path, where, table, allowed):
    if not isinstance(table, dict):
        raise _err(path, f"{where} must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _err(path, f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} in {where} "
                   f"(valid: {', '.join(sorted(allowed))})")


class Grid:
    """A validated grid file."""

    def __init__(self, path, data):
        self.path = os.path.abspath(path)
        self.dir = os.path.dirname(self.path)
        p = path
        _check_keys(p, "the grid file", data, TOP_KEYS)
        self.command = data.get("command")
        if self.command not in SUBCOMMANDS:
            raise _err(p, f"command = {self.command!r}: must be one of {', '.join(SUBCOMMANDS)}")
        self.timeout_s = data.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) \
                or not 0 < self.timeout_s <= 86400:
            raise _err(p, f"timeout_s = {self.timeout_s!r}: must be a number of seconds in (0, 86400]")
        self.accept_exit = data.get("accept_exit", [0])
        if not isinstance(self.accept_exit, list) or not self.accept_exit or \
                not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 255 for s in self.accept_exit):
            raise _err(p, f"accept_exit = {self.accept_exit!r}: must be a non-empty list of exit statuses (0..255)")
        self.out = data.get("out")
        if self.out is not None and (not isinstance(self.out, str) or not self.out):
            raise _err(p, "out must be a directory name (a string)")

        self.args = data.get("args", {})
        _check_keys(p, "[args]", self.args, set(self.args) if isinstance(self.args, dict) else set())
        for k, v in self.args.items():
            if k == "json":
                raise _err(p, "[args] json: every point runs with --json already")
            if isinstance(v, list):
                if not v or not all(_scalar(x) and not isinstance(x, bool) for x in v):
                    raise _err(p, f"[args] {k} = {v!r}: a list (a repeated flag) must hold strings or numbers")
            elif not _scalar(v):
                raise _err(p, f"[args] {k} = {v!r}: must be a string, number, boolean or list")

        self.axes = data.get("grid")
        if not isinstance(self.axes, dict) or not self.axes:
            raise _err(p, "[grid] is missing or empty: give at least one axis, e.g. size = [64, 1024]")
        for k, vals in self.axes.items():
            if k == "json" or k in META_COLUMNS:
                raise _err(p, f"[grid] {k}: reserved name")
            if k in self.args:
                raise _err(p, f"[grid] {k} is also in [args]: an argument is either fixed or swept")
            if not isinstance(vals, list):
                raise _err(p, f"[grid] {k} = {vals!r}: must be a list of values")
            if not vals:
                raise _err(p, f"[grid] {k} is an empty list: give at least one value")
            if not all(_scalar(v) for v in vals):
                raise _err(p, f"[grid] {k}: values must be strings, numbers or booleans")
            if len(set(map(json.dumps, vals))) != len(vals):
                raise _err(p, f"[grid] {k}: repeated value (use [repeat] count for repetitions)")

        rep = data.get("repeat", {})
        _check_keys(p, "[repeat]", rep, REPEAT_KEYS)
        self.count = rep.get("count", 1)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise _err(p, f"[repeat] count = {self.count!r}: must be an integer >= 1")
        self.seed_arg = rep.get("seed_arg")
        self.seed_base = rep.get("seed_base", 1)
        if self.seed_arg is not None:
            if not isinstance(self.seed_arg, str) or not self.seed_arg:
                raise _err(p, "[repeat] seed_arg must be an argument name, e.g. \"seed\"")
            if self.seed_arg in self.args or self.seed_arg in self.axes:
                raise _err(p, f"[repeat] seed_arg {self.seed_arg!r} is also in [args] or [grid]")
        if isinstance(self.seed_base, bool) or not isinstance(self.seed_base, int) or self.seed_base < 0:
            raise _err(p, f"[repeat] seed_base = {self.seed_base!r}: must be an integer >= 0")

        n = self.count
        for vals in self.axes.values():
            n *= len(vals)
        if n > MAX_POINTS:
            raise _err(p, f"the grid has {n} points (axes x repetitions), more than {MAX_POINTS}: split it")
        self.n_points = n

        out = data.get("output", {})
        _check_keys(p, "[output]", out, OUTPUT_KEYS)
        self.fields = out.get("fields")
        if self.fields is not None and (not isinstance(self.fields, list) or not self.fields
                                        or not all(isinstance(f, str) and f for f in self.fields)):
            raise _err(p, "[output] fields must be a non-empty list of field names (dotted: latency_ns.p50)")

        plots = data.get("plot", [])
        if not isinstance(plots, list):
            raise _err(p, "plot must be an array of tables: [[plot]]")
        self.plots = []
        for i, pl in enumerate(plots, 1):
            where = f"[[plot]] #{i}"
            _check_keys(p, where, pl, PLOT_KEYS)
            for k in ("x", "y"):
                if not isinstance(pl.get(k), str):
                    raise _err(p, f"{where}: {k} is required (a grid axis or a field name)")
                if self.fields is not None and pl[k] not in (*self.fields, *self.axes, *META_COLUMNS):
                    raise _err(p, f"{where}: {k} = {pl[k]!r} is neither a grid axis nor in [output] fields")
            series = pl.get("series")
            if series is not None and (not isinstance(series, str) or series not in self.axes):
                raise _err(p, f"{where}: series = {series!r} is not a grid axis ({', '.join(self.axes)})")
            fixed = pl.get("where", {})
            if not isinstance(fixed, dict):
                raise _err(p, f"{where}: where must be a table of axis = value")
            for k, v in fixed.items():
                if k not in self.axes:
                    raise _err(p, f"{where}: where.{k} is not a grid axis")
                if v not in self.axes[k]:
                    raise _err(p, f"{where}: where.{k} = {v!r} is not one of its grid values {self.axes[k]}")
            # An axis that is not x, series or fixed would mix its values in one line.
            loose = [k for k, vals in self.axes.items()
                     if len(vals) > 1 and k not in (pl["x"], series) and k not in fixed]
            if loose:
                raise _err(p, f"{where}: grid axis {', '.join(loose)} varies but is not x or series; "
                           f"fix it with where = {{ {loose[0]} = ... }}")
            if not isinstance(pl.get("title", ""), str):
                raise _err(p, f"{where}: title must be a string")
            for k in ("logx", "logy"):
                if not isinstance(pl.get(k, False), bool):
                    raise _err(p, f"{where}: {k} must be true or false")
            file = pl.get("file", f"{pl['y']}-vs-{pl['x']}.png".replace("/", "_"))
            if not isinstance(file, str) or os.sep in file or not file.endswith(".png"):
                raise _err(p, f"{where}: file = {file!r} must be a PNG file name (no directory)")
            self.plots.append(dict(pl, file=file, where=fixed))

    def points(self):
        """Every point in grid order: (params, rep, argv without the binary)."""
        names = list(self.axes)
        for combo in itertools.product(*self.axes.values()):
            params = dict(zip(names, combo))
            for rep in range(self.count):
                argv = [self.command]
                for k, v in list(self.args.items()) + list(params.items()):
                    argv += _arg(k, v)
                if self.seed_arg is not None:
                    argv += [_flag(self.seed_arg), str(self.seed_base + rep)]
                argv.append("--json")
                yield params, rep, argv


def _arg(key, value):
    if value is True:
        return [_flag(key)]
    if value is False:
        return []
    if isinstance(value, list):
        return [a for v in value for a in (_flag(key), str(v))]
    return [_flag(key), str(value)]


def load_grid(path):
    """Read and validate a grid file; GridError says what is wrong."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise GridError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise GridError(f"{path}: not valid TOML: {e}") from None
    return Grid(path, data)


def point_key(argv, rep):
    """A point's file name in OUT/points: a hash of its arguments and repetition."""
    canon = json.dumps({"argv": argv, "rep": rep}, sort_keys=True)
    return hashlib.sha256(canon.encode()).hexdigest()[:KEY_LEN]


def run_point(binary, argv, cwd, timeout_s, accept_exit):
    """One point (a Dask task): run softspin, parse its JSON. Never raises:
    a failure is a record with its cause."""
    t0 = time.monotonic()
    rec = {"status": "failed", "exit": None, "error": None, "result": None, "stderr": ""}
    try:
        p = subprocess.run([binary] + argv, cwd=cwd, capture_output=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        rec["error"] = f"timeout: no result after {timeout_s:g} s"
        rec["stderr"] = (e.stderr or b"").decode(errors="replace")[-STDERR_TAIL:]
    except OSError as e:
        rec["error"] = f"cannot run {binary}: {e.strerror}"
    else:
        rec["exit"] = p.returncode
        rec["stderr"] = p.stderr.decode(errors="replace")[-STDERR_TAIL:]
        try:
            result = json.loads(p.stdout)
        except (ValueError, UnicodeDecodeError):
            result = None
        if isinstance(result, dict):
            rec["result"] = result
        if p.returncode < 0:
            rec["error"] = f"killed by signal {-p.returncode}"
        elif p.returncode not in accept_exit:
            last = rec["stderr"].strip().splitlines()[-1:] or [""]
            rec["error"] = f"exit status {p.returncode}" + (f": {last[0]}" if last[0] else "")
        elif rec["result"] is None:
            rec["error"] = "bad JSON: stdout is not one JSON object"
        else:
            rec["status"] = "ok"
    rec["wall_s"] = round(time.monotonic() - t0, 6)
    return rec


def flatten(obj, prefix="", out=None):
    """A JSON value as dotted keys: {"a": {"b": 1}, "c": [{"d": 2}]} -> a.b, c.0.d."""
    if out is None:
        out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}{k}.", out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}{i}.", out)
    else:
        out[prefix[:-1]] = obj
    return out


class Progress:
    """A progress bar on stderr (a line per tenth when stderr is not a terminal)."""

    def __init__(self, total, quiet):
        self.total, self.quiet = total, quiet
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.done = self.failed = 0
        self.last_tenth = -1

    def update(self, failed):
        self.done += 1
        self.failed += failed
        if self.quiet or not self.total:
            return
        frac = self.done / self.total
        text = f"{self.done}/{self.total} points, {self.failed} failed, {time.monotonic() - self.t0:.1f} s"
        if self.tty:
            bar = "#" * int(30 * frac)
            sys.stderr.write(f"\rsweep [{bar:<30}] {text}")
            if self.done == self.total:
                sys.stderr.write("\n")
        elif int(10 * frac) > self.last_tenth:
            self.last_tenth = int(10 * frac)
            sys.stderr.write(f"sweep: {text}\n")
        sys.stderr.flush()


def check_subcommand(binary, grid):
    """Ask the binary for the subcommand's flags, so a typo or a missing
    subcommand is a clear error before any point runs."""
    try:
        p = subprocess.run([binary, grid.command, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SweepError(f"cannot run {binary}: {e}") from None
    if p.returncode != 0:
        raise GridError(f"{grid.path}: command = {grid.command!r}: {binary} has no such subcommand "
                        f"(`{os.path.basename(binary)} {grid.command} --help` failed)")
    names = list(grid.args) + list(grid.axes) + ([grid.seed_arg] if grid.seed_arg else [])
    for k in names:
        if _flag(k) not in p.stdout.split() and not any(
                w.startswith(_flag(k) + "=") or w.startswith(_flag(k) + ",") for w in p.stdout.split()):
            raise GridError(f"{grid.path}: {k}: softspin {grid.command} has no option {_flag(k)} "
                            f"(see softspin {grid.command} --help)")


def write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def load_kept(path, argv):
    """A kept point's record if it finished (status ok) with these arguments."""
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(rec, dict) and rec.get("status") == "ok" and rec.get("argv") == argv:
        return rec
    return None


def table(grid, records):
    """Rows (grid order) and columns: parameters, meta columns, fields."""
    flat = [flatten(r["result"]) if r.get("result") is not None else {} for r in records]
    if grid.fields is not None:
        fields = list(grid.fields)
    else:
        fields, seen = [], set()
        for f in flat:
            for k in f:
                if k not in seen:
                    seen.add(k)
                    fields.append(k)
    missing = [f for f in fields if not any(f in x for x in flat)] if any(flat) else []
    columns = list(grid.axes) + list(META_COLUMNS) + [f for f in fields if f not in grid.axes]
    rows = []
    for r, f in zip(records, flat):
        row = dict(r["params"])
        row.update({"rep": r["rep"], "status": r["status"], "exit": r["exit"], "error": r["error"],
                    "wall_s": r["wall_s"]})
        for k in fields:
            if k not in grid.axes:
                row[k] = f.get(k)
        rows.append(row)
    return columns, rows, missing


def write_tables(out, columns, rows):
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if row.get(k) is None else json.dumps(row[k]) if isinstance(row[k], bool)
                            else row[k]) for k in columns})
    write_atomic(os.path.join(out, "results.json"), json.dumps(rows, indent=1) + "\n")


def plot(grid, out, rows):
    """One PNG per [[plot]]: y against x, one line per series value, the mean
    over repetitions with min..max bars. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for pl in grid.plots:
        x, y, series = pl["x"], pl["y"], pl.get("series")
        ok = [r for r in rows if r["status"] == "ok" and all(r.get(k) == v for k, v in pl["where"].items())]
        groups = {}
        for r in ok:
            if not isinstance(r.get(x), (int, float)) or not isinstance(r.get(y), (int, float)):
                continue
            groups.setdefault(r.get(series) if series else None, {}).setdefault(r[x], []).append(r[y])
        if not groups:
            print(f"sweep: warning: {pl['file']}: no successful point has numbers for x = {x!r} and y = {y!r}",
                  file=sys.stderr)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for s, pts in groups.items():
            xs = sorted(pts)
            mean = [sum(pts[v]) / len(pts[v]) for v in xs]
            lo = [m - min(pts[v]) for m, v in zip(mean, xs)]
            hi = [max(pts[v]) - m for m, v in zip(mean, xs)]
            label = f"{series} = {s}" if series else None
            if grid.count > 1:
                ax.errorbar(xs, mean, yerr=[lo, hi], marker="o", capsize=3, label=label)
            else:
                ax.plot(xs, mean, marker="o", label=label)
        for axis, key, values in ((ax.xaxis, "logx", [v for p in groups.values() for v in p]),
                                  (ax.yaxis, "logy", [r[y] for r in ok if isinstance(r.get(y), (int, float))])):
            if pl.get(key):
                # Base 2 when every value is a power of two (sizes, node counts).
                pow2 = values and all(v > 0 and math.log2(v).is_integer() for v in values)
                (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log", base=2 if pow2 else 10)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        fixed = ", ".join(f"{k} = {v}" for k, v in pl["where"].items())
        ax.set_title(pl.get("title") or f"softspin {grid.command}" + (f" ({fixed})" if fixed else ""))
        if series and groups:
            ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(out, pl["file"])
        fig.savefig(path, dpi=100)
        plt.close(fig)
        files.append(path)
    return files


def _client(args):
    import logging

    import distributed

    if args.scheduler:
        return distributed.Client(args.scheduler, timeout="30s"), None
    cluster = distributed.LocalCluster(n_workers=args.workers or os.cpu_count() or 1, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    return distributed.Client(cluster), cluster


def sweep(args):
    grid = load_grid(args.grid)
    binary = args.softspin or shutil.which("softspin")
    if not binary:
        raise SweepError("no softspin binary: pass --softspin PATH or put softspin on PATH")
    binary = os.path.abspath(binary)
    check_subcommand(binary, grid)
    for mod, what in (("distributed", "Dask"), ("matplotlib", "matplotlib")):
        try:
            __import__(mod)
        except ImportError:
            raise SweepError(f"{sys.executable} has no {what} ({mod}): run scripts/setup.sh, "
                            "or set SOFTSPIN_PYTHON to a Python that has it") from None
    out = os.path.abspath(args.out or (os.path.join(grid.dir, grid.out) if grid.out else
                                       os.path.splitext(grid.path)[0] + ".out"))
    points_dir = os.path.join(out, "points")
    os.makedirs(points_dir, exist_ok=True)
    if args.fresh:
        # Only our own records: OUT/points may be a directory the user chose.
        for name in os.listdir(points_dir):
            stem = name.removesuffix(".json")
            if name.endswith(".json") and len(stem) == KEY_LEN and all(c in "0123456789abcdef" for c in stem):
                os.remove(os.path.join(points_dir, name))

    todo, records = [], []
    for i, (params, rep, argv) in enumerate(grid.points()):
        key = point_key(argv, rep)
        path = os.path.join(points_dir, key + ".json")
        rec = None if args.fresh else load_kept(path, argv)
        if rec is None:
            rec = {"params": params, "rep": rep, "argv": argv, "key": key}
            todo.append(i)
        records.append(rec)
    kept = grid.n_points - len(todo)
    if not args.quiet:
        print(f"sweep: {grid.n_points} points of softspin {grid.command}, {kept} kept from {points_dir}, "
              f"{len(todo)} to run", file=sys.stderr)

    progress = Progress(len(todo), args.quiet)
    if todo:
        client, cluster = _client(args)
        try:
            import distributed

            if __name__ != "__main__":
                # Workers get this module's code by value, not whatever copy they could import.
                import cloudpickle

                cloudpickle.register_pickle_by_value(sys.modules[__name__])

            # A token per sweep keeps two sweeps of the same points on one scheduler apart.
            token = uuid.uuid4().hex[:8]
            futures = {}
            for i in todo:
                r = records[i]
                fut = client.submit(run_point, binary, r["argv"], grid.dir, grid.timeout_s, grid.accept_exit,
                                    key=f"softspin-{r['key']}-{token}", pure=False)
                futures[fut] = i
            for fut in distributed.as_completed(futures):
                i = futures[fut]
                try:
                    res = fut.result()
                except Exception as e:  # the task itself never raises; a lost worker does
                    res = {"status": "failed", "exit": None, "error": f"task failed: {e}", "result": None,
                           "stderr": "", "wall_s": None}
                records[i].update(res)
                write_atomic(os.path.join(points_dir, records[i]["key"] + ".json"),
                             json.dumps(records[i], indent=1) + "\n")
                progress.update(res["status"] != "ok")
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    columns, rows, missing = table(grid, records)
    write_tables(out, columns, rows)
    for f in missing:
        print(f"sweep: warning: field {f!r} is in no point's JSON", file=sys.stderr)
    files = plot(grid, out, rows) if grid.plots else []
    failed = [r for r in records if r["status"] != "ok"]
    for r in failed[:10]:
        print(f"sweep: failed: {' '.join(r['argv'])}: {r['error']}", file=sys.stderr)
    if len(failed) > 10:
        print(f"sweep: ... and {len(failed) - 10} more (see {out}/results.csv)", file=sys.stderr)
    summary = {
        "grid": grid.path, "command": grid.command, "out": out, "points": grid.n_points, "ran": len(todo),
        "kept": kept, "failed": len(failed), "csv": os.path.join(out, "results.csv"),
        "json": os.path.join(out, "results.json"), "plots": files, "missing_fields": missing,
    }
    if args.json:
        print(json.dumps(summary))
    if failed:
        print(f"sweep: {len(failed)} of {grid.n_points} points failed", file=sys.stderr)
        return EXIT_POINTS_FAILED
    if not args.quiet:
        print(f"sweep: {grid.n_points} points ok: {summary['csv']}", file=sys.stderr)
    return EXIT_OK


def parser():
    ap = argparse.ArgumentParser(prog="softspin sweep", description="Run a grid of softspin sim/netsim runs on Dask.")
    ap.add_argument("grid", help="the grid file (TOML, docs/sweep.md)")
    ap.add_argument("--softspin", help="the softspin binary the points run (default: softspin on PATH)")
    ap.add_argument("--scheduler", help="a running Dask scheduler's address (default: a local cluster)")
    ap.add_argument("--workers", type=int, help="local cluster workers (default: one per core)")
    ap.add_argument("--out", help="output directory (default: the grid's `out`, else GRID.out beside it)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", help="skip points kept in OUT/points (the default)")
    g.add_argument("--fresh", action="store_true", help="forget kept points and run every point")
    ap.add_argument("--json", action="store_true", help="print one JSON object summing up the sweep")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.workers is not None and (args.workers < 1 or args.scheduler):
        print("sweep: error: --workers needs a value >= 1 and applies to the local cluster only "
              "(not with --scheduler)", file=sys.stderr)
        return EXIT_FAILURE
    try:
        return sweep(args)
    except SweepError as e:
        print(f"sweep: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("sweep: interrupted; finished points are kept, rerun to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        print(f"sweep: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as e:  # Dask's own failures (a lost scheduler, ...): a message, not a traceback
        print(f"sweep: error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
