"""VerlTrainer without GPUs: a stand-in batch script plays verl (writes its metrics file and checkpoint
markers); the trainer forwards metrics under harness names, records checkpoints, fails on a bad exit,
stops the script's process group when killed, and prints the plan on a dry run."""
from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking import open_tracker
from harness.tracking.local_tracker import Tracker
from harness.trainers.checkpoint import resumed_run_id
from harness.trainers.verl import trainer as trainer_module
from harness.trainers.verl.trainer import VerlTrainer


class FakeTracker:
    run_id = "run-123"

    def __init__(self):
        self.metrics, self.artifacts = [], []

    def log_metrics(self, metrics, step):
        self.metrics.append((step, dict(metrics)))

    def log_artifact(self, path, artifact_path=None):
        self.artifacts.append(Path(path).name)


def make_trainer(tmp_path: Path, body: str, *overrides: str, tracker=None) -> VerlTrainer:
    cfg = validate(compose(["trainer=verl", *overrides]))
    t = VerlTrainer(cfg, tmp_path / "run", tracker or FakeTracker())
    p = t.plan.paths
    script = (f"#!/usr/bin/env bash\nset -e\nM={p.metrics}\nCK={p.checkpoints}\nmkdir -p {p.verl_dir}\n" + body)
    t.plan = dataclasses.replace(t.plan, script=script)
    return t


def line(step: int, data: dict) -> str:
    return f"echo '{json.dumps({'step': step, 'data': data})}' >> $M\n"


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch):
    monkeypatch.setattr(trainer_module, "POLL_S", 0.05)
    monkeypatch.setattr(trainer_module, "STOP_GRACE_S", 2.0)


def test_metrics_reach_the_tracker_under_harness_names(tmp_path):
    body = (line(0, {"val-core/aime2024/acc/mean@16": 0.1, "val-core/aime2025/acc/mean@16": 0.3})
            + line(1, {"critic/score/mean": 0.2, "objective/masked_frac": 0.01, "actor/pg_loss": 0.5})
            + "mkdir -p $CK/global_step_1 && echo 1 > $CK/latest_checkpointed_iteration.txt\nsleep 0.3\n"
            + line(2, {"val-core/aime2024/acc/mean@16": 0.5, "val-core/aime2025/acc/mean@16": 0.4}) + "echo finished\n")
    t = make_trainer(tmp_path, body)
    final = t.train()
    steps = [s for s, _ in t.tracker.metrics]
    assert steps == [0, 1, 2]
    assert t.tracker.metrics[1][1]["train/accuracy"] == 0.2 and t.tracker.metrics[1][1]["train/loss"] == 0.5
    assert abs(final["eval/accuracy"] - 0.45) < 1e-12 and abs(final["eval/best_accuracy"] - 0.45) < 1e-12
    meta = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
    assert meta == {"step": 1, "run_id": "run-123"}
    assert {"objective.json", "launch.sh"} <= set(t.tracker.artifacts)
    assert "finished" in (tmp_path / "run" / "verl" / "launch.log").read_text()


def test_a_failing_script_fails_the_run_with_its_error(tmp_path):
    t = make_trainer(tmp_path, "echo 'harness: only 1 of 2 Ray nodes joined'\nexit 3\n")
    with pytest.raises(RuntimeError, match="verl exited with code 3: harness: only 1 of 2 Ray nodes joined"):
        t.train()


def test_a_resumed_run_does_not_log_steps_twice(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.json").write_text(json.dumps({"step": 2, "run_id": "run-123"}))
    body = line(2, {"critic/score/mean": 0.1}) + line(3, {"critic/score/mean": 0.3})
    t = make_trainer(tmp_path, body, f"trainer.resume={run}")
    assert t.resume_from is None  # own folder: verl resumes its own latest checkpoint (resume_mode=auto)
    t.train()
    assert [s for s, _ in t.tracker.metrics] == [3]


@pytest.mark.parametrize("keep,left", [(2, [20, 30, 40]), (1, [30, 40]), (None, [10, 20, 30, 40])])
def test_a_requeued_job_removes_earlier_attempts_checkpoints_beyond_keep_checkpoints(tmp_path, keep, left):
    folder = tmp_path / "run" / "checkpoints" / "verl"
    for step in (10, 20, 30, 40):  # 40: a save cut short, after the latest verl recorded
        (folder / f"global_step_{step}" / "actor").mkdir(parents=True)
    (folder / "latest_checkpointed_iteration.txt").write_text("30")
    t = make_trainer(tmp_path, "ls $CK > $CK.seen\n", f"trainer.verl.keep_checkpoints={keep if keep else 'null'}")
    t.train()
    assert sorted(int(d.name.rpartition("_")[2]) for d in folder.glob("global_step_*")) == left
    seen = {name for name in Path(f"{folder}.seen").read_text().split() if name.startswith("global_step_")}
    assert seen == {f"global_step_{step}" for step in left}  # removed before verl starts


def test_resume_from_another_run_points_verl_at_its_checkpoint(tmp_path):
    other = tmp_path / "other" / "checkpoints" / "verl"
    (other / "global_step_40").mkdir(parents=True)
    (other / "latest_checkpointed_iteration.txt").write_text("40")
    t = make_trainer(tmp_path, "", f"trainer.resume={tmp_path / 'other'}")
    assert t.resume_from == str(other / "global_step_40")
    assert f"trainer.resume_from_path={other / 'global_step_40'}" in t.plan.command
    with pytest.raises(FileNotFoundError, match="no verl checkpoint"):
        make_trainer(tmp_path, "", f"trainer.resume={tmp_path}")


def test_killing_the_job_stops_the_script(tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    t = make_trainer(tmp_path, f"echo $$ > {pid_file}\nsleep 600 &\nwait\n")
    calls = {"n": 0, "interrupted": False}
    real_sleep = time.sleep

    def interrupt(seconds):
        calls["n"] += 1
        if calls["interrupted"]:  # one Ctrl-C: the trainer's stop (its waits sleep through `time` too) runs whole
            return real_sleep(seconds)
        # The shell creates the file before it writes its pid: wait for the whole line.
        if pid_file.is_file() and pid_file.read_text().endswith("\n") and calls["n"] > 2:
            calls["interrupted"] = True
            raise KeyboardInterrupt

    monkeypatch.setattr(trainer_module.time, "sleep", interrupt)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        t.train()
    assert time.monotonic() - started < 300  # stopped, not waited for: the script would run 600 s
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_dry_run_prints_the_plan_and_launches_nothing(tmp_path, capsys):
    t = make_trainer(tmp_path, "touch $M.launched\n", "trainer.verl.dry_run=true")
    assert t.train() == {}
    out = capsys.readouterr().out
    assert out.startswith("# verl command\n") and "# batch script" in out and "# objective spec" in out
    assert (tmp_path / "run" / "verl" / "launch.sh").is_file()
    assert not Path(str(t.plan.paths.metrics) + ".launched").exists()


@pytest.mark.parametrize("stored", [True, False], ids=["store-had-attempt-1", "store-away-in-attempt-1"])
def test_a_requeued_attempt_logs_each_step_once(tmp_path, stored):
    """Attempt 1 logs steps 0-6 with a checkpoint at 4 and is preempted; attempt 2 (trainer.resume, same folder)
    finds its verl log, then its verl truncates it and recomputes 5-6 from the checkpoint with other values."""
    run, root = tmp_path / "run", f"output_root={tmp_path}"

    def steps(value, *numbers):
        return "".join(line(s, {"critic/rewards/mean": value}) for s in numbers)

    first = (": > $M\n" + steps(0.1, 0, 1, 2, 3, 4) + "mkdir -p $CK/global_step_4\n"
             + "echo 4 > $CK/latest_checkpointed_iteration.txt\n" + steps(0.1, 5, 6))
    cfg = validate(compose(["trainer=verl", root]))
    one = make_trainer(tmp_path, first, root, tracker=open_tracker(cfg, run, "r") if stored else Tracker(run))
    one.train()
    one.tracker.finish("KILLED")
    second = "sleep 0.5\n: > $M\n" + line(4, {"val-core/aime2024/acc/mean@16": 0.3}) + steps(0.2, 5, 6, 7, 8)
    cfg = validate(compose(["trainer=verl", root, f"trainer.resume={run}"]))
    tracker = open_tracker(cfg, run, "r", resume_run_id=resumed_run_id(cfg.trainer.get("resume")))
    two = make_trainer(tmp_path, second, root, f"trainer.resume={run}", tracker=tracker)
    two.train()
    tracker.finish("FINISHED")
    records = [json.loads(text) for text in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(9))
    assert [r["train/reward"] for r in records if r["step"] >= 5] == [0.1, 0.1, 0.2, 0.2]  # the first recorded
    history = MlflowClient(f"sqlite:///{tmp_path / 'mlruns.db'}").get_metric_history(tracker.run_id, "train/reward")
    logged = sorted(m.step for m in history)
    assert logged == (list(range(9)) if stored else [7, 8])  # each once; what attempt 1 lost stays out
    assert (run / "verl" / "metrics.previous.jsonl").read_text().count("\n") == 7  # attempt 1's verl log, kept
