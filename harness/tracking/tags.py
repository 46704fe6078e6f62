"""The tags by which the harness finds and orders its MLflow runs, one definition each."""
from __future__ import annotations

UID_TAG = "harness.run_uid"  # a run's own id, set at creation: a retried or synced run is found, not made twice
PARENT_UID_TAG = "harness.parent_uid"  # the sweep's parent run by its uid (its MLflow id may not exist yet)
PARENT_TAG = "mlflow.parentRunId"  # MLflow's nesting of a sweep's jobs under the parent run
STEP_TAG = "harness.step"  # the highest step whose metrics are in the store
