"""The MLflow tracker's background metrics writer: steps are queued by `log_metrics`, sent in order as few
store calls (`_log_steps`: sqlite3 or `log_batch`), and all in the store after `flush()` / `finish()`; when
the store is away they are spooled."""
from __future__ import annotations

import json
import time

import pytest
from mlflow.tracking import MlflowClient

from harness.tracking.spool import Spool
from harness.tracking.store import get_or_create_experiment
from harness.tracking.tracker import MlflowTracker, RunSpec, metrics_interval


def _tracker(tmp_path, uri):
    spec = RunSpec(tracking_uri=uri, experiment_name="async", run_name="r", params={"p": "1"}, tags={})
    return MlflowTracker(tmp_path / "run", spec,
                         experiment_id=lambda: get_or_create_experiment(MlflowClient(uri), "async", None))


def test_steps_are_queued_then_flushed_in_few_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "30")  # nothing is sent before the flush
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    tracker = _tracker(tmp_path, uri)
    calls = []
    log_steps = tracker._log_steps
    monkeypatch.setattr(tracker, "_log_steps", lambda steps: (calls.append(steps), log_steps(steps))[1])
    tracker.log_metrics({f"m/{k}": 1 + k / 100 for k in range(30)}, step=1)
    deadline = time.time() + 30
    while not calls and time.time() < deadline:  # the first step goes at once
        time.sleep(0.01)
    assert len(calls) == 1
    for step in range(2, 41):
        tracker.log_metrics({f"m/{k}": step + k / 100 for k in range(30)}, step=step)
    time.sleep(0.3)
    assert len(calls) == 1, "the next steps wait for the interval (or a flush)"
    tracker.flush()
    assert len(calls) == 3, "39 steps x 30 metrics: at most 1000 metrics per call"
    assert sum(len(values) for steps in calls for _, _, values in steps) == 40 * 30
    client = MlflowClient(uri)
    run = client.get_run(tracker.run_id)
    assert run.data.tags["harness.step"] == "40"
    assert [m.step for m in client.get_metric_history(tracker.run_id, "m/3")] == list(range(1, 41))
    tracker.log_metrics({"m/0": 1.0}, step=41)
    tracker.finish("FINISHED")
    assert MlflowClient(uri).get_run(tracker.run_id).info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(tracker.run_id, "m/0")][-1] == 41
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, 42)), "metrics.jsonl is synchronous"


def test_steps_queued_during_an_outage_are_spooled(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "0")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    tracker = _tracker(tmp_path, uri)

    def away(*args, **kwargs):
        raise ConnectionError("store away")

    monkeypatch.setattr(tracker, "_log_steps", away)
    for step in range(1, 6):
        tracker.log_metrics({"m": float(step)}, step=step)
    tracker.flush()
    assert tracker.offline
    spooled = [op["step"] for _, op in Spool(tmp_path / "run" / "spool").ops() if op["op"] == "metrics"]
    assert spooled == [1, 2, 3, 4, 5]


def test_the_interval_setting_is_checked(monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "soon")
    with pytest.raises(ValueError, match="HARNESS_METRICS_INTERVAL_S='soon' is not allowed"):
        metrics_interval()
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "0.5")
    assert metrics_interval() == 0.5
