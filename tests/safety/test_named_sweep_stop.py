"""A named sweep stopped with Ctrl-C ends truthfully (issue 37: its grids run in its own process, under one
session): the run in progress is KILLED, a later grid never starts, the sweep's parent run is closed KILLED, and
the command says so in one line with exit code 130 - no traceback (when each grid was a child `multirun`, the
named sweep's own process died of the KeyboardInterrupt with a traceback, the parent run left to `repair`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from processes import wait_for

SWEEP = ("hypothesis: a stopped named sweep\nreports: [overview]\n"
         "overrides: [debug=quick, trainer.steps=200, trainer.eval_every=50, trainer.checkpoint_every=2]\n"
         "grids:\n  - {algo: dppo}\n  - {algo: drpo}\n")


def checkpointed(root: Path) -> bool:
    """The first grid's run has saved a checkpoint after step 0 (it is training)."""
    for meta in root.glob("multirun/stopped/*/g0_0/checkpoints/last.json"):
        try:
            return json.loads(meta.read_text())["step"] >= 2
        except (OSError, ValueError, KeyError):  # being replaced
            return False
    return False


def test_ctrl_c_stops_a_named_sweep_in_one_line(run_harness, tmp_path):
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "stopped.yaml").write_text(SWEEP)
    driver = subprocess.Popen(run_harness.argv("sweep", "stopped"), cwd=tmp_path,
                              env=run_harness.env({"HARNESS_SWEEPS": str(sweeps)}), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert wait_for(lambda: checkpointed(tmp_path) or driver.poll() is not None, 400), "no run started"
        assert driver.poll() is None, f"the sweep ended first:\n{driver.communicate()[1][-3000:]}"
        os.killpg(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    stopped = [line for line in err.splitlines() if line.startswith("harness: stopped:")]
    assert stopped == ["harness: stopped: interrupted (Ctrl-C); its runs in progress are recorded as KILLED"], err
    (folder,) = tmp_path.glob("multirun/stopped/*")
    assert (folder / "g0_0" / "status.txt").read_text().strip() == "KILLED"
    assert not (folder / "g1_0").exists(), "the second grid started after Ctrl-C"
    from mlflow.tracking import MlflowClient

    parent = json.loads((folder / "parent_run.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert client.get_run(parent["run_id"]).info.status == "KILLED"
