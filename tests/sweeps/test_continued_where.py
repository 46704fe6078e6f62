"""Re-running a stopped sweep's command (issue 50, cases 6 and 10): the same overrides in another order
continue it in its folder, each job in the job folder that holds it (a grid's jobs are numbered in the order
of its overrides); the same command under another MLFLOW_EXPERIMENT_NAME starts a new sweep and says so, as
one sweep never spans two experiments. Real in-process sweeps on debug=quick (2-step runs), the driver
SIGKILLed at step 1 of its first job, a real MLflow store."""
from __future__ import annotations

import signal
import sqlite3

import yaml


def _stopped(run_harness, *sweep: str):
    killed = run_harness("multirun", *sweep, env={"HARNESS_FAULT_KILL_AT_STEP": "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (folder,) = run_harness.root.glob("multirun/*/*")
    return folder


def _experiments(root) -> dict:
    """{experiment name: sorted statuses of its runs}."""
    with sqlite3.connect(root / "mlruns.db") as conn:
        rows = conn.execute("SELECT e.name, r.status FROM runs r JOIN experiments e USING (experiment_id)")
        found: dict = {}
        for name, status in rows:
            found.setdefault(name, []).append(status)
    return {name: sorted(statuses) for name, statuses in found.items()}


def _axes(job) -> tuple:
    """(seed, trainer.lr) of a job folder, as its `.hydra/overrides.yaml` holds them."""
    given = dict(o.split("=", 1) for o in yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text()))
    return given["seed"], given["trainer.lr"]


def test_reordered_overrides_continue_the_stopped_sweep(run_harness):
    common = ("debug=quick", "trainer.steps=2", "trainer.checkpoint_every=2")
    folder = _stopped(run_harness, *common, "seed=0,1", "trainer.lr=0.001,0.002")
    held = {job.name: _axes(job) for job in folder.glob("[0-9]")}
    assert held, "the stopped sweep made no job folder"
    again = run_harness("multirun", "trainer.lr=0.001,0.002", "seed=0,1", *reversed(common), check=True)
    assert f"sweep: continuing the stopped sweep {folder}" in again.stdout, again.stdout[-3000:]
    assert list(run_harness.root.glob("multirun/*/*")) == [folder], "no second sweep folder"
    jobs = sorted(folder.glob("[0-9]"))
    assert [(job / "status.txt").read_text().strip() for job in jobs] == ["FINISHED"] * 4
    assert {_axes(job) for job in jobs} == {(s, lr) for s in "01" for lr in ("0.001", "0.002")}  # each job once
    assert {name: _axes(folder / name) for name in held} == held  # the stopped job went on in its own folder
    assert _experiments(run_harness.root) == {"harness": ["FINISHED"] * 5}  # the 4 runs and the sweep's parent


def test_a_stopped_sweep_is_not_continued_into_another_experiment(run_harness):
    sweep = ("debug=quick", "trainer.steps=2", "trainer.checkpoint_every=2", "seed=0,1")
    folder = _stopped(run_harness, *sweep)
    again = run_harness("multirun", *sweep, env={"MLFLOW_EXPERIMENT_NAME": "other"}, check=True)
    line = f"sweep: not continuing the stopped sweep {folder}: its runs are tracked in experiment 'harness'"
    assert line in again.stdout and "a new sweep starts" in again.stdout, again.stdout[-3000:]
    assert len(list(run_harness.root.glob("multirun/*/*"))) == 2
    assert not (folder / "1").exists() and not (folder / "0" / "status.txt").exists()  # left as it stopped
    experiments = _experiments(run_harness.root)
    assert experiments["other"] == ["FINISHED"] * 3, experiments  # its own 2 runs and parent, nothing of the first
    assert "FINISHED" not in experiments["harness"], experiments  # the stopped sweep left as it was
