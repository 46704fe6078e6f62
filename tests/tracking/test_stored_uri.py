"""Store URIs on disk are masked; a later process gets the full URI back from what it was given or from
MLFLOW_TRACKING_URI, and says in one line what to give when it has neither."""
from __future__ import annotations

import json

import pytest

from harness.tracking.stored_uri import UriNeeded, on_disk, reconnect, same_store

FULL = "postgresql://alice:s3cret-pw@db.example:5432/mlflow"
STORED = "postgresql://alice:***@db.example:5432/mlflow"


def test_the_password_never_reaches_the_disk_form():
    assert on_disk(FULL) == STORED
    assert on_disk("sqlite:////tmp/x/mlruns.db") == "sqlite:////tmp/x/mlruns.db"


def test_reconnect_takes_the_given_uri_of_the_same_store(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert reconnect("sqlite:////tmp/x/mlruns.db") == "sqlite:////tmp/x/mlruns.db"  # nothing masked: as written
    assert reconnect(STORED, None, FULL) == FULL
    other_host = FULL.replace("db.example", "db.elsewhere")
    with pytest.raises(UriNeeded, match="MLFLOW_TRACKING_URI"):
        reconnect(STORED, other_host)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", FULL)
    assert reconnect(STORED) == FULL
    assert same_store(STORED, FULL) and not same_store(STORED, other_host) and not same_store(None, FULL)


def test_a_report_on_a_masked_sweep_folder_says_what_to_give(tmp_path, monkeypatch):
    from harness.reports.results.locate import TargetError, from_sweep_dir

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    sweep = tmp_path / "multirun" / "2026-12-01" / "10-00-00"
    sweep.mkdir(parents=True)
    (sweep / "parent_run.json").write_text(json.dumps({"run_id": "a" * 32, "tracking_uri": STORED}))
    with pytest.raises(TargetError) as err:
        from_sweep_dir(sweep)
    assert "MLFLOW_TRACKING_URI" in str(err.value) and "s3cret" not in str(err.value)
    assert from_sweep_dir(sweep, FULL).tracking_uri == FULL
    monkeypatch.setenv("MLFLOW_TRACKING_URI", FULL)
    assert from_sweep_dir(sweep).tracking_uri == FULL


def test_sync_of_a_masked_spool_says_what_to_give(tmp_path, monkeypatch, capsys):
    from harness.tracking.spool import RunRecord, Spool
    from harness.tracking.sync import main as sync_main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run_dir = tmp_path / "run"
    Spool(run_dir / "spool").open(RunRecord(uid="u1", tracking_uri=STORED, experiment_name="e", run_name="r",
                                            start_time=1))
    assert sync_main([str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert "MLFLOW_TRACKING_URI" in err and "unreachable" not in err and len(err.strip().splitlines()) == 1
