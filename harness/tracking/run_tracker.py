"""Opening the tracking run of one job: its params, tags, parent run and logged config, secrets left out."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Dict, Optional

from omegaconf import DictConfig

from harness.tracking.local_tracker import Tracker
from harness.tracking.params import flatten, redacted_yaml, run_tags, safe_run_name
from harness.tracking.store import artifact_root, ensure_experiment, experiment_name, tracking_uri
from harness.tracking.stored_uri import same_store
from harness.tracking.tags import PARENT_TAG, PARENT_UID_TAG
from harness.tracking.tracker import MlflowTracker, RunSpec
from harness.tracking.ui import description_tags, display_name, folder_label

log = logging.getLogger("harness")

PARENT_FILE = "parent_run.json"  # written into the sweep folder by the sweep's parent run


def parent_tags(sweep_dir: Optional[str], tracking_uri: str) -> Dict[str, str]:
    """Tags nesting a sweep's job under the sweep's parent run (read from `<sweep_dir>/parent_run.json`).

    The parent is named by tag, never through MLFLOW_RUN_ID, so it works across processes and nodes."""
    path = Path(sweep_dir) / PARENT_FILE if sweep_dir else None
    if path is None or not path.is_file():
        return {}
    try:
        parent = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        log.warning("%s unreadable, the run is not nested under its sweep: %s", path, err)
        return {}
    if not same_store(parent.get("tracking_uri"), tracking_uri):
        return {}  # the parent lives in another store: a tag naming it would point nowhere
    tags = {PARENT_UID_TAG: parent["run_uid"]} if parent.get("run_uid") else {}
    if parent.get("run_id"):
        tags[PARENT_TAG] = parent["run_id"]
    return tags


def mlflow_tracker(cfg: DictConfig, run_dir: Path, run_name: str, sweep_dir: Optional[str],
                   resume_run_id: Optional[str]) -> MlflowTracker:
    uri = tracking_uri(cfg)
    tags = {**run_tags(cfg, sweep_dir), **description_tags(safe_run_name(run_name)), **parent_tags(sweep_dir, uri)}
    spec = RunSpec(tracking_uri=uri, experiment_name=experiment_name(cfg), run_name=display_name(cfg, folder_label(run_dir, sweep_dir), run_name),
                   params=flatten(cfg), tags=tags, artifact_location=artifact_root(cfg))
    tracker = MlflowTracker(run_dir, spec, experiment_id=lambda: ensure_experiment(cfg)[1],
                            resume_run_id=resume_run_id)
    tracker.log_artifact(run_dir / "config.yaml")
    return tracker


def open_tracker(cfg: DictConfig, run_dir: Path, run_name: str, sweep_dir: Optional[str] = None,
                 resume_run_id: Optional[str] = None) -> Tracker:
    """Open the tracking run of a job (continuing the run `resume_run_id` when resuming from a checkpoint)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(redacted_yaml(cfg))
    if cfg.tracking.backend == "none":
        return Tracker(run_dir)
    return mlflow_tracker(cfg, run_dir, run_name, sweep_dir, resume_run_id)
