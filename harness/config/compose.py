"""Compose run configs with Hydra where no launcher does it: a single run, `--cfg job`, a named sweep's grids.

`preflight_jobs(overrides, multirun)` expands a sweep exactly as Hydra's basic sweeper does, composes every
job's config with Hydra (one initialization for all of them) and validates it. In a multirun, the launcher
composes each job instead (`harness.launchers.base.HarnessLauncher.prepare`). Hydra's multi-line composition
and parse errors become one-line `ConfigError`s that suggest the nearest valid name
(`harness.config.compose_errors`)."""
from __future__ import annotations

import contextlib
import copy
import itertools
import os
from dataclasses import dataclass
from typing import Iterator, List, Sequence

from omegaconf import DictConfig, open_dict

from harness.config.errors import ConfigError
from harness.config.limits import check_environment, check_grid_size, refuse_duplicates
from harness.config.compose_errors import describe_composition_error, parse_overrides
from harness.config.names import CONFIG_MODULE, CONFIG_NAME
from harness.config.schema import register_schemas
from harness.config.validate import validate

JOB_NAME = "job"  # hydra.job.name: Hydra names it after the task function's module, harness/launchers/job.py


@dataclass
class Job:
    """One job of a run or sweep: its overrides, its config as Hydra composed it (with the `hydra` node) and
    the validated run config the job computes with."""
    overrides: List[str]
    config: DictConfig
    spec: DictConfig


def expand_sweep(overrides: Sequence[str]) -> List[List[str]]:
    """The override list of every job in a sweep, in the order of Hydra's basic sweeper: the cartesian product
    of each override's values (a choice sweep `a,b`, `range(...)`, `glob(...)`), the last key varying fastest."""
    axes = []
    for override in parse_overrides(overrides):
        key = override.get_key_element()
        if not override.is_sweep_override():
            axes.append([f"{key}={override.get_value_element_as_str()}"])
        elif override.is_discrete_sweep():
            values = [f"{key}={value}" for value in override.sweep_string_iterator()]
            if not values:
                raise ConfigError(f"{key} has an empty sweep: give at least one value")
            axes.append(values)
        else:
            raise ConfigError(f"{override.input_line}: an interval sweep needs sweeper=optuna (a grid takes "
                              "values: a,b,c or range(start,stop,step))")
    return [list(job) for job in itertools.product(*axes)]


@contextlib.contextmanager
def hydra_session() -> Iterator[None]:
    """Hydra initialized on the harness's configs for the compositions inside (the previous state restored)."""
    from hydra import initialize_config_module

    register_schemas()
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3", job_name=JOB_NAME):
        yield


def compose_in_session(overrides: Sequence[str], multirun: bool = False) -> DictConfig:
    """One job's config with its `hydra` node, as Hydra's launcher composes it (`load_sweep_config`: a sweep's
    job is composed in RUN mode with `hydra.mode=MULTIRUN`); inside `hydra_session`."""
    from hydra import compose as hydra_compose

    mode = "hydra.mode=MULTIRUN" if multirun else "hydra.mode=RUN"  # what Hydra's command line adds
    try:
        return hydra_compose(config_name=CONFIG_NAME, overrides=[*overrides, mode], return_hydra_config=True)
    except Exception as err:  # Hydra's composition errors (several kinds, some OmegaConf's): said in one line
        raise ConfigError(describe_composition_error(err, overrides)) from None


def compose(overrides: Sequence[str]) -> DictConfig:
    """One run's config (without the `hydra` node), composed by Hydra; errors as one-line ConfigErrors."""
    with hydra_session():
        cfg = compose_in_session(overrides)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def task_config(full: DictConfig) -> DictConfig:
    """A composed config without its `hydra` node (what the job function receives)."""
    cfg = copy.copy(full)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def check_overrides(overrides: Sequence[str], multirun: bool) -> None:
    """What the command line alone can refuse (ConfigError, one line): an override that does not parse, a key
    given twice, the environment's knobs, a grid too large to expand."""
    parsed = parse_overrides(overrides)
    refuse_duplicates(parsed)
    check_environment()
    if multirun:
        check_grid_size(parsed)


def check_sweep_config(overrides: Sequence[str]) -> None:
    """The sweep-level config Hydra composes before its sweeper starts (the overrides that are not sweeps),
    composed here so that what Hydra would fail on is refused in one line (ConfigError). Jobs are composed by
    the launcher."""
    fixed = [o.input_line for o in parse_overrides(overrides) if not o.is_sweep_override()]
    with hydra_session():
        compose_in_session(fixed, multirun=True)


def preflight_jobs(overrides: Sequence[str], multirun: bool) -> List[Job]:
    """Every job of a run or sweep, composed by Hydra and validated; ConfigError (one line) for the first
    that cannot run. Used where no launcher composes them: a single run, `--cfg job`, a named sweep's check
    of all its grids before the first starts."""
    check_overrides(overrides, multirun)
    jobs = expand_sweep(overrides) if multirun else [list(overrides)]
    if not jobs:
        raise ConfigError("the sweep is empty: no job to run")
    workers = _pool_workers(len(jobs))
    if workers > 1:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return _compose_in_pool(jobs, multirun, workers)
        except BrokenProcessPool:  # e.g. a __main__ a spawned process cannot import (a script read from stdin)
            pass
    with hydra_session():
        return [_compose_job(job, multirun) for job in jobs]


def _compose_job(job: List[str], multirun: bool) -> Job:
    full = compose_in_session(job, multirun)
    return Job(list(job), full, validate(task_config(full), job))


# Hydra composes a job in about 0.1-0.2 s (it re-reads and re-merges the config files each time, as its own
# launcher does), so a large grid is composed by a pool of processes, each job still once and by Hydra.
# A worker starts in about 0.5 s, so smaller sweeps stay in this process.
POOL_MIN_JOBS = 24
POOL_MAX_WORKERS = 8


def _pool_workers(n_jobs: int) -> int:
    if n_jobs < POOL_MIN_JOBS:
        return 1
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(available, POOL_MAX_WORKERS, n_jobs // (POOL_MIN_JOBS // 2)))


def _compose_in_pool(jobs: List[List[str]], multirun: bool, workers: int) -> List[Job]:
    """The jobs composed by `workers` spawned processes, in order; the first job that cannot run is the one
    refused, as when they are composed here one by one."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tqdm import tqdm

    size = max(1, -(-len(jobs) // (workers * 4)))  # contiguous chunks, several per worker to even out the load
    chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
    composed: List[Job] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_enter_hydra_session) as pool, \
            tqdm(total=len(jobs), desc="composing", unit="job", disable=None, leave=False) as bar:
        for result in pool.map(_compose_chunk, chunks, [multirun] * len(chunks)):
            if isinstance(result, str):
                pool.shutdown(wait=True, cancel_futures=True)
                raise ConfigError(result)
            composed.extend(result)
            bar.update(len(result))
    return composed


_WORKER_SESSION = contextlib.ExitStack()


def _enter_hydra_session() -> None:
    _WORKER_SESSION.enter_context(hydra_session())  # for the worker's life


def _compose_chunk(chunk: List[List[str]], multirun: bool) -> "List[Job] | str":
    """The chunk's jobs composed, or the one-line refusal of the first that cannot run."""
    try:
        return [_compose_job(job, multirun) for job in chunk]
    except ConfigError as err:
        return str(err)


def preflight(overrides: Sequence[str], multirun: bool) -> List[DictConfig]:
    """The validated run config of every job of a run or sweep."""
    return [job.spec for job in preflight_jobs(overrides, multirun)]
