"""Tracking test fixtures (helpers in tracking_helpers.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for tracking_helpers

from tracking_helpers import Server, free_port  # noqa: E402


@pytest.fixture
def server(tmp_path):
    """A `python -m harness server` serving <tmp_path>/mlruns.db; stopped with SIGTERM, which must exit 0."""
    srv = Server(tmp_path, free_port()).start()
    yield srv
    code = srv.stop()
    assert code == 0 or srv.crashed, f"harness server exited {code} on SIGTERM:\n{srv.log.read_text()[-2000:]}"
