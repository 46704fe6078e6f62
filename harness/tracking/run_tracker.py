"""Opening the tracking run of one job: its params, tags, parent run and logged config, secrets left out.

With `tracking.backend=mlflow` the MLflow side runs in a sidecar process (`harness.tracking.sidecar`), so
MLflow's imports, the store and every write happen beside training rather than in its way;
HARNESS_TRACKING_SIDECAR=0 keeps it in the job's process (debugging, benchmark comparisons)."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, OmegaConf

from harness.tracking.local_tracker import Tracker
from harness.tracking.tracker import MlflowTracker, RunSpec

log = logging.getLogger("harness")

PARENT_FILE = "parent_run.json"  # written into the sweep folder by `sweep_callback.SweepTracking`
SIDECAR_ENV = "HARNESS_TRACKING_SIDECAR"


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
    if parent.get("tracking_uri") != tracking_uri:
        return {}  # the parent lives in another store: a tag naming it would point nowhere
    tags = {"harness.parent_uid": parent["run_uid"]} if parent.get("run_uid") else {}
    if parent.get("run_id"):
        tags["mlflow.parentRunId"] = parent["run_id"]
    return tags


def sidecar_enabled() -> bool:
    """HARNESS_TRACKING_SIDECAR: 1 (default) tracks in a sidecar process, 0 in the job's own process."""
    raw = os.environ.get(SIDECAR_ENV, "").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(f"{SIDECAR_ENV}={raw!r} is not allowed: 1 (default, a sidecar process) or 0 (in process)")
    return raw != "0"


def mlflow_tracker(job: Dict[str, Any]) -> MlflowTracker:
    """The MLflow tracker of a job described by `tracker_job` (in the sidecar, or in the job's process)."""
    from harness.tracking.params import flatten, run_tags, safe_run_name
    from harness.tracking.store import artifact_root, ensure_experiment, experiment_name, tracking_uri

    cfg, sweep_dir = OmegaConf.create(job["config"]), job["sweep_dir"]
    uri = tracking_uri(cfg)
    spec = RunSpec(tracking_uri=uri, experiment_name=experiment_name(cfg), run_name=safe_run_name(job["run_name"]),
                   params=flatten(cfg), tags={**run_tags(cfg, sweep_dir), **parent_tags(sweep_dir, uri)},
                   artifact_location=artifact_root(cfg))
    tracker = MlflowTracker(Path(job["run_dir"]), spec, experiment_id=lambda: ensure_experiment(cfg)[1],
                            resume_run_id=job["resume_run_id"])
    tracker.log_artifact(Path(job["run_dir"]) / "config.yaml")
    return tracker


def tracker_job(cfg: DictConfig, run_dir: Path, run_name: str, sweep_dir: Optional[str]) -> Dict[str, Any]:
    """What opening the run needs, as plain data that can travel to another process: the resolved config
    (Hydra's resolvers only work in the job's process), names, and the run a resumed job continues."""
    from harness.trainers.checkpoint import resumed_run_id

    return {"config": OmegaConf.to_container(cfg, resolve=True), "run_dir": str(run_dir), "run_name": run_name,
            "sweep_dir": sweep_dir, "resume_run_id": resumed_run_id(cfg)}


def open_tracker(cfg: DictConfig, run_dir: Path, run_name: str, sweep_dir: Optional[str] = None) -> Tracker:
    """Open the tracking run of a job (continuing the checkpoint's run when resuming)."""
    from harness.tracking.params import redacted_yaml

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(redacted_yaml(cfg))
    if cfg.tracking.backend == "none":
        return Tracker(run_dir)
    job = tracker_job(cfg, run_dir, run_name, sweep_dir)
    if sidecar_enabled():
        from harness.tracking.sidecar import SidecarTracker

        return SidecarTracker(run_dir, job)
    return mlflow_tracker(job)
