"""Sweeps: a failing job does not take down the others, the exit code says so, and the sweep's parent run is
FAILED. (A sweep's shape, every job tracked under one parent: tests/tracking/test_tracking_sweep.py and the
README's main job, tests/e2e/test_main_command.py.)"""
from __future__ import annotations

import json
import subprocess
import sys

from mlflow_store import runs_of


def test_a_failing_job_is_reported_and_the_others_finish(run_harness):
    proc = run_harness("-m", "model.path=null,/nonexistent/checkpoint", "debug=quick")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "1 finished, 1 failed" in proc.stdout
    assert "/nonexistent/checkpoint" in proc.stdout
    client, runs = runs_of(run_harness.root)
    by_status = sorted(r.info.status for r in runs)
    assert by_status == ["FAILED", "FINISHED"]
    failed = next(r for r in runs if r.info.status == "FAILED")
    assert "error.txt" in [a.path for a in client.list_artifacts(failed.info.run_id)]
    _, parents = runs_of(run_harness.root, role="parent")
    assert [p.info.status for p in parents] == ["FAILED"]
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}


RETURNED = """
import json, sys
from hydra_plugins.harness_launcher.app import run_hydra

def shape(returned):
    if isinstance(returned, list):
        return [shape(item) for item in returned]
    value = returned.return_value
    return [type(returned).__name__, returned.status.name, type(value).__name__, value.status, value.name]

print("RETURNED " + json.dumps(shape(run_hydra(sys.argv[1:]))))
"""


def _returned(run_harness, *args: str):
    proc = subprocess.run([sys.executable, "-c", RETURNED, *run_harness.argv(*args)[3:]], cwd=run_harness.root,
                          env=run_harness.env(), capture_output=True, text=True, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RETURNED ")), None)
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    return json.loads(line[len("RETURNED "):])


def test_results_come_back_as_what_the_run_or_sweep_returned(run_harness):
    """Each job's JobResult travels in its JobReturn from the workers, `launch()` returns them, the sweeper returns
    them (one list per batch) and Hydra's multirun hands them to the caller; a run returns its JobReturn."""
    sweep = _returned(run_harness, "--multirun", "launcher=local_parallel", "launcher.workers=2",
                      "model.path=null,/nonexistent/checkpoint", "debug=quick")
    assert sweep == [[["JobReturn", "COMPLETED", "JobResult", "FINISHED", "model.path=null,debug=quick"],
                      ["JobReturn", "COMPLETED", "JobResult", "FAILED", "model.path=/nonexistent/checkpoint,debug=quick"]]]
    run = _returned(run_harness, "model.path=/nonexistent/checkpoint", "debug=quick")
    assert run == ["JobReturn", "COMPLETED", "JobResult", "FAILED", "model.path=/nonexistent/checkpoint,debug=quick"]
