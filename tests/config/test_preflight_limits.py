"""Preflight holes closed (issue #25): an override given twice, environment knobs that are not numbers, an
MLFLOW_TRACKING_URI of a scheme tracking.uri refuses, a grid too large to be meant (counted, not expanded),
and a built-in model or rollout that cannot fit in this machine's memory. Each: one line, exit 2, nothing
created."""
from __future__ import annotations

import time

import pytest

from harness.cli import run_cli
from harness.config.limits import MAX_JOBS_ENV
from harness.config.memory import machine_memory_bytes

CASES = [
    (["seed=1", "seed=2"], {}, ["seed is given twice", "seed=1", "seed=2"]),
    (["multirun", "algo=dppo", "algo=drpo"], {}, ["algo is given twice"]),
    (["model.hidden_size=1000000000"], {}, ["model.hidden_size=1000000000", "GiB", "more than this machine's"]),
    (["trainer.max_new_tokens=100000000"], {}, ["trainer.max_new_tokens=100000000", "key/value cache"]),
    (["multirun", "seed=range(0,100000)"], {}, ["100,000 jobs", "seed: 100,000", "--yes"]),
    (["multirun", "seed=range(0,1000000000000)", "algo=dppo,drpo"], {}, ["2,000,000,000,000 jobs"]),
    (["multirun", "seed=range(0,200)"], {MAX_JOBS_ENV: "100"}, ["200 jobs", "more than 100"]),
    (["debug=quick"], {"HARNESS_HEARTBEAT_S": "abc"}, ["HARNESS_HEARTBEAT_S='abc'", "seconds > 0"]),
    (["debug=quick"], {"HARNESS_METRICS_INTERVAL_S": "-1"}, ["HARNESS_METRICS_INTERVAL_S='-1'", ">= 0"]),
    (["debug=quick"], {"HARNESS_METRICS_INTERVAL_S": "nan"}, ["HARNESS_METRICS_INTERVAL_S='nan'"]),
    (["debug=quick"], {"MLFLOW_HTTP_REQUEST_TIMEOUT": "soon"}, ["MLFLOW_HTTP_REQUEST_TIMEOUT='soon'", "integer"]),
    (["debug=quick"], {"HARNESS_LOG_LEVEL": "LOUD"}, ["HARNESS_LOG_LEVEL='LOUD'", "INFO"]),
    (["debug=quick"], {"MLFLOW_TRACKING_URI": "ftp://host/x"}, ["MLFLOW_TRACKING_URI='ftp://host/x'", "scheme 'ftp'"]),
]


@pytest.fixture(scope="module")
def hydra_imported():
    from harness.launchers.compose import compose

    compose([])


@pytest.mark.parametrize("argv, env, expected", CASES, ids=[" ".join(a) + str(e) for a, e, _ in CASES])
def test_refused_in_one_line_before_anything_exists(argv, env, expected, capsys, tmp_path, monkeypatch,
                                                    hydra_imported):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    started = time.thread_time()  # this thread's: other threads left by earlier tests in this process don't count
    assert run_cli(argv) == 2
    assert time.thread_time() - started < 2.0, "counted, not expanded or composed"
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert list(tmp_path.iterdir()) == []


def test_yes_lets_a_large_grid_through_the_count(capsys, tmp_path, monkeypatch, hydra_imported):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.setenv(MAX_JOBS_ENV, "3")
    # past the count, the grid's first bad job is what is refused: the grid was let through
    assert run_cli(["multirun", "--yes", "seed=range(0,4)", "trainer.steps=0"]) == 2
    assert "trainer.steps=0" in capsys.readouterr().err


def test_a_shape_that_fits_is_accepted(capsys, monkeypatch, hydra_imported):
    from harness.launchers.compose import preflight

    spec, = preflight(["model.hidden_size=256", "model.num_layers=4", "trainer.max_new_tokens=64"], False)
    assert spec.model.hidden_size == 256 and machine_memory_bytes() > 2**30
