"""The sweep's MLflow parent run gets its reports: the kinds built in a reports folder are logged as its
artifacts, beside the kinds it already holds, with the index rewritten for all of them."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import List

log = logging.getLogger("harness")


def log_to_parent(tracking_uri: str, parent_run_id: str, folder: Path, kinds: List[str], write_index,
                  artifact_path: str = "reports") -> bool:
    """Upload the reports `kinds` built in `folder` (`<folder>/<kind>/`) to the sweep's parent run, under
    `reports/<kind>/`, leaving the other kinds recorded there as they are; then the parent's index
    (`reports/index.html`, `README.md`), written by `write_index(folder, kinds)` for every kind the parent
    now holds. False (and a warning) on failure."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        for kind in kinds:
            client.log_artifacts(parent_run_id, str(Path(folder) / kind), f"{artifact_path}/{kind}")
        recorded = [Path(f.path).name for f in client.list_artifacts(parent_run_id, artifact_path) if f.is_dir]
        with tempfile.TemporaryDirectory() as tmp:
            write_index(Path(tmp), sorted(set(recorded) | set(kinds)))
            client.log_artifacts(parent_run_id, tmp, artifact_path)
        return True
    except (MlflowException, OSError) as err:
        log.warning("could not log reports to parent run %s: %s", parent_run_id, err)
        return False
