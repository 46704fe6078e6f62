"""Shared fixtures: every test runs harness in its own output folder; the warm-start cache is shared by
the whole session so the tiny base model is trained once."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The geometry report's grid cache (harness/reports/geometry_cache.py) goes to a folder of this session, not
# the user's ~/.cache; subprocesses inherit it.
for _variable, _prefix in (("HARNESS_GEOMETRY_CACHE", "harness-test-geometry-"),):
    if _variable not in os.environ:
        os.environ[_variable] = tempfile.mkdtemp(prefix=_prefix)
        atexit.register(shutil.rmtree, os.environ[_variable], ignore_errors=True)


# Tests under these folders carry the folder's marker, so `-m "not e2e and not verl ..."` leaves them out (the
# README's fast test loop).
FOLDER_MARKERS = {"e2e": "e2e", "slurm": "slurm", "browser": "browser", "verl": "verl"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO / "tests").parts
        if parts and parts[0] in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[parts[0]])


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("warm_cache")


@pytest.fixture
def run_harness(tmp_path, warm_cache):
    """Run `python -m harness ...` in a subprocess from a fresh working folder; returns CompletedProcess."""

    def make_env(extra: dict | None = None) -> dict:
        return {**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONUNBUFFERED": "1", **(extra or {})}

    def make_argv(*args: str) -> list:
        argv = [sys.executable, "-m", "harness", *args]
        takes_overrides = args[:1] not in (("algos",), ("status",), ("repair",), ("sync",), ("report",), ("server",))
        if takes_overrides and not any(a.startswith("cache_dir=") for a in args):
            argv.append(f"cache_dir={warm_cache}")
        return argv

    def run(*args: str, timeout: float = 600, env: dict | None = None, check: bool = False):
        proc = subprocess.run(make_argv(*args), cwd=tmp_path, env=make_env(env), capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"harness {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc

    run.root, run.argv, run.env = tmp_path, make_argv, make_env
    return run
