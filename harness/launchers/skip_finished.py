"""Re-running a sweep skips the jobs whose identical config (same config hash) already FINISHED in the
same experiment; `--force` (force=true) reruns them."""
from __future__ import annotations

import logging
from typing import Optional

from omegaconf import DictConfig

log = logging.getLogger("harness")


def finished_twin(cfg: DictConfig) -> Optional[str]:
    """The MLflow run id of a FINISHED run with this config's hash, or None (also when unsure)."""
    if cfg.force or cfg.tracking.backend != "mlflow" or cfg.trainer.get("resume"):
        return None
    try:
        from mlflow.tracking import MlflowClient

        from harness.tracking.params import config_hash
        from harness.tracking.store import experiment_name, tracking_uri

        client = MlflowClient(tracking_uri=tracking_uri(cfg))
        experiment = client.get_experiment_by_name(experiment_name(cfg))
        if experiment is None:
            return None
        query = f"tags.`harness.config_hash` = '{config_hash(cfg)}' and attributes.status = 'FINISHED'"
        runs = client.search_runs([experiment.experiment_id], filter_string=query, max_results=1)
        return runs[0].info.run_id if runs else None
    except Exception as err:  # an unreachable store must not stop the run: run it
        log.warning("could not check for an identical finished run: %s", err)
        return None
