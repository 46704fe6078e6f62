"""Sweeps: a failing job does not take down the others, the exit code says so, and the sweep's parent run is
FAILED. (A sweep's shape, every job tracked under one parent: tests/tracking/test_tracking_sweep.py and the
README's main job, tests/e2e/test_main_command.py.)"""
from __future__ import annotations

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
