"""A tracking store that refuses a run is not an outage. When MLflow answers that the run cannot be written
(deleted in the UI and so no longer in the active state, not found in a store that was deleted and made
anew, an experiment it will not create such as a name over 500 characters), retrying can never help: no
`sync` will ever put the run there. Such a run is not spooled: it says so in one line, goes on, and keeps its
record in its own folder (`metrics.jsonl`, `status.txt`). An outage is only what can clear (a refused
connection, a timeout, a 5xx answer, a locked database): that one is spooled (harness/tracking/spool.py).

MLflow's answer is read through its public API: `MlflowException.error_code`, and the run's
`lifecycle_stage` from `MlflowClient.get_run`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from harness.tracking.outage import describe, is_rejected


def run_refused(client, run_id: Optional[str], err: BaseException) -> Optional[str]:
    """Why the store refuses the whole run, after it refused a record with `err`, or None when only that
    record was refused (a bad value: it is skipped, the run goes on being tracked)."""
    if not is_rejected(err):
        return None
    if client is None or not run_id:
        return describe(err)
    try:
        run = client.get_run(run_id)
    except Exception as gone:  # the store's own answer about the run (not found): the run is refused
        return describe(gone) if is_rejected(gone) else None
    if run.info.lifecycle_stage != "active":
        return f"mlflow run {run_id} is {run.info.lifecycle_stage} in the store ({describe(err)})"
    return None


def refused_line(uri: str, run_dir: Path, why: str) -> str:
    return (f"tracking store {uri} refused this run ({why}): it is not recorded there and never will be "
            f"(this is not an outage: sync cannot add it); the run goes on, recorded in {run_dir} only")


class NoSpool:
    """Stands in for a refused run's spool: what would be spooled for a later upload is dropped, as no upload
    can ever take it (the run's folder keeps its metrics)."""

    exists = False

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def append(self, op: Dict[str, Any]) -> None:
        pass

    def artifact_op(self, path: Path, artifact_path: Optional[str] = None) -> Dict[str, Any]:
        return {}

    def text_op(self, text: str, name: str) -> Dict[str, Any]:
        return {}

    def pending(self) -> int:
        return 0
