"""A pool of spawned worker processes on this machine that run a sweep's jobs in groups: a group of one
job as Hydra's launchers run a job, a larger group as one ensemble (harness/launchers/ensemble_run.py).
Workers die with their driver, and leave without finalizing the interpreter once their work is done."""
from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, List, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn
from tqdm import tqdm

from harness.infra.parent_death import die_with_parent
from harness.launchers.job import Killed
from harness.launchers.job_returns import crashed_return
from harness.launchers.sweep_progress import watching

log = logging.getLogger("harness")


def _run_pickled(payload: bytes) -> List[JobReturn]:
    """Worker entry: the launcher travels cloudpickled (Hydra's resolvers are local closures). Runs a group
    of jobs: one alone, several as an ensemble."""
    import cloudpickle

    launcher, group, state, threads, progress = cloudpickle.loads(payload)
    try:
        rets = launcher.run_group(group, state, threads, progress=progress)
    except (KeyboardInterrupt, Killed):
        # its runs are closed KILLED and the sweep is being stopped: leave, even while a dying driver is still
        # this process's parent for a moment (the kernel moves its children from thread to thread as they exit)
        _leave()
    finally:
        if os.getppid() != _DRIVER_PID:  # the driver died: no one will send more work or end the queue
            _leave()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an idle worker dies with its driver
    for ret in rets:
        ret.cfg = ret.hydra_cfg = None  # configs hold Hydra schema classes that do not travel back
    return rets


_DRIVER_PID = os.getppid()  # in a worker: set again when it starts (`_QuickExitProcess.run`)


def _leave() -> None:
    """End this worker now, its output flushed, without finalizing the interpreter."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


class _QuickExitProcess(multiprocessing.context.SpawnProcess):
    """A worker dies with the driver (SIGTERM when the driver dies, even by SIGKILL). A worker whose loop
    ended normally leaves without finalizing the interpreter: tearing down torch's,
    MLflow's and SQLAlchemy's modules took ~2 s at the end of every sweep, which the driver waited for.
    Its jobs have closed their runs and files by then; logging and stdio are flushed here.

    tqdm's bars in a worker lock with a thread lock: tqdm's default adds a multiprocessing semaphore, which
    a worker that leaves this way never releases (the resource tracker then warns of a leak at the sweep's
    end), and which no other process shares anyway (spawned workers inherit no lock)."""

    def run(self) -> None:
        global _DRIVER_PID
        _DRIVER_PID = os.getppid()
        die_with_parent()  # a driver killed even by SIGKILL takes its workers along: their runs end KILLED
        tqdm.set_lock(threading.RLock())
        super().run()
        _leave()


class _QuickExitSpawnContext(multiprocessing.context.SpawnContext):
    Process = _QuickExitProcess



def run_groups(launcher, jobs: List[tuple], groups: List[List[int]], workers: int,
               threads_of: Callable[[List[tuple]], int]) -> Sequence[JobReturn]:
    """Run the (overrides, idx) `jobs` of each group (positions into `jobs`) on `workers` processes; each
    group's ensemble on `threads_of(its jobs)` torch threads. The workers' output is printed by this process,
    with the sweep's progress (harness/launchers/sweep_progress.py); an ensemble's own bar only when a single
    worker runs."""
    import cloudpickle

    state = Singleton.get_state()
    results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
    context = _QuickExitSpawnContext()  # spawn: no inherited torch/OpenMP state
    shown = None if workers == 1 and sys.stderr.isatty() else launcher.progress_units(jobs, groups)
    with watching(shown, workers, pool=True) as relay:
        initializer, initargs = relay.initializer() if relay is not None else (None, ())
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer,
                                 initargs=initargs) as pool:
            futures = {}
            for group in groups:
                members = [jobs[p] for p in group]
                payload = cloudpickle.dumps((launcher.for_job(*(o for o, _ in members)), members, state,
                                             threads_of(members), workers == 1))
                futures[pool.submit(_run_pickled, payload)] = group
            for future in as_completed(futures):
                group = futures[future]
                try:
                    rets = future.result()
                except BaseException as err:  # a worker that died (e.g. killed) must not stop the others
                    rets = []
                    for position in group:
                        overrides, idx = jobs[position]
                        log.error("job #%d crashed: %s", idx, err)
                        rets.append(crashed_return(overrides, idx, err))
                for position, ret in zip(group, rets):
                    results[position] = ret
    return results
