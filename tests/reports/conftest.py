"""Fixtures for the report tests: two real tiny sweeps (run once per session), their reports, and
synthetic MLflow stores written with `harness.reports.results.synthetic`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

QUICK = ("debug=quick", "trainer.steps=4")
# A δ sweep (sensitivity, geometry, overview, stability) and an α × anchor × precision sweep
# (alpha_relaxation, anchor_ablation, stability): 8 + 8 jobs of a few tenths of a second each.
SWEEPS = {
    "delta": ("algo=dppo,drpo", "delta=0.1,0.2", "seed=0,1"),
    "alpha": ("algo=grpo", "alpha=0.0,0.3", "anchor=rollout,recompute", "precision=fp32,bf16"),
}


def _start_sweep(root: Path, cache: Path, args) -> subprocess.Popen:
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "harness", "multirun", *args, *QUICK, f"cache_dir={cache}"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="session")
def real_sweeps(tmp_path_factory, warm_cache) -> dict:
    """{name: sweep folder} of two real quick sweeps, run side by side, each with its own output root
    (`<root>/multirun/<date>/<time>`, store `<root>/mlruns.db`)."""
    base = tmp_path_factory.mktemp("report_sweeps")
    procs = {name: _start_sweep(base / name, warm_cache, args) for name, args in SWEEPS.items()}
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"sweep {SWEEPS[name]} failed:\n{stdout[-2000:]}\n{stderr[-4000:]}"
        (out[name],) = (base / name).glob("multirun/*/*")
    return out


@pytest.fixture(scope="session")
def built(real_sweeps) -> dict:
    """The reports of both sweeps, built once through the sweep-end entry point."""
    from harness.reports import build_sweep_reports

    return {name: build_sweep_reports(real_sweeps[name]) for name in SWEEPS}


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory):
    """One SQLite MLflow store for the synthetic-sweep tests (each uses its own sweep id): creating a
    store runs MLflow's schema migrations, a second or more each."""
    folder = tmp_path_factory.mktemp("synthetic_store")
    return f"sqlite:///{folder / 'mlruns.db'}", folder
