"""A run resumed in its folder computes again the steps after its checkpoint: its metrics.jsonl is first cut
back to the checkpoint's step, so every step is recorded once (issue #38: step 31 was there twice)."""
from __future__ import annotations

import json

from harness.tracking.local_tracker import Tracker, trim_metrics


def test_the_steps_after_the_checkpoint_are_recorded_once(tmp_path):
    tracker = Tracker(tmp_path)
    tracker.log_metrics({"warmstart/loss": 0.2}, step=0)
    for step in range(0, 7):
        tracker.log_metrics({"train/reward": step / 10}, step=step)
    tracker.finish("KILLED")
    with open(tmp_path / "metrics.jsonl", "a") as handle:
        handle.write('{"step": 7, "train/rew')  # a line cut short by the kill
    trim_metrics(tmp_path, 4)
    resumed = Tracker(tmp_path)
    for step in range(5, 9):
        resumed.log_metrics({"train/reward": step / 10}, step=step)
    resumed.finish("FINISHED")
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(row["step"], sorted(row)) for row in rows] == [(0, ["step", "warmstart/loss"])] + [
        (step, ["step", "train/reward"]) for step in range(0, 9)]


def test_nothing_to_trim_in_a_new_folder(tmp_path):
    trim_metrics(tmp_path / "new", 4)
    assert not (tmp_path / "new").exists()
