"""Ending a run whose process died without ending it (a worker killed by SIGKILL or the kernel's OOM killer):
the process that saw it die records what the run's own tracker would have at its end: `status.txt` and
`error.txt` in its folder, and its MLflow run's status (found by its folder's tag), or, for a run that was
spooling while the store was away, its end appended to the spool for `python -m harness sync`."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

from harness.infra.atomic_file import write_text_atomically
from harness.tracking.local_tracker import now_ms
from harness.tracking.outage import apply_client_defaults, describe, store_errors
from harness.tracking.spool import SPOOL_DIR, Spool

log = logging.getLogger("harness")
ENDED_BY_TAG = "harness.ended_by"


def end_orphaned_run(run_dir: Path, status: str, reason: str, tracking_uri: Optional[str],
                     experiment: Optional[str]) -> Optional[str]:
    """End the run recorded in `run_dir` with `status` and `reason` (one line); its MLflow run id, when found
    (tracking_uri None: a run not tracked in MLflow). A run that had ended (its `status.txt`) is left as is."""
    run_dir = Path(run_dir)
    if (run_dir / "status.txt").is_file():
        return None
    try:
        write_text_atomically(run_dir / "status.txt", status + "\n")
        write_text_atomically(run_dir / "error.txt", reason + "\n")
    except OSError as err:  # a full disk: the store still gets the run's end
        log.error("run %s: its end (%s) could not be written to its folder: %s", run_dir, status, err)
    if tracking_uri is None:
        return None
    spool = Spool(run_dir / SPOOL_DIR)
    try:
        run_id = _end_in_store(run_dir, status, reason, tracking_uri, experiment)
    except store_errors() as err:
        run_id = None
        log.error("run %s: its end (%s) could not be recorded in the tracking store: %s", run_dir, status,
                  describe(err))
    if run_id is None and spool.exists:
        spool.append({"op": "terminate", "status": status, "end_time": now_ms()})
    return run_id


def _end_in_store(run_dir: Path, status: str, reason: str, tracking_uri: str,
                  experiment: Optional[str]) -> Optional[str]:
    from mlflow.tracking import MlflowClient

    apply_client_defaults()
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment) if experiment else None
    if found is None:
        return None
    folder = str(run_dir.resolve())
    for run in client.search_runs([found.experiment_id], filter_string="attributes.status = 'RUNNING'",
                                  max_results=50000):
        if run.data.tags.get("harness.run_dir") == folder:
            client.set_tag(run.info.run_id, ENDED_BY_TAG, reason)
            client.set_terminated(run.info.run_id, status=status, end_time=now_ms())
            return run.info.run_id
    return None
