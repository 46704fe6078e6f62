"""Run a group of a sweep's jobs as one ensemble in this process (a local driver, a worker, a Slurm node).

Each member is still a first-class job: Hydra's `run_job` prepares it as for any job (its folder, its saved
config, its callbacks), with `harness.launchers.job.start_run` as the task, which opens its tracking run (or finds it
already FINISHED: skipped). The members then train together (`harness.trainers.ensemble`), and each ends
with its own truthful status through `harness.launchers.job.finish_run`: FINISHED, FAILED alone (the others go on),
or KILLED together on SIGTERM / Ctrl-C, which then stops the sweep as a single job's would."""
from __future__ import annotations

import functools
import logging
from typing import Dict, List, Sequence

from hydra.core.utils import JobReturn, JobStatus, run_job

from harness.launchers.job import StartedRun, finish_run, start_run
from harness.infra.stop_signals import Killed, handle_stop_signals, ignore_stop_signals, restore_signals
from harness.trainers.checkpoint import checkpoint_step
from harness.tracking.quiet import verbose

log = logging.getLogger("harness")


def _start_step(run: StartedRun) -> int:
    """The step a member starts at: its checkpoint's when it resumes an earlier attempt, else 0."""
    source = run.spec.trainer.get("resume")
    return checkpoint_step(source) if source else 0


def _start(launcher, overrides: Sequence[str], idx: int) -> JobReturn:
    """Prepare one member as `launcher.run_one` would run it (`launcher.job_config`), with `start_run` as
    the task."""
    config, spec = launcher.job_config(overrides, idx)
    return run_job(hydra_context=launcher.hydra_context, task_function=functools.partial(start_run, spec=spec),
                   config=config, job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


def run_ensemble(launcher, group: Sequence[tuple], threads: int, progress: bool = True) -> List[JobReturn]:
    """group: (overrides, idx) of each job; returns their JobReturns in the same order. Members that resume
    from different steps (a requeued ensemble whose members were preempted at different checkpoints) train
    as one ensemble per starting step."""
    returns: List[JobReturn] = []
    previous = handle_stop_signals()
    try:
        for overrides, idx in group:
            returns.append(_start(launcher, overrides, idx))
        started = [ret for ret in returns
                   if ret.status == JobStatus.COMPLETED and isinstance(ret._return_value, StartedRun)]
        by_step: Dict[int, List[JobReturn]] = {}
        for ret in started:
            by_step.setdefault(_start_step(ret._return_value), []).append(ret)
        for step in sorted(by_step):
            _train(by_step[step], threads, progress)
    except (KeyboardInterrupt, Killed) as err:
        # closing every member takes a moment; a second SIGTERM (the driver's, then the kernel's when the
        # driver dies) or Ctrl-C must not cut it short and leave runs without their end
        ignore_stop_signals()
        for ret in returns:
            if isinstance(ret._return_value, StartedRun):  # started, not ended yet: ends with the others
                ret._return_value = finish_run(ret._return_value, None, err)
        raise
    finally:
        restore_signals(previous)
    return returns


def _train(batch: List[JobReturn], threads: int, progress: bool) -> None:
    """Train the started runs of `batch` together; each JobReturn's value becomes its run's JobResult (on
    Ctrl-C / SIGTERM the caller ends them)."""
    # torch loads only in a process that trains (Hydra's plugin scan imports the launchers everywhere)
    from harness.trainers.ensemble import loop
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    runs: List[StartedRun] = [ret._return_value for ret in batch]
    if len(runs) > 1:  # the sweep's launch line said so; -v says it per ensemble
        (print if verbose() else log.debug)(f"ensemble: {len(runs)} runs train together in this process "
                                            f"({runs[0].name} … {runs[-1].name})")
    try:
        trainer = EnsembleTrainer([(run.spec, run.run_dir, run.tracker) for run in runs], threads=threads)
        loop.train(trainer, progress=progress)
    except Exception as err:  # the ensemble itself broke (not one member): each member ends FAILED with it
        for ret, run in zip(batch, runs):
            ret._return_value = finish_run(run, None, err)
        return
    for ret, run, member in zip(batch, runs, trainer.members):
        ret._return_value = finish_run(run, member.final if member.error is None else None, member.error)
