"""Counts tell the truth (issue #25): a sweep's report and `sync` name every job whose run the store lost,
and a run alive on this host is never shown STALE nor marked KILLED by `repair`, however old its heartbeat
looks (a skewed clock)."""
from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from harness.infra.claim import claim, release
from harness.infra.run_record import run_id_of
from processes import hold_claim


def test_a_job_lost_from_the_store_is_named_by_report_and_sync(run_harness, tmp_path):
    sweep = tmp_path / "sweep"
    run_harness("-m", "debug=quick", "trainer.steps=2", "trainer.checkpoint_every=1", "seed=1,2,3",
                f"hydra.sweep.dir={sweep}", check=True)
    lost = run_id_of(sweep / "1")
    assert lost
    with sqlite3.connect(tmp_path / "mlruns.db") as db:  # the store loses job 1's run
        db.execute("DELETE FROM runs WHERE run_uuid = ?", (lost,))

    report = run_harness("report", str(sweep))
    assert report.returncode == 0, report.stderr[-3000:]
    overview = (sweep / "reports" / "overview" / "summary.md").read_text()
    assert "1 job of this sweep is missing from the store" in overview and ": 1 (" in overview, overview

    synced = run_harness("sync", str(sweep))
    assert synced.returncode == 1, synced.stderr[-3000:]
    named = [line for line in synced.stderr.splitlines() if "missing from the store" in line]
    assert len(named) == 1 and str(sweep / "1") in named[0] and lost in named[0], synced.stderr


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_repair_never_kills_a_run_alive_on_this_host(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("skew")
    folder = tmp_path / "run"
    an_hour_ago = str(int(time.time()) - 3600)  # the run's clock an hour behind this one's
    run = client.create_run(experiment, run_name="live", tags={
        "harness.host": socket.gethostname(), "harness.run_dir": str(folder), "harness.heartbeat": an_hour_ago})
    holder = hold_claim(folder, "run folder")
    tool = [sys.executable, "-m", "harness"]
    common = ["--experiment", "skew", "--tracking-uri", uri, "--stale-after", "60"]
    try:
        shown = subprocess.run([*tool, "status", *common], capture_output=True, text=True, timeout=120)
        assert "RUNNING" in shown.stdout and "STALE" not in shown.stdout, shown.stdout
        repaired = subprocess.run([*tool, "repair", *common], capture_output=True, text=True, timeout=120)
        assert repaired.returncode == 0 and "nothing to repair" in repaired.stdout, repaired.stdout
        assert client.get_run(run.info.run_id).info.status == "RUNNING"
    finally:
        holder.kill()
        holder.wait()
    claim(folder)  # the holder is gone: its process no longer runs the run
    release(folder)
    repaired = subprocess.run([*tool, "repair", *common], capture_output=True, text=True, timeout=120)
    assert "marked KILLED: live" in repaired.stdout, repaired.stdout
    assert client.get_run(run.info.run_id).info.status == "KILLED"
