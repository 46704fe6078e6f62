"""Shared fixtures: every test runs harness in its own output folder; the warm-start cache is shared by
the whole session so the tiny base model is trained once."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("warm_cache")


@pytest.fixture
def run_harness(tmp_path, warm_cache):
    """Run `python -m harness ...` in a subprocess from a fresh working folder; returns CompletedProcess."""

    def run(*args: str, timeout: float = 600, env: dict | None = None, check: bool = False):
        full_env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONUNBUFFERED": "1",
                    **(env or {})}
        argv = [sys.executable, "-m", "harness", *args]
        if not any(a.startswith("cache_dir=") for a in args) and args[:1] != ("algos",):
            argv.append(f"cache_dir={warm_cache}")
        proc = subprocess.run(argv, cwd=tmp_path, env=full_env, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"harness {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc

    run.root = tmp_path
    return run
