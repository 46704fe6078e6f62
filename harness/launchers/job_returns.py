"""Carry the outcome of jobs that ran in other processes back into this process's sweep summary."""
from __future__ import annotations

from typing import Sequence

from hydra.core.utils import JobReturn, JobStatus

from harness.launchers.results import RESULTS, JobResult, run_name


def record_result(ret: JobReturn, overrides: Sequence[str]) -> None:
    if ret.status == JobStatus.COMPLETED and isinstance(ret._return_value, JobResult):
        RESULTS.append(ret._return_value)
    else:
        RESULTS.append(JobResult(name=run_name(overrides), status="FAILED", run_dir=str(ret.working_dir or "?"),
                                 error=f"{type(ret._return_value).__name__}: {ret._return_value}"))


def record_worker_crash(overrides: Sequence[str], idx: int, err: BaseException) -> None:
    RESULTS.append(JobResult(name=run_name(overrides) or f"#{idx}",
                             status="FAILED", run_dir="?", error=f"worker crashed: {type(err).__name__}: {err}"))
