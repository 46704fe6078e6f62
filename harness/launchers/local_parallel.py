"""`launcher=local_parallel`: N worker processes on this machine, torch threads split between them."""
from __future__ import annotations

import os
from typing import List, Sequence

from hydra.core.utils import JobReturn
from omegaconf import OmegaConf

from harness.launchers.base import HarnessLauncher, Layout
from harness.launchers.worker_pool import run_groups


def _has(overrides: Sequence[str], key: str) -> bool:
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides)


class LocalParallelLauncher(HarnessLauncher):
    """params: workers (None = one per GPU when the runs' trainer.device is auto or cuda and GPUs are visible,
    each worker pinned to its own; else one per core), threads_per_worker (None = trainer.torch_threads,
    capped at cores // workers when several workers share the cores; a lone worker keeps trainer.torch_threads)."""

    def _workers(self) -> int:
        return max(1, int(self.params.get("workers") or len(self.gpu_pins()) or os.cpu_count() or 1))

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

    def layout(self, jobs: List[tuple]) -> Layout:
        """Built-in runs of one shape train as ensembles, split so that every worker has one."""
        workers = self._workers()
        return Layout(self.groups(jobs, parts=workers), workers,
                      f"on {workers} worker process{'es' if workers > 1 else ''}")

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        groups, workers, where, _ = self.layout(jobs)
        self.announce(jobs, groups, where)
        pins = self.gpu_pins()
        return run_groups(self, jobs, groups, workers, lambda members: self._ensemble_threads(members),
                          [pins[slot % len(pins)] for slot in range(workers)] if pins else [])

    def _ensemble_threads(self, members: List[tuple]) -> int:
        """Torch threads of a worker's ensemble: the job's trainer.torch_threads (set by `job_overrides`)."""
        for item in members[0][0]:
            key, _, value = item.partition("=")
            if key.lstrip("+") == "trainer.torch_threads" and value.isdigit():
                return int(value)
        configured = OmegaConf.select(self.config, "trainer.torch_threads") if self.config else None
        return int(configured) if isinstance(configured, int) else 1
