"""The jobs this process has composed and validated (the preflight), so the launch uses them instead of
composing each job again: a launcher takes its job's config from here, and the job its validated spec.

Keyed by the job's task overrides (its `hydra.overrides.task`: the overrides without `hydra.*` ones)."""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from omegaconf import DictConfig

Key = Tuple[str, ...]
_JOBS: Dict[Key, Tuple[DictConfig, DictConfig]] = {}


def key(overrides: Sequence[str]) -> Key:
    return tuple(str(o) for o in overrides if not str(o).lstrip("+~").startswith("hydra."))


def remember(overrides: Sequence[str], config: DictConfig, spec: DictConfig) -> None:
    """Record a job's composed config (with its `hydra` node) and its validated spec."""
    _JOBS[key(overrides)] = (config, spec)


def lookup(overrides: Sequence[str]) -> Optional[Tuple[DictConfig, DictConfig]]:
    """(composed config, validated spec) of a job composed in this process, or None."""
    return _JOBS.get(key(overrides))


def spec_for(task_overrides: Sequence[str]) -> Optional[DictConfig]:
    found = lookup(task_overrides)
    return found[1] if found else None


def clear() -> None:
    _JOBS.clear()


# A file of jobs composed by a parent process (`python -m harness sweep`) for the multirun it starts with
# the same overrides, so the multirun does not compose them again. Written just before, in a private
# temporary folder, by the same user: the same trust as the pickles a launcher sends to its workers.
PREFLIGHTED_ENV = "HARNESS_PREFLIGHTED"


def save_jobs(jobs: list, path: Path) -> None:
    path.write_bytes(pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL))


def handed_over(job_overrides: List[List[str]]) -> Optional[list]:
    """The jobs a parent composed for exactly these job overrides (None: none handed over, or other ones)."""
    path = os.environ.get(PREFLIGHTED_ENV)
    if not path or not Path(path).is_file():
        return None
    jobs = pickle.loads(Path(path).read_bytes())
    return jobs if [list(job.overrides) for job in jobs] == [list(o) for o in job_overrides] else None
