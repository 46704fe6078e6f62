"""Outages lose nothing: writers go on through a tracking-server crash, spool, warn once, catch up when the
server is back; `python -m harness sync` afterwards (twice) leaves every point on the server exactly once,
in the runs created before the outage. A store unreachable from the start is not fatal either."""
from __future__ import annotations

import json
import time

import pytest
from harness.tracking.spool import Spool
from tracking_helpers import (assert_exactly_once, finish, free_port, harness_tool, printed_run_id, runs_of,
                              start_writer, wait_until)

STEPS = (80, 80, 200, 200)  # the short writers end during the outage, the long ones after it
METRICS = 10
BEAT = {"HARNESS_HEARTBEAT_S": "1"}


def _steps_logged(run_dir) -> int:
    path = run_dir / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.is_file() else 0


@pytest.mark.slow
def test_server_crash_mid_run_loses_and_duplicates_nothing(server, tmp_path):
    run_dirs = [tmp_path / "sweep" / str(i) for i in range(len(STEPS))]
    # Steps are fast (metrics go through a background writer), so the phases are held by files rather than
    # left to timing: `hold` keeps the short writers at step 40 until the server is down, `pause` keeps the
    # long writers at step 100 (mid-outage) until it is back.
    pause, hold = tmp_path / "pause", tmp_path / "hold"
    pause.touch(), hold.touch()
    procs = [start_writer(server.url, d, "--steps", str(n), "--metrics", str(METRICS), "--sleep", "0.02",
                          "--pause-file", str(pause if n == max(STEPS) else hold),
                          "--pause-after", str(100 if n == max(STEPS) else 40), env=BEAT)
             for d, n in zip(run_dirs, STEPS)]
    wait_until(lambda: min(_steps_logged(d) for d in run_dirs) >= 30, "30 steps of every writer", timeout=180)
    server.crash()
    hold.unlink()
    wait_until(lambda: min(_steps_logged(d) for d in run_dirs[2:]) >= 90, "90 steps of the long writers", timeout=180)
    assert all(_steps_logged(d) < n for d, n in zip(run_dirs[2:], STEPS[2:])), "long writers must outlive it"
    wait_until(lambda: all(p.poll() is not None for p in procs[:2]), "the short writers to end during the outage", timeout=180)
    server.start()
    pause.unlink()
    results = [finish(p) for p in procs]
    assert all(Spool(d / "spool").pending() == 0 for d in run_dirs[2:]), "the long ones catch up by themselves"
    assert all(Spool(d / "spool").pending() > 0 for d in run_dirs[:2]), "the short ones need sync"

    steps_of = {}
    for (code, out, err), n in zip(results, STEPS):
        assert code == 0, err[-3000:]
        assert err.count("the run goes on") == 1, f"expected exactly one warning:\n{err[-3000:]}"
        steps_of[printed_run_id(out)] = n
    assert None not in steps_of and len(steps_of) == len(STEPS)
    assert all((d / "spool" / "ops.jsonl").is_file() for d in run_dirs), "every writer spooled something"

    for attempt in range(2):  # the first sync uploads what the short writers spooled; the second changes nothing
        proc = harness_tool("sync", str(tmp_path / "sweep"), root=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs = runs_of(server.url, "writers")
        assert sorted(r.info.run_id for r in runs) == sorted(steps_of), "runs created before the outage keep ids"
        for run in runs:
            assert run.info.status == "FINISHED"
            assert_exactly_once(server.url, run.info.run_id, steps_of[run.info.run_id], METRICS)
    assert proc.stdout.count("already synced") == len(STEPS)


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_store_unreachable_from_the_start_spools_and_syncs_once(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run_dir = tmp_path / "runs" / "offline"
    started = time.monotonic()
    code, out, err = finish(start_writer(down, run_dir, "--steps", "20", "--metrics", "3", "--fail-at", "20"))
    assert code == 1, err[-3000:]  # the writer fails on purpose at its last step: FAILED is spooled too
    assert time.monotonic() - started < 60, "an unreachable store must not stall the run"
    assert err.count("the run goes on") == 1, err[-3000:]
    assert printed_run_id(out) is None
    record = json.loads((run_dir / "spool" / "run.json").read_text())
    assert record["tracking_uri"] == down and record["run_id"] is None

    store = f"sqlite:///{tmp_path / 'later.db'}"
    for attempt in range(2):
        proc = harness_tool("sync", str(run_dir), "--tracking-uri", store, root=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "already synced" in proc.stdout
    runs = runs_of(store, "writers")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FAILED" and run.data.params["writer.p1"] == "1"
    assert_exactly_once(store, run.info.run_id, 20, 3)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    assert "error.txt" in [a.path for a in client.list_artifacts(run.info.run_id)]


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_sync_of_an_unreachable_store_says_so_and_keeps_everything(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    run_dir = tmp_path / "runs" / "offline"
    finish(start_writer(down, run_dir, "--steps", "3", "--metrics", "2"))
    pending = len((run_dir / "spool" / "ops.jsonl").read_text().splitlines())
    proc = harness_tool("sync", str(run_dir), root=tmp_path)
    assert proc.returncode == 1 and "unreachable" in proc.stderr and "nothing lost" in proc.stderr
    assert len((run_dir / "spool" / "ops.jsonl").read_text().splitlines()) == pending
    bad = harness_tool("sync", str(tmp_path / "missing"), root=tmp_path)
    assert bad.returncode == 2 and "missing" in bad.stderr


def test_malformed_tracking_uri_is_not_fatal(tmp_path):
    code, out, err = finish(start_writer("http://[::1", tmp_path / "runs" / "bad", "--steps", "3"))
    assert code == 0, err[-3000:]
    assert err.count("the run goes on") == 1
    assert (tmp_path / "runs" / "bad" / "spool" / "run.json").is_file()
