"""The one composer: every job's config, for every path (a sweep's launcher, a single run, `--cfg job`, a named
sweep's check of its grids, a resume's default spec, `harness stage`), is composed by Hydra's config loader in
`compose_config` and validated in `compose_job`.

A launcher composes each job of its sweep as Hydra's launchers do (hydra-submitit-launcher in `launch()`): the
config loader Hydra handed it and the sweep's primary config (`load_sweep_config`). Where no launcher runs
(a single run, a grid checked before its multirun starts), `hydra_session` initializes Hydra on the harness's
configs and the job is composed from its overrides alone, as Hydra's `run` composes the command line's.
Hydra's multi-line composition and parse errors become one-line `ConfigError`s that suggest the nearest valid
name (`harness.config.compose_errors`)."""
from __future__ import annotations

import contextlib
import copy
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence

from omegaconf import DictConfig, open_dict
from omegaconf.errors import OmegaConfBaseException

from harness.config.compose_errors import describe_composition_error, parse_overrides, refuse_group_lists
from harness.config.errors import ConfigError
from harness.config.interpolations import check_output_root, unresolvable
from harness.config.names import CONFIG_MODULE, CONFIG_NAME
from harness.config.limits import check_environment, check_grid_size, refuse_duplicates
from harness.config.overrides import expand_sweep, fixed_overrides
from harness.config.validate import validate
from harness.launchers.registry import checks_for as launcher_checks, store_configs
from harness.trainers import checks_for

if TYPE_CHECKING:
    from hydra.core.config_loader import ConfigLoader

JOB_NAME = "job"  # hydra.job.name: Hydra names it after the task function's module, harness/launchers/job.py


@dataclass
class Job:
    """One job of a run or sweep: its overrides, its config as Hydra composed it (with the `hydra` node) and
    the validated run config the job computes with."""
    overrides: List[str]
    config: DictConfig
    spec: DictConfig

    @property
    def run_config(self) -> DictConfig:
        """The composed config without its `hydra` node (what `--cfg job` prints)."""
        return task_config(self.config)


@contextlib.contextmanager
def hydra_session() -> Iterator[None]:
    """Hydra initialized on the harness's configs for the compositions inside (the previous state restored)."""
    from hydra import initialize_config_module

    store_configs()
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3", job_name=JOB_NAME):
        yield


def compose_config(overrides: Sequence[str], multirun: bool = False, *, sweep: Optional[DictConfig] = None,
                   loader: "Optional[ConfigLoader]" = None) -> DictConfig:
    """One job's config with its `hydra` node, composed by Hydra's config loader (`loader`; default: the one
    `hydra_session` or Hydra's main initialized). `sweep`: the sweep's primary config, the job composed as
    Hydra's launchers compose one (`load_sweep_config`: the sweep's hydra overrides, then the job's, in RUN
    mode, with the sweep's resolver cache). Without it, from the overrides alone (`multirun`: a sweep's job,
    `hydra.mode=MULTIRUN`, what Hydra's command line adds). ConfigError (one line) if Hydra cannot."""
    from hydra.core.global_hydra import GlobalHydra  # Hydra loads when a job is composed (the sweep list needs none)
    from hydra.types import RunMode

    loader = loader or GlobalHydra.instance().config_loader()
    try:
        if sweep is not None:
            return loader.load_sweep_config(sweep, list(overrides))
        mode = "hydra.mode=MULTIRUN" if multirun else "hydra.mode=RUN"
        return loader.load_configuration(config_name=CONFIG_NAME, overrides=[*overrides, mode],
                                         run_mode=RunMode.RUN, from_shell=False)
    except Exception as err:  # Hydra's composition errors (several kinds, some OmegaConf's): said in one line
        raise ConfigError(describe_composition_error(err, overrides)) from None


def compose_sweep_config(overrides: Sequence[str]) -> DictConfig:
    """A sweep's primary config, as Hydra's multirun composes it from the command line's overrides (a sweep's
    axes kept as given, in `hydra.overrides.task`); ConfigError (one line) if Hydra cannot."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    try:
        return GlobalHydra.instance().config_loader().load_configuration(
            config_name=CONFIG_NAME, overrides=[*overrides, "hydra.mode=MULTIRUN"], run_mode=RunMode.MULTIRUN,
            from_shell=False)
    except Exception as err:  # Hydra's composition errors (several kinds, some OmegaConf's): said in one line
        raise ConfigError(describe_composition_error(err, overrides)) from None


def compose_job(overrides: Sequence[str], multirun: bool = False, *, sweep: Optional[DictConfig] = None,
                loader: "Optional[ConfigLoader]" = None) -> Job:
    """One job composed (`compose_config`) and validated; ConfigError (one line) if it cannot run."""
    config = compose_config(overrides, multirun, sweep=sweep, loader=loader)
    return Job(list(overrides), config, validated(task_config(config), overrides))


def validated(cfg: DictConfig, overrides: Sequence[str] = ()) -> DictConfig:
    """The run config validated (harness/config/validate.py), with the checks its trainer registered."""
    try:
        check_output_root(cfg.get("output_root"))
        return validate(cfg, overrides, trainer_checks=checks_for, launcher_checks=launcher_checks)
    except OmegaConfBaseException as err:  # an interpolation that does not resolve, read first by validation
        raise ConfigError(unresolvable(err)) from None


def task_config(full: DictConfig) -> DictConfig:
    """A composed config without its `hydra` node (what the job function receives)."""
    cfg = copy.copy(full)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def compose(overrides: Sequence[str]) -> DictConfig:
    """One run's config (without the `hydra` node), not validated, in its own Hydra session (`harness stage`)."""
    with hydra_session():
        return task_config(compose_config(overrides))


def composed_spec(overrides: Sequence[str]) -> DictConfig:
    """One run's validated config, in its own Hydra session (a resume's spec with only how-it-runs overrides)."""
    with hydra_session():
        return compose_job(overrides).spec


def check_overrides(overrides: Sequence[str], multirun: bool, any_size: bool = False) -> None:
    """What the command line alone can refuse (ConfigError, one line): an override that does not parse, a key
    given twice, the environment's knobs, a grid too large to expand (any_size: `--yes`, none is)."""
    parsed = parse_overrides(overrides)
    refuse_group_lists(parsed, multirun)
    refuse_duplicates(parsed)
    check_environment()
    if multirun:
        check_grid_size(parsed, any_size)


def check_sweep_config(overrides: Sequence[str]) -> None:
    """The sweep-level config Hydra composes before its sweeper starts (the overrides that are not sweeps),
    composed here so that what Hydra would fail on is refused in one line (ConfigError). Jobs are composed by
    the launcher."""
    with hydra_session():
        compose_config(fixed_overrides(overrides), multirun=True)


def preflight_jobs(overrides: Sequence[str], multirun: bool, any_size: bool = False) -> List[Job]:
    """Every job of a run or sweep, composed and validated; ConfigError (one line) for the first that cannot
    run. Used where no launcher composes them: a single run, `--cfg job`, a named sweep's check of all its
    grids before the first starts."""
    check_overrides(overrides, multirun, any_size)
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
        return [compose_job(job, multirun) for job in jobs]


def preflight(overrides: Sequence[str], multirun: bool) -> List[DictConfig]:
    """The validated run config of every job of a run or sweep."""
    return [job.spec for job in preflight_jobs(overrides, multirun)]


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
        return [compose_job(job, multirun) for job in chunk]
    except ConfigError as err:
        return str(err)
