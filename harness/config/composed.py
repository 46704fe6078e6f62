"""The jobs this process has composed and validated (the preflight), so the launch uses them instead of
composing each job again: a launcher takes its job's config from here, and the job its validated spec.

Keyed by the job's task overrides (its `hydra.overrides.task`: the overrides without `hydra.*` ones)."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

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
