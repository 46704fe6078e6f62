"""Group advantages from outcome rewards [P prompts, G samples per prompt] -> [P, G].

  grpo    (R − mean_group) / (std_group + eps)   (unbiased std, as in GRPO / verl)
  drgrpo  R − mean_group                          (Dr. GRPO; the DPPO and DRPO recipes)
  rloo    R − mean of the other G − 1 samples      (leave-one-out)
"""
from __future__ import annotations

import torch
from torch import Tensor

from harness.algorithms.names import ADVANTAGE_ESTIMATORS


def compute_advantages(rewards: Tensor, estimator: str, eps: float = 1e-6) -> Tensor:
    """Per-sample advantages [P, G] (floating dtype of rewards, float32 for integer rewards)."""
    if estimator not in ADVANTAGE_ESTIMATORS:
        raise ValueError(f"advantage={estimator!r} is not allowed; choose one of {', '.join(ADVANTAGE_ESTIMATORS)}")
    rewards = torch.as_tensor(rewards)
    if not rewards.is_floating_point():
        rewards = rewards.float()
    if rewards.dim() != 2:
        raise ValueError(f"rewards must have shape [P prompts, G samples]; got {tuple(rewards.shape)}")
    group = rewards.shape[1]
    if group < 2 and estimator != "drgrpo":
        raise ValueError(f"advantage={estimator} needs at least 2 samples per prompt; got G={group}")
    mean = rewards.mean(dim=1, keepdim=True)
    if estimator == "drgrpo":
        return rewards - mean
    if estimator == "grpo":
        return (rewards - mean) / (rewards.std(dim=1, keepdim=True) + eps)
    others = (rewards.sum(dim=1, keepdim=True) - rewards) / (group - 1)
    return rewards - others
