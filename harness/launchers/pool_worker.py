"""A worker process of a sweep's pool (harness/launchers/worker_pool.py): it runs the groups of jobs its driver
sends over its own connection, one at a time, and answers each with the group's JobReturns, or says it was
stopped (Ctrl-C / SIGTERM: its runs are closed KILLED) and leaves. Workers die with their driver, and leave
without finalizing the interpreter once their work is done."""
from __future__ import annotations

import logging
import multiprocessing.context
import os
import signal
import sys
import threading
from typing import Callable, Dict, List, Optional

from hydra.core.utils import JobReturn
from tqdm import tqdm

from harness.infra.parent_death import die_with_parent
from harness.infra.stop_signals import Killed

log = logging.getLogger("harness")
DONE, STOPPED, BROKE = "done", "stopped", "broke"  # a worker's answers: (kind, value)


def run_pickled(payload: bytes, on_stop: Optional[Callable[[BaseException], None]] = None) -> List[JobReturn]:
    """Run a group of jobs (one alone, several as an ensemble); the launcher travels cloudpickled (Hydra's
    resolvers are local closures). Stopped (its runs closed KILLED): `on_stop(err)`, then the worker leaves."""
    import cloudpickle

    launcher, group, state, threads, progress = cloudpickle.loads(payload)
    try:
        rets = launcher.run_group(group, state, threads, progress=progress)
    except (KeyboardInterrupt, Killed) as err:
        # its runs are closed KILLED and the sweep is being stopped: leave, even while a dying driver is still
        # this process's parent for a moment (the kernel moves its children from thread to thread as they exit)
        if on_stop is not None:
            on_stop(err)
        _leave()
    finally:
        if os.getppid() != _DRIVER_PID:  # the driver died: no one will send more work or end the queue
            _leave()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an idle worker dies with its driver
    for ret in rets:
        ret.cfg = ret.hydra_cfg = None  # configs hold Hydra schema classes that do not travel back
    return rets


def serve(connection, initializer: Optional[Callable] = None, initargs: tuple = (),
          environment: Optional[Dict[str, str]] = None) -> None:
    """The worker's loop: a payload in, its answer out, until the driver sends None or goes away. `environment`
    is set first, before any job imports torch (CUDA_VISIBLE_DEVICES: the worker's GPU)."""
    os.environ.update(environment or {})
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            payload = connection.recv()
        except (EOFError, OSError, KeyboardInterrupt):  # the driver is gone, or Ctrl-C while idle
            return
        if payload is None:
            return
        try:
            answer = (DONE, run_pickled(payload, on_stop=lambda err: _answer(connection, (STOPPED, err))))
        except Exception as err:  # the group raised past its jobs: the driver ends their runs with it
            answer = (BROKE, err)
        _answer(connection, answer)


def _answer(connection, answer: tuple) -> None:
    try:
        connection.send(answer)
    except (OSError, ValueError):  # the driver is gone
        pass
    except Exception as err:  # an answer that does not pickle: its reason still travels
        connection.send((BROKE, RuntimeError(f"{type(answer[1]).__name__}: {answer[1]} (not picklable: {err})")))


_DRIVER_PID = os.getppid()  # in a worker: set again when it starts (`QuickExitProcess.run`)


def _leave() -> None:
    """End this worker now, its output flushed, without finalizing the interpreter."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


class QuickExitProcess(multiprocessing.context.SpawnProcess):
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


class QuickExitSpawnContext(multiprocessing.context.SpawnContext):
    Process = QuickExitProcess
