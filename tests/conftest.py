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
# The geometry report's grid cache (harness/reports/rendering/geometry_cache.py) goes to a folder of this
# session, not the user's ~/.cache; subprocesses inherit it.
# launcher=slurm without launcher.profile: the Slurm test cluster's profile, in the tests only (outside them such
# a run is refused: harness/config/validate.py check_profile)
os.environ.setdefault("HARNESS_LAUNCHER_PROFILE", "test_cluster")
for _variable, _prefix in (("HARNESS_GEOMETRY_CACHE", "harness-test-geometry-"),):
    if _variable not in os.environ:
        os.environ[_variable] = tempfile.mkdtemp(prefix=_prefix)
        atexit.register(shutil.rmtree, os.environ[_variable], ignore_errors=True)


# What harness and MLflow write into their working folder when nothing else is said (output_root "."; MLflow's
# default store ./mlflow.db and an experiment's default artifact root ./mlruns). Tests run from a temporary
# folder (below), so none of these may appear in the checkout; the session's summary names any that did.
CHECKOUT_OUTPUTS = ("mlruns", "mlruns.db", "mlflow.db", ".mlruns.lock", "mlartifacts", "outputs", "multirun",
                    ".harness", "optuna.db", "reports/generated")
_BEFORE = {name for name in CHECKOUT_OUTPUTS if (REPO / name).exists()}


@pytest.fixture(scope="session", autouse=True)
def working_folder(tmp_path_factory) -> Path:
    """The whole session runs from a temporary folder: code (and subprocesses) that fall back on the current
    folder write there, not into the checkout."""
    folder = tmp_path_factory.mktemp("cwd")
    previous = os.getcwd()
    os.chdir(folder)
    yield folder
    os.chdir(previous)


def pytest_terminal_summary(terminalreporter):
    written = sorted(name for name in CHECKOUT_OUTPUTS if (REPO / name).exists() and name not in _BEFORE)
    if written:
        terminalreporter.write_line(f"WARNING: the tests wrote into the checkout: {', '.join(written)}", red=True)


# Tests under these folders carry the folder's marker, so `-m "not e2e and not verl ..."` leaves them out (the
# README's fast test loop).
FOLDER_MARKERS = {"e2e": "e2e", "slurm": "slurm", "browser": "browser", "verl": "verl"}


# Fixtures that run the harness end to end (its command line in a subprocess, a real run or sweep): a test
# that uses one is end-to-end wherever it lives. `real_sweeps`: the report tests' two real tiny sweeps.
END_TO_END_FIXTURES = ("run_harness", "real_sweeps")


# Parallel workers (pytest-xdist, `-n 2 --dist loadgroup`): tests that share one resource of the session run in
# one worker, so the resource is made once: the Slurm test cluster (one per machine), the report tests' two
# real sweeps.
SHARED_RESOURCE_GROUPS = {"slurm_cluster": "slurm", "real_sweeps": "real_sweeps"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO / "tests").parts
        if parts and parts[0] in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[parts[0]])
        fixtures = getattr(item, "fixturenames", ())
        if any(name in fixtures for name in END_TO_END_FIXTURES):
            item.add_marker("e2e")
        group = next((g for name, g in SHARED_RESOURCE_GROUPS.items() if name in fixtures),
                     "slurm" if parts and parts[0] == "slurm" else None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


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
        takes_overrides = args[:1] not in (("algos",), ("status",), ("repair",), ("sync",), ("report",), ("server",),
                                            ("clean",))
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
