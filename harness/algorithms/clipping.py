"""PPO ratio clipping: grpo, grpo_cliphigher, minirl, minirl_tis (one class, four defaults).

J = min(r·A, clip(r, lo, hi)·A) with lo = 1 − eps_low, hi = 1 + eps_high, so G = M·r·A with M = 0 iff
(A > 0 and r > hi) or (A < 0 and r < lo). Dual clip (dual_clip_c = c): for A < 0, J = max(J, c·A), which
also zeroes the gradient where r > c. α relaxation (DPPO §6): tokens with ν < relax_alpha lose the
upper side (relax=high: hi = ∞), the lower side (relax=low: lo = 0) or both.

`clip_surrogate` / `clip_keep` are shared with BandPO, whose lo/hi are per-token tensors.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from harness.algorithms.base import Objective
from harness.algorithms.inputs import TokenBatch

Bound = Union[float, Tensor]


def _tensor(x: Bound, like: Tensor) -> Tensor:
    return x if isinstance(x, Tensor) else like.new_tensor(x)


def _clamp(r: Tensor, lo: Bound, hi: Bound) -> Tensor:
    if isinstance(lo, Tensor) != isinstance(hi, Tensor):  # torch.clamp wants two numbers or two tensors
        lo, hi = (_tensor(x, r) for x in (lo, hi))
    return torch.clamp(r, lo, hi)


def clip_surrogate(r: Tensor, adv: Tensor, lo: Bound, hi: Bound, dual_clip_c: Optional[float]) -> Tensor:
    """min(r·A, clip(r, lo, hi)·A), and max(·, c·A) for A < 0 when dual_clip_c is set. r has the grad."""
    J = torch.minimum(r * adv, _clamp(r, lo, hi) * adv)
    if dual_clip_c is not None:
        J = torch.where(adv < 0, torch.maximum(J, dual_clip_c * adv), J)
    return J


def clip_keep(r: Tensor, adv: Tensor, lo: Bound, hi: Bound, dual_clip_c: Optional[float]) -> Tensor:
    """The 0/1 mask M of `clip_surrogate` (1 = gradient kept), as a float tensor; r detached."""
    cut = ((adv > 0) & (r > hi)) | ((adv < 0) & (r < lo))
    if dual_clip_c is not None:
        cut = cut | ((adv < 0) & (r > dual_clip_c))
    return (~cut).to(r.dtype)


class RatioClip(Objective):
    """PPO clipping around ν with optional dual clip and α relaxation of low-probability tokens."""

    def _bounds(self, b: TokenBatch) -> Tuple[Bound, Bound]:
        p = self.params
        lo, hi = 1.0 - p["eps_low"], 1.0 + p["eps_high"]
        alpha = p["relax_alpha"]
        if isinstance(alpha, Tensor):  # a group's α per run: log 0 = −∞ relaxes nothing
            relaxed = b.log_nu < torch.log(alpha)
        elif alpha <= 0.0:
            return lo, hi
        else:
            relaxed = b.log_nu < math.log(alpha)
        if p["relax"] in ("both", "low"):
            lo = torch.where(relaxed, b.log_nu.new_zeros(()), _tensor(lo, b.log_nu))
        if p["relax"] in ("both", "high"):
            hi = torch.where(relaxed, b.log_nu.new_tensor(math.inf), _tensor(hi, b.log_nu))
        return lo, hi

    def _surrogate(self, b: TokenBatch) -> Tensor:
        lo, hi = self._bounds(b)
        return clip_surrogate(b.ratio(), b.adv, lo, hi, self.params["dual_clip_c"])

    def _weight(self, b: TokenBatch) -> Tensor:
        lo, hi = self._bounds(b)
        return clip_keep(b.ratio_detached(), b.adv, lo, hi, self.params["dual_clip_c"])
