"""Unconstrained baselines: importance-sampled policy gradient and its truncated variant.

pg_is:  J = r·A,                     G = r·A
cispo:  J = sg(min(r, C))·A·log π,   G = min(r, C)·A     (PG-TIS / CISPO, C = trunc_c)
"""
from __future__ import annotations

import math
from typing import Union

import torch
from torch import Tensor

from harness.algorithms.base import Objective
from harness.algorithms.inputs import TokenBatch


class PGIS(Objective):
    """Importance-sampled policy gradient, no trust region."""

    def _surrogate(self, b: TokenBatch) -> Tensor:
        return b.ratio() * b.adv

    def _weight(self, b: TokenBatch) -> Tensor:
        return torch.ones_like(b.adv)


class CISPO(Objective):
    """Truncated importance weight on the log-likelihood: the weight is clipped, the gradient never."""

    def _log_c(self) -> Union[float, Tensor]:
        c = self.params["trunc_c"]
        return torch.log(c) if isinstance(c, Tensor) else math.log(c)

    def _truncated(self, b: TokenBatch) -> Tensor:
        return torch.exp(torch.clamp(b.logp.detach() - b.log_nu, max=self._log_c()))

    def _surrogate(self, b: TokenBatch) -> Tensor:
        return self._truncated(b) * b.adv * b.logp

    def _weight(self, b: TokenBatch) -> Tensor:
        # min(r, C)/r in log space: exp(min(0, log C - log r))
        log_r = b.logp.detach() - b.log_nu
        return torch.exp(torch.clamp(self._log_c() - log_r, max=0.0))
