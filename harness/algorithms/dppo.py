"""DPPO: mask tokens that leave a divergence trust region around the anchor (DPPO paper §4.3-4.4).

J = M·r·A (M detached), so G = M·r·A with M = 0 iff the token is diverging, sign(A)·(π − ν) > 0, and
D > δ, where D is binary_tv, binary_kl, topk_tv or topk_kl (divergences.py); δ = delta_high for
A > 0 and delta_low for A < 0 (both default to delta). Masked tokens contribute value 0.
"""
from __future__ import annotations

from typing import Dict, Union

import torch
from torch import Tensor

from harness.algorithms import divergences as dv
from harness.algorithms.base import Objective
from harness.algorithms.inputs import TokenBatch


def _same(a: Union[float, Tensor], b: Union[float, Tensor]) -> bool:
    return not isinstance(a, Tensor) and not isinstance(b, Tensor) and a == b


def _as_tensor(x: Union[float, Tensor], like: Tensor) -> Tensor:
    return x if isinstance(x, Tensor) else like.new_tensor(x)


class DPPO(Objective):
    """Divergence-masked policy gradient."""

    def __init__(self, name, params):
        super().__init__(name, params)
        self.divergence: str = self.params["divergence"]
        self.needs_topk = self.divergence.startswith("topk")
        delta = self.params["delta"]
        self.delta_low = self.params["delta_low"] if self.params["delta_low"] is not None else delta
        self.delta_high = self.params["delta_high"] if self.params["delta_high"] is not None else delta

    def _check_inputs(self, b: TokenBatch) -> None:
        if not self.needs_topk:
            return
        given = {"rollout_topk_logp": b.topk_logp, "rollout_topk_ids": b.topk_ids, "logits": b.logits}
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise ValueError(f"dppo divergence={self.divergence} needs rollout_topk_logp [B, T, K], "
                             f"rollout_topk_ids [B, T, K] and logits [B, T, V]; missing: {', '.join(missing)}")

    def divergence_of(self, b: TokenBatch) -> Tensor:
        """D per token, no gradient."""
        if "divergence" in b.stash:
            return b.stash["divergence"]
        with torch.no_grad():
            log_pi = b.logp.detach()
            if self.divergence == "binary_tv":
                d = dv.binary_tv(log_pi, b.log_nu)
            elif self.divergence == "binary_kl":
                d = dv.binary_kl(log_pi, b.log_nu)
            else:
                part = dv.topk_partition(log_pi, b.log_nu, b.log_mu, b.topk_logp, b.topk_ids, b.logits,
                                         self.params["topk"], b.token_ids)
                d = (dv.topk_tv if self.divergence == "topk_tv" else dv.topk_kl)(part)
        b.stash["divergence"] = d
        return d

    def _keep(self, b: TokenBatch) -> Tensor:
        if "keep" in b.stash:
            return b.stash["keep"]
        with torch.no_grad():
            log_pi, adv = b.logp.detach(), b.adv
            diverging = ((adv > 0) & (log_pi > b.log_nu)) | ((adv < 0) & (log_pi < b.log_nu))
            delta: Union[float, Tensor] = self.delta_high
            if self.delta_low is not self.delta_high and not _same(self.delta_low, self.delta_high):
                delta = torch.where(adv > 0, _as_tensor(self.delta_high, adv), _as_tensor(self.delta_low, adv))
            keep = (~(diverging & (self.divergence_of(b) > delta))).to(log_pi.dtype)
        b.stash["keep"] = keep
        return keep

    def _surrogate(self, b: TokenBatch) -> Tensor:
        return b.ratio() * b.adv * self._keep(b)

    def _weight(self, b: TokenBatch) -> Tensor:
        return self._keep(b)

    def _extra_metrics(self, b: TokenBatch) -> Dict[str, Tensor]:
        d = self.divergence_of(b)
        valid = b.per_run(b.mask if b.mask is not None else torch.ones_like(d, dtype=torch.bool))
        kind = "topk" if self.needs_topk else "binary"
        d = torch.where(valid, b.per_run(d), d.new_zeros(()))
        mean = d.sum(1) / valid.sum(1).clamp(min=1)
        top = d.amax(1) if d.shape[1] else d.new_zeros(d.shape[0])
        return {f"{kind}_div_mean": mean, f"{kind}_div_max": top}
