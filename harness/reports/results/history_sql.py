"""Metric histories of many runs from an MLflow SQLite store in one read-only SQL query: the one place the
harness reads MLflow's tables (it never writes them).

MLflow's client offers one request per (run, metric); for a local store we read its `metrics` table
directly (read-only connection, so a running sweep is not disturbed) and split the rows with numpy.
Only for a store whose schema revision (table `alembic_version`) is one this query was checked against
(KNOWN_REVISIONS); any other store raises `UnknownSchema` and `collect.py` reads the histories through
MLflow's public API instead (`MlflowClient.get_metric_history`). To add a revision: read the new MLflow's
migrations (mlflow/store/db_migrations/versions) for changes to the `metrics` table, then list it here.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple
from urllib.parse import quote

import numpy as np

MAX_FLOAT = 1.7976931348623157e308  # MLflow stores ±inf as ±this
CHUNK = 500  # run ids per query (SQLite's bound-parameter limit is 999 on old builds)
# Store schema revisions whose `metrics` table (run_uuid, key, value, timestamp, step, is_nan) this module
# was checked against: MLflow 3.17 (dc11669786a5) and 3.18 (f4a9b2c7d1e6; its migrations leave metrics alone).
KNOWN_REVISIONS = frozenset({"dc11669786a5", "f4a9b2c7d1e6"})


class UnknownSchema(Exception):
    """The store's schema revision is not one this module reads directly (read through the public API)."""


def schema_revision(con: sqlite3.Connection) -> Optional[str]:
    try:
        rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.DatabaseError:
        return None
    return rows[0][0] if len(rows) == 1 else None


def sqlite_path(tracking_uri: Optional[str]) -> Optional[Path]:
    """The database file of a `sqlite:///...` URI (None for other URIs or an in-memory database)."""
    if not tracking_uri or not tracking_uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(tracking_uri).database
    return Path(database) if database and database != ":memory:" else None


def read_histories(db_path: Path, run_ids: Sequence[str], prefixes: Sequence[str] = ()
                   ) -> Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]]:
    """{(run_id, key): (steps [T] int64, values [T] float64)} sorted by step, one value per step.

    prefixes: keep only metric keys starting with one of these (all keys if empty). A step logged twice
    keeps its latest value (by timestamp). NaN and ±inf are restored from MLflow's encoding. SQLite
    concatenates each (run, key) history into one text row (values printed with 20 significant digits,
    which round-trips doubles):
    ~2,000 rows to fetch for 1M points instead of 1M Python tuples.
    Raises UnknownSchema for a store whose schema revision is not in KNOWN_REVISIONS.
    """
    where_key = " OR ".join("substr(key, 1, ?) = ?" for _ in prefixes)
    key_args = [a for p in prefixes for a in (len(p), p)]
    out: Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]] = {}
    con = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True)
    try:
        revision = schema_revision(con)
        if revision not in KNOWN_REVISIONS:
            raise UnknownSchema(f"store schema revision {revision} is not one harness reads directly")
        for i in range(0, len(run_ids), CHUNK):
            chunk = list(run_ids[i:i + CHUNK])
            sql = ("SELECT run_uuid, key, group_concat(step), group_concat(timestamp), "
                   "group_concat(CASE WHEN is_nan THEN 'nan' ELSE printf('%!.20g', value) END) FROM metrics "
                   f"WHERE run_uuid IN ({','.join('?' * len(chunk))})"
                   + (f" AND ({where_key})" if prefixes else "") + " GROUP BY run_uuid, key")
            for run_id, key, steps, stamps, values in con.execute(sql, chunk + key_args):
                out[(run_id, key)] = _history(steps, stamps, values)
    finally:
        con.close()
    return out


def _history(steps: str, stamps: str, values: str) -> Tuple[np.ndarray, np.ndarray]:
    step = np.array(steps.split(","), dtype=np.int64)
    stamp = np.array(stamps.split(","), dtype=np.int64)
    value = np.array(values.split(","), dtype=np.float64)
    order = np.lexsort((stamp, step))
    step, value = step[order], value[order]
    keep = np.r_[step[1:] != step[:-1], True]  # the last (latest) value of each step
    step, value = step[keep], value[keep]
    value[value >= MAX_FLOAT] = np.inf
    value[value <= -MAX_FLOAT] = -np.inf
    return step, value
