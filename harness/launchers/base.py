"""Common ground of the harness's Hydra launchers: prepare each job of a sweep and run one job the way
Hydra's basic launcher does, in whatever process (a local worker, a Slurm node) executes it."""
from __future__ import annotations

import copy
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger("harness")


class JobFailed(RuntimeError):
    """Raised in a cluster worker whose run did not finish, so the scheduler records the job as FAILED
    (Hydra and the harness catch run errors, which would otherwise leave the job COMPLETED)."""


class HarnessLauncher(Launcher):
    def __init__(self, **params: Any) -> None:
        self.params = params
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.task_function: Optional[TaskFunction] = None
        # job overrides -> (config, spec) the preflight composed and validated (harness.config.composed); it
        # travels with the launcher to the process that runs the job (`for_job` keeps a job's own entry)
        self.composed: Dict[Tuple[str, ...], Tuple[DictConfig, DictConfig]] = {}

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def __getstate__(self) -> dict:
        """What travels to a worker: everything but the driver's Hydra callbacks, which hold live state
        (the sweep's parent run, its heartbeat thread) that belongs to the driver alone."""
        from hydra._internal.callbacks import Callbacks

        state = self.__dict__.copy()
        if self.hydra_context is not None:
            state["hydra_context"] = HydraContext(config_loader=self.hydra_context.config_loader,
                                                  callbacks=Callbacks())
        return state

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        setup_globals()
        assert self.config is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        jobs = [(list(self.job_overrides(o)), initial_job_idx + i) for i, o in enumerate(job_overrides)]
        for base, (overrides, _) in zip(job_overrides, jobs):
            self._take_composed(base, overrides)
        log.info("Launching %d jobs with %s", len(jobs), type(self).__name__)
        for overrides, idx in jobs:
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        return self.dispatch(jobs)

    def job_overrides(self, overrides: Sequence[str]) -> Sequence[str]:
        """Hook: overrides a launcher adds to each job (e.g. its share of torch threads)."""
        return overrides

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        raise NotImplementedError

    def _take_composed(self, base: Sequence[str], overrides: Sequence[str]) -> None:
        """The preflight's config of a job, with the settings this launcher adds to it (`job_overrides`) applied
        to the config, its recorded task overrides and its spec, as a composition with them would give."""
        from harness.config import composed

        found = composed.lookup(base)
        if found is None:
            return
        config, spec = copy.deepcopy(found)
        extra = list(overrides)[len(base):]
        with open_dict(config), open_dict(spec):
            for item in extra:
                key, _, value = item.partition("=")
                OmegaConf.update(config, key, yaml.safe_load(value), merge=True)
                OmegaConf.update(spec, key, yaml.safe_load(value), merge=True)
            config.hydra.overrides.task = [*config.hydra.overrides.task, *extra]
        self.composed[composed.key(overrides)] = (config, spec)

    def for_job(self, *overrides: Sequence[str]) -> "HarnessLauncher":
        """A copy of this launcher carrying only the composed configs of these jobs (what travels to their
        worker)."""
        from harness.config import composed

        job = copy.copy(self)
        keys = [composed.key(o) for o in overrides]
        job.composed = {key: self.composed[key] for key in keys if key in self.composed}
        return job

    def groups(self, jobs: List[tuple], parts: int = 1) -> List[List[int]]:
        """Positions of `jobs` grouped into ensembles (`launcher.members` caps a group; 1: every job alone)."""
        from harness.config import composed
        from harness.trainers.ensemble.grouping import plan

        specs = [(self.composed.get(composed.key(overrides)) or (None, None))[1] for overrides, _ in jobs]
        cap = OmegaConf.select(self.config, "launcher.members") if self.config is not None else None
        groups = plan(specs, cap, parts)
        ensembles = [g for g in groups if len(g) > 1]
        if ensembles:
            sizes = ", ".join(str(len(g)) for g in ensembles)
            alone = len(groups) - len(ensembles)
            print(f"ensembles: {sum(map(len, ensembles))} of {len(jobs)} runs train in {len(ensembles)} ensemble(s) "
                  f"of {sizes} runs" + (f"; {alone} run(s) alone" if alone else "") +
                  " (launcher.members=1 trains each run alone)", flush=True)
        return groups

    def job_folder(self, overrides: Sequence[str], idx: int) -> Optional[Path]:
        """Where job `idx` runs (hydra.sweep.dir/hydra.sweep.subdir), from its preflight config; None without one."""
        from harness.config import composed

        entry = self.composed.get(composed.key(overrides))
        if entry is None:
            return None
        config = copy.deepcopy(entry[0])
        with open_dict(config):
            config.hydra.job.num = idx
        return Path(str(config.hydra.sweep.dir)) / str(OmegaConf.select(config, "hydra.sweep.subdir"))

    def run_group(self, group: List[tuple], singleton_state: Any, threads: int,
                  progress: bool = True) -> List[JobReturn]:
        """Run (overrides, idx) jobs in this process: one alone as Hydra's launchers do, several as an
        ensemble (harness/launchers/ensemble_run.py) on `threads` torch threads (progress: its own bar)."""
        if len(group) == 1:
            return [self.run_one(*group[0], singleton_state)]
        from harness.launchers.ensemble_run import run_ensemble

        setup_globals()
        Singleton.set_state(singleton_state)
        return run_ensemble(self, group, threads, progress)

    def run_one(self, overrides: Sequence[str], idx: int, singleton_state: Any) -> JobReturn:
        """Run one job in this process (a worker). Mirrors Hydra's basic launcher."""
        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        setup_globals()
        Singleton.set_state(singleton_state)
        return run_job(hydra_context=self.hydra_context, task_function=self.task_function,
                       config=self.job_config(overrides, idx), job_dir_key="hydra.sweep.dir",
                       job_subdir_key="hydra.sweep.subdir")

    def job_config(self, overrides: Sequence[str], idx: int) -> DictConfig:
        """The config job `idx` runs with: the preflight's (or composed here), continuing its earlier attempt's
        checkpoint when it runs again in the same folder (a requeued job)."""
        sweep_config = self._composed_config(overrides, idx) or self._sweep_config(overrides, idx)
        resume = self._earlier_attempt(sweep_config, overrides)
        if resume:
            log.warning("job #%d: resuming the earlier attempt's checkpoint in %s", idx, resume)
            sweep_config = self._sweep_config([*overrides, f"trainer.resume={resume}"], idx)
        return sweep_config

    def _composed_config(self, overrides: Sequence[str], idx: int) -> Optional[DictConfig]:
        """The preflight's composition of this job (None: Hydra composes it here, e.g. an Optuna trial); its
        validated spec is left where the job finds it."""
        from harness.config import composed

        entry = self.composed.get(composed.key(overrides))
        if entry is None:
            return None
        sweep_config, spec = copy.deepcopy(entry)
        OmegaConf.copy_cache(from_config=self.config, to_config=sweep_config)  # the sweep's ${now:} etc.
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)
        composed.remember(overrides, sweep_config, spec)
        return sweep_config

    def _sweep_config(self, overrides: Sequence[str], idx: int) -> DictConfig:
        assert self.hydra_context is not None and self.config is not None
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)
        return sweep_config

    @staticmethod
    def _earlier_attempt(sweep_config: DictConfig, overrides: Sequence[str]) -> Optional[Path]:
        """A job that runs again in the same folder (requeued after preemption, a timeout or a node
        failure) continues from the checkpoint its earlier attempt left there."""
        from harness.trainers.checkpoint import checkpoint_paths

        if any(o.startswith("trainer.resume=") for o in overrides):
            return None
        run_dir = Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)
        status = run_dir / "status.txt"
        if status.is_file() and status.read_text().strip() == "FINISHED":
            return None  # nothing to continue: the job runs afresh (skip-finished then finds the finished run)
        return run_dir if checkpoint_paths(run_dir)[0].is_file() else None


def job_outcome(ret: JobReturn) -> str:
    """FINISHED / FAILED / KILLED / SKIPPED of a returned job (the task returns a harness JobResult)."""
    if ret.status != JobStatus.COMPLETED:
        return "FAILED"
    return getattr(ret.return_value, "status", "FINISHED")


class SequentialLauncher(HarnessLauncher):
    """launcher=local: the jobs one after another in this process (Hydra's basic launcher, fed the preflight's
    configs instead of composing each job again). Built-in runs of one shape train together as ensembles,
    one per core in a worker process each (`launcher.members=1`: one run at a time, in this process)."""

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        cores = max(1, os.cpu_count() or 1)
        groups = self.groups(jobs, parts=cores)
        if cores > 1 and any(len(group) > 1 for group in groups):
            # Ensembles use the cores as one worker process each: a tiny model's ops are too small for torch's
            # intra-op threads, whose spinning workers also collapse when anything else wants a core.
            from harness.launchers.worker_pool import run_groups

            return run_groups(self, jobs, groups, min(cores, len(groups)), lambda _: 1)
        state = Singleton.get_state()
        results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
        for group in groups:
            threads = max(int(OmegaConf.select(self.config, "trainer.torch_threads") or 1), 1)
            for position, ret in zip(group, self.run_group([jobs[p] for p in group], state, threads)):
                results[position] = ret
        return results
