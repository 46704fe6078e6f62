"""harness.tracking.sqlite_metrics against MLflow itself: the same steps written by the sqlite3 path into one
run and by `MlflowClient.log_batch` into another run of the same real store must read back identically
through MLflow's client; anything the path does not know goes through log_batch; writers in several
processes at once all land."""
from __future__ import annotations

import math
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_helpers import assert_exactly_once, finish, printed_run_id, start_writer, writer_env

from harness.tracking import sqlite_metrics
from harness.tracking.spool import Spool
from harness.tracking.sqlite_metrics import KNOWN_REVISIONS, MAX_DOUBLE, SqliteMetrics, sqlite_path
from harness.tracking.tracker import STEP_TAG, MlflowTracker, RunSpec

INF, NAN = float("inf"), float("nan")
T = 1_700_000_000_000

# Batches of (step, timestamp ms, values), sent in this order: NaN and ±inf, steps out of order, equal steps
# at other timestamps, equal (step, timestamp) with other values, NaN tied with 0, a point sent twice.
BATCHES = [
    [(1, T, {"a": 1.0, "b": NAN, "c": INF, "d": -INF, "e": 0.0}),
     (3, T + 5, {"a": 3.0, "b": 2.0, "c": 1.0, "d": 1.0, "e": NAN}),
     (2, T + 9, {"a": 2.0, "b": INF, "c": -INF, "d": NAN, "e": 5.0})],
    [(3, T + 5, {"a": 3.0, "b": -1.0, "c": 1.0, "d": 7.0, "e": 0.0}),  # a: the very same point again
     (3, T + 4, {"a": 9.0, "b": 8.0, "c": NAN, "d": INF, "e": 1.0}),
     (3, T + 6, {"a": -2.0, "b": NAN, "c": 0.5, "d": 7.0, "e": NAN})],
    [(2, T + 50, {"a": 100.0, "b": 100.0, "c": 100.0, "d": 100.0, "e": 100.0})],  # an older step, later
    [(4, T + 60, {"a": NAN, "b": -INF, "f/x": 1.5}), (4, T + 60, {"a": 0.0, "b": -5.0, "f/x": 1.5}),
     (0, T + 70, {"g": 1.0}), (4, T + 61, {"a": -INF})],
    [(5, T + 80, {"h": NAN, "i": 0.0, "j": NAN}), (5, T + 80, {"h": 0.0, "i": NAN})],  # ties: the first stays
    [(5, T + 80, {"j": 0.0, "i": -0.0})],
]
KEYS = sorted({key for batch in BATCHES for _, _, values in batch for key in values})


def _store(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    client = MlflowClient(tracking_uri=uri)
    return uri, client, client.create_experiment("fast-path")


def _log_batch(client, run_id: str, batch) -> None:
    from mlflow.entities import Metric, RunTag

    metrics = [Metric(k, v, ts, step) for step, ts, values in batch for k, v in values.items()]
    client.log_batch(run_id, metrics=metrics, tags=[RunTag(STEP_TAG, str(max(s for s, _, _ in batch)))])


def _same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _read(client, run_id: str, keys=KEYS) -> tuple:
    history = {k: sorted(((m.step, m.timestamp, m.value) for m in client.get_metric_history(run_id, k)),
                         key=lambda p: (p[0], p[1], str(p[2]))) for k in keys}
    run = client.get_run(run_id)
    return history, run.data.metrics, run.data.tags.get(STEP_TAG)


def assert_read_alike(client, fast_run: str, batch_run: str, keys=KEYS) -> None:
    fast, reference = _read(client, fast_run, keys), _read(client, batch_run, keys)
    for key in keys:
        got, want = fast[0][key], reference[0][key]
        assert len(got) == len(want) and all(g[:2] == w[:2] and _same(g[2], w[2]) for g, w in zip(got, want)), \
            f"history of {key}: {got} != {want}"
    assert fast[1].keys() == reference[1].keys()
    assert all(_same(fast[1][k], reference[1][k]) for k in reference[1]), f"latest: {fast[1]} != {reference[1]}"
    assert fast[2] == reference[2]


def _latest_rows(db: str, run_id: str) -> list:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT key, value, timestamp, step, is_nan FROM latest_metrics WHERE run_uuid = ?",
                                   (run_id,)).fetchall())


def test_the_store_reads_back_what_log_batch_writes(tmp_path):
    uri, client, experiment = _store(tmp_path)
    fast = SqliteMetrics(uri)
    runs = [client.create_run(experiment).info.run_id for _ in range(4)]  # fast, batch, fast, batch
    for batch in BATCHES:
        for fast_run, batch_run, shift in ((runs[0], runs[1], 0.0), (runs[2], runs[3], 0.25)):
            shifted = [(s, ts, {k: v + shift for k, v in values.items()}) for s, ts, values in batch]
            assert fast.log(fast_run, shifted, {STEP_TAG: str(max(s for s, _, _ in shifted))})
            _log_batch(client, batch_run, shifted)
    assert fast.points == 2 * sum(len(values) for batch in BATCHES for _, _, values in batch)
    for fast_run, batch_run in ((runs[0], runs[1]), (runs[2], runs[3])):
        assert_read_alike(client, fast_run, batch_run)
        assert _latest_rows(fast.path, fast_run) == _latest_rows(fast.path, batch_run)
    assert client.get_run(runs[0]).data.metrics["a"] == -MAX_DOUBLE  # -inf at (4, T + 61) beats (4, T + 60)
    fast.close()


def test_the_tracker_writes_through_sqlite3(tmp_path):
    uri, client, experiment = _store(tmp_path)
    spec = RunSpec(tracking_uri=uri, experiment_name="fast-path", run_name="fast", params={"p": "1"}, tags={})
    tracker = MlflowTracker(tmp_path / "run", spec, experiment_id=lambda: experiment)
    for step in (1, 2, 3, 5, 4):
        tracker.log_metrics({"train/reward": step / 3, "x": NAN if step == 2 else float(step), "y": INF}, step=step)
        tracker.flush()
    assert tracker._sqlite.points == 15, "the tracker must have written through sqlite3"
    tracker.finish("FINISHED")
    keys = ["train/reward", "x", "y"]
    history, latest, step_tag = _read(client, tracker.run_id, keys)
    assert [p[0] for p in history["x"]] == [1, 2, 3, 4, 5] and step_tag == "4"  # the last batch's step
    assert latest["train/reward"] == 5 / 3 and latest["y"] == MAX_DOUBLE
    assert client.get_run(tracker.run_id).info.status == "FINISHED"


def test_a_fresh_store_is_one_it_knows(tmp_path):
    uri, client, experiment = _store(tmp_path)
    with sqlite3.connect(sqlite_path(uri)) as conn:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    assert revision in KNOWN_REVISIONS, (
        f"MLflow's store schema is now {revision}: re-read SqlAlchemyStore._log_metrics / log_batch, check "
        "harness.tracking.sqlite_metrics against them, then add the revision to KNOWN_REVISIONS")


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000", "https://mlflow.example.com", "postgresql://u@h/db",
                                 "file:///tmp/mlruns", "sqlite://", "sqlite:///:memory:",
                                 "sqlite:///x.db?mode=ro", "databricks"])
def test_other_stores_are_left_to_log_batch(uri):
    fast = SqliteMetrics(uri)
    assert fast.path is None
    assert not fast.log("0" * 32, [(1, T, {"a": 1.0})], {STEP_TAG: "1"})


def test_paths_of_sqlite_uris():
    assert sqlite_path("sqlite:////abs/mlruns.db") == "/abs/mlruns.db"
    assert sqlite_path("sqlite:///rel/mlruns.db") == str(Path("rel/mlruns.db").resolve())


def test_an_unexpected_schema_falls_back_to_log_batch(tmp_path):
    uri, client, experiment = _store(tmp_path)
    with sqlite3.connect(sqlite_path(uri)) as conn:
        conn.execute("ALTER TABLE metrics ADD COLUMN model_id VARCHAR(36)")
    spec = RunSpec(tracking_uri=uri, experiment_name="fast-path", run_name="other", params={}, tags={})
    tracker = MlflowTracker(tmp_path / "run", spec, experiment_id=lambda: experiment)
    for step in range(1, 4):
        tracker.log_metrics({"train/reward": float(step)}, step=step)
    tracker.finish("FINISHED")
    assert tracker._sqlite.points == 0 and not tracker._sqlite._usable
    history, latest, step_tag = _read(client, tracker.run_id, ["train/reward"])
    assert [p[0] for p in history["train/reward"]] == [1, 2, 3] and latest["train/reward"] == 3.0
    assert step_tag == "3"
    assert not (tmp_path / "run" / "spool").exists()


def test_an_unknown_schema_revision_falls_back(tmp_path):
    uri, client, experiment = _store(tmp_path)
    run_id = client.create_run(experiment).info.run_id
    with sqlite3.connect(sqlite_path(uri)) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'f00dfeed0000'")
    fast = SqliteMetrics(uri)
    assert not fast.log(run_id, [(1, T, {"a": 1.0})], {STEP_TAG: "1"})
    with sqlite3.connect(sqlite_path(uri)) as conn:
        assert conn.execute("SELECT count(*) FROM metrics").fetchone()[0] == 0


def test_a_missing_store_is_not_created(tmp_path):
    fast = SqliteMetrics(f"sqlite:///{tmp_path / 'none.db'}")
    assert not fast.log("0" * 32, [(1, T, {"a": 1.0})], {STEP_TAG: "1"})
    assert not (tmp_path / "none.db").exists()


def test_what_mlflow_would_refuse_or_treat_specially_goes_to_log_batch(tmp_path):
    from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME

    uri, client, experiment = _store(tmp_path)
    fast = SqliteMetrics(uri)
    run_id = client.create_run(experiment).info.run_id
    tag = {STEP_TAG: "1"}
    assert not fast.log(run_id, [(1, T, {"bad key!": 1.0})], tag)  # MLflow refuses the name
    assert not fast.log(run_id, [(1, T, {"../a": 1.0})], tag)
    assert not fast.log(run_id, [(1, T, {"a": 1})], tag)  # not a float
    assert not fast.log(run_id, [(1.5, T, {"a": 1.0})], tag)
    assert not fast.log(run_id, [(1, -1, {"a": 1.0})], tag)
    assert not fast.log(run_id, [(1, T, {"a": 1.0})], {MLFLOW_RUN_NAME: "renamed"})
    assert not fast.log(run_id, [(1, T, {"a": 1.0})], {"bad tag!": "1"})
    assert not fast.log("f" * 32, [(1, T, {"a": 1.0})], tag)  # no such run
    client.delete_run(run_id)
    assert not fast.log(run_id, [(1, T, {"a": 1.0})], tag)  # MLflow refuses metrics of a deleted run
    client.restore_run(run_id)
    assert fast.log(run_id, [(1, T, {"a": 1.0})], tag)
    with sqlite3.connect(fast.path) as conn:
        assert conn.execute("SELECT count(*) FROM metrics").fetchone()[0] == 1
    fast.close()


def test_a_refused_step_is_skipped_and_the_others_land(tmp_path):
    uri, client, experiment = _store(tmp_path)
    spec = RunSpec(tracking_uri=uri, experiment_name="fast-path", run_name="refused", params={}, tags={})
    tracker = MlflowTracker(tmp_path / "run", spec, experiment_id=lambda: experiment)
    tracker._write_metrics([(1, T, {"train/reward": 1.0}), (2, T, {"train/reward": 2.0, "bad key!": 1.0}),
                            (3, T, {"train/reward": 3.0})])  # one call, as the writer thread makes it
    tracker.finish("FINISHED")
    history, _, step_tag = _read(client, tracker.run_id, ["train/reward"])
    assert [p[0] for p in history["train/reward"]] == [1, 3] and step_tag == "3"
    assert not tracker.offline and tracker._sqlite.points == 2


def test_a_locked_store_falls_back_and_an_outage_still_spools(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_metrics, "BUSY_TIMEOUT_S", 0.2)
    uri, client, experiment = _store(tmp_path)
    spec = RunSpec(tracking_uri=uri, experiment_name="fast-path", run_name="locked", params={}, tags={})
    tracker = MlflowTracker(tmp_path / "run", spec, experiment_id=lambda: experiment)
    tracker.log_metrics({"m": 1.0}, step=1)
    tracker.flush()
    assert tracker._sqlite.points == 1

    def away(*args, **kwargs):
        raise ConnectionError("store away")

    monkeypatch.setattr(tracker.client, "log_batch", away)
    lock = sqlite3.connect(tracker._sqlite.path, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")  # sqlite3 times out, then log_batch finds the store away
        for step in (2, 3):
            tracker.log_metrics({"m": float(step)}, step=step)
        tracker.flush()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert tracker.offline and tracker._sqlite.points == 1
    assert [op["step"] for _, op in Spool(tmp_path / "run" / "spool").ops() if op["op"] == "metrics"] == [2, 3]
    monkeypatch.undo()
    tracker.finish("FINISHED")  # the store is back: the spool is uploaded
    assert [m.step for m in client.get_metric_history(tracker.run_id, "m")] == [1, 2, 3]


CHILD = textwrap.dedent("""
    import sys
    from harness.tracking.sqlite_metrics import SqliteMetrics
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    uri, run_id, writer, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    fast, client = SqliteMetrics(uri), MlflowClient(tracking_uri=uri)
    for step in range(steps):
        values = {f"w{writer}/m{k}": float(step * 10 + k) for k in range(20)}
        values["shared"] = float(step * 100 + writer)
        if writer % 2:  # an odd writer goes through MLflow itself, an even one through sqlite3
            client.log_batch(run_id, metrics=[Metric(k, v, 1000 + step, step) for k, v in values.items()])
        elif not fast.log(run_id, [(step, 1000 + step, values)], {"harness.step": str(step)}):
            sys.exit(f"writer {writer}: sqlite3 path declined step {step}")
    print("done", fast.points)
""")


def test_writers_in_several_processes_all_land_in_one_run(tmp_path):
    uri, client, experiment = _store(tmp_path)
    run_id = client.create_run(experiment).info.run_id
    writers, steps = 4, 40
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, uri, run_id, str(w), str(steps)], env=writer_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    for w, proc in enumerate(procs):
        code, out, err = finish(proc, timeout=300)
        assert code == 0 and out.startswith("done"), f"writer {w}:\n{err[-3000:]}"
    for w in range(writers):
        for k in (0, 19):
            assert [m.step for m in client.get_metric_history(run_id, f"w{w}/m{k}")] == list(range(steps))
    assert len(client.get_metric_history(run_id, "shared")) == writers * steps
    assert client.get_run(run_id).data.metrics["shared"] == (steps - 1) * 100 + writers - 1


def test_tracker_processes_against_one_fresh_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    procs = [start_writer(uri, tmp_path / "runs" / f"w{i}", "--name", f"w{i}", "--steps", "60", "--metrics", "8")
             for i in range(4)]
    for i, proc in enumerate(procs):
        code, out, err = finish(proc)
        assert code == 0 and "the run goes on" not in err, f"w{i}:\n{err[-3000:]}"
        assert_exactly_once(uri, printed_run_id(out), 60, 8)
    assert not list(tmp_path.glob("runs/*/spool"))
