"""A Slurm time limit requeues a job and the next attempt resumes its run, also without srun (launcher.use_srun=false,
the gpu_node8 profile's mode): there submitit's python runs in the batch shell, which Slurm's default `--signal`
(job steps only) never reaches, so the job used to run into its time limit and end TIMEOUT."""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from test_harness_on_slurm import mlflow_runs, submitted

pytestmark = pytest.mark.slurm

# 4 minutes: Slurm sends the signal 90 s before the limit (up to 60 s earlier), so at least 90 s after the start,
# time for submitit's python to install its handler on a loaded machine; 200,000 steps outlast any attempt.
ARGS = ("launcher=slurm", "launcher.members=1",
        "launcher.use_srun=false", "launcher.timeout_min=4", "debug=quick", "trainer.steps=200000",
        "trainer.checkpoint_every=100", "trainer.prompts_per_step=8", "experiment_name=time_limit")


def restarts(job_id: str) -> int:
    info = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, timeout=30).stdout
    return int(next(word for word in info.split() if word.startswith("Restarts=")).split("=")[1])


def logged_steps(run_dir: Path) -> list:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line)["step"] for line in path.read_text().splitlines()] if path.is_file() else []


def test_time_limit_requeues_and_resumes_without_srun(slurm_cluster, run_harness):
    driver = subprocess.Popen(run_harness.argv("multirun", *ARGS), cwd=run_harness.root, env=run_harness.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job_id = None
    try:
        deadline = time.time() + 120
        while not submitted(run_harness.root):
            assert time.time() < deadline and driver.poll() is None, "the job was never submitted"
            time.sleep(0.5)
        job_id = submitted(run_harness.root)[0]["job_id"]
        batch = next(run_harness.root.glob(f"multirun/*/*/.submitit/{job_id}/{job_id}_submission.sh")).read_text()
        assert "#SBATCH --signal=B:USR2@90" in batch and "\nexec " in batch
        run_dir = submitted_run_dir(run_harness.root)
        # the next attempt finds this attempt's checkpoint and trains past it, in the same run folder
        deadline = time.time() + 600
        while True:
            resumed = re.search(r"resumed from its checkpoint at step (\d+)", read(run_dir / "job.log"))
            if resumed and max(logged_steps(run_dir)) > int(resumed.group(1)):
                break
            state = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout
            assert time.time() < deadline, f"no requeued attempt resumed (job {state.strip() or 'gone'})"
            assert state.strip(), f"job {job_id} ended without resuming: {sacct(job_id)}"
            time.sleep(1.0)
        assert int(resumed.group(1)) > 0 and restarts(job_id) >= 1
        logs = run_harness.root.glob(f"multirun/*/*/.submitit/{job_id}/{job_id}_0_log.*")
        log = "".join(read(path) for path in sorted(logs))  # submitit's handler ran in the job's python
        # submitit's handler caught the signal in the batch shell's python; its own "Requeued job" line is not
        # asked for: `scontrol requeue` ends the attempt, which on a busy machine can happen before the line is
        # written (a fresh clone's CI run lost it while Slurm counted the restart and the run resumed)
        assert "Caught signal SIGUSR2" in log and "this job is timed-out" in log
        _, runs = mlflow_runs(run_harness.root, "time_limit")
        assert len(runs) == 1, "the requeued attempt continues the same MLflow run"
    finally:
        if job_id:
            subprocess.run(["scancel", job_id], timeout=30)
        driver.kill()
        driver.communicate()


def read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


def submitted_run_dir(root: Path) -> Path:
    deadline = time.time() + 300
    while True:
        found = list(root.glob("multirun/*/*/0/metrics.jsonl"))
        if found:
            return found[0].parent
        assert time.time() < deadline, "the run never logged a step"
        time.sleep(0.5)


def sacct(job_id: str) -> str:
    return subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobID,State,Elapsed", "-j", job_id],
                          capture_output=True, text=True).stdout.strip()
