"""BandPO: PPO clipping with probability-aware bounds lo(ν), hi(ν) (BandPO paper §5.6).

J = min(r·A, clip(r, lo(ν), hi(ν))·A) (+ dual clip for A < 0), so G = M·r·A with M = 0 iff
(A > 0 and r > hi) or (A < 0 and r < lo). Bounds come from `bandpo_bounds.band_bounds`.
relax=true is the paper's "Relaxed-Band" ablation (§6.3): lo = min(lo, 1 − eps_low),
hi = max(hi, 1 + eps_high). The paper anchors the band on the recomputed old policy (anchor=recompute).
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch
from torch import Tensor

from harness.algorithms.bandpo_bounds import band_bounds
from harness.algorithms.base import Objective
from harness.algorithms.clipping import clip_keep, clip_surrogate
from harness.algorithms.inputs import TokenBatch


class BandPO(Objective):
    """Band-constrained clipping."""

    def bounds(self, b: TokenBatch) -> Tuple[Tensor, Tensor]:
        """(lo, hi) per token, cached on the batch."""
        if "bounds" not in b.stash:
            p = self.params
            if isinstance(p["delta"], Tensor) or isinstance(p["hi_max"], Tensor):  # a group: each run's own δ table
                per_run = [band_bounds(p["band"], log_nu, q["delta"], q["hi_max"])
                           for log_nu, q in zip(b.log_nu, self.run_params)]
                lo, hi = (torch.stack(bounds) for bounds in zip(*per_run))
            else:
                lo, hi = band_bounds(p["band"], b.log_nu, p["delta"], p["hi_max"])
            if p["relax"]:
                lo = torch.clamp(lo, max=1.0 - p["eps_low"])
                hi = torch.clamp(hi, min=1.0 + p["eps_high"])
            b.stash["bounds"] = (lo, hi)
        return b.stash["bounds"]

    def _surrogate(self, b: TokenBatch) -> Tensor:
        lo, hi = self.bounds(b)
        return clip_surrogate(b.ratio(), b.adv, lo, hi, self.params["dual_clip_c"])

    def _weight(self, b: TokenBatch) -> Tensor:
        lo, hi = self.bounds(b)
        return clip_keep(b.ratio_detached(), b.adv, lo, hi, self.params["dual_clip_c"])

    def _extra_metrics(self, b: TokenBatch) -> Dict[str, Tensor]:
        lo, hi = (b.per_run(x) for x in self.bounds(b))
        valid = b.per_run(b.mask if b.mask is not None else torch.ones_like(b.log_nu, dtype=torch.bool))
        n = valid.sum(1).clamp(min=1)
        zero = lo.new_zeros(())
        return {"bandpo_lo_mean": torch.where(valid, lo, zero).sum(1) / n,
                "bandpo_hi_mean": torch.where(valid, hi, zero).sum(1) / n}
