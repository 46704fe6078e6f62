"""Every member's group advantages at once: one call per advantage estimator over its members' groups."""
from __future__ import annotations

from typing import Dict, List

import torch

from harness.algorithms import compute_advantages
from harness.trainers.ensemble.transfers import constant


def grouped_advantages(members, rewards: torch.Tensor, group: int) -> torch.Tensor:
    """Advantages [M, B] of rewards [M, B] (rows of a prompt's group adjacent) for the members still alive
    (0 for the others). A group's advantages are computed from its own rewards alone, so stacking members'
    groups changes none of them; if a stacked call fails, each member's part runs alone and its failure ends
    that member only (`Member.alone`)."""
    out = torch.zeros_like(rewards)
    estimators: Dict[str, List[int]] = {}
    for member in members:
        if member.alive:
            estimators.setdefault(member.advantage, []).append(member.index)
    for estimator, indices in estimators.items():
        rows = constant(indices, torch.long, rewards.device)
        try:
            out[rows] = compute_advantages(rewards[rows].reshape(-1, group), estimator).view(len(indices), -1)
        except Exception:
            for k in indices:
                with members[k].alone():
                    out[k] = compute_advantages(rewards[k].view(-1, group), estimator).reshape(-1)
    return out
