"""A Hydra callback that guards a run's or sweep's folder before anything is written into it.

- The folder is claimed (`harness.infra.claim`) before Hydra creates it: a second run or sweep given the same
  folder is refused with one line (exit 2) instead of interleaving its metrics and overwriting checkpoints.
- An experiment name that would carry a secret (`experiment_name=${oc.env:SECRET}`) is refused.
- MLflow's own "View run at <tracking URI>" lines are silenced when the URI carries a password, and log
  records (Hydra's "#0 : <overrides>" lines) are masked.

`mask_hydra_files` masks Hydra's `.hydra/*.yaml` (written before the job starts) with the one rule of
`harness.infra.secrets`; the job calls it first thing, in whatever process or node it runs.

A single run's folder is claimed by the `FolderGuard` callback (conf/config.yaml's `hydra.callbacks`); a sweep's
by its sweeper (harness/sweeps/continued.py), after every job is validated and before its parent run opens."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.infra.atomic_file import write_text_atomically
from harness.infra.claim import FolderInUse, claim, release
from harness.infra.refused import Refused
from harness.infra.secrets import has_uri_password, mask_log_records, mask_tree, scrub

HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def check_experiment_name(config: DictConfig) -> None:
    for key in ("tracking.experiment", "experiment_name"):
        value = OmegaConf.select(config, key, default=None)
        if isinstance(value, str) and scrub(value) != value:
            raise Refused(f"{key}={scrub(value)} is not allowed: it holds a secret (the value of a credential-named "
                          "environment variable or a URI password); name the experiment plainly")


def quiet_credentials_in_links(config: DictConfig) -> None:
    uri = OmegaConf.select(config, "tracking.uri", default=None)
    if isinstance(uri, str) and has_uri_password(uri):
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


def mask_yaml_files(folder: Path, names=HYDRA_FILES) -> None:
    """Rewrite (atomically) those of `folder`'s YAML files that hold a secret, masked."""
    for name in names:
        path = Path(folder) / name
        if not path.is_file():
            continue
        data = yaml.safe_load(path.read_text())
        masked = mask_tree(data)
        if masked != data:
            write_text_atomically(path, yaml.safe_dump(masked, sort_keys=False, allow_unicode=True))


def mask_hydra_files(output_dir: Path, subdir: Any) -> None:
    if subdir is not None:
        mask_yaml_files(Path(output_dir) / str(subdir))


def claim_folder(config: DictConfig, key: str, what: str) -> None:
    """Claim the run or sweep folder `key` names for this process (Refused: in use, or not writable), after
    refusing an experiment name that holds a secret; MLflow's links and log records stop showing credentials."""
    check_experiment_name(config)
    quiet_credentials_in_links(config)
    mask_log_records()
    folder = Path(str(OmegaConf.select(config, key)))
    try:
        claim(folder, what)
    except FolderInUse as err:
        raise Refused(str(err)) from None
    except OSError as err:  # a read-only or full disk, a folder of someone else's
        raise Refused(f"cannot write the {what} {folder}: {err.strerror or err} (choose a writable place with "
                      "HARNESS_OUTPUT_ROOT or output_root=...)") from None


def release_sweep_folder(config: DictConfig) -> None:
    sweep_dir = Path(str(OmegaConf.select(config, "hydra.sweep.dir")))
    mask_yaml_files(sweep_dir, ["multirun.yaml"])  # written by Hydra's sweeper (also when no job ran)
    release(sweep_dir)


class FolderGuard(Callback):
    """A single run's folder (a sweep's is claimed by its sweeper once every job is validated)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        claim_folder(config, "hydra.run.dir", "run folder")

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        release(Path(str(OmegaConf.select(config, "hydra.run.dir"))))
