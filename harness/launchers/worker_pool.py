"""A pool of spawned worker processes on this machine that run a sweep's jobs in groups: a group of one
job as Hydra's launchers run a job, a larger group as one ensemble (harness/launchers/ensemble_run.py).

Each worker has its own connection (harness/launchers/pool_worker.py), so a worker that dies (SIGKILL, the
OOM killer) takes nothing else with it: its runs end FAILED, closed here with the reason, and a fresh
worker takes the groups still to run. Ctrl-C or SIGTERM, to the driver or to a worker, stops the sweep: every
worker closes its runs KILLED (a worker that cannot is killed and its runs closed here), and the stop goes on
up to the command line, which says it in one line."""
from __future__ import annotations

import logging
import os
import signal
import sys
from collections import deque
from pathlib import Path
from multiprocessing.connection import wait
from typing import Callable, Dict, List, Optional, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus

from harness.infra.stop_signals import (Killed, handle_stop_signals, ignore_stop_signals, raise_if_stopped,
                                        restore_signals)
from harness.launchers.pool_worker import BROKE, DONE, STOPPED, QuickExitSpawnContext, serve
from harness.launchers.results import JobResult, run_name
from harness.launchers.sweep_progress import watching
from harness.tracking.orphaned import end_orphaned_run
from harness.tracking.store import experiment_name, mlflow_store

log = logging.getLogger("harness")
STOP_WAIT_S = 120.0  # how long stopped workers get to close their runs (a store's flush) before they are killed


class _Worker:
    def __init__(self, context, initializer, initargs, slot: int = 0, environment: Optional[Dict[str, str]] = None):
        self.connection, theirs = context.Pipe()
        self.slot = slot  # a replacement for a worker that died takes its slot (its GPU)
        self.process = context.Process(target=serve, args=(theirs, initializer, initargs, environment),
                                       name="harness-worker")
        self.process.start()
        theirs.close()
        self.group: Optional[List[int]] = None  # positions of the jobs it runs now

    def give(self, group: List[int], payload: bytes) -> bool:
        """Send it `group`; False when it has died meanwhile (the group is still to run)."""
        try:
            self.connection.send(payload)
        except OSError:
            return False
        self.group = group
        return True


def _died(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        return f"its worker process (pid {process.pid}) was killed by {signal.Signals(-code).name}"
    return f"its worker process (pid {process.pid}) ended with exit code {code} before its runs did"


def run_groups(launcher, jobs: List[tuple], groups: List[List[int]], workers: int,
               threads_of: Callable[[List[tuple]], int],
               environments: Sequence[Dict[str, str]] = ()) -> Sequence[JobReturn]:
    """Run the (overrides, idx) `jobs` of each group (positions into `jobs`) on `workers` processes; each
    group's ensemble on `threads_of(its jobs)` torch threads; worker i with `environments[i]` in its own
    environment (e.g. the GPU it is pinned to), when given. The workers' output is printed by this process,
    with the sweep's progress (harness/launchers/sweep_progress.py); an ensemble's own bar only when a single
    worker runs."""
    import cloudpickle

    state = Singleton.get_state()
    results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
    context = QuickExitSpawnContext()  # spawn: no inherited torch/OpenMP state
    shown = None if workers == 1 and sys.stderr.isatty() else launcher.progress_units(jobs, groups)

    def payload(group: List[int]) -> bytes:
        members = [jobs[p] for p in group]
        return cloudpickle.dumps((launcher.for_job(*(o for o, _ in members)), members, state,
                                  threads_of(members), workers == 1))

    with watching(shown, workers, pool=True) as relay:
        initializer, initargs = relay.initializer() if relay is not None else (None, ())
        pool: List[_Worker] = []
        previous = handle_stop_signals()
        try:
            waiting = deque(groups)
            while waiting or any(w.group is not None for w in pool):
                for worker in pool:
                    if worker.group is None and waiting and worker.process.is_alive():
                        if worker.give(waiting[0], payload(waiting[0])):
                            waiting.popleft()
                pool = [w for w in pool if w.process.is_alive() or w.group is not None]
                while waiting and len(pool) < workers:  # at the start, and in place of a worker that died
                    slot = min(set(range(workers)) - {w.slot for w in pool})
                    pool.append(_Worker(context, initializer, initargs, slot,
                                        environments[slot] if slot < len(environments) else None))
                    if pool[-1].give(waiting[0], payload(waiting[0])):
                        waiting.popleft()
                busy = [w for w in pool if w.group is not None]
                raise_if_stopped()  # a stop signal that came during garbage collection (infra/stop_signals.py)
                ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout=1.0))
                for worker in busy:
                    if worker.connection in ready or worker.process.sentinel in ready:
                        _collect(launcher, jobs, worker, results)
        except (KeyboardInterrupt, Killed) as err:
            ignore_stop_signals()
            _stop(launcher, jobs, pool, err)
            raise
        finally:
            restore_signals(previous)
            for worker in pool:  # the work is done: idle workers leave
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
    return results


def _collect(launcher, jobs: List[tuple], worker: _Worker, results: List[JobReturn]) -> None:
    """What a busy worker has to say: its group's returns, its stop (raised here: it stops the sweep), its
    group broken, or its death (its runs ended FAILED here)."""
    group = worker.group
    try:
        kind, value = worker.connection.recv() if worker.connection.poll() else (None, None)
    except (EOFError, OSError):
        kind, value = None, None
    if kind is None and worker.process.is_alive():
        return
    if kind == DONE:
        worker.group = None
        for position, ret in zip(group, value):
            results[position] = ret
        return
    if kind == STOPPED:  # its runs are closed KILLED; the sweep stops as it would on this signal here
        worker.process.join(STOP_WAIT_S)
        worker.group = None
        raise value
    worker.process.join(5)
    reason = f"{type(value).__name__}: {value}" if kind == BROKE else _died(worker.process)
    log.error("%s: %d job%s of this sweep end FAILED", reason, len(group), "s" if len(group) > 1 else "")
    worker.group = None
    for position in group:
        results[position] = _ended_return(launcher, *jobs[position], "FAILED", reason)


def _stop(launcher, jobs: List[tuple], pool: List[_Worker], err: BaseException) -> None:
    """Stop every worker (SIGTERM: each closes its runs KILLED and leaves); one that has not left after
    STOP_WAIT_S is killed, and the runs it left open are closed here."""
    for worker in pool:
        if worker.process.is_alive():
            try:
                os.kill(worker.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for worker in pool:
        worker.process.join(STOP_WAIT_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(10)
        for position in worker.group or ():
            _ended_return(launcher, *jobs[position], "KILLED", f"the sweep was stopped ({err or 'Ctrl-C'}), "
                                                              f"and {_died(worker.process)}")


def _ended_return(launcher, overrides: Sequence[str], idx: int, status: str, reason: str) -> JobReturn:
    """Job `idx`'s return once its worker died: its run, if it started and was left open, ended `status` here
    (one its worker had ended keeps its own status)."""
    folder = launcher.folders.get(idx) or launcher.job_folder(overrides, idx)
    spec = getattr(launcher.prepared.get(tuple(overrides)), "spec", None)
    run_id = None
    if folder is not None and (folder / "job.json").is_file():  # it started: its run was opened
        uri = mlflow_store(spec) if spec is not None else None
        run_id = end_orphaned_run(folder, status, reason, uri, experiment_name(spec) if spec is not None else None)
        status, reason = _recorded_end(folder, status, reason)
    result = JobResult(name=run_name(overrides) or f"#{idx}", status=status, run_dir=str(folder or "?"),
                       run_id=run_id, error=reason)
    return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=result)


def _recorded_end(folder: Path, status: str, reason: str) -> tuple:
    """The status and reason a run folder records (its own end, when its worker wrote one before it died)."""
    try:
        recorded = (folder / "status.txt").read_text().strip()
        first_line = ((folder / "error.txt").read_text().strip().splitlines() or [""])[-1] \
            if (folder / "error.txt").is_file() else ""
    except OSError:
        return status, reason
    return recorded or status, (first_line or reason) if recorded != "FINISHED" else None
