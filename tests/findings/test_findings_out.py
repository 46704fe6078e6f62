"""`findings --out DIR` as `report --out DIR` (issue 50, case 3): never over a FINDINGS.md that `findings` did
not write (a user's own page of that name), refused in one line with the page left as it was; a folder
holding an earlier findings page is rendered again. A real (empty) MLflow store and claim sweep folder."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # the command line in subprocesses, real runs or pages (fast loop: README)


def _findings(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "findings", *args], cwd=root, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HARNESS_OUTPUT_ROOT": str(root)})


def test_findings_never_overwrites_a_users_own_findings_page(tmp_path):
    from mlflow.tracking import MlflowClient

    MlflowClient(f"sqlite:///{tmp_path / 'mlruns.db'}").create_experiment("harness")
    sweep = tmp_path / "multirun" / "claim1_sanity" / "2026-01-01_00-00-00"
    sweep.mkdir(parents=True)
    mine = tmp_path / "notes" / "FINDINGS.md"
    mine.parent.mkdir()
    mine.write_text("# My findings\n\nthree weeks of notes\n")
    refused = _findings(tmp_path, "--render", str(sweep), "--out", str(mine.parent))
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("harness: error: findings: --out ") and "did not write" in line, line
    assert mine.read_text() == "# My findings\n\nthree weeks of notes\n"
    rendered = tmp_path / "rendered"
    for _ in range(2):  # a new folder, then the same folder again: findings' own page is rendered anew
        again = _findings(tmp_path, "--render", str(sweep), "--out", str(rendered))
        assert again.returncode == 0, again.stderr[-2000:]
    assert (rendered / "FINDINGS.md").read_text().startswith("# Findings at toy scale")
