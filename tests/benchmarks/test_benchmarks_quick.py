"""The benchmark suite's pipeline: `python benchmarks/run.py --quick` runs every benchmark and reports every
figure as a finite ratio or an explicit skip with its reason (the targets themselves are not checked)."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "benchmarks" / "run.py"


def _runner():
    spec = importlib.util.spec_from_file_location("bench_runner", RUNNER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quick_suite_reports_every_figure(tmp_path):
    out = tmp_path / "quick.json"
    proc = subprocess.run([sys.executable, str(RUNNER), "--quick", "--json", str(out),
                           "--cache-dir", str(tmp_path / "cache")],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (f"run.py --quick exited {proc.returncode}:\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    report = json.loads(out.read_text())
    assert report["mode"] == "quick"
    expected = [name for bench in _runner().BENCHMARKS.values() for name in bench.figures]
    figures = {f["name"]: f for f in report["figures"]}
    assert sorted(figures) == sorted(expected)
    for name, f in figures.items():
        assert not f.get("error"), f"{name}: {f['error']}"
        if f.get("skipped"):
            assert isinstance(f["skipped"], str) and f["skipped"].strip(), f"{name}: a skip needs a reason"
        else:
            assert isinstance(f["ratio"], float) and math.isfinite(f["ratio"]) and f["ratio"] > 0, f"{name}: {f}"
            assert f["baseline"], f"{name}: no baseline described"
            assert f["pass"] in (True, False, None)
    assert "figure" in proc.stdout and "ratio" in proc.stdout  # the table was printed


def test_runner_refuses_an_unknown_benchmark():
    proc = subprocess.run([sys.executable, str(RUNNER), "--only", "nope"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "nope" in proc.stderr and "trainer_vs_trl" in proc.stderr


def test_figure_verdicts():
    run = _runner()
    assert run.figure("x", 2.5, ">= 2.0", "b")["pass"] is True
    assert run.figure("x", 0.05, "<= 0.03", "b")["pass"] is False
    assert run.figure("x", 1.0, None, "b")["pass"] is None
    assert run.skipped("x", "why", ">= 2.0", "b")["ratio"] is None
