"""Smooth regularizers: SPO, DRPO and the DRPO paper's masked ablations (no hard gradient mask).

With r = π/ν, d = r − 1 and the detached indicator out = 1[|π − ν| > δ]:
  spo:        J = r·A − |A|/(2ε)·d²                G/(r·A) = 1 − sign(A)·d/ε
  drpo:       J = r·A − |A|/(2δ)·ν·d²              G/(r·A) = 1 − sign(A)·(π − ν)/δ
  mask_drpo:  J = r·A − out·|A|/(2δ)·ν·d²          G/(r·A) = 1 − out·sign(A)·(π − ν)/δ
  mask_spo:   J = r·A − out·|A|/(2δ)·d²            G/(r·A) = 1 − out·sign(A)·d/δ
  mask_kl:    J = r·A − out·|A|/(2δ)·(log r)²      G/(r·A) = 1 − out·sign(A)·log r/(δ·r)
DRPO's weight stays in [1 − 1/δ, 1 + 1/δ]; its stationary point is π = ν + sign(A)·δ.
"""
from __future__ import annotations

import torch
from torch import Tensor

from harness.algorithms.base import Objective
from harness.algorithms.inputs import TokenBatch


def _outside(b: TokenBatch, delta: float) -> Tensor:
    """1[|π − ν| > δ] as a float tensor (no gradient)."""
    return ((b.logp.detach().exp() - b.log_nu.exp()).abs() > delta).to(b.log_nu.dtype)


class SPO(Objective):
    """Quadratic penalty on the ratio: a ratio-shaped trust region, unbounded weight as ν → 0."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        r = b.ratio()
        return r * b.adv - (b.adv.abs() / (2.0 * self.params["eps"])) * (r - 1.0).square()

    def _weight(self, b: TokenBatch) -> Tensor:
        return 1.0 - torch.sign(b.adv) * (b.ratio_detached() - 1.0) / self.params["eps"]


class DRPO(Objective):
    """Quadratic penalty scaled by ν: an absolute-shift (Binary-TV) trust region with bounded weight."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        r = b.ratio()
        coef = b.adv.abs() * b.log_nu.exp() / (2.0 * self.params["delta"])
        return r * b.adv - coef * (r - 1.0).square()

    def _weight(self, b: TokenBatch) -> Tensor:
        shift = b.logp.detach().exp() - b.log_nu.exp()
        return 1.0 - torch.sign(b.adv) * shift / self.params["delta"]


class MaskDRPO(Objective):
    """DRPO's penalty only where |π − ν| > δ (pure r·A inside)."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        r, delta = b.ratio(), self.params["delta"]
        coef = _outside(b, delta) * b.adv.abs() * b.log_nu.exp() / (2.0 * delta)
        return r * b.adv - coef * (r - 1.0).square()

    def _weight(self, b: TokenBatch) -> Tensor:
        delta = self.params["delta"]
        shift = b.logp.detach().exp() - b.log_nu.exp()
        return 1.0 - _outside(b, delta) * torch.sign(b.adv) * shift / delta


class MaskSPO(Objective):
    """SPO's ratio penalty (coefficient 1/δ) only where |π − ν| > δ."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        r, delta = b.ratio(), self.params["delta"]
        coef = _outside(b, delta) * b.adv.abs() / (2.0 * delta)
        return r * b.adv - coef * (r - 1.0).square()

    def _weight(self, b: TokenBatch) -> Tensor:
        delta = self.params["delta"]
        return 1.0 - _outside(b, delta) * torch.sign(b.adv) * (b.ratio_detached() - 1.0) / delta


class MaskKL(Objective):
    """(log r)² penalty only where |π − ν| > δ."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        delta = self.params["delta"]
        log_r = b.logp - b.log_nu
        coef = _outside(b, delta) * b.adv.abs() / (2.0 * delta)
        return torch.exp(log_r) * b.adv - coef * log_r.square()

    def _weight(self, b: TokenBatch) -> Tensor:
        delta = self.params["delta"]
        log_r = b.logp.detach() - b.log_nu
        return 1.0 - _outside(b, delta) * torch.sign(b.adv) * log_r * torch.exp(-log_r) / delta
