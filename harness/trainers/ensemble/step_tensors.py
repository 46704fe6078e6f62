"""A step's rollouts, rewards and advantages stacked on the member dim; the step's per-member metrics as one
device tensor; and the step's one copy to the host (`host_metrics`), where failures of a loss are found."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import torch
from torch import Tensor

from harness.trainers.builtin.policy import masked_means
from harness.trainers.ensemble.batched_loss import Losses, decode

# the columns of `step_metrics`; "tokens" (the member's real tokens) gives perf/tokens_per_s
STEP_KEYS = ("train/reward", "train/accuracy", "train/response_length", "train/entropy", "train/mismatch",
             "train/advantage_abs", "tokens")


@dataclass
class StepTensors:
    """[M, N, T] (lengths, rewards, advantages [M, N]; top-K [M, N, T, K] or None) of every member."""
    tokens: Tensor
    logp: Tensor
    mask: Tensor
    lengths: Tensor
    rewards: Tensor
    advantages: Tensor
    topk_logp: Optional[Tensor] = None
    topk_ids: Optional[Tensor] = None


def stacked(rollouts: Sequence, rewards: Sequence[Tensor], advantages: Sequence[Tensor]) -> StepTensors:
    """rollouts: each member's `Rollout`; rewards, advantages: each member's [N] (or [M, N] already stacked)."""
    topk = rollouts[0].topk_logp is not None
    return StepTensors(torch.stack([r.tokens for r in rollouts]), torch.stack([r.logp for r in rollouts]),
                       torch.stack([r.mask for r in rollouts]).float(), torch.stack([r.lengths for r in rollouts]),
                       torch.stack(list(rewards)), torch.stack(list(advantages)),
                       torch.stack([r.topk_logp for r in rollouts]) if topk else None,
                       torch.stack([r.topk_ids for r in rollouts]) if topk else None)


def step_metrics(batch: StepTensors, old_logp: Tensor, old_entropy: Tensor) -> Tensor:
    """[M, len(STEP_KEYS)]: each member's reward, accuracy, response length, entropy and mismatch (over its real
    tokens, from π' of the step), mean |advantage| and real-token count."""
    rewards = batch.rewards
    return torch.stack([rewards.mean(1), (rewards > 0.5).float().mean(1), batch.lengths.float().mean(1),
                        masked_means(old_entropy, batch.mask),
                        masked_means((batch.logp.exp() - old_logp.exp()).abs(), batch.mask),
                        batch.advantages.abs().mean(1), batch.mask.sum((1, 2))], dim=1)


def host_metrics(members: Sequence, steps: Sequence[Losses], norms: Sequence[Tensor], per_step: Tensor, step: int,
                 started: float, rollout_seconds: float) -> Dict[int, Dict[str, float]]:
    """Each live member's metrics of `step`, everything copied to the host at once: its objective's metrics and
    its loss and grad norm (averaged over the mini-batches), `per_step` ([M, len(STEP_KEYS)]) and the timings.
    A member whose loss was not finite in a mini-batch ends FAILED here (its metrics dropped)."""
    M, mini_batches = len(members), len(steps)
    parts = [p for s in steps for p in s.metrics]
    tensors = [p.rows for p in parts] + [torch.stack([s.values for s in steps]), torch.stack([s.finite for s in steps]),
                                         torch.stack(list(norms)), per_step]
    host = torch.cat([x.detach().reshape(-1).to(torch.float64) for x in tensors]).cpu().tolist()  # the one copy
    objective, offset = decode(host, 0, parts)
    losses, finite, grad_norms = (host[offset + i * mini_batches * M:offset + (i + 1) * mini_batches * M]
                                  for i in range(3))
    per_member = host[offset + 3 * mini_batches * M:]
    width = len(STEP_KEYS)
    elapsed = time.perf_counter() - started
    out: Dict[int, Dict[str, float]] = {}
    for k, member in enumerate(members):
        bad = [losses[i * M + k] for i in range(mini_batches) if not finite[i * M + k]]
        if bad and member.alive:
            member.fail(FloatingPointError(f"non-finite loss {bad[0]} at step {step}"))
        if not member.alive:
            continue
        sums: Dict[str, float] = {}
        for metrics in objective.get(k, []):
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value / mini_batches
        for i in range(mini_batches):
            sums["train/loss"] = sums.get("train/loss", 0.0) + losses[i * M + k] / mini_batches
            sums["train/grad_norm"] = sums.get("train/grad_norm", 0.0) + grad_norms[i * M + k] / mini_batches
        row = dict(zip(STEP_KEYS, per_member[k * width:(k + 1) * width]))
        tokens = row.pop("tokens")
        out[k] = {**sums, **row, "perf/step_time_s": elapsed / M, "perf/rollout_time_s": rollout_seconds / M,
                  "perf/tokens_per_s": tokens * M / max(elapsed, 1e-9)}
    return out
