"""The reports' one direct read of MLflow's tables (harness/reports/results/history_sql.py) is used only for a store
whose schema revision it was checked against; any other store is read through MLflow's public API, with
the same histories."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from harness.reports.results import history_sql
from harness.reports.results.collect import collect
from harness.reports.results.locate import Target
from harness.reports.results.synthetic import FakeRun, write_sweep

SWEEP = "2026-05-05/00-00-00-000000"


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    write_sweep(uri, [FakeRun("dppo", {"delta": 0.1}, seed=s) for s in (0, 1)], SWEEP, steps=10, eval_every=5)
    return uri, tmp_path / "mlruns.db"


def _revision(db) -> str:
    with sqlite3.connect(db) as con:
        return history_sql.schema_revision(con)


def test_the_installed_mlflow_schema_is_read_with_one_query(store):
    import mlflow

    uri, db = store
    revision = _revision(db)
    if revision not in history_sql.KNOWN_REVISIONS:
        pytest.skip(f"MLflow {mlflow.__version__}'s store revision {revision} is not checked yet: reports read it "
                    "through the public API until it is added to history_sql.KNOWN_REVISIONS")
    data = collect(Target(SWEEP, uri, [], []))
    assert "one SQL query" in data.source and len(data.series) > 10


def test_an_unknown_schema_revision_is_read_through_the_public_api(store, monkeypatch):
    uri, db = store
    monkeypatch.setattr(history_sql, "KNOWN_REVISIONS", frozenset({_revision(db)}))
    direct = collect(Target(SWEEP, uri, [], []))
    monkeypatch.setattr(history_sql, "KNOWN_REVISIONS", frozenset({"0000000000ff"}))  # a future MLflow's store
    with pytest.raises(history_sql.UnknownSchema, match="revision"):
        history_sql.read_histories(db, [r.run_id for r in direct.runs])
    fallback = collect(Target(SWEEP, uri, [], []))
    assert "one SQL query" in direct.source and "one request per run and metric" in fallback.source
    assert not fallback.notes, "an unknown schema is expected, not a failure"
    assert direct.series.keys() == fallback.series.keys()
    for key, (steps, values) in direct.series.items():
        assert np.array_equal(steps, fallback.series[key][0]) and np.array_equal(values, fallback.series[key][1])
