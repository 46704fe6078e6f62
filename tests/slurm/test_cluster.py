"""Real jobs against the single-node Slurm test cluster (HARNESS_SLURM_TESTS=1).

submitit reads job states only through ``sacct`` (SlurmInfoWatcher), so these
tests also prove that accounting (slurmdbd) reports finished jobs correctly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
import submitit

pytestmark = pytest.mark.slurm

# This module is not importable inside the job (tests/ is not a package), so
# make cloudpickle ship the functions below by value instead of by reference.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

# submitit's own list of unfinished states (core.InfoWatcher.is_done). PREEMPTED and
# REQUEUED are not final: sacct shows them for a requeued job until it restarts.
INCOMPLETE = {"READY", "PENDING", "RUNNING", "UNKNOWN", "REQUEUED", "COMPLETING", "PREEMPTED"}
TERMINAL = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
}


# --------------------------------------------------------------------------- helpers
def sacct_state(job_id: str) -> str:
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.split()
    return out[0] if out else "UNKNOWN"


def wait_sacct_terminal(job_id: str, timeout: float = 60) -> str:
    deadline = time.time() + timeout
    state = "UNKNOWN"
    while time.time() < deadline:
        state = sacct_state(job_id)
        if state in TERMINAL:
            return state
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} not finished after {timeout}s (last sacct state {state})")


def submitit_final_state(job: submitit.Job, timeout: float = 60) -> str:
    """The state submitit itself reports (via sacct), once the job is finished."""
    deadline = time.time() + timeout
    state = "UNKNOWN"
    while time.time() < deadline:
        job.watcher.update()  # force a fresh sacct call instead of the backoff cache
        state = job.state
        if state.split()[0] in TERMINAL:
            return state
        time.sleep(0.5)
    raise AssertionError(f"submitit job {job.job_id} not finished after {timeout}s (last state {state})")


def squeue_states(job_ids: list[str]) -> dict[str, str]:
    out = subprocess.run(
        ["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i %T"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def make_executor(cluster, folder: Path, **params) -> submitit.AutoExecutor:
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    defaults = dict(slurm_partition=cluster.partition, timeout_min=5, cpus_per_task=1, mem_gb=1)
    defaults.update(params)
    executor.update_parameters(**defaults)
    return executor


# --------------------------------------------------------------------------- job payloads
def add(a: int, b: int) -> int:
    return a + b


def boom(msg: str) -> None:
    raise ValueError(msg)


def stamp(seconds: float) -> tuple[float, float, str]:
    start = time.time()
    time.sleep(seconds)
    return start, time.time(), os.environ.get("SLURM_JOB_ID", "")


class ResumableCounter(submitit.helpers.Checkpointable):
    """Counts to ``target`` slowly; progress survives a preemption via checkpoint()."""

    def __init__(self) -> None:
        self.count = 0
        self.checkpoints = 0
        self.runs: list[str] = []

    def __call__(self, target: int, marker: str) -> dict:
        self.runs.append(os.environ.get("SLURM_RESTART_COUNT", "0"))
        Path(marker).write_text(str(len(self.runs)))  # tells the test we are running
        while self.count < target:
            self.count += 1
            time.sleep(0.2)
        return {"count": self.count, "checkpoints": self.checkpoints, "runs": self.runs}

    def checkpoint(self, target: int, marker: str) -> submitit.helpers.DelayedSubmission:
        self.checkpoints += 1
        return super().checkpoint(target, marker)


# --------------------------------------------------------------------------- tests
def test_sbatch_wrap_completes(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    proc = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--partition={slurm_cluster.partition}",
            f"--chdir={tmp_path}",
            f"--output={tmp_path}/slurm-%j.out",
            "--wrap",
            f"echo hello-$SLURM_JOB_ID > {out}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    job_id = proc.stdout.strip().split(";")[0]
    assert wait_sacct_terminal(job_id) == "COMPLETED"
    assert out.read_text().strip() == f"hello-{job_id}"


def test_submitit_result_and_completed_state(slurm_cluster, tmp_path):
    job = make_executor(slurm_cluster, tmp_path).submit(add, 2, 40)
    assert job.result() == 42
    assert submitit_final_state(job) == "COMPLETED"


def test_submitit_failure_is_reported(slurm_cluster, tmp_path):
    job = make_executor(slurm_cluster, tmp_path).submit(boom, "expected failure")
    exc = job.exception()
    assert exc is not None
    assert "expected failure" in str(exc)
    assert submitit_final_state(job) == "FAILED"


def test_two_small_jobs_run_concurrently(slurm_cluster, tmp_path):
    executor = make_executor(slurm_cluster, tmp_path, mem_gb=0.5)
    jobs = [executor.submit(stamp, 8) for _ in range(2)]
    ids = [j.job_id for j in jobs]
    both_running = False
    deadline = time.time() + 30
    while time.time() < deadline and not both_running:
        states = squeue_states(ids)
        both_running = [states.get(i) for i in ids] == ["RUNNING", "RUNNING"]
        time.sleep(0.5)
    assert both_running, f"jobs never RUNNING at the same time (last squeue: {states})"
    (s1, e1, id1), (s2, e2, id2) = [j.result() for j in jobs]
    assert {id1, id2} == set(ids)
    assert max(s1, s2) < min(e1, e2), "job run intervals do not overlap"
    assert [submitit_final_state(j) for j in jobs] == ["COMPLETED", "COMPLETED"]


def test_checkpointable_job_is_requeued_and_resumes(slurm_cluster, tmp_path):
    marker = tmp_path / "running"
    # timeout_min must be large: submitit treats any USR2 before min(0.8*T, T-10min)
    # of walltime as preemption, so with T < 10 min every USR2 counts as a timeout.
    executor = make_executor(slurm_cluster, tmp_path / "logs", timeout_min=60)
    job = executor.submit(ResumableCounter(), 30, str(marker))
    deadline = time.time() + 30
    while not marker.exists():  # the worker is running with its signal handlers installed
        assert time.time() < deadline, "job did not start"
        time.sleep(0.2)
    time.sleep(1.0)  # let it make some progress
    job._interrupt()  # preemption: SIGTERM (ignored by submitit) + USR2 -> checkpoint + scontrol requeue

    # Follow the job through the requeue the way submitit sees it (sacct): it must
    # never look finished while it is requeued/pending again.
    seen = []
    deadline = time.time() + 90
    while not job.done():
        assert time.time() < deadline, f"requeued job did not finish; states seen: {seen}"
        job.watcher.update()
        state = job.state
        if not seen or seen[-1] != state:
            seen.append(state)
        time.sleep(0.5)
    print("submitit states during requeue:", seen)
    assert all(s.split()[0] in INCOMPLETE for s in seen), seen
    assert {"PENDING", "REQUEUED"} & set(seen), seen  # the requeue was visible
    result = job.result()
    assert result["count"] == 30
    assert result["checkpoints"] == 1
    assert result["runs"] == ["0", "1"], result  # SLURM_RESTART_COUNT of the two runs
    assert submitit_final_state(job) == "COMPLETED"
    # slurm's own view: the job was restarted once and the log shows the requeue
    info = subprocess.run(
        ["scontrol", "show", "job", job.job_id], capture_output=True, text=True, timeout=30
    ).stdout
    assert "Restarts=1" in info
    log = job.stdout()
    assert "this job is preempted" in log
    assert f"Requeued job {job.job_id}" in log


def test_partition_preemption_requeues_low_priority_job(slurm_cluster, tmp_path):
    """A job in `high` (PriorityTier=10) preempts a `debug` job, which is requeued and rerun."""

    def sbatch(*args: str) -> str:
        proc = subprocess.run(
            ["sbatch", "--parsable", f"--chdir={tmp_path}", f"--output={tmp_path}/slurm-%j.out", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return proc.stdout.strip().split(";")[0]

    # needs both CPUs; sleeps long on its first run only
    low = sbatch(
        f"--partition={slurm_cluster.partition}",
        "--cpus-per-task=2",
        "--mem=512M",
        "--wrap",
        'touch run-$SLURM_RESTART_COUNT; [ "${SLURM_RESTART_COUNT:-0}" = 0 ] && sleep 60; true',
    )
    deadline = time.time() + 30
    while not (tmp_path / "run-").exists() and not (tmp_path / "run-0").exists():
        assert time.time() < deadline, "low-priority job did not start"
        time.sleep(0.2)
    high = sbatch("--partition=high", "--cpus-per-task=2", "--mem=512M", "--wrap", "sleep 1")
    assert wait_sacct_terminal(high, timeout=30) == "COMPLETED"
    assert wait_sacct_terminal(low, timeout=60) == "COMPLETED"
    assert (tmp_path / "run-1").exists(), sorted(p.name for p in tmp_path.iterdir())
    info = subprocess.run(["scontrol", "show", "job", low], capture_output=True, text=True, timeout=30).stdout
    assert "Restarts=1" in info
