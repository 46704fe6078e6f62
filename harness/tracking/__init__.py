"""Run tracking: MLflow (default: a local SQLite store; or a `python -m harness server`) or local files only.

Tools: `python -m harness server | status | repair | sync` (server.py, status.py, sync.py)."""
from __future__ import annotations

from harness.tracking.run_tracker import open_tracker
from harness.tracking.tracker import MlflowTracker, RunSpec, Tracker

__all__ = ["open_tracker", "Tracker", "MlflowTracker", "RunSpec"]
