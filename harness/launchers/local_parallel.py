"""`launcher=local_parallel`: N worker processes on this machine, torch threads split between them."""
from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.context
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import List, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from harness.launchers.base import HarnessLauncher, log
from harness.launchers.results import record_result, record_worker_crash


def _run_pickled(payload: bytes) -> JobReturn:
    """Worker entry: the launcher travels cloudpickled (Hydra's resolvers are local closures)."""
    import cloudpickle

    launcher, overrides, idx, state = cloudpickle.loads(payload)
    try:
        ret = launcher.run_one(overrides, idx, state)
    finally:
        if os.getppid() != _DRIVER_PID:  # the driver died (its SIGTERM closed this job's run KILLED): no one
            _leave()                     # will send more work, and the task queue never reports its end
    ret.cfg = ret.hydra_cfg = None  # configs hold Hydra schema classes that do not travel back
    return ret


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
    Its jobs have closed their runs and files by then; logging and stdio are flushed here."""

    def run(self) -> None:
        from harness.parent_death import die_with_parent

        global _DRIVER_PID
        _DRIVER_PID = os.getppid()
        die_with_parent()  # a driver killed even by SIGKILL takes its workers along: their runs end KILLED
        super().run()
        _leave()


class _QuickExitSpawnContext(multiprocessing.context.SpawnContext):
    Process = _QuickExitProcess


def _has(overrides: Sequence[str], key: str) -> bool:
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides)


class LocalParallelLauncher(HarnessLauncher):
    """params: workers (None = one per core), threads_per_worker (None = trainer.torch_threads, capped at
    cores // workers when several workers share the cores; a lone worker keeps trainer.torch_threads)."""

    def _workers(self) -> int:
        return max(1, int(self.params.get("workers") or os.cpu_count() or 1))

    def job_overrides(self, overrides: Sequence[str]) -> Sequence[str]:
        extra = []
        if not _has(overrides, "trainer.torch_threads"):
            threads = self.params.get("threads_per_worker")
            if not threads and self._workers() > 1:
                share = max(1, (os.cpu_count() or 1) // self._workers())
                configured = OmegaConf.select(self.config, "trainer.torch_threads") if self.config else None
                threads = share if not isinstance(configured, int) or configured > share else None
            if threads:
                extra.append(f"trainer.torch_threads={threads}")
        if self._workers() > 1 and not _has(overrides, "trainer.progress"):
            extra.append("trainer.progress=false")  # one sweep-level bar instead of interleaved ones
        return list(overrides) + extra

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        import cloudpickle
        from tqdm import tqdm

        state = Singleton.get_state()
        results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
        context = _QuickExitSpawnContext()  # spawn: no inherited torch/OpenMP state
        with ProcessPoolExecutor(max_workers=self._workers(), mp_context=context) as pool, \
                tqdm(total=len(jobs), desc="sweep", unit="run", disable=None) as bar:
            payloads = [cloudpickle.dumps((self.for_job(overrides), overrides, idx, state)) for overrides, idx in jobs]
            futures = {pool.submit(_run_pickled, payload): pos for pos, payload in enumerate(payloads)}
            for future in as_completed(futures):
                pos = futures[future]
                overrides, idx = jobs[pos]
                try:
                    ret = future.result()
                    record_result(ret, overrides)
                except BaseException as err:  # a worker that died (e.g. killed) must not stop the others
                    log.error("job #%d crashed: %s", idx, err)
                    ret = JobReturn(overrides=list(overrides), status=JobStatus.FAILED, _return_value=err)
                    record_worker_crash(overrides, idx, err)
                results[pos] = ret
                bar.update(1)
        return results
