"""Re-running a sweep skips the jobs whose identical config (same config hash) already FINISHED in the
same experiment with the same code (tag `harness.code_version`, see harness/infra/code_version.py); `--force`
(force=true) reruns them, `--reuse-across-versions` (reuse_across_versions=true) also takes a run made by
other code as done."""
from __future__ import annotations

import functools
import logging
from typing import Optional

from omegaconf import DictConfig
from harness.infra.code_version import code_version
from harness.tracking.outage import apply_client_defaults
from harness.tracking.params import config_hash
from harness.tracking.store import experiment_name, store_exists, tracking_uri

log = logging.getLogger("harness")

HASH_TAG = "harness.config_hash"
VERSION_TAG = "harness.code_version"


def finished_twin(cfg: DictConfig) -> Optional[str]:
    """The MLflow run id of a FINISHED run with this config's hash, or None (also when unsure). Asked of the
    store through MLflow's `search_runs`; the job imports MLflow for its own run anyway, and MLflow keeps one
    store object per URI, so the question costs one query."""
    if cfg.force or cfg.tracking.backend != "mlflow" or cfg.trainer.get("resume"):
        return None
    try:
        if not store_exists(cfg):  # a local store not created yet has no twin (and is not created here)
            return None
        version = None if cfg.get("reuse_across_versions") else code_version()
        return search_twin(tracking_uri(cfg), experiment_name(cfg), config_hash(cfg), version)
    except Exception as err:  # an unreachable store must not stop the run: run it
        log.warning("could not check for an identical finished run: %s", err)
        return None


def search_twin(uri: str, experiment: str, digest: str, version: Optional[str] = None) -> Optional[str]:
    """The newest active FINISHED run of `experiment` tagged with `digest` (and, given `version`, made by
    that code version)."""
    client = _client(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    query = f"tags.`{HASH_TAG}` = '{digest}' and attributes.status = 'FINISHED'"
    if version is not None:
        query += f" and tags.`{VERSION_TAG}` = '{version}'"
    runs = client.search_runs([found.experiment_id], filter_string=query, max_results=1,
                              order_by=["attributes.start_time DESC"])
    return runs[0].info.run_id if runs else None


@functools.lru_cache(maxsize=4)
def _client(uri: str):
    """One client per store for the process: a sweep's or a plan's many questions open the store once (its
    opening, a second or more for a SQLite store on a busy machine, was most of a 48-job `--plan`)."""
    from mlflow.tracking import MlflowClient

    apply_client_defaults()
    return MlflowClient(tracking_uri=uri)
