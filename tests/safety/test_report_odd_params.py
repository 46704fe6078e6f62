"""A run whose threshold is not a number in the store (`algo.delta=abc`: MLflow keeps params as strings, and
another tool or a hand may write one) is left out of the reports and named in one line; the report kinds do not
fail with a TypeError, `report` exits 0, and no verdict of an earlier build is printed as this one's (issue #50,
case 14). A real MLflow store, `report` in a real process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.reports.results.synthetic import FakeRun, write_sweep

SWEEP = "2026-05-05/00-00-00-000000"
REPO = Path(__file__).resolve().parents[2]
STEPS = np.arange(0, 21, 5)
CURVES = {"eval/accuracy": (STEPS, [0.3, 0.4, 0.5, 0.6, 0.6]), "train/accuracy": (STEPS, [0.3, 0.4, 0.5, 0.6, 0.6])}


def _report(uri: str, out: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(cwd), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "harness", "report", SWEEP, "--tracking-uri", uri, "--out", str(out)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # two reports built by the command line in real processes
def test_a_threshold_that_is_not_a_number_is_one_line_and_left_out(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    write_sweep(uri, [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)],
                sweep_id=SWEEP)
    out = tmp_path / "reports"
    first = _report(uri, out, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    verdicts = first.stdout[first.stdout.index("verdicts:"):]
    # the same sweep, one more run: its δ is a word
    odd = write_sweep(uri, [FakeRun(objective="dppo", seed=9, params={"algo.delta": "abc"}, metrics=CURVES)],
                      sweep_id=SWEEP)["run_ids"][0]
    again = _report(uri, out, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Traceback" not in again.stdout + again.stderr and "FAILED" not in again.stdout + again.stderr
    line, = again.stderr.splitlines()
    assert line.startswith("harness report: warning: run ") and line.endswith(
        f"({odd[:8]}): algo.delta='abc' is not a number; left out of every report"), line
    assert "sensitivity        " in again.stdout and "geometry           " in again.stdout
    assert again.stdout[again.stdout.index("verdicts:"):] == verdicts  # the 6 runs' verdicts, computed again
    page = (out / "sensitivity" / "summary.md").read_text()
    assert "algo.delta='abc' is not a number; left out of every report" in page


def test_the_verdicts_of_a_kind_that_failed_are_not_this_builds(tmp_path, monkeypatch):
    """A kind that fails leaves its earlier page in the folder; its verdicts are not gathered as this build's."""
    from harness.reports.rendering import build
    from harness.reports.rendering.registry import ReportKind
    from harness.reports.results.locate import resolve

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    write_sweep(uri, [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)],
                sweep_id=SWEEP)
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    out = tmp_path / "reports"
    kinds = ["overview", "sensitivity"]
    before = build.build_reports(resolve(SWEEP, uri, None, out), kinds)
    assert [v.report for v in before.verdicts] == ["sensitivity"]
    real = build.get_kind

    def failing(name):  # the sensitivity kind, broken by a bug of its own
        kind = real(name)
        if name != "sensitivity":
            return kind

        def broken(data, page):
            raise TypeError("'<' not supported between instances of 'str' and 'float'")
        return ReportKind(kind.name, kind.title, kind.needs, broken)

    monkeypatch.setattr(build, "get_kind", failing)
    after = build.build_reports(resolve(SWEEP, uri, None, out), kinds)
    assert list(after.failed) == ["sensitivity"] and after.verdicts == []
    assert (out / "sensitivity" / "index.html").is_file()  # the earlier page is still there, not read as this build's
