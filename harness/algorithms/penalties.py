"""Divergence penalties with weight w (DRPO paper Appendix D.1-D.2): kl_reg, k3_reg, tv_reg.

w = |A| when adv_weighted (default), else w = 1 (kl_reg with w = 1 is the "PPO-KL" baseline). With
r = π/ν and c = w/(2δ):
  kl_reg:  J = r·A + c·log r             G = r·A + c               G/(r·A) = 1 + c/(r·A)
  k3_reg:  J = r·A − c·(r − 1 − log r)   G = r·A − c·(r − 1)       G/(r·A) = 1 − c·(r − 1)/(r·A)
  tv_reg:  J = r·A − c·|r − 1|           G = r·A − c·sign(r−1)·r   G/(r·A) = 1 − c·sign(r − 1)/A
The weight is undefined where A = 0 (metrics skip those tokens).
"""
from __future__ import annotations

import torch
from torch import Tensor

from harness.algorithms.base import Objective
from harness.algorithms.inputs import TokenBatch


class _Penalty(Objective):
    def _coef(self, b: TokenBatch) -> Tensor:
        """c = w/(2δ) per token (detached)."""
        scale = 1.0 / (2.0 * self.params["delta"])
        return b.adv.abs() * scale if self.params["adv_weighted"] else torch.ones_like(b.adv) * scale


class KLReg(_Penalty):
    """K1 estimate of KL(ν‖π): −log r, penalised with weight c."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        log_r = b.logp - b.log_nu
        return torch.exp(log_r) * b.adv + self._coef(b) * log_r

    def _weight(self, b: TokenBatch) -> Tensor:
        return 1.0 + self._coef(b) / (b.ratio_detached() * b.adv)


class K3Reg(_Penalty):
    """K3 estimate r − 1 − log r of KL(ν‖π)."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        log_r = b.logp - b.log_nu
        r = torch.exp(log_r)
        return r * b.adv - self._coef(b) * (r - 1.0 - log_r)

    def _weight(self, b: TokenBatch) -> Tensor:
        r = b.ratio_detached()
        return 1.0 - self._coef(b) * (r - 1.0) / (r * b.adv)


class TVReg(_Penalty):
    """Sampled TV |r − 1|: a two-level gradient weight."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        r = b.ratio()
        return r * b.adv - self._coef(b) * (r - 1.0).abs()

    def _weight(self, b: TokenBatch) -> Tensor:
        return 1.0 - self._coef(b) * torch.sign(b.ratio_detached() - 1.0) / b.adv
