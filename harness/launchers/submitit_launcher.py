"""`launcher=slurm` and `launcher=submitit_local`: jobs through submitit.

Our own launcher rather than hydra-submitit-launcher, for three things the plugin does not do: a job
whose run failed must end FAILED in Slurm (Hydra and the harness catch run errors, so the plugin's jobs
end COMPLETED); a preempted or timed-out job must requeue and resume from its own checkpoint in the same
run folder and MLflow run; and `--detach` must return right after submission, leaving a record that
`python -m harness status` reads."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus

from harness.launchers.base import HarnessLauncher, JobFailed, job_outcome, log
from harness.launchers.profiles import profile_for, submitit_parameters
from harness.launchers.results import record_result


class SubmititLauncher(HarnessLauncher):
    """params: cluster ('slurm' | 'local'). The profile, its overrides and `detach` are read from the
    run config's `launcher` node, so they are validated and recorded like every other setting."""

    # -- in the worker ---------------------------------------------------------------------------------
    def __call__(self, overrides: Sequence[str], idx: int, singleton_state: Any) -> JobReturn:
        ret = self.run_one(overrides, idx, singleton_state)
        outcome = job_outcome(ret)
        if outcome not in ("FINISHED", "SKIPPED"):
            error = getattr(ret._return_value, "error", None) or ret._return_value
            raise JobFailed(f"run {outcome}: {error}")
        return ret

    def checkpoint(self, overrides: Sequence[str], idx: int, singleton_state: Any):
        """Called by submitit on preemption/timeout (USR2): requeue the same job. It runs again in the same
        folder, where `run_one` finds the checkpoint of this attempt and resumes from it."""
        import submitit

        log.warning("job #%d preempted or timed out: requeued, it will resume from its checkpoint", idx)
        return submitit.helpers.DelayedSubmission(self, overrides, idx, singleton_state)

    # -- in the driver -----------------------------------------------------------------------------------
    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        import submitit

        assert self.config is not None
        cluster = self.params.get("cluster", "slurm")
        profile = profile_for(self.config.launcher)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        executor = submitit.AutoExecutor(folder=sweep_dir / ".submitit" / "%j", cluster=cluster)
        executor.update_parameters(name=str(self.config.hydra.job.name), **submitit_parameters(profile, cluster))
        state = Singleton.get_state()
        with executor.batch():
            submitted = [executor.submit(self.for_job(overrides), overrides, idx, state) for overrides, idx in jobs]
        self._record_submission(sweep_dir, jobs, submitted, cluster)
        if self.config.launcher.detach:
            return [self._detached_return(overrides, job) for (overrides, _), job in zip(jobs, submitted)]
        return [self._wait(overrides, job) for (overrides, _), job in zip(jobs, submitted)]

    @staticmethod
    def _record_submission(sweep_dir: Path, jobs: List[tuple], submitted: list, cluster: str) -> None:
        record = [{"job_num": idx, "job_id": job.job_id, "overrides": list(overrides), "cluster": cluster}
                  for (overrides, idx), job in zip(jobs, submitted)]
        path = sweep_dir / "jobs.json"
        previous = json.loads(path.read_text()) if path.is_file() else []
        path.write_text(json.dumps(previous + record, indent=2))
        for entry in record:
            log.info("submitted job #%d as %s", entry["job_num"], entry["job_id"])

    @staticmethod
    def _detached_return(overrides: Sequence[str], job) -> JobReturn:
        from harness.results import RESULTS, JobResult, run_name

        result = JobResult(name=run_name(overrides), status="SUBMITTED", run_dir=str(job.paths.folder),
                           error=None, run_id=None)
        RESULTS.append(result)
        return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=result)

    @staticmethod
    def _wait(overrides: Sequence[str], job) -> JobReturn:
        try:
            ret = job.result()
        except Exception as err:  # the job failed on the cluster; the others go on
            from harness.results import RESULTS, JobResult, run_name

            message = str(err).strip().splitlines()
            reason = next((line for line in reversed(message) if "JobFailed" in line or "Error" in line),
                          message[-1] if message else type(err).__name__)
            state = job.state
            status = "KILLED" if state.startswith("CANCELLED") else "FAILED"
            RESULTS.append(JobResult(name=run_name(overrides), status=status, run_dir=str(job.paths.folder),
                                     error=f"job {job.job_id} ({state}): {reason}"))
            return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED,
                             _return_value=RESULTS[-1])
        record_result(ret, overrides)
        return ret
