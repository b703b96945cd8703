#!/usr/bin/env python3
"""What scripts/test.sh skipped, so a green run never hides it.

    CMD 2>&1 | python3 scripts/skips.py filter LOG LABEL
        passes CMD's output through and appends to LOG every line that says
        a test or check was skipped. For `cargo test ... -- --show-output`
        it reads the output libtest shows of passing tests (and does not
        echo it: without --show-output it would be hidden), naming each
        line's test binary and test (other lines saying SKIPPED: LABEL).
    python3 scripts/skips.py summary LOG
        one line with the count, then each reason and what it skipped.
    python3 scripts/skips.py --self-test
"""
import re
import sys

SKIP = re.compile(r"\bskip", re.I)
RUNNING = re.compile(r"^\s+Running (?:unittests )?(\S+)")
BLOCK = re.compile(r"^---- (\S+) stdout ----$")


def filter_stream(lines, out, label):
    """Yield (where, message) for each skip line; write the rest to out."""
    binary, test, in_successes = "", None, False
    for line in lines:
        text = line.rstrip("\n")
        m = RUNNING.match(text)
        if m:
            binary = m.group(1).rsplit("/", 1)[-1].removesuffix(".rs")
        if in_successes:
            # libtest's "successes:" section: the captured output of
            # passing tests, then their names, up to the next section.
            if text.startswith("failures:") or text.startswith("test result:"):
                in_successes = False
            else:
                b = BLOCK.match(text)
                if b:
                    test = b.group(1)
                elif SKIP.search(text) and test:
                    yield f"{binary}::{test}", text.strip()
                continue
        if text == "successes:":
            in_successes, test = True, None
            continue
        out.write(line if line.endswith("\n") else line + "\n")
        out.flush()
        # Checks outside libtest (scripts, pytest -rs) say SKIPPED themselves.
        if text.lstrip().startswith("SKIPPED"):
            yield label, text.strip()


def summary(entries):
    """Lines of the summary: the count, then each reason with what it skipped."""
    by_reason = {}
    for where, msg in dict.fromkeys(entries):
        by_reason.setdefault(msg, []).append(where)
    n = sum(len(w) for w in by_reason.values())
    if n == 0:
        return ["== skipped: nothing"]
    lines = [f"== skipped: {n} tests or checks passed without running, for {len(by_reason)} reasons:"]
    for msg, wheres in by_reason.items():
        lines.append(f"  {msg}")
        lines.append(f"    ({len(wheres)}: {', '.join(wheres)})")
    return lines


def read_log(path):
    try:
        with open(path) as f:
            return [tuple(l.rstrip("\n").split("\t", 1)) for l in f if "\t" in l]
    except FileNotFoundError:
        return []


def self_test():
    libtest = """     Running tests/pspin_drivers.rs (target/release/deps/pspin_drivers-0123)

running 2 tests
test a ... ok
test b ... ok

successes:

---- a stdout ----
SKIPPED: no sources: run scripts/third-party.sh pspin

---- b stdout ----
built 3 images


successes:
    a
    b

test result: ok. 2 passed; 0 failed
"""
    import io
    out = io.StringIO()
    got = list(filter_stream(io.StringIO(libtest), out, "cargo test"))
    assert got == [("pspin_drivers::a", "SKIPPED: no sources: run scripts/third-party.sh pspin")], got
    assert "built 3 images" not in out.getvalue() and "test result: ok" in out.getvalue(), out.getvalue()
    got = list(filter_stream(io.StringIO("ok\nSKIPPED: section 5\n"), io.StringIO(), "validation"))
    assert got == [("validation", "SKIPPED: section 5")], got
    s = summary([("x", "r1"), ("y", "r1"), ("x", "r1"), ("z", "r2")])
    assert s[0].startswith("== skipped: 3 ") and "(2: x, y)" in s[2], s
    assert summary([]) == ["== skipped: nothing"]
    print("skips.py self-test: ok")


def main(argv):
    if argv[1:2] == ["--self-test"]:
        self_test()
    elif len(argv) == 4 and argv[1] == "filter":
        # Test output may hold any bytes: pass them on, never fail on them.
        sys.stdin.reconfigure(errors="surrogateescape")
        sys.stdout.reconfigure(errors="surrogateescape")
        with open(argv[2], "a", errors="replace") as log:
            for where, msg in filter_stream(sys.stdin, sys.stdout, argv[3]):
                log.write(f"{where}\t{msg}\n")
                log.flush()
    elif len(argv) == 3 and argv[1] == "summary":
        print("\n".join(summary(read_log(argv[2]))))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
