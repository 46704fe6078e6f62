"""Many writers at once: 8 processes x 500 steps x 10 metrics, against a `harness server` (on its SQLite
store, and on a real PostgreSQL database) and against the default SQLite store (created by the writers
themselves, racing). Every point arrives exactly once."""
from __future__ import annotations

import time

import pytest
from tracking_helpers import assert_exactly_once, finish, printed_run_id, runs_of, start_writer

pytestmark = pytest.mark.slow

WRITERS, STEPS, METRICS = 8, 500, 10
# A loaded server, not an outage: what a lab sets for a busy shared server (the harness's own defaults are
# short so that an outage costs seconds; on 2 cores, 8 writers and a SQLite-backed server exceed them).
BUSY_SERVER_ENV = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "120", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "5"}


def _write_concurrently(uri: str, root) -> dict:
    started = time.monotonic()
    procs = {f"w{i}": start_writer(uri, root / "runs" / f"w{i}", "--name", f"w{i}", "--steps", str(STEPS),
                                   "--metrics", str(METRICS), env=BUSY_SERVER_ENV) for i in range(WRITERS)}
    run_ids = {}
    for name, proc in procs.items():
        code, out, err = finish(proc)
        assert code == 0, f"{name} failed:\n{err[-3000:]}"
        assert "the run goes on" not in err, f"{name} lost the store:\n{err[-3000:]}"
        run_ids[name] = printed_run_id(out)
    print(f"\n{WRITERS} writers x {STEPS} steps x {METRICS} metrics -> {uri}: {time.monotonic() - started:.1f} s")
    assert not list(root.glob("runs/*/spool")), "nothing may be spooled when the store is up"
    return run_ids


def _check(uri: str, run_ids: dict) -> None:
    runs = runs_of(uri, "writers")
    assert sorted(r.info.run_id for r in runs) == sorted(run_ids.values())
    for run in runs:
        assert run.info.status == "FINISHED"
        assert run.data.tags["harness.step"] == str(STEPS)
        assert run.data.params["writer.p3"] == "3"
        assert_exactly_once(uri, run.info.run_id, STEPS, METRICS)


def test_eight_writers_against_the_server(server, tmp_path):
    _check(server.url, _write_concurrently(server.url, tmp_path))


def test_eight_writers_against_the_server_on_postgresql(server_on_postgres, postgres, tmp_path):
    _check(server_on_postgres.url, _write_concurrently(server_on_postgres.url, tmp_path))
    import psycopg

    with psycopg.connect(postgres.uri) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM metrics")  # the points are in PostgreSQL, not in a file beside it
        assert cursor.fetchone()[0] == WRITERS * STEPS * METRICS
    assert not (tmp_path / "mlruns.db").exists()


def test_eight_writers_against_a_fresh_sqlite_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    _check(uri, _write_concurrently(uri, tmp_path))
