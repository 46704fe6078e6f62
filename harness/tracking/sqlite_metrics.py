"""Metrics written straight into a local MLflow SQLite store, for the tracker's metrics writer.

MLflow's SQLAlchemy store spends ~0.1 ms of CPU per metric even in `log_batch` (ORM objects, the merge of
`latest_metrics`), a few percent of an RL step that logs ~30 metrics. `SqliteMetrics.log` writes the same
rows with the stdlib `sqlite3` in one transaction: the `metrics` rows, the `latest_metrics` upsert and the
step tag, by MLflow's rules (`SqlAlchemyStore._log_metrics_once`, `_update_latest_metrics_if_necessary`,
`_set_tags`): NaN is stored as 0 with is_nan, ±inf as ±max double, a point already stored is skipped, and
the latest value of a key is the greatest (step, timestamp, value), the earlier one on ties.

It declines (returns False, having written nothing; the caller then uses `log_batch`) whenever it cannot
be sure to write what MLflow would: a store whose schema revision or tables it does not know, a run that
is not active, a key, value or tag MLflow validates or treats specially, any SQLite error."""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import quote

log = logging.getLogger("harness")

# Store schema revisions this module was checked against (MLflow 3.17). A newer MLflow migrates the store
# and this path stands aside until `_log_metrics` is re-read and the revision added here
# (tests/tracking/test_sqlite_metrics.py fails on a fresh store until then).
KNOWN_REVISIONS = frozenset({"dc11669786a5"})
TABLES = {  # table: (columns, primary key)
    "metrics": ({"key", "value", "timestamp", "run_uuid", "step", "is_nan"},
                {"key", "timestamp", "step", "run_uuid", "value", "is_nan"}),
    "latest_metrics": ({"key", "value", "timestamp", "step", "is_nan", "run_uuid"}, {"key", "run_uuid"}),
    "tags": ({"key", "value", "run_uuid"}, {"key", "run_uuid"}),
}
BUSY_TIMEOUT_S = 20.0  # as MLflow's own SQLite sessions (PRAGMA busy_timeout = 20000)
MAX_DOUBLE = 1.7976931348623157e308  # MLflow stores ±inf as this (SQL has no infinities)
INF = float("inf")

INSERT_METRIC = ("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT DO NOTHING")
UPSERT_LATEST = ("INSERT INTO latest_metrics (key, value, timestamp, run_uuid, step, is_nan) "
                 "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value, "
                 "timestamp = excluded.timestamp, step = excluded.step, is_nan = excluded.is_nan "
                 "WHERE (excluded.step, excluded.timestamp, excluded.value) > "
                 "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)")
UPSERT_TAG = ("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?) "
              "ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value")

Row = Tuple[str, float, int, str, int, int]  # the columns of INSERT_METRIC


def sqlite_path(uri: str) -> Optional[str]:
    """The database file of a plain `sqlite:///<path>` tracking URI, else None."""
    if not uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url  # how MLflow's engine reads the URI

    try:
        url = make_url(uri)
    except Exception:
        return None
    if url.drivername not in ("sqlite", "sqlite+pysqlite") or url.query or url.database in (None, "", ":memory:"):
        return None
    return os.path.abspath(url.database)


class SqliteMetrics:
    """Writes the metrics of a tracking URI's store with sqlite3 (never, unless it is `sqlite:///<path>`); one
    connection, opened on first use (and again after an error)."""

    def __init__(self, uri: str):
        self.path = sqlite_path(uri)
        self.points = 0  # points written by this path (what a test or a debugger can check)
        self._usable = self.path is not None  # False for good also once the store's schema is not one we know
        self._conn: Optional[sqlite3.Connection] = None
        self._pid = 0
        self._keys: set = set()  # metric keys MLflow's validation accepted
        self._lock = threading.Lock()

    def log(self, run_id: str, steps: Sequence[tuple], tags: Dict[str, str]) -> bool:
        """Write `steps` ((step, timestamp ms, {key: value}), ...) and `tags` to the run, as `log_batch`
        would; False: nothing was written, send them with `log_batch`."""
        try:
            rows = self._usable and self._rows(run_id, steps, tags)
            if not rows:
                return False
            with self._lock:
                conn = self._connect()
                return conn is not None and self._write(conn, run_id, rows, tags)
        except Exception as err:  # locked past the timeout, file gone, ...: log_batch decides what it means
            log.debug("tracking: metrics through sqlite3 failed, sending them with log_batch: %s", err)
            self.close()
            return False

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def _rows(self, run_id: str, steps: Sequence[tuple], tags: Dict[str, str]) -> Optional[List[Row]]:
        from mlflow.tracking.fluent import get_active_model_id

        if get_active_model_id() is not None or not all(self._tag_ok(k, v) for k, v in tags.items()):
            return None  # with an active model, log_batch also records the metrics as the model's
        rows = []
        for step, ts, values in steps:
            if type(step) is not int or type(ts) is not int or ts < 0:
                return None
            for key, value in values.items():
                if type(value) is not float or (key not in self._keys and not self._key_ok(key)):
                    return None
                if value != value:
                    rows.append((key, 0.0, ts, run_id, step, 1))
                elif value == INF or value == -INF:
                    rows.append((key, MAX_DOUBLE if value > 0 else -MAX_DOUBLE, ts, run_id, step, 0))
                else:
                    rows.append((key, value, ts, run_id, step, 0))
        return rows

    def _key_ok(self, key: str) -> bool:
        from mlflow.exceptions import MlflowException
        from mlflow.utils.validation import _validate_metric

        try:
            _validate_metric(key, 0.0, 0, 0)
        except MlflowException:
            return False
        self._keys.add(key)
        return True

    @staticmethod
    def _tag_ok(key: str, value: str) -> bool:
        from mlflow.exceptions import MlflowException
        from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME
        from mlflow.utils.validation import _validate_tag

        try:
            checked = _validate_tag(key, value)  # may truncate the value (MLFLOW_TRUNCATE_LONG_VALUES)
        except MlflowException:
            return False
        return key != MLFLOW_RUN_NAME and (checked.key, checked.value) == (key, value)

    def _connect(self) -> Optional[sqlite3.Connection]:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # mode=rw: never create a database where the store is missing
        conn = sqlite3.connect(f"file:{quote(self.path)}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S,
                               isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if not self._schema_known(conn):
                self._usable = False
                log.debug("tracking: %s is not a store schema harness knows; metrics go through log_batch",
                          self.path)
                conn.close()
                return None
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    @staticmethod
    def _schema_known(conn: sqlite3.Connection) -> bool:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"alembic_version", "runs", *TABLES} <= tables:
            return False
        revisions = [rev for (rev,) in conn.execute("SELECT version_num FROM alembic_version")]
        if len(revisions) != 1 or revisions[0] not in KNOWN_REVISIONS:
            return False
        for table, (columns, key) in {**TABLES, "runs": ({"run_uuid", "lifecycle_stage"}, {"run_uuid"})}.items():
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()
            found, found_key = {row[1] for row in info}, {row[1] for row in info if row[5]}
            if found_key != key or not (found >= columns if table == "runs" else found == columns):
                return False
        triggers = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN "
                                "('metrics', 'latest_metrics', 'tags')").fetchone()[0]
        return triggers == 0

    def _write(self, conn: sqlite3.Connection, run_id: str, rows: List[Row], tags: Dict[str, str]) -> bool:
        from mlflow.entities import LifecycleStage

        latest: Dict[str, Row] = {}  # per key, the first row with the greatest (step, timestamp, value)
        for row in rows:
            best = latest.get(row[0])
            if best is None or (row[4], row[2], row[1]) > (best[4], best[2], best[1]):
                latest[row[0]] = row
        conn.execute("BEGIN IMMEDIATE")  # the write lock up front: a read-then-write upgrade could deadlock
        try:
            stage = conn.execute("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
            if stage is None or stage[0] != LifecycleStage.ACTIVE:
                conn.execute("ROLLBACK")
                return False  # log_batch refuses it with MLflow's own error
            conn.executemany(INSERT_METRIC, rows)
            conn.executemany(UPSERT_LATEST, latest.values())
            conn.executemany(UPSERT_TAG, [(key, value, run_id) for key, value in tags.items()])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.points += len(rows)
        return True
