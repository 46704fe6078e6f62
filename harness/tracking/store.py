"""Where runs are tracked: resolving the tracking URI and creating the store once, before any writer.

Concurrent first creation of an MLflow SQLite store races on its schema migration, so every creator holds
a file lock in the output folder that also serialises separate invocations: `ensure_experiment` (a job's
tracker, the sweep's parent run) and `python -m harness server`. For jobs submitted through submitit (Slurm)
the CLI creates the stores up front (`prepare_stores`), so an unreachable store is reported before anything
is submitted; jobs run on this machine create theirs when their tracker opens the run."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional, Tuple

from omegaconf import DictConfig

from harness.infra.paths import tools_output_root
from harness.infra.locks import locked
from harness.tracking.outage import apply_client_defaults, describe, warn_once
from harness.tracking.params import scrub
from harness.tracking.ui import set_default_view

LOCK_NAME = ".mlruns.lock"


def default_root() -> Path:
    """Where tools look for the default store: HARNESS_OUTPUT_ROOT, else the current folder."""
    return tools_output_root()


def default_uri(root: Optional[Path] = None) -> str:
    return f"sqlite:///{(root or default_root()) / 'mlruns.db'}"


def output_root(cfg: DictConfig) -> Path:
    return Path(cfg.output_root).expanduser().resolve()


URI_ENV = "MLFLOW_TRACKING_URI"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME"


def tracking_uri(cfg: DictConfig) -> str:
    """As every MLflow tool: `tracking.uri=` (command line, or tracking=server), else MLFLOW_TRACKING_URI, else
    the default SQLite store in the output root."""
    return cfg.tracking.uri or os.environ.get(URI_ENV) or default_uri(output_root(cfg))


def mlflow_store(cfg: DictConfig) -> Optional[str]:
    """The full URI of the MLflow store a run or sweep records to; None when it is not tracked in MLflow."""
    return tracking_uri(cfg) if cfg.tracking.backend == "mlflow" else None


def experiment_name(cfg: DictConfig) -> str:
    """`tracking.experiment=`, else `experiment_name` (conf/config.yaml: MLFLOW_EXPERIMENT_NAME, else harness)."""
    return cfg.tracking.experiment or cfg.experiment_name


def is_local(uri: str) -> bool:
    return uri.startswith(("sqlite:", "file:")) or "://" not in uri


def artifact_root(cfg: DictConfig) -> Optional[str]:
    """Artifacts of a local store sit beside it; a server decides for itself."""
    if is_local(tracking_uri(cfg)):
        return (output_root(cfg) / "mlartifacts").as_uri()
    return None


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on `<folder>/.mlruns.lock`, held across processes (and NFS nodes with lockd)."""
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / LOCK_NAME):
        yield


def get_or_create_experiment(client, name: str, artifact_location: Optional[str]) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        experiment_id = client.create_experiment(name, artifact_location=artifact_location)
    except MlflowException:  # created meanwhile by a writer on another node
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id
    set_default_view(client, experiment_id)
    return experiment_id


def ensure_experiment(cfg: DictConfig) -> Tuple[str, str]:
    """Create the store and experiment if missing; returns (tracking uri, experiment id)."""
    from mlflow.tracking import MlflowClient

    apply_client_defaults()
    uri = tracking_uri(cfg)
    with folder_lock(output_root(cfg)):
        client = MlflowClient(tracking_uri=uri)
        return uri, get_or_create_experiment(client, experiment_name(cfg), artifact_root(cfg))


def sqlite_file(uri: str) -> Optional[Path]:
    """The database file of a `sqlite:///path` URI (None for other stores and in-memory SQLite)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(path).expanduser().resolve() if path and path != ":memory:" else None


def store_exists(cfg: DictConfig) -> bool:
    """False only for a local SQLite store not created yet. Checked under the lock of its creators, so a
    store that another process is creating counts once it is complete (and can be opened without the lock)."""
    path = sqlite_file(tracking_uri(cfg))
    if path is None:
        return True
    with folder_lock(output_root(cfg)):
        return path.is_file()


def prepare_stores(configs: Iterable[DictConfig]) -> None:
    """Create every store that `configs` (jobs submitted elsewhere) will write to, once, before any starts.

    The caller leaves out jobs run on this machine: they create theirs (`ensure_experiment`, in their tracker),
    so the CLI does not wait on MLflow for them."""
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
        except Exception as err:  # a store fault never stops a launch: the runs spool and sync later
            warn_once(key[0], f"tracking store {scrub(key[0])} unreachable ({describe(err)}): runs go on and "
                              "record to their run folder's spool/ (upload later: python -m harness sync)")
