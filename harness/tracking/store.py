"""Where runs are tracked: resolving the tracking URI and creating the store once, before any writer.

Concurrent first creation of an MLflow SQLite store races on its schema migration, so the CLI creates
the store and the experiment up front, under a file lock that also serialises separate invocations."""
from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional, Tuple

from omegaconf import DictConfig


def output_root(cfg: DictConfig) -> Path:
    return Path(cfg.output_root).expanduser().resolve()


def tracking_uri(cfg: DictConfig) -> str:
    if cfg.tracking.uri:
        return cfg.tracking.uri
    return f"sqlite:///{output_root(cfg) / 'mlruns.db'}"


def experiment_name(cfg: DictConfig) -> str:
    return cfg.tracking.experiment or cfg.experiment_name


def artifact_root(cfg: DictConfig) -> Optional[str]:
    """Artifacts of a local store sit beside it; a server decides for itself."""
    if tracking_uri(cfg).startswith(("sqlite:", "file:")) or "://" not in tracking_uri(cfg):
        return (output_root(cfg) / "mlartifacts").as_uri()
    return None


@contextmanager
def _store_lock(cfg: DictConfig) -> Iterator[None]:
    root = output_root(cfg)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".mlruns.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_experiment(cfg: DictConfig) -> Tuple[str, str]:
    """Create the store and experiment if missing; returns (tracking uri, experiment id)."""
    from mlflow.tracking import MlflowClient

    uri = tracking_uri(cfg)
    with _store_lock(cfg):
        client = MlflowClient(tracking_uri=uri)
        name = experiment_name(cfg)
        found = client.get_experiment_by_name(name)
        if found is not None:
            return uri, found.experiment_id
        return uri, client.create_experiment(name, artifact_location=artifact_root(cfg))


def prepare_stores(configs: Iterable[DictConfig]) -> None:
    """Create every store the jobs will write to, once, before any job starts."""
    seen = set()
    for cfg in configs:
        if cfg.tracking.backend != "mlflow":
            continue
        key = (tracking_uri(cfg), experiment_name(cfg))
        if key in seen:
            continue
        seen.add(key)
        try:
            ensure_experiment(cfg)
        except Exception as err:  # an outage at start is not fatal: the job itself retries
            import logging

            logging.getLogger("harness").warning("tracking store %s not ready: %s", key[0], err)
