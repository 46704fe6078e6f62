"""Common ground of the harness's Hydra launchers: prepare each job of a sweep and run one job the way
Hydra's basic launcher does, in whatever process (a local worker, a Slurm node) executes it."""
from __future__ import annotations

import copy
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from hydra.experimental.callback import Callback
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict
from tqdm import tqdm

from harness.config.errors import ConfigError
from harness.launchers.compose import Job, compose_config, compose_job
from harness.launchers.ensemble_run import run_ensemble
from harness.launchers.gpu_workers import pinned_environments, visible_gpus
from harness.launchers.launch_line import launch_line, write_job_list
from harness.launchers.sweep_progress import Unit, units_of, watching
from harness.launchers.worker_pool import run_groups
from harness.infra.refused import Refused
from harness.trainers.checkpoint import checkpoint_paths
from harness.trainers.ensemble.grouping import Room, plan, room_here

log = logging.getLogger("harness")


class JobFailed(RuntimeError):
    """Raised in a cluster worker whose run did not finish, so the scheduler records the job as FAILED
    (Hydra and the harness catch run errors, which would otherwise leave the job COMPLETED)."""


Key = Tuple[str, ...]  # a job's overrides


class Layout(NamedTuple):
    """How a launcher runs a sweep's jobs: their positions grouped (an ensemble each, or a run alone), how many
    groups run at once (worker processes, or Slurm array tasks at a time), and where, in words."""
    groups: List[List[int]]
    workers: int
    where: str
    in_workers: bool = True  # False: one after another in the driver's process (launcher=local, no ensemble)
PROGRESS_MIN_JOBS = 24  # Hydra composes a job in 0.1-0.2 s: a larger sweep shows a bar while it is composed


def no_callbacks() -> Callback:
    """Hydra's callback protocol with every hook a no-op (what a worker's jobs run with)."""
    return Callback()


class HarnessLauncher(Launcher):
    def __init__(self, **params: Any) -> None:
        self.params = params
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.task_function: Optional[TaskFunction] = None
        # each job this launcher composed and validated (`prepare`), by its overrides; a job's entry travels with
        # the launcher to the process that runs it (`for_job`)
        self.prepared: Dict[Key, Job] = {}
        self.folders: Dict[int, Optional[Path]] = {}  # job number -> its folder, once launched
        self.job_list: Optional[Path] = None  # the sweep folder's list of the launched jobs

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def __getstate__(self) -> dict:
        """What travels to a worker: everything but the driver's Hydra callbacks, which hold live state that
        belongs to the driver alone."""
        state = self.__dict__.copy()
        if self.hydra_context is not None:
            state["hydra_context"] = HydraContext(config_loader=self.hydra_context.config_loader,
                                                  callbacks=no_callbacks())
        return state

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Compose and validate every job (`prepare`: a job that cannot run stops them all, before any starts),
        then run them."""
        setup_globals()
        assert self.config is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        prepared = self.prepare(job_overrides)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        jobs = [(job.overrides, initial_job_idx + i) for i, job in enumerate(prepared)]
        # the jobs go to the sweep folder's job list; the terminal gets one line, from `announce`
        self.folders = {idx: self.job_folder(overrides, idx) for overrides, idx in jobs}
        self.job_list = write_job_list(sweep_dir, jobs, [self.folders[idx] for _, idx in jobs])
        return self.dispatch(jobs)

    def prepare(self, job_overrides: Sequence[Sequence[str]], keep: bool = True) -> List[Job]:
        """Every job composed, as Hydra's launchers compose a job (the config loader Hydra handed this launcher,
        with the settings this launcher adds: `job_overrides`), and validated; `Refused` (one line) for the first
        that cannot run. A job is composed once: `launch` finds the jobs a sweeper prepared before it.
        keep=False: validate only (e.g. the edges of a search space, never run as such)."""
        jobs = []
        shown = tqdm(job_overrides, desc="composing", unit="job", leave=False,
                     disable=None if len(job_overrides) >= PROGRESS_MIN_JOBS else True)  # a bar on a terminal only
        for base in shown:
            overrides = [str(o) for o in self.job_overrides(base)]
            job = self.prepared.get(tuple(overrides)) or self._compose(overrides)
            if keep:
                self.prepared[tuple(overrides)] = job
            jobs.append(job)
        return jobs

    def _compose(self, overrides: List[str]) -> Job:
        """The job composed by the one composer (harness/launchers/compose.py) with the config loader Hydra
        handed this launcher and the sweep's primary config, and validated."""
        assert self.hydra_context is not None and self.config is not None
        try:
            return compose_job(overrides, sweep=self.config, loader=self.hydra_context.config_loader)
        except ConfigError as err:
            raise Refused(str(err)) from None

    def job_overrides(self, overrides: Sequence[str]) -> Sequence[str]:
        """Hook: overrides a launcher adds to each job (e.g. its share of torch threads)."""
        return overrides

    def layout(self, jobs: List[tuple]) -> Layout:
        """How `dispatch` runs `jobs` ((overrides, idx) each): their groups (ensembles, runs alone), how many
        run at once, and where, as the launch line says it (`--plan` prints the same, harness/launchers/plan.py)."""
        raise NotImplementedError

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        raise NotImplementedError

    def for_job(self, *overrides: Sequence[str]) -> "HarnessLauncher":
        """A copy of this launcher carrying only these jobs' compositions (what travels to their worker)."""
        job = copy.copy(self)
        job.prepared = {tuple(o): self.prepared[tuple(o)] for o in overrides if tuple(o) in self.prepared}
        return job

    def groups(self, jobs: List[tuple], parts: int = 1,
               rooms: Callable[[str], Room] = room_here) -> List[List[int]]:
        """Positions of `jobs` grouped into ensembles (`launcher.members` caps a group; 1: every job alone; as
        many as fit in the room `rooms(trainer.device)` of an ensemble's process: by default this machine's)."""
        specs = [getattr(self.prepared.get(tuple(overrides)), "spec", None) for overrides, _ in jobs]
        cap = OmegaConf.select(self.config, "launcher.members") if self.config is not None else None
        return plan(specs, cap, parts, rooms)

    def gpu_pins(self) -> List[Dict[str, str]]:
        """Worker i's environment pinning it to GPU i, one per visible GPU, for runs on trainer.device auto or
        cuda ([] without GPUs)."""
        device = OmegaConf.select(self.config, "trainer.device") if self.config is not None else None
        return pinned_environments(visible_gpus(), str(device or "auto"))

    def announce(self, jobs: List[tuple], groups: List[List[int]], where: str) -> None:
        """The sweep's one line about how its jobs run (`where`: e.g. 'on 2 worker processes')."""
        name = OmegaConf.select(self.config, "launcher.name") if self.config is not None else None
        print(launch_line(len(jobs), groups, where, str(name or type(self).__name__),
                          self.job_list), flush=True)

    def progress_units(self, jobs: List[tuple], groups: List[List[int]]) -> List[Unit]:
        """The sweep's groups as progress units: their jobs' folders and total steps (harness/launchers/
        sweep_progress.py)."""
        steps = []
        for overrides, _ in jobs:
            spec = getattr(self.prepared.get(tuple(overrides)), "spec", None)
            steps.append(int(OmegaConf.select(spec, "trainer.steps") or 0) if spec is not None else 0)
        folders = [self.folders[idx] if idx in self.folders else self.job_folder(overrides, idx)
                   for overrides, idx in jobs]
        return units_of(groups, folders, steps, [idx for _, idx in jobs])

    def job_folder(self, overrides: Sequence[str], idx: int) -> Optional[Path]:
        """Where job `idx` runs (hydra.sweep.dir/hydra.sweep.subdir), from its composition; None without one."""
        job = self.prepared.get(tuple(overrides))
        if job is None:
            return None
        return _run_folder(self._numbered(copy.deepcopy(job.config), idx))

    def run_group(self, group: List[tuple], singleton_state: Any, threads: int,
                  progress: bool = True) -> List[JobReturn]:
        """Run (overrides, idx) jobs in this process: one alone as Hydra's launchers do, several as an
        ensemble (harness/launchers/ensemble_run.py) on `threads` torch threads (progress: its own bar)."""
        if len(group) == 1:
            return [self.run_one(*group[0], singleton_state)]
        setup_globals()
        Singleton.set_state(singleton_state)
        return run_ensemble(self, group, threads, progress)

    def run_one(self, overrides: Sequence[str], idx: int, singleton_state: Any) -> JobReturn:
        """Run one job in this process (a worker). Mirrors Hydra's basic launcher; the task gets the job's
        validated spec along with its config."""
        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        setup_globals()
        Singleton.set_state(singleton_state)
        config, spec = self.job_config(overrides, idx)
        return run_job(hydra_context=self.hydra_context, task_function=functools.partial(self.task_function, spec=spec),
                       config=config, job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")

    def job_config(self, overrides: Sequence[str], idx: int) -> Tuple[DictConfig, Optional[DictConfig]]:
        """The config job `idx` runs with and its validated spec: its composition (`prepare`), continuing its
        earlier attempt's checkpoint when it runs again in the same folder (a requeued job: composed again with
        `trainer.resume`, and validated by the job against the run it resumes; spec None)."""
        job = self.prepared.get(tuple(overrides)) or self._compose(list(overrides))
        sweep_config, spec = self._numbered(copy.deepcopy(job.config), idx), job.spec
        resume = self._earlier_attempt(sweep_config, overrides)
        if resume:
            log.debug("job #%d: resuming the earlier attempt's checkpoint in %s", idx, resume)  # the run says it once
            sweep_config = self._numbered(self._sweep_config([*overrides, f"trainer.resume={resume}"]), idx)
            spec = None
        HydraConfig.instance().set_config(sweep_config)
        return sweep_config, spec

    def _numbered(self, sweep_config: DictConfig, idx: int) -> DictConfig:
        OmegaConf.copy_cache(from_config=self.config, to_config=sweep_config)  # the sweep's ${now:} etc.
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        return sweep_config

    def _sweep_config(self, overrides: Sequence[str]) -> DictConfig:
        assert self.hydra_context is not None and self.config is not None
        return compose_config(overrides, sweep=self.config, loader=self.hydra_context.config_loader)

    @staticmethod
    def _earlier_attempt(sweep_config: DictConfig, overrides: Sequence[str]) -> Optional[Path]:
        """A job that runs again in the same folder (requeued after preemption, a timeout or a node
        failure) continues from the checkpoint its earlier attempt left there."""
        if any(o.startswith("trainer.resume=") for o in overrides):
            return None
        run_dir = _run_folder(sweep_config)
        status = run_dir / "status.txt"
        if status.is_file() and status.read_text().strip() == "FINISHED":
            return None  # nothing to continue: the job runs afresh (skip-finished then finds the finished run)
        return run_dir if checkpoint_paths(run_dir)[0].is_file() else None


def _run_folder(sweep_config: DictConfig) -> Path:
    """A numbered job's folder: hydra.sweep.dir/hydra.sweep.subdir."""
    return Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)


def job_outcome(ret: JobReturn) -> str:
    """FINISHED / FAILED / KILLED / SKIPPED of a returned job (the task returns a harness JobResult)."""
    if ret.status != JobStatus.COMPLETED:
        return "FAILED"
    return getattr(ret.return_value, "status", "FINISHED")


class SequentialLauncher(HarnessLauncher):
    """launcher=local: the jobs one after another in this process (Hydra's basic launcher, fed the preflight's
    configs instead of composing each job again). Built-in runs of one shape train together as ensembles,
    one per core in a worker process each, or with GPUs visible one per GPU, each worker pinned to its own
    (`launcher.members=1`: one run at a time, in this process)."""

    def layout(self, jobs: List[tuple]) -> Layout:
        gpus = len(self.gpu_pins())
        parts = gpus or max(1, os.cpu_count() or 1)
        groups = self.groups(jobs, parts=parts)
        if parts > 1 and any(len(group) > 1 for group in groups):
            # Ensembles use the cores as one worker process each: a tiny model's ops are too small for torch's
            # intra-op threads, whose spinning workers also collapse when anything else wants a core.
            workers = min(parts, len(groups))
            return Layout(groups, workers, f"on {workers} worker process{'es' if workers > 1 else ''}"
                                           + (", one per GPU" if gpus else ""))
        return Layout(groups, 1, ", one after another in this process", in_workers=False)

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        groups, workers, where, in_workers = self.layout(jobs)
        self.announce(jobs, groups, where)
        if in_workers:
            pins = self.gpu_pins()
            threads = max(1, (os.cpu_count() or 1) // len(pins)) if pins else 1  # a GPU's worker has its share
            return run_groups(self, jobs, groups, workers, lambda _: threads, pins)
        state = Singleton.get_state()
        results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
        # the runs' own progress bars on a terminal; else the sweep's progress, read from the job folders
        own_bars = sys.stderr.isatty() and bool(OmegaConf.select(self.config, "trainer.progress"))
        with watching(None if own_bars else self.progress_units(jobs, groups)):
            for group in groups:
                threads = max(int(OmegaConf.select(self.config, "trainer.torch_threads") or 1), 1)
                for position, ret in zip(group, self.run_group([jobs[p] for p in group], state, threads)):
                    results[position] = ret
        return results
