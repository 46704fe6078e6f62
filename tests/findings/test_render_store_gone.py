"""`findings --render` of claim sweeps whose tracking store is gone or is not a database: one line naming the sweep
and the store, exit 2, nothing written (issue #50, case 15). The command line in a real process, a real store."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.reports.results.synthetic import FakeRun, write_sweep

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
@pytest.mark.parametrize("fault", ["deleted", "not a database"])
def test_render_without_its_store_is_one_line(tmp_path, fault):
    store = tmp_path / "mlruns.db"
    folder = tmp_path / "multirun" / "claim1_sanity" / "2026-06-06_00-00-00"
    (folder / "0").mkdir(parents=True)
    ids = write_sweep(f"sqlite:///{store}", [FakeRun(objective="dppo", seed=0)], sweep_id="claim1_sanity/2026-06-06",
                      parent=True)
    (folder / "parent_run.json").write_text(json.dumps({"run_id": ids["parent_id"], "tracking_uri": f"sqlite:///{store}",
                                                        "experiment_id": ids["experiment_id"]}))
    if fault == "deleted":
        store.unlink()
        said = f"no MLflow store at {store}"
    else:
        store.write_bytes(b"not a database " * 100)
        said = f"{store} is not a SQLite database"
    out = tmp_path / "findings"
    done = subprocess.run([sys.executable, "-m", "harness", "findings", "--render", str(folder), "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr[-3000:]
    line, = done.stderr.splitlines()
    assert line.startswith(f"harness: error: findings --render: cannot read the runs of {folder}: ") and said in line
    assert not out.exists()
