"""Shared fixtures: the CLI, and handler images built into tmp dirs."""

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
CLI = ROOT / "target" / "release" / "softspin"


def build(sources, out, *extra):
    """Build a handler image with `softspin build`."""
    assert CLI.exists(), f"{CLI} missing: run scripts/setup.sh"
    subprocess.run([str(CLI), "build", *map(str, sources), "-o", str(out), *extra], check=True)
    return out


@pytest.fixture(scope="session")
def handlers_elf(tmp_path_factory):
    return build([pathlib.Path(__file__).with_name("handlers.c")], tmp_path_factory.mktemp("img") / "handlers.elf")
