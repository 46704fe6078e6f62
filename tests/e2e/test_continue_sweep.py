"""A stopped sweep is continued by re-running the same command (issue #38, item 4): a 4-run sweep stopped with
SIGINT (Ctrl-C, sent to its process group) once every run has a checkpoint after step 0, then run again with
the same command, ends in its own folder with 4 FINISHED runs, each with every step logged exactly once in
MLflow and in metrics.jsonl, each stopped run resumed from its checkpoint into its own MLflow run, and one
parent run, FINISHED."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from mlflow_store import runs_of

STEPS = 100  # every run is still training when the last one writes its step-4 checkpoint
SWEEP = ("multirun", "algo=dppo", "seed=0,1,2,3", "debug=quick", f"trainer.steps={STEPS}", "trainer.eval_every=20",
         "trainer.checkpoint_every=4")


def checkpoint_steps(root: Path) -> dict:
    steps = {}
    for meta in root.glob("multirun/*/*/*/checkpoints/last.json"):
        try:
            steps[meta.parents[1]] = json.loads(meta.read_text())["step"]
        except (OSError, ValueError, KeyError):  # being replaced
            continue
    return steps


def wait_for(predicate, driver: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if driver.poll() is not None:
            raise AssertionError(f"the sweep ended first ({driver.returncode}):\n{driver.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, "timed out waiting for the sweep"
        time.sleep(0.2)


def stop_with_ctrl_c(run_harness) -> subprocess.CompletedProcess:
    """Start the sweep, send SIGINT to its process group (as a terminal's Ctrl-C) once every run has a
    checkpoint after step 0, and return how it ended."""
    driver = subprocess.Popen(run_harness.argv(*SWEEP), cwd=run_harness.root, env=run_harness.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: len(steps := checkpoint_steps(run_harness.root)) == 4 and min(steps.values()) >= 4,
                 driver, timeout=400)
        os.killpg(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=180)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    return subprocess.CompletedProcess(driver.args, driver.returncode, out, err)


def test_a_stopped_sweep_is_continued_by_the_same_command(run_harness):
    stopped = stop_with_ctrl_c(run_harness)
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    said = [line for line in stopped.stderr.splitlines() if line.startswith("harness: stopped")]
    assert len(said) == 1 and "run the same command again" in said[0], stopped.stderr[-3000:]
    (folder,) = run_harness.root.glob("multirun/*/*")
    statuses = {job.name: (job / "status.txt").read_text().strip() for job in sorted(folder.glob("[0-3]"))}
    stopped_jobs = sorted(name for name, status in statuses.items() if status == "KILLED")
    assert stopped_jobs, statuses
    checkpoint = {job.name: json.loads((job / "checkpoints" / "last.json").read_text()) for job in folder.glob("[0-3]")}
    assert all(checkpoint[name]["step"] >= 4 for name in stopped_jobs), checkpoint

    again = run_harness(*SWEEP, timeout=900, check=True)
    assert f"sweep: continuing the stopped sweep {folder}" in again.stdout, again.stdout[-3000:]
    assert list(run_harness.root.glob("multirun/*/*")) == [folder], "no second sweep folder"
    assert "4 runs: " in again.stdout and "0 failed, 0 killed" in again.stdout, again.stdout[-3000:]
    # each stopped run says once that it resumed, from its checkpoint's step (not step 0)
    resumed = [line for line in again.stdout.splitlines() if "resumed from step" in line]
    assert len(resumed) == len(stopped_jobs), resumed
    assert sorted(int(line.split("resumed from step ")[1].split()[0]) for line in resumed) == \
        sorted(checkpoint[name]["step"] for name in stopped_jobs)
    assert "member 0 resumed" not in again.stdout + again.stderr

    client, runs = runs_of(run_harness.root)
    assert len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs), [r.info.status for r in runs]
    run_of = {Path(r.data.tags["harness.run_dir"]).name: r for r in runs}
    assert {name: run_of[name].info.run_id for name in checkpoint} == \
        {name: meta["run_id"] for name, meta in checkpoint.items()}, "each run continues its own MLflow run"
    for name, run in run_of.items():
        for key in run.data.metrics:
            logged = Counter(m.step for m in client.get_metric_history(run.info.run_id, key))
            assert max(logged.values()) == 1, (name, key, [s for s, n in logged.items() if n > 1])
        rewards = sorted(m.step for m in client.get_metric_history(run.info.run_id, "train/reward"))
        assert rewards == list(range(1, STEPS + 1)), (name, rewards[:10])
        recorded = Counter()
        for line in (folder / name / "metrics.jsonl").read_text().splitlines():
            row = json.loads(line)
            recorded.update((key, row["step"]) for key in row if key != "step")
        assert max(recorded.values()) == 1, (name, [k for k, n in recorded.items() if n > 1][:5])
        assert sorted(s for k, s in recorded if k == "train/reward") == list(range(1, STEPS + 1)), name
        if name in stopped_jobs:  # its record says once where it went on from
            log = (folder / name / "job.log").read_text()
            assert log.count(f"resumed from its checkpoint at step {checkpoint[name]['step']} ") == 1, log[-2000:]
    # the earlier attempt's errors are kept in each folder's history, not beside the FINISHED status
    for job in [folder, *(folder / name for name in stopped_jobs)]:
        assert (job / "status.txt").read_text().strip() == "FINISHED" and not (job / "error.txt").exists(), job
        assert [p.name for p in (job / "history").iterdir()] == ["error-1.txt"], job
    assert "the sweep stopped before all its jobs ended" in (folder / "history" / "error-1.txt").read_text()
    _, parents = runs_of(run_harness.root, role="parent")
    assert [p.info.status for p in parents] == ["FINISHED"], "one parent run, continued and FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
