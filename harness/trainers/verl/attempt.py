"""Which attempt of a run a job is (a requeued job after a time limit is another attempt of the same run), and
what that means for verl's schedule (torch-free):

- validation before training (`trainer.val_before_train`) only on the first attempt: a later one resumes a
  run whose step-0 evaluation is already recorded;
- the checkpoint frequency (`trainer.save_freq`): at most `trainer.checkpoint_every` steps, and few enough that a
  job killed at its time limit loses at most LOSS_BUDGET_S of training. The step time is the longest verl
  measured in an earlier attempt (`timing_s/step` of its metrics file), else `trainer.verl.step_minutes`
  (an estimate, e.g. from a short first run); unknown, the limit cannot be applied and checkpoint_every holds.

An attempt is not the first when the run folder holds what an earlier one left: verl's metrics file (set aside
as metrics.previous.jsonl when a new attempt starts) or a verl checkpoint.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

LOSS_BUDGET_S = 1800.0  # what a timeout may lose: the training since the last checkpoint


@dataclass(frozen=True)
class Attempt:
    first: bool = True
    step_seconds: Optional[float] = None  # the longest training step measured so far (None: unknown)


def longest_step(metrics: Path) -> Optional[float]:
    """The longest `timing_s/step` of a verl file-logger metrics file, or None."""
    if not metrics.is_file():
        return None
    longest = None
    for line in metrics.read_text().splitlines():
        try:
            value = json.loads(line).get("data", {}).get("timing_s/step")
        except (ValueError, AttributeError):
            continue  # a line cut short by the kill
        if isinstance(value, (int, float)) and value > 0:
            longest = max(longest or 0.0, float(value))
    return longest


def attempt_of(metrics: Path, checkpoints: Path) -> Attempt:
    """The attempt a job starting now makes, from the run's verl metrics file and checkpoint folder."""
    files = [metrics, metrics.with_name("metrics.previous.jsonl")]
    earlier = any(f.is_file() for f in files) or (checkpoints / "latest_checkpointed_iteration.txt").is_file()
    steps = [s for s in (longest_step(f) for f in files) if s is not None]
    return Attempt(first=not earlier, step_seconds=max(steps) if steps else None)


def save_freq(checkpoint_every: int, timeout_min: Optional[float], step_seconds: Optional[float]) -> int:
    """Steps between checkpoints: checkpoint_every, or fewer when a time limit longer than LOSS_BUDGET_S could
    otherwise cut more than LOSS_BUDGET_S of training (at least 1)."""
    if not step_seconds or timeout_min is None or timeout_min * 60 <= LOSS_BUDGET_S:
        return checkpoint_every
    return max(1, min(checkpoint_every, int(LOSS_BUDGET_S // step_seconds)))
