"""Tracking test fixtures (helpers in tracking_helpers.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for tracking_helpers

from tracking_helpers import Postgres, Server, free_port  # noqa: E402


@pytest.fixture
def server(tmp_path):
    """A `python -m harness server` serving <tmp_path>/mlruns.db; stopped with SIGTERM, which must exit 0."""
    srv = Server(tmp_path, free_port()).start()
    yield srv
    code = srv.stop()
    assert code == 0 or srv.crashed, f"harness server exited {code} on SIGTERM:\n{srv.log.read_text()[-2000:]}"


@pytest.fixture
def postgres():
    """A fresh PostgreSQL server (skipped when Debian's `postgresql` binaries are absent:
    bash .ci/install_postgresql.sh); stopped and removed afterwards."""
    bin_dir = Postgres.binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries not installed (bash .ci/install_postgresql.sh)")
    pytest.importorskip("psycopg", reason="psycopg (pip install -e '.[test]') connects MLflow to PostgreSQL")
    server = Postgres(bin_dir).start()
    yield server
    server.stop()


@pytest.fixture
def server_on_postgres(tmp_path, postgres):
    """A `python -m harness server` whose backend store is the PostgreSQL database."""
    srv = Server(tmp_path, free_port(), backend_store_uri=postgres.uri).start()
    yield srv
    code = srv.stop()
    assert code == 0, f"harness server exited {code} on SIGTERM:\n{srv.log.read_text()[-2000:]}"
