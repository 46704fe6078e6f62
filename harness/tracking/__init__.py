"""Run tracking: MLflow (default: a local SQLite store; or a `python -m harness server`) or local files only.
A job's MLflow run is recorded by a sidecar process (sidecar.py, sidecar_child.py).

Tools: `python -m harness server | status | repair | sync` (server.py, status.py, sync.py)."""
from __future__ import annotations

from harness.tracking.local_tracker import Tracker
from harness.tracking.run_tracker import open_tracker
from harness.tracking.sidecar import SidecarTracker
from harness.tracking.tracker import MlflowTracker, RunSpec

__all__ = ["open_tracker", "Tracker", "MlflowTracker", "SidecarTracker", "RunSpec"]
