"""Carry the outcome of jobs that ran in other processes back into this process's sweep summary."""
from __future__ import annotations

from typing import Sequence

from hydra.core.utils import JobReturn, JobStatus


def record_result(ret: JobReturn, overrides: Sequence[str]) -> None:
    from harness.job import RESULTS, JobResult

    if ret.status == JobStatus.COMPLETED and isinstance(ret._return_value, JobResult):
        RESULTS.append(ret._return_value)
    else:
        RESULTS.append(JobResult(name=",".join(overrides), status="FAILED", run_dir=str(ret.working_dir or "?"),
                                 error=f"{type(ret._return_value).__name__}: {ret._return_value}"))


def record_worker_crash(overrides: Sequence[str], idx: int, err: BaseException) -> None:
    from harness.job import RESULTS, JobResult

    RESULTS.append(JobResult(name=",".join(o for o in overrides if not o.startswith("trainer.")) or f"#{idx}",
                             status="FAILED", run_dir="?", error=f"worker crashed: {type(err).__name__}: {err}"))
