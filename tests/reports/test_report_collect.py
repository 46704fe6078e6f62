"""Collecting a sweep: bulk SQL = per-request client = REST bulk endpoint; parents, targets, fallbacks."""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from harness.reports.results.collect import collect
from harness.reports.results.locate import Target, TargetError, from_sweep_dir, resolve
from harness.reports.results.synthetic import FakeRun, write_sweep

SWEEP = "2026-04-04/00-00-00-000000"


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key][0], b[key][0]), key
        np.testing.assert_array_equal(a[key][1], b[key][1], err_msg=str(key))


def _awkward_runs():
    loss = ([1, 2, 3, 4], [0.5, math.inf, math.nan, -math.inf])
    return [FakeRun("dppo", {"delta": 0.1}, seed=0),
            FakeRun("drpo", {"delta": 0.2}, seed=1, status="FAILED", metrics={"train/loss": loss},
                    error="Traceback (most recent call last):\n  File x\n"
                          "FloatingPointError: non-finite loss nan at step 3"),
            FakeRun("spo", {"eps": 0.5}, seed=0, status="RUNNING", stop_at=6)]


def test_sql_and_client_collectors_agree_and_restore_non_finite_values(shared_store):
    sweep = SWEEP[:-1] + "1"
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    uri, _ = shared_store
    ids = write_sweep(uri, _awkward_runs(), sweep, steps=10, eval_every=5)["run_ids"]
    # a step logged twice (a resumed run): the later value wins
    MlflowClient(uri).log_batch(ids[0], metrics=[Metric("train/reward", 0.123, 1_900_000_000_000, 3),
                                                 Metric("perf/step_time_s", 0.5, 1_900_000_000_000, 3)])
    bulk = collect(Target(sweep, uri, [], []))
    naive = collect(Target(sweep, uri, [], []), history="client")
    assert "one SQL query" in bulk.source and "one request per run" in naive.source
    _same(bulk.series, naive.series)
    steps, values = bulk.curve(ids[1], "train/loss")
    assert steps.tolist() == [1, 2, 3, 4] and values[0] == 0.5 and values[1] == math.inf
    assert math.isnan(values[2]) and values[3] == -math.inf
    steps, values = bulk.curve(ids[0], "train/reward")
    assert values[steps.tolist().index(3)] == 0.123
    assert [r.status for r in bulk.runs] == ["FINISHED", "FAILED", "RUNNING"]
    assert bulk.runs[1].error == "FloatingPointError: non-finite loss nan at step 3"
    keys = {k for _, k in bulk.series}
    assert "perf/step_time_s" not in keys and len(keys) == 22  # train/, eval/, objective/ only


def test_parent_run_is_separated_and_found_by_id(shared_store):
    uri, _ = shared_store
    sweep = SWEEP[:-1] + "2"
    out = write_sweep(uri, [FakeRun("dppo", {"delta": d}) for d in (0.1, 0.2)], sweep, parent=True)
    data = collect(Target(sweep, uri, [], []))
    assert data.parent.run_id == out["parent_id"] and len(data.runs) == 2
    by_parent = collect(resolve(out["parent_id"], tracking_uri=uri))
    assert by_parent.sweep_id == sweep and {r.run_id for r in by_parent.runs} == set(out["run_ids"])


def test_sweep_folder_target_reads_parent_json_then_job_config(tmp_path, shared_store):
    uri, _ = shared_store
    sweep = tmp_path / "out" / "multirun" / "2026-04-04" / "00-00-00-000000"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "config.yaml").write_text("tracking:\n  backend: mlflow\n  uri: null\n  experiment: null\n"
                                             "experiment_name: mine\noutput_root: .\n")
    target = from_sweep_dir(sweep)
    assert target.sweep_id == SWEEP and target.experiment_names == ["mine"]
    assert target.tracking_uri == f"sqlite:///{tmp_path / 'out' / 'mlruns.db'}"  # relative root: above multirun/
    assert target.out_dir == sweep / "reports"
    (sweep / "parent_run.json").write_text(json.dumps({"run_id": "a" * 32, "tracking_uri": uri, "experiment_id": "7"}))
    target = from_sweep_dir(sweep)
    assert (target.parent_run_id, target.tracking_uri, target.experiment_ids) == ("a" * 32, uri, ["7"])


def test_bad_targets_say_what_is_allowed(tmp_path, monkeypatch, shared_store):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    with pytest.raises(TargetError, match="not a sweep folder, a sweep id"):
        resolve("no-such-thing")
    with pytest.raises(TargetError, match="no MLflow store"):
        resolve(SWEEP)
    missing = tmp_path / "nowhere" / "mlruns.db"
    with pytest.raises(TargetError, match="no MLflow store at"):
        collect(Target(SWEEP, f"sqlite:///{missing}", [], []))
    assert not missing.exists()  # looking did not create a store
    uri, _ = shared_store
    write_sweep(uri, [FakeRun()], SWEEP[:-1] + "3")
    with pytest.raises(TargetError, match="experiment .nope. not found.*known: Default, harness"):
        collect(resolve(SWEEP[:-1] + "3", tracking_uri=uri, experiment="nope"))


def test_job_folders_are_read_when_mlflow_has_nothing(tmp_path):
    from harness.reports import build_sweep_reports

    sweep = tmp_path / "multirun" / "2026-04-04" / "00-00-00-000000"
    for job, (algo, status) in zip(("g0_0", "g1_0"), [("dppo", "FINISHED"), ("drpo", "FAILED")]):
        folder = sweep / job  # a named sweep's job folders (grid g0, g1)
        (folder / ".hydra").mkdir(parents=True)
        (folder / "config.yaml").write_text(f"algo:\n  name: {algo}\n  delta: 0.1\nprecision:\n  name: fp32\n"
                                            "seed: 0\ntracking:\n  backend: none\n")
        (folder / ".hydra" / "overrides.yaml").write_text(f"- algo={algo}\n")
        (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "eval/accuracy": 0.1 * s}) + "\n"
                                                      for s in range(3)) + '{"step": 3, "eval/acc')
        (folder / "status.txt").write_text(status + "\n")
    (sweep / "g1_0" / "error.txt").write_text("Traceback (most recent call last):\nValueError: boom\n")
    paths = build_sweep_reports(sweep)
    assert sweep / "reports" / "overview" / "index.html" in paths
    page = (sweep / "reports" / "overview" / "summary.md").read_text()
    assert "ValueError: boom" in page and "algo=drpo" in page and "local job folders" in page
    assert "not tracked in MLflow" in page


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# MLflow's own REST handlers (the Flask app that `mlflow server` mounts), without uvicorn and the job
# runner: a couple of seconds to start instead of ten or more on a busy machine.
SERVER = """
from mlflow.server import app
from werkzeug.serving import run_simple
run_simple("127.0.0.1", {port}, app, threaded=True)
"""


@pytest.mark.slow
def test_rest_bulk_endpoint_matches_the_client(tmp_path):
    """Against MLflow's REST handlers: ceil(runs/100) requests per metric, same histories as the client."""
    port = _free_port()
    env = {**os.environ, "_MLFLOW_SERVER_FILE_STORE": f"sqlite:///{tmp_path / 'srv.db'}",
           "_MLFLOW_SERVER_ARTIFACT_ROOT": str(tmp_path / "art"), "_MLFLOW_SERVER_SERVE_ARTIFACTS": "false"}
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(port=port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "MLflow REST server did not start"
                time.sleep(0.25)
        ids = write_sweep(uri, _awkward_runs(), SWEEP, steps=10, eval_every=5)["run_ids"]
        bulk = collect(Target(SWEEP, uri, [], []))
        assert "bulk metric-history" in bulk.source and not bulk.notes
        _same(bulk.series, collect(Target(SWEEP, uri, [], []), history="client").series)
        assert bulk.curve(ids[1], "train/loss")[1][1] == math.inf
        assert bulk.runs[1].error.startswith("FloatingPointError")
    finally:
        server.terminate()
        server.wait(timeout=30)
