"""Fixtures of the verl backend tests.

Tests marked `verl` run code inside a separate verl environment (verl 0.9.1 needs an older transformers
than harness): launchers/verl/make_venv.sh creates it at $HARNESS_VERL_VENV (default
~/.cache/harness/verl-venv). Without it they skip, unless HARNESS_VERL_TESTS=1 (CI), where a missing
environment is an error. Everything else here is pure python and runs in the normal suite.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERL_SIDE = Path(__file__).resolve().parent / "verl_side"
DEFAULT_VENV = Path.home() / ".cache" / "harness" / "verl-venv"


def pytest_configure(config):
    config.addinivalue_line("markers", "verl: runs in the verl environment (launchers/verl/make_venv.sh)")


def verl_venv() -> Path:
    return Path(os.environ.get("HARNESS_VERL_VENV") or DEFAULT_VENV)


@pytest.fixture(scope="session")
def verl_python() -> Path:
    python = verl_venv() / "bin" / "python"
    if not python.is_file():
        message = (f"no verl environment at {verl_venv()}: run launchers/verl/make_venv.sh "
                   f"(or set HARNESS_VERL_VENV)")
        if os.environ.get("HARNESS_VERL_TESTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return python


@pytest.fixture(scope="session")
def run_verl_side(verl_python, tmp_path_factory):
    """Run tests/verl/verl_side/<script> in the verl environment; returns its JSON output file, parsed."""

    def run(script: str, *args: str, timeout: float = 900):
        out = tmp_path_factory.mktemp("verl_side") / "out.json"
        env = {**os.environ, "PYTHONPATH": f"{REPO}:{VERL_SIDE}", "PYTHONHASHSEED": "0"}
        env.pop("HARNESS_VERL_OBJECTIVE", None)
        proc = subprocess.run([str(verl_python), str(VERL_SIDE / script), *args, str(out)], cwd=VERL_SIDE,
                              env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text())

    return run
