"""A store whose pages that MLflow reads when it opens it are garbage (its schema revision `alembic_version`, read by
MLflow's schema check, and `experiments`, the default experiment's lookup; case 17 of issue #50 wrote random bytes at
8 KiB): the quick check says so in one line naming the store and what to do, before MLflow's 85-line SQLAlchemy
traceback. A real MLflow store, damaged where SQLite puts those tables; `status` in a real process."""
from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.tracking.store_check import StoreFault, check_store

REPO = Path(__file__).resolve().parents[2]


def _store(tmp_path: Path) -> Path:
    from mlflow.tracking import MlflowClient

    path = tmp_path / "mlruns.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").create_experiment("e")
    return path


def _garble(store: Path, table: str) -> None:
    """Random bytes over the root page of `table` (where SQLite put it in this store)."""
    with sqlite3.connect(store) as connection:
        page_size, = connection.execute("PRAGMA page_size").fetchone()
        root, = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    connection.close()
    with open(store, "r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(random.Random(root).randbytes(page_size))


@pytest.mark.parametrize("table", ["alembic_version", "experiments"])
def test_garbage_where_mlflow_opens_a_store_is_found_by_the_check(tmp_path, table):
    store = _store(tmp_path)
    _garble(store, table)
    with pytest.raises(StoreFault, match=f"{store} is corrupt \\(database disk image is malformed\\); move it aside "
                                         "and restore a backup"):
        check_store(f"sqlite:///{store}")


@pytest.mark.e2e  # the command line in a real process (fast loop: README)
def test_status_on_a_store_with_a_garbled_schema_revision_is_one_line(tmp_path):
    store = _store(tmp_path)
    _garble(store, "alembic_version")
    done = subprocess.run([sys.executable, "-m", "harness", "status", "--tracking-uri", f"sqlite:///{store}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line, = done.stderr.splitlines()
    assert line.startswith(f"harness status: error: tracking store sqlite:///{store}: {store} is corrupt (database "
                           "disk image is malformed); move it aside and restore a backup"), line
