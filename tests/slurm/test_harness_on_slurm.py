"""harness sweeps on the real single-node Slurm cluster: a 4-run sweep, a failing run whose Slurm job
ends FAILED, a requeue that resumes exactly, and a detached sweep followed by `status`."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm


def sacct_states(job_ids):
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(job_ids)],
                         capture_output=True, text=True, check=True).stdout
    return {line.split("|")[0]: line.split("|")[1] for line in out.splitlines() if line}


def wait_for_states(job_ids, done=("COMPLETED", "FAILED", "CANCELLED"), timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        states = sacct_states(job_ids)
        if len(states) == len(job_ids) and all(s.split()[0] in done for s in states.values()):
            return states
        time.sleep(0.5)
    raise AssertionError(f"jobs not done in {timeout}s: {sacct_states(job_ids)}")


def submitted(root: Path):
    return [entry for path in sorted(root.glob("multirun/*/*/jobs.json")) for entry in json.loads(path.read_text())]


def mlflow_runs(root: Path, experiment="harness"):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id])
    return client, [r for r in runs if r.data.tags.get("harness.role") != "parent"]


def test_four_run_sweep_on_slurm(slurm_cluster, run_harness):
    proc = run_harness("multirun", "launcher=slurm", "launcher.members=1",
                       "algo=dppo,drpo", "delta=0.1,0.2", "debug=quick", check=True)
    assert "4 runs: 4 finished" in proc.stdout
    jobs = submitted(run_harness.root)
    assert len(jobs) == 4
    states = wait_for_states([j["job_id"] for j in jobs])
    assert set(states.values()) == {"COMPLETED"}, states
    client, runs = mlflow_runs(run_harness.root)
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 4
    assert {r.data.tags.get("slurm.job_id") for r in runs} != {None}


def test_failing_run_is_a_failed_slurm_job(slurm_cluster, run_harness):
    proc = run_harness("multirun", "launcher=slurm", "launcher.members=1",
                       "model.path=null,/nonexistent/model", "debug=quick")
    assert proc.returncode == 1
    assert "1 finished, 1 failed" in proc.stdout and "/nonexistent/model" in proc.stdout
    jobs = {tuple(j["overrides"]): j["job_id"] for j in submitted(run_harness.root)}
    failing = next(job_id for overrides, job_id in jobs.items() if "model.path=/nonexistent/model" in overrides)
    healthy = next(job_id for overrides, job_id in jobs.items() if "model.path=null" in overrides)
    states = wait_for_states([failing, healthy])
    assert states[failing] == "FAILED" and states[healthy] == "COMPLETED", states


ARGS = ("launcher=slurm", "launcher.members=1",
        "debug=quick", "precision=bf16", "trainer.steps=40", "trainer.checkpoint_every=4",
        "trainer.prompts_per_step=8")


def final_metrics(run_dir: Path) -> dict:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = max(r["step"] for r in rows)
    return {k: v for r in rows if r["step"] == last for k, v in r.items() if not k.startswith("perf/")}


def test_requeued_job_resumes_exactly(slurm_cluster, run_harness):
    """`scontrol requeue` kills the running job and queues it again; the new attempt finds the checkpoint
    in its run folder, continues the same MLflow run and ends exactly where an uninterrupted run ends."""
    run_harness("multirun", *ARGS, "experiment_name=reference", check=True)
    reference_dir = next(run_harness.root.glob("multirun/*/*/0"))
    driver = subprocess.Popen(run_harness.argv("multirun", *ARGS, "experiment_name=preempted"),
                              cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        run_dir = None
        deadline = time.time() + 180
        while time.time() < deadline and run_dir is None:
            for meta in run_harness.root.glob("multirun/*/*/0/checkpoints/last.json"):
                if meta.parents[1] != reference_dir and json.loads(meta.read_text())["step"] >= 8:
                    run_dir = meta.parents[1]
            time.sleep(0.3)
        assert run_dir is not None, "the job never reached a checkpoint"
        job_id = json.loads((run_dir.parent / "jobs.json").read_text())[0]["job_id"]
        subprocess.run(["scontrol", "requeue", job_id], check=True)
        output, _ = driver.communicate(timeout=300)
    finally:
        driver.kill()
    assert driver.returncode == 0, output[-3000:]
    assert "1 runs: 1 finished" in output
    restarted = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(restarted) > len(set(restarted)), "the second attempt recomputed steps after its checkpoint"
    assert final_metrics(run_dir) == final_metrics(reference_dir)
    client, runs = mlflow_runs(run_harness.root, "preempted")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, "train/reward")]
    assert sorted(steps) == list(range(1, 41)), "every step logged exactly once"


def test_detached_sweep_then_status(slurm_cluster, run_harness):
    """--detach returns right after submission; `status --watch` follows the runs until they end."""
    started = time.time()
    proc = run_harness("multirun", "launcher=slurm", "launcher.members=1",
                       "algo=dppo,drpo", "debug=quick", "--detach", check=True)
    assert "2 submitted" in proc.stdout
    assert time.time() - started < 60
    sweep_dir = next(run_harness.root.glob("multirun/*/*"))
    sweep_id = "/".join(sweep_dir.parts[-2:])
    status = run_harness("status", "--sweep", sweep_id, "--watch", "--interval", "2", timeout=300)
    assert status.returncode == 0, status.stdout[-2000:] + status.stderr[-2000:]
    assert "2 runs: 2 finished" in status.stdout
    for name in ("dppo δ=0.15 s0", "drpo δ=12.5 s0"):  # the runs' MLflow names (objective, threshold, seed)
        assert name in status.stdout
