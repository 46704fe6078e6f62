"""The jobs' JobResults in what a launch returned: each job's Hydra JobReturn carries its JobResult (the task's
return value); a job whose task raised, or whose worker process died, ended FAILED."""
from __future__ import annotations

from typing import Any, List, Sequence

from hydra.core.utils import JobReturn, JobStatus

from harness.launchers.results import JobResult, run_name


class WorkerCrashed(RuntimeError):
    """The return value of each job of a worker process that died (e.g. killed) before returning them."""

    def __init__(self, overrides: Sequence[str], idx: int, err: BaseException) -> None:
        super().__init__(f"worker crashed: {type(err).__name__}: {err}")
        self.name = run_name(overrides) or f"#{idx}"
        self.__cause__ = err


def crashed_return(overrides: Sequence[str], idx: int, err: BaseException) -> JobReturn:
    """The JobReturn of job `idx`, whose worker process died."""
    return JobReturn(overrides=list(overrides), status=JobStatus.FAILED, _return_value=WorkerCrashed(overrides, idx, err))


def job_result(ret: JobReturn) -> JobResult:
    value = ret._return_value
    if ret.status == JobStatus.COMPLETED and isinstance(value, JobResult):
        return value
    if isinstance(value, WorkerCrashed):
        return JobResult(name=value.name, status="FAILED", run_dir="?", error=str(value))
    return JobResult(name=run_name(ret.overrides or []), status="FAILED", run_dir=str(ret.working_dir or "?"),
                     error=f"{type(value).__name__}: {value}")


def job_results(returned: Any) -> List[JobResult]:
    """Every job's JobResult, in launch order, in what a run or sweep returned: a JobReturn, the JobReturns
    `launch()` returns, or a sweeper's lists of them (Hydra's grid sweeper: one per batch); None: no job ran."""
    if returned is None:
        return []
    if isinstance(returned, JobReturn):
        return [job_result(returned)]
    return [result for item in returned for result in job_results(item)]
