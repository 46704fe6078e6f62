"""Sweeps: every job tracked; a failing job does not take down the others and the exit code says so."""
from __future__ import annotations

from mlflow_store import runs_of


def test_main_sweep_shape_runs_six_jobs(run_harness):
    proc = run_harness("multirun", "algo=dppo,drpo", "delta=0.1,0.15,0.2", "debug=quick", check=True)
    assert "6 runs: 6 finished, 0 failed" in proc.stdout
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 6 and all(r.info.status == "FINISHED" for r in runs)
    seen = sorted((r.data.params["algo.name"], float(r.data.params["algo.delta"])) for r in runs)
    assert seen == sorted((a, d) for a in ("dppo", "drpo") for d in (0.1, 0.15, 0.2))
    for r in runs:
        assert len(client.get_metric_history(r.info.run_id, "train/reward")) == 12  # debug=quick: 12 steps
    assert len({r.data.tags["harness.sweep_id"] for r in runs}) == 1


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
