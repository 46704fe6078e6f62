"""Re-running a sweep skips the jobs whose identical config (same config hash) already FINISHED in the
same experiment with the same code (tag `harness.code_version`, see harness/code_version.py); `--force`
(force=true) reruns them, `--reuse-across-versions` (reuse_across_versions=true) also takes a run made by
other code as done."""
from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Optional

from omegaconf import DictConfig

log = logging.getLogger("harness")

HASH_TAG = "harness.config_hash"
VERSION_TAG = "harness.code_version"
# What `search_runs` answers for the tag filter below (active runs, newest first), asked of MLflow's tables
# directly: a local store's answer then costs milliseconds instead of importing MLflow in the job (seconds).
TWIN_SQL = ("SELECT r.run_uuid FROM runs r JOIN experiments e ON e.experiment_id = r.experiment_id "
            "JOIN tags t ON t.run_uuid = r.run_uuid WHERE e.name = ? AND t.key = ? AND t.value = ? "
            "AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active' ORDER BY r.start_time DESC LIMIT 1")
SAME_VERSION_SQL = TWIN_SQL.replace(" WHERE ", " JOIN tags v ON v.run_uuid = r.run_uuid WHERE v.key = ? AND v.value = ? AND ")


def finished_twin(cfg: DictConfig) -> Optional[str]:
    """The MLflow run id of a FINISHED run with this config's hash, or None (also when unsure)."""
    if cfg.force or cfg.tracking.backend != "mlflow" or cfg.trainer.get("resume"):
        return None
    try:
        from harness.tracking.params import config_hash
        from harness.tracking.store import experiment_name, sqlite_file, store_exists, tracking_uri

        from harness.code_version import code_version

        uri, name, digest = tracking_uri(cfg), experiment_name(cfg), config_hash(cfg)
        version = None if cfg.get("reuse_across_versions") else code_version()
        path = sqlite_file(uri)
        if path is None:
            return _client_twin(uri, name, digest, version)
        return sqlite_twin(path, name, digest, version) if store_exists(cfg) else None  # one not created yet has no twin
    except Exception as err:  # an unreachable store must not stop the run: run it
        log.warning("could not check for an identical finished run: %s", err)
        return None


def sqlite_twin(path: Path, experiment: str, digest: str, version: Optional[str] = None) -> Optional[str]:
    """`version`: only a twin made by that code version (None: by any)."""
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=20)) as conn:
        if version is None:
            row = conn.execute(TWIN_SQL, (experiment, HASH_TAG, digest)).fetchone()
        else:
            row = conn.execute(SAME_VERSION_SQL, (VERSION_TAG, version, experiment, HASH_TAG, digest)).fetchone()
    return row[0] if row else None


def _client_twin(uri: str, experiment: str, digest: str, version: Optional[str] = None) -> Optional[str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    query = f"tags.`{HASH_TAG}` = '{digest}' and attributes.status = 'FINISHED'"
    if version is not None:
        query += f" and tags.`{VERSION_TAG}` = '{version}'"
    runs = client.search_runs([found.experiment_id], filter_string=query, max_results=1)
    return runs[0].info.run_id if runs else None
