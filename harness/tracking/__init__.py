"""Run tracking: MLflow (default, local SQLite store) or local files only."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from omegaconf import DictConfig, OmegaConf

from harness.tracking.tracker import MlflowTracker, Tracker


def open_tracker(cfg: DictConfig, run_dir: Path, run_name: str, sweep_dir: Optional[str] = None) -> Tracker:
    """Open the tracking run of a job (continuing the checkpoint's run when resuming)."""
    from harness.trainers.checkpoint import resumed_run_id
    from harness.tracking.params import flatten, run_tags
    from harness.tracking.store import ensure_experiment

    run_dir = Path(run_dir)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    if cfg.tracking.backend == "none":
        return Tracker(run_dir)
    uri, experiment_id = ensure_experiment(cfg)
    tracker = MlflowTracker(run_dir, uri, experiment_id, run_name, params=flatten(cfg),
                            tags=run_tags(cfg, sweep_dir), resume_run_id=resumed_run_id(cfg))
    tracker.log_artifact(run_dir / "config.yaml")
    return tracker


__all__ = ["open_tracker", "Tracker", "MlflowTracker"]
