"""The MLflow tracker's metrics go through MLflow's asynchronous logging: steps are kept by `log_metrics`,
handed to `log_batch(..., synchronous=False)` in order as few calls, and all in the store after `flush()` /
`finish()`; a call the store refuses skips only the refused step; when the store is away they are spooled."""
from __future__ import annotations

import json
import logging
import time

import pytest
from mlflow.tracking import MlflowClient

from harness.tracking.spool import Spool
from harness.tracking.store import get_or_create_experiment
from harness.tracking.metric_batches import metrics_interval
from harness.tracking.tracker import MlflowTracker, RunSpec


def _tracker(tmp_path, uri):
    spec = RunSpec(tracking_uri=uri, experiment_name="async", run_name="r", params={"p": "1"}, tags={})
    return MlflowTracker(tmp_path / "run", spec,
                         experiment_id=lambda: get_or_create_experiment(MlflowClient(uri), "async", None))


def _spy_on_log_batch(tracker, monkeypatch) -> list:
    """Record the metrics calls the tracker makes (the real calls still happen)."""
    calls = []
    real = tracker.client.log_batch

    def log_batch(run_id, metrics=(), *args, **kwargs):
        if metrics:
            calls.append((kwargs.get("synchronous"), sorted({m.step for m in metrics}), len(metrics)))
        return real(run_id, metrics, *args, **kwargs)

    monkeypatch.setattr(tracker.client, "log_batch", log_batch)
    return calls


def test_steps_are_kept_then_sent_asynchronously_in_few_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "30")  # nothing is sent before the flush
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    tracker = _tracker(tmp_path, uri)
    calls = _spy_on_log_batch(tracker, monkeypatch)
    tracker.log_metrics({f"m/{k}": 1 + k / 100 for k in range(30)}, step=1)
    assert calls == [(False, [1], 30)], "the first step goes at once, asynchronously"
    for step in range(2, 41):
        tracker.log_metrics({f"m/{k}": step + k / 100 for k in range(30)}, step=step)
    time.sleep(0.3)
    assert len(calls) == 1, "the next steps wait for the interval (or a flush)"
    tracker.flush()
    assert [c[0] for c in calls] == [False] * 3, "39 steps x 30 metrics: at most 999 metrics per call"
    assert [s for c in calls for s in c[1]] == list(range(1, 41)) and sum(c[2] for c in calls) == 40 * 30
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


def test_a_refused_step_is_skipped_and_the_others_recorded(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "30")
    caplog.set_level(logging.WARNING, logger="harness")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    tracker = _tracker(tmp_path, uri)
    for step in range(1, 7):  # step 1 alone, steps 2-6 in one asynchronous call that the store refuses
        tracker.log_metrics({"m": float(step), **({"bad key!?": 1.0} if step == 4 else {})}, step=step)
    tracker.flush()
    assert not tracker.offline, "a refused record is not an outage"
    assert [m.step for m in MlflowClient(uri).get_metric_history(tracker.run_id, "m")] == [1, 2, 3, 5, 6]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "refused" in warnings[0], warnings
    tracker.finish("FINISHED")


def test_steps_queued_during_an_outage_are_spooled(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "0")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    tracker = _tracker(tmp_path, uri)

    def away(*args, **kwargs):
        raise ConnectionError("store away")

    monkeypatch.setattr(tracker.client, "log_batch", away)
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
