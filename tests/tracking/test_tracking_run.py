"""A job's MLflow run (harness/tracking/run_tracker.py, tracker.py): params, metrics, artifacts and status
land in the store; flush() and finish() return once the store has every step; stop signals to the process
group close the run as KILLED with nothing lost; a SIGKILLed job leaves its run RUNNING with what it had
flushed; a resumed run skips the steps the store has. Real SQLite stores and real processes throughout."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking import MlflowTracker, open_tracker
from harness.trainers.checkpoint import resumed_run_id
from tracking_helpers import runs_of, wait_until

KEYS = ("train/reward", "train/loss", "eval/accuracy")


def _config(root: Path, *overrides: str):
    return validate(compose([f"output_root={root}", *overrides]))


def _uri(root: Path) -> str:
    return f"sqlite:///{root / 'mlruns.db'}"


def _log(tracker, steps) -> None:
    for step in steps:
        tracker.log_metrics({key: step + i / 10 for i, key in enumerate(KEYS)}, step=step)


def _steps(uri: str, run_id: str, key: str = "train/reward") -> list:
    return sorted(m.step for m in MlflowClient(uri).get_metric_history(run_id, key))


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_store_gets_params_metrics_artifacts_and_status(tmp_path):
    artifact = tmp_path / "table.csv"
    artifact.write_text("a,b\n1,2\n")
    tracker = open_tracker(_config(tmp_path), tmp_path / "run", run_name="same")
    assert isinstance(tracker, MlflowTracker)
    _log(tracker, range(0, 6))
    tracker.log_artifact(artifact, "extra")
    tracker.log_text("a note", "note.txt")
    tracker.finish("FINISHED")

    client = MlflowClient(_uri(tmp_path))
    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "dppo δ=0.15 s0 @ run"
    assert run.data.tags["harness.overrides"] == "same" and "same" in run.data.tags["mlflow.note.content"]
    assert len(run.data.params) > 50 and run.data.params["algo.name"] == "dppo"
    assert run.data.tags["harness.step"] == "5" and run.data.tags["harness.run_dir"] == str(tmp_path / "run")
    for i, key in enumerate(KEYS):
        history = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
        assert sorted(history) == [(step, step + i / 10) for step in range(6)]
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id)) == ["config.yaml", "extra", "note.txt"]
    assert (tmp_path / "run" / "status.txt").read_text() == "FINISHED\n"
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 6


def test_flush_returns_once_the_store_has_every_step_and_finish_once_the_run_is_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "60")  # without a flush the steps would wait a minute
    uri = _uri(tmp_path)
    tracker = open_tracker(_config(tmp_path), tmp_path / "run", run_name="flush")
    for burst in range(3):  # each burst is sent microseconds before the flush: only a flush that waits has it
        _log(tracker, range(1 + 30 * burst, 31 + 30 * burst))
        tracker.flush()
        assert _steps(uri, tracker.run_id) == list(range(1, 31 + 30 * burst))
    tracker.finish("FAILED", error="boom")
    assert MlflowClient(uri).get_run(tracker.run_id).info.status == "FAILED"
    assert (tmp_path / "run" / "status.txt").read_text() == "FAILED\n"
    assert (tmp_path / "run" / "error.txt").read_text() == "boom"


def test_a_resumed_run_skips_the_steps_the_store_has(tmp_path):
    uri = _uri(tmp_path)
    first = open_tracker(_config(tmp_path), tmp_path / "first", run_name="resumed")
    _log(first, range(1, 7))
    first.finish("KILLED", error="preempted")
    checkpoints = tmp_path / "first" / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "last.pt").write_bytes(b"")
    (checkpoints / "last.json").write_text(json.dumps({"step": 4, "run_id": first.run_id}))

    resumed = _config(tmp_path, f"trainer.resume={tmp_path / 'first'}")
    again = open_tracker(resumed, tmp_path / "again", run_name="resumed",
                         resume_run_id=resumed_run_id(resumed.trainer.get("resume")))
    _log(again, range(5, 10))  # steps 5 and 6 recomputed after the checkpoint, then new ones
    again.finish("FINISHED")
    assert again.run_id == first.run_id and again.skip_through_step == 6
    (run,) = runs_of(uri, "harness")
    assert run.info.status == "FINISHED"
    for key in KEYS:
        assert _steps(uri, run.info.run_id, key) == list(range(1, 10)), key
    recomputed = [json.loads(line)["step"] for line in (tmp_path / "again" / "metrics.jsonl").read_text().splitlines()]
    assert recomputed == [5, 6, 7, 8, 9], "metrics.jsonl keeps every step the job computed"


def _start_job(run_harness, *args: str, env=None) -> subprocess.Popen:
    """`python -m harness ...` as its own process group (Ctrl-C and Slurm signal a whole group)."""
    # SIGINT back to its default: a suite started in the background (`... &`, nohup) hands its children SIGINT
    # ignored, and Python then never raises KeyboardInterrupt
    return subprocess.Popen(run_harness.argv(*args), cwd=run_harness.root, env=run_harness.env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _jsonl_steps(run_dir: Path) -> list:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return sorted(r["step"] for r in rows if "train/reward" in r)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_to_the_process_group_ends_the_run_killed_with_nothing_lost(run_harness, signum):
    job = _start_job(run_harness, "debug=quick", "trainer.steps=5000", "trainer.checkpoint_every=7",
                     env={"HARNESS_METRICS_INTERVAL_S": "60"})
    try:
        wait_until(lambda: len(list(run_harness.root.glob("outputs/*/*/metrics.jsonl"))) == 1
                   and len(_jsonl_steps(next(run_harness.root.glob("outputs/*/*")))) >= 10, "ten steps", 300)
        os.killpg(job.pid, signum)  # the whole process group, as Slurm's preemption or Ctrl-C does
        output, _ = job.communicate(timeout=300)
    finally:
        job.kill()
    assert job.returncode != 0
    wait_until(lambda: _group_gone(job.pid), "the job's processes to exit", 60)
    run_dir = next(run_harness.root.glob("outputs/*/*"))
    uri = _uri(run_harness.root)
    (run,) = runs_of(uri, "harness")
    assert run.info.status == "KILLED", output[-3000:]
    assert _steps(uri, run.info.run_id) == _jsonl_steps(run_dir), "every step the job logged is in the store"
    assert (run_dir / "status.txt").read_text() == "KILLED\n"
    if signum == signal.SIGTERM:
        assert "SIGTERM" in (run_dir / "error.txt").read_text()


def test_a_sigkilled_job_leaves_its_run_running_with_what_it_flushed(run_harness):
    job = _start_job(run_harness, "debug=quick", "trainer.steps=20", "trainer.checkpoint_every=3",
                     env={"HARNESS_FAULT_KILL_AT_STEP": "7", "HARNESS_METRICS_INTERVAL_S": "60",
                          "HARNESS_HEARTBEAT_S": "0.5"})
    output, _ = job.communicate(timeout=600)
    assert job.returncode == -signal.SIGKILL, output[-3000:]
    uri = _uri(run_harness.root)
    (run,) = runs_of(uri, "harness")
    assert run.info.status == "RUNNING", "only `repair` closes a run whose job was SIGKILLed"
    # flushed at step 6 (the checkpoint); step 7 too if its call had left the job before the kill
    assert _steps(uri, run.info.run_id) in (list(range(1, 7)), list(range(1, 8)))
    beat = run.data.tags["harness.heartbeat"]
    time.sleep(2)
    (run,) = runs_of(uri, "harness")
    assert run.data.tags["harness.heartbeat"] == beat, "the heartbeat stopped with the job"
    assert not (next(run_harness.root.glob("outputs/*/*")) / "status.txt").exists()


def test_metric_timestamps_are_when_the_job_logged_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_METRICS_INTERVAL_S", "30")  # the steps wait in the job until the flush
    tracker = open_tracker(_config(tmp_path), tmp_path / "run", run_name="stamps")
    logged = []
    for step in (1, 2):
        logged.append(time.time() * 1000)
        _log(tracker, [step])
        time.sleep(1.0)
    tracker.flush()
    tracker.finish("FINISHED")
    stamps = {m.step: m.timestamp for m in MlflowClient(_uri(tmp_path)).get_metric_history(tracker.run_id, KEYS[0])}
    for step, at in zip((1, 2), logged):
        assert abs(stamps[step] - at) < 500, (step, stamps[step] - at)
