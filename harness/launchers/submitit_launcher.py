"""`launcher=slurm` and `launcher=submitit_local`: jobs through submitit.

Our own launcher rather than hydra-submitit-launcher, for three things the plugin does not do: a job
whose run failed must end FAILED in Slurm (Hydra and the harness catch run errors, so the plugin's jobs
end COMPLETED); a preempted or timed-out job must requeue and resume from its own checkpoint in the same
run folder and MLflow run; and `--detach` must return right after submission, leaving a record that
`python -m harness status` reads."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus

from harness.launchers.base import HarnessLauncher, JobFailed, Layout, job_outcome, log
from harness.config.profiles import executor_arguments, profile_for, submitit_parameters
from harness.launchers.results import JobResult, run_name
from harness.infra.refused import Refused
from harness.trainers.ensemble.grouping import Room, room_of


def slurm_rooms(profile) -> Callable[[str], Room]:
    """trainer.device -> the room of an ensemble in one of the profile's jobs: one GPU's gpu_memory_gb on a GPU
    profile (gpus_per_node > 0; an ensemble trains on one GPU), else the job's mem_gb."""
    def room(device: str) -> Room:
        gpu = None
        if profile.gpus_per_node and device != "cpu":
            if not profile.gpu_memory_gb:
                raise Refused(f"launcher.gpu_memory_gb is not set: on a GPU profile (gpus_per_node="
                              f"{profile.gpus_per_node}) ensembles are sized by one GPU's memory; set it in the "
                              f"profile or as launcher.gpu_memory_gb=<GB> (or launcher.members=1)")
            gpu = int(profile.gpu_memory_gb * 2**30)
        return room_of(device, int(profile.mem_gb * 2**30), gpu)
    return room


class SubmititLauncher(HarnessLauncher):
    """params: cluster ('slurm' | 'local'). The profile, its overrides and `detach` are read from the
    run config's `launcher` node, so they are validated and recorded like every other setting."""

    # -- in the worker ---------------------------------------------------------------------------------
    def __call__(self, group: List[tuple], singleton_state: Any, threads: int) -> List[JobReturn]:
        """One cluster job: a run alone, or an ensemble of runs (`launcher.members`). It ends FAILED in the
        scheduler when any of its runs did not finish; each run's own status is in its folder and MLflow."""
        rets = self.run_group(group, singleton_state, threads)
        failed = [(ret, job_outcome(ret)) for ret in rets if job_outcome(ret) not in ("FINISHED", "SKIPPED")]
        if failed:
            ret, outcome = failed[0]
            error = getattr(ret._return_value, "error", None) or ret._return_value
            more = f" (and {len(failed) - 1} more runs of this job)" if len(failed) > 1 else ""
            raise JobFailed(f"run {outcome}: {error}{more}")
        return rets

    def checkpoint(self, group: List[tuple], singleton_state: Any, threads: int):
        """Called by submitit on preemption/timeout (USR2): requeue the same job. It runs again in the same
        folders, where each run finds the checkpoint of this attempt and resumes from it."""
        import submitit

        log.warning("job %s preempted or timed out: requeued, its runs will resume from their checkpoints",
                    ", ".join(f"#{idx}" for _, idx in group))
        return submitit.helpers.DelayedSubmission(self, group, singleton_state, threads)

    # -- in the driver -----------------------------------------------------------------------------------
    def layout(self, jobs: List[tuple]) -> Layout:
        """One cluster job per group (an array when several); Slurm runs `array_parallelism` of them at once,
        submitit's local executor all of them."""
        assert self.config is not None
        cluster = self.params.get("cluster", "slurm")
        # a Slurm job's ensemble has the job's memory or its GPU's, not this machine's (submitit's local
        # executor: this one)
        groups = self.groups(jobs, rooms=slurm_rooms(profile_for(self.config.launcher))) if cluster == "slurm" \
            else self.groups(jobs)
        at_once = len(groups)
        if cluster == "slurm":
            at_once = min(at_once, int(profile_for(self.config.launcher).array_parallelism or at_once))
        return Layout(groups, max(1, at_once), f"as {len(groups)} {'Slurm' if cluster == 'slurm' else 'submitit'} "
                                               f"job{'s' if len(groups) != 1 else ''}")

    def dispatch(self, jobs: List[tuple]) -> Sequence[JobReturn]:
        import submitit

        assert self.config is not None
        cluster = self.params.get("cluster", "slurm")
        profile = profile_for(self.config.launcher)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        executor = submitit.AutoExecutor(folder=sweep_dir / ".submitit" / "%j", cluster=cluster,
                                         **executor_arguments(profile, cluster))
        executor.update_parameters(name=str(self.config.hydra.job.name), **submitit_parameters(profile, cluster))
        state = Singleton.get_state()
        groups, _, where, _ = self.layout(jobs)
        self.announce(jobs, groups, where)
        threads = max(1, int(profile.cpus_per_task or 1))
        with executor.batch():
            batches = [executor.submit(self.for_job(*(jobs[p][0] for p in group)), [jobs[p] for p in group], state,
                                       threads) for group in groups]
        submitted = [None] * len(jobs)
        for group, job in zip(groups, batches):
            for position in group:
                submitted[position] = job
        self._record_submission(sweep_dir, jobs, submitted, cluster)
        if self.config.launcher.detach:
            return [self._detached_return(overrides, job) for (overrides, _), job in zip(jobs, submitted)]
        results: List[JobReturn] = [None] * len(jobs)  # type: ignore[list-item]
        for group, job in zip(groups, batches):
            folders = [self.job_folder(*jobs[p]) for p in group]
            for position, ret in zip(group, self._wait([jobs[p] for p in group], job, folders)):
                results[position] = ret
        return results

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
        result = JobResult(name=run_name(overrides), status="SUBMITTED", run_dir=str(job.paths.folder),
                           error=None, run_id=None)
        return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=result)

    @staticmethod
    def _wait(group: List[tuple], job, folders: List[Optional[Path]]) -> List[JobReturn]:
        """The JobReturns of the runs (overrides, idx) of one cluster job. When the job failed, a run of its
        ensemble that finished (its folder's status.txt) is still reported FINISHED."""
        try:
            return job.result()
        except Exception as err:  # the job failed on the cluster; the others go on
            message = str(err).strip().splitlines()
            reason = next((line for line in reversed(message) if "JobFailed" in line or "Error" in line),
                          message[-1] if message else type(err).__name__)
        state = job.state
        status = "KILLED" if state.startswith("CANCELLED") else "FAILED"
        rets = []
        for (overrides, _), run_dir in zip(group, folders):
            done = run_dir is not None and (run_dir / "status.txt").is_file()
            own = (run_dir / "status.txt").read_text().strip() if done else ""
            if len(group) > 1 and own == "FINISHED":
                result = JobResult(name=run_name(overrides), status="FINISHED", run_dir=str(run_dir))
            else:
                result = JobResult(name=run_name(overrides), status=status, run_dir=str(job.paths.folder),
                                   error=f"job {job.job_id} ({state}): {reason}")
            rets.append(JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=result))
        return rets
