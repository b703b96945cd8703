#!/usr/bin/env python3
"""Fails when a tracked file names an absolute path that exists only on some
machine, so a fresh clone works anywhere (README.md, "Paths").

    python3 scripts/check-paths.py [REPO]     check REPO's tracked files (default: this one)
    python3 scripts/check-paths.py --self-test

The rule. A path is absolute when it starts at "/" after the start of a
line, a space, a quote, a bracket, "=", ":", ",", ";", "|", ">" or "file://"
("a/b/work/x" and
"https://host/home/x" are not). It is machine-specific when it lies under:
  - the top-level directories of one machine's users and data: work, root,
    home/NAME, Users/NAME, mnt, media, scratch, srv;
  - a mirror directory (any path with a ".mirror" component);
  - tmp or var/tmp, in prose only (Markdown and text files): a reader cannot
    have that file. Code may name them: scratch paths it creates itself
    (mktemp templates) or paths it expects not to exist.
System paths (usr, etc, dev, proc, sys, lib, bin, opt, run, var/run, ...)
are the same on every Linux machine and are not flagged. Binary files are
not read.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What may precede an absolute path (anything else makes it relative or part of a URL).
BEFORE = r"(?:^|(?<=[\s'\"`(\[{<>=:,;|])|(?<=file://))"
# Directories of one machine: users' homes and data mounts.
MACHINE = r"/(?:work|root|mnt|media|scratch|srv)(?=$|[/\s'\"`)\]}>,;:.])|/(?:home|Users)/[A-Za-z_][\w.-]*"
MIRROR = r"/(?:[^\s'\"`]*/)?\.mirror(?=$|[/\s'\"`])"
TMP = r"/(?:var/)?tmp/[\w.-]+"
ALWAYS = re.compile(BEFORE + "(?:" + MACHINE + "|" + MIRROR + ")")
PROSE = re.compile(BEFORE + TMP)
PROSE_EXT = (".md", ".txt", ".rst")


def problems_in(path, text):
    """(line number, line) of each machine-specific path in one file."""
    prose = path.endswith(PROSE_EXT)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if ALWAYS.search(line) or (prose and PROSE.search(line)):
            found.append((n, line.strip()))
    return found


def tracked(repo):
    out = subprocess.run(["git", "-C", repo, "ls-files", "-z"], capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def check(repo):
    bad = []
    for rel in tracked(repo):
        try:
            with open(os.path.join(repo, rel), "rb") as f:
                data = f.read()
        except (FileNotFoundError, IsADirectoryError):
            continue  # deleted in the work tree, or a submodule
        if b"\0" in data[:8192]:
            continue  # binary
        for n, line in problems_in(rel, data.decode("utf-8", "replace")):
            bad.append(f"{rel}:{n}: {line}")
    return bad


def self_test():
    # Planted paths are built here, so this file holds none itself.
    s = "/"
    must_flag = [
        ("a.rs", f'let p = "{s}work{s}x/repo";'),
        ("a.sh", f"cd {s}root{s}src"),
        ("a.py", f"HOME = '{s}home{s}alice/softspin'"),
        ("a.toml", f"dir = \"{s}Users{s}bob/x\""),
        ("a.md", f"see ({s}mnt{s}data/f.txt)"),
        ("a.rs", f"//! default {s}srv{s}git{s}.mirror{s}spcl+pspin/repo"),
        ("a.md", f"`--embench {s}tmp{s}embench`"),
        ("a.md", f"PATH={s}var{s}tmp{s}tools"),
        ("a.sh", f"make >{s}work{s}log; ls file://{s}home{s}u/r"),
    ]
    must_pass = [
        ("a.c", "#include </usr/include/bpf/bpf_helpers.h>"),
        ("a.rs", 'let n = "/sys/class/net"; let z = "/dev/zero"; let p = "/proc/self/maps";'),
        ("a.rs", 'build("/no/such.c", "' + s + 'tmp/x.elf")'),
        ("a.sh", 'OUT=$(mktemp -d ' + s + 'tmp/softspin.XXXXXX)'),
        ("a.sh", "# New corpus entries go to fuzz/work/TARGET"),
        ("a.md", "https://example.org/home/user/x and crates/x/work/y"),
        ("a.rs", 'format!("/var/run/netns/{ns}")'),
        ("a.md", "`/etc/os-release`, `/lib/modules`, `/opt/x`, `/run/netns`"),
        ("a.md", "the workspace root, /rooted, /homework"),
    ]
    for path, line in must_flag:
        assert problems_in(path, line), f"not flagged: {path}: {line}"
    for path, line in must_pass:
        assert not problems_in(path, line), f"flagged: {path}: {line}"
    # End to end: a planted path in a tracked file of a scratch repository
    # fails the check; the same file untracked does not.
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["git", "init", "-q", d], check=True)
        with open(os.path.join(d, "ok.txt"), "w") as f:
            f.write("/usr/share/doc\n")
        with open(os.path.join(d, "bad.rs"), "w") as f:
            f.write(f'fn main() {{ let _ = "{s}work{s}.mirror{s}x"; }}\n')
        subprocess.run(["git", "-C", d, "add", "ok.txt"], check=True)
        assert check(d) == [], check(d)
        subprocess.run(["git", "-C", d, "add", "bad.rs"], check=True)
        assert [b.split(":")[0] for b in check(d)] == ["bad.rs"], check(d)
    print("check-paths self-test: ok")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    repo = argv[1] if len(argv) > 1 else ROOT
    bad = check(repo)
    if bad:
        print("machine-specific absolute paths in tracked files (rule: scripts/check-paths.py):")
        print("\n".join("  " + b for b in bad))
        print("use a path relative to the repository, third_party/ (scripts/third-party.sh), or a variable")
        return 1
    print(f"check-paths: no machine-specific paths in {len(tracked(repo))} tracked files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
