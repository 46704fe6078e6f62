"""The README's main command, exactly as written, on the embedded default: six FINISHED runs in MLflow
with the right objective and δ, per-step metrics, and learning (eval accuracy well above the warm start)."""
from __future__ import annotations

import pytest

from mlflow_store import runs_of

pytestmark = pytest.mark.slow


def test_main_command_runs_six_learning_runs(run_harness):
    proc = run_harness("multirun", "algo=dppo,drpo", "delta=0.1,0.15,0.2", check=True, timeout=1800)
    assert "6 runs: 6 finished" in proc.stdout
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 6 and all(r.info.status == "FINISHED" for r in runs)
    _, parents = runs_of(run_harness.root, role="parent")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert sorted((r.data.params["algo.name"], float(r.data.params["algo.delta"])) for r in runs) == sorted(
        (a, d) for a in ("dppo", "drpo") for d in (0.1, 0.15, 0.2))
    for run in runs:
        history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "eval/accuracy"))
        assert history[0][0] == 0 and history[-1][0] == 60
        start, end = history[0][1], history[-1][1]
        assert end >= start + 0.15, (run.data.params["algo.name"], run.data.params["algo.delta"], start, end)
        assert len(client.get_metric_history(run.info.run_id, "train/reward")) == 60
