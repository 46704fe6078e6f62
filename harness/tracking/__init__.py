"""Run tracking: MLflow (default: a local SQLite store; or a `python -m harness server`) or local files only.
Leaf infrastructure: nothing here imports the layers that use it (config, launchers, job, sweeps, reports).

Tools: `python -m harness server | status | repair | sync` (server.py, status.py, sync.py)."""
from __future__ import annotations

from harness.tracking.local_tracker import Tracker
from harness.tracking.run_tracker import open_tracker
from harness.tracking.tracker import MlflowTracker, RunSpec

__all__ = ["open_tracker", "Tracker", "MlflowTracker", "RunSpec"]
