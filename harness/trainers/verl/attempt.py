"""Which attempt of a run a job is (a requeued job after a time limit is another attempt of the same run), and
what that means for verl's schedule (torch-free):

- validation before training (`trainer.val_before_train`) only on the first attempt: a later one resumes a
  run whose step-0 evaluation is already recorded;
- the checkpoint frequency (`trainer.save_freq`): at most `trainer.checkpoint_every` steps, and few enough that a
  job killed at its time limit loses at most LOSS_BUDGET_S of training. The step time is the longest verl
  measured in an earlier attempt (`timing_s/step` of its metrics file), else `trainer.verl.step_minutes`
  (an estimate, e.g. from a short first run), else, on a first attempt, `estimated_step_seconds`: a high
  estimate from the model's parameter count and the step's token budget, so that a first time-limited slot
  checkpoints too often rather than too rarely.

verl's own "ESI" save before a deadline (`should_save_ckpt_esi`, read from
MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP, and `trainer.esi_redundant_time`) is called only by the legacy
trainer (verl/trainer/ppo/ray_trainer.py:1693); the v1 trainer the harness runs (`trainer.use_v1=true`) saves
only on `save_freq` and the last step (verl/trainer/ppo/v1/trainer_base.py:481), so the harness cannot use it.

An attempt is not the first when the run folder holds what an earlier one left: verl's metrics file (set aside
as metrics.previous.jsonl when a new attempt starts) or a verl checkpoint.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.trainers.verl.presets import model_extras

LOSS_BUDGET_S = 1800.0  # what a timeout may lose: the training since the last checkpoint
# The first attempt's step estimate (high on purpose: a step's training FLOPs over a low throughput):
ESTIMATE_FLOPS_PER_GPU = 1e14  # 100 TFLOP/s per GPU: ~10% of an H100's dense bf16 peak (989 TFLOP/s)
FLOPS_PER_PARAM_TOKEN = 10  # rollout forward 2 + old-policy log-prob forward 2 + update forward/backward 6
STEP_S_FLOOR = 60.0  # a step's least cost beside its arithmetic: weight sync into vLLM, scheduling, logging


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


def estimated_step_seconds(params_b: float, sequences: int, tokens_per_sequence: int, gpus: int) -> float:
    """A high estimate of one training step's seconds for a first attempt that has measured none: every
    response runs to its length limit, at ESTIMATE_FLOPS_PER_GPU; STEP_S_FLOOR when the parameter count is
    unknown (0) or the arithmetic is smaller."""
    work = FLOPS_PER_PARAM_TOKEN * params_b * 1e9 * sequences * tokens_per_sequence
    return max(STEP_S_FLOOR, work / (max(1, gpus) * ESTIMATE_FLOPS_PER_GPU))


def step_seconds(attempt: Attempt, cfg, options, gpus: int) -> float:
    """The step time measured by an earlier attempt, else trainer.verl.step_minutes, else the high estimate
    for the run's model (a mixture of experts: the parameters a token passes through) and token budget (prompt
    + response limit of every sequence of a step)."""
    if attempt.step_seconds or options.step_minutes:
        return attempt.step_seconds or options.step_minutes * 60
    m, t = model_extras(cfg.model.name), cfg.trainer
    active = m.params_b - (m.expert_params_b * (1 - m.experts_per_token / m.num_experts) if m.num_experts else 0)
    return estimated_step_seconds(active, t.prompts_per_step * t.group_size,
                                  options.max_prompt_length + t.max_new_tokens, gpus)
