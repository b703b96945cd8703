#!/usr/bin/env python3
"""Check that the workspace's rust-version is true for its dependencies.

Cargo.toml's `rust-version` must be at least the highest `rust-version` any
locked package declares (otherwise a user with that Rust gets a build error
instead of cargo's clear message); our own code is held to it by clippy's
`incompatible_msrv` lint, which CI runs with -D warnings.
Exit status 1 with the offending packages named.
"""
import json
import subprocess
import sys
import tomllib


def version(s):
    """"1.95" and "1.95.0" compare equal."""
    return tuple((list(map(int, s.split("."))) + [0, 0])[:3])


def main():
    with open("Cargo.toml", "rb") as f:
        declared = tomllib.load(f)["workspace"]["package"]["rust-version"]
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"],
                                     check=True, capture_output=True, text=True).stdout)
    ours = {m for m in meta["workspace_members"]}
    deps = [(version(p["rust_version"]), p["name"], p["rust_version"])
            for p in meta["packages"] if p.get("rust_version") and p["id"] not in ours]
    need = max(deps)[0] if deps else (0,)
    need_by = sorted(f"{n} {v}" for (t, n, v) in deps if t == need)
    if version(declared) < need:
        sys.exit(f"check-msrv: Cargo.toml says rust-version {declared}, but {', '.join(need_by)} need more")
    print(f"rust-version {declared}: the highest any dependency declares is "
          f"{'.'.join(map(str, need))} ({', '.join(need_by)})")


if __name__ == "__main__":
    main()
