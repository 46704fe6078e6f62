"""The Objective base class: input checks, the anchor rule, masking and the shared metrics.

A family module subclasses `Objective` and implements two methods on a `TokenBatch` (inputs.py):
  _surrogate(b) -> J   per-token objective to maximise, whose autograd gradient w.r.t. log π is G;
  _weight(b)    -> G/(r·A) per token, without gradient (for metrics and geometry plots).
Optionally `_extra_metrics(b)` returns objective-specific scalars (names without the namespace).
The base class then applies the decoupled IS weight (anchor=recompute) and zeroes masked tokens.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import torch
from torch import Tensor

from harness.algorithms.inputs import TokenBatch, prepare_batch
from harness.algorithms.metrics import metric_rows, shared_metrics


class Objective:
    """One trust-region objective with validated `params` (see `build_objective`)."""

    def __init__(self, name: str, params: Mapping[str, Any]):
        self.name = name
        self.params: Dict[str, Any] = dict(params)
        self.anchor: str = self.params["anchor"]

    needs_topk: bool = False  # True when compute() needs rollout_topk_logp, rollout_topk_ids and logits

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.name!r}, {args})"

    # --- to implement -------------------------------------------------------------------------------
    def _surrogate(self, b: TokenBatch) -> Tensor:
        raise NotImplementedError

    def _weight(self, b: TokenBatch) -> Tensor:
        raise NotImplementedError

    def _extra_metrics(self, b: TokenBatch) -> Dict[str, Tensor]:
        return {}

    # --- public -------------------------------------------------------------------------------------
    def compute(
        self,
        logp: Tensor,
        rollout_logp: Tensor,
        advantages: Tensor,
        response_mask: Optional[Tensor] = None,
        recomputed_logp: Optional[Tensor] = None,
        rollout_topk_logp: Optional[Tensor] = None,
        rollout_topk_ids: Optional[Tensor] = None,
        logits: Optional[Tensor] = None,
        token_ids: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Dict[str, float]]:
        """Per-token objective J [B, T] (to maximise; masked tokens exactly 0) and the step's metrics.

        logp [B, T] (with grad), rollout_logp [B, T], advantages [B, T] or [B], response_mask [B, T]
        (1/True = real token), recomputed_logp [B, T] (needed by anchor=recompute), rollout_topk_logp /
        rollout_topk_ids [B, T, K] and logits [B, T, V] (Top-K divergences; logits also give the entropy
        metric), token_ids [B, T] (optional: sampled ids, to find the sampled token in the top-K exactly).
        """
        b = self._batch(logp, rollout_logp, advantages, response_mask, recomputed_logp, rollout_topk_logp,
                        rollout_topk_ids, logits, token_ids)
        J = self._finish(b, self._surrogate(b))
        with torch.no_grad():
            metrics = shared_metrics(b, self._weight(b), self._extra_metrics(b))
        return J, metrics

    def compute_rows(self, *args: Any, groups: int, **kwargs: Any) -> Tuple[Tensor, Tensor, Tuple[str, ...]]:
        """`compute` for `groups` runs stacked on the leading dim (inputs [G, B, T]; an `ObjectiveGroup` or
        one objective): J [G, B, T], and the metrics as a device tensor [G, F] with the keys that decode a
        row (`metrics.metrics_from_row`): nothing is copied to the host."""
        b = self._batch(*args, **kwargs)
        b.groups = groups
        J = self._finish(b, self._surrogate(b))
        with torch.no_grad():
            rows, keys = metric_rows(b, self._weight(b), self._extra_metrics(b), groups)
        return J, rows, keys

    def token_objective(self, *args: Any, **kwargs: Any) -> Tensor:
        """Same arguments as `compute`; returns J only (no metrics)."""
        b = self._batch(*args, **kwargs)
        return self._finish(b, self._surrogate(b))

    def gradient_weight(self, *args: Any, **kwargs: Any) -> Tensor:
        """G/(r·A) per token from the objective's own formula (no IS weight, no masking); no gradient."""
        b = self._batch(*args, **kwargs)
        with torch.no_grad():
            return self._weight(b)

    # --- helpers ------------------------------------------------------------------------------------
    def _check_inputs(self, b: TokenBatch) -> None:
        """Hook for objective-specific input requirements (e.g. Top-K tensors)."""

    def _batch(self, logp, rollout_logp, advantages, response_mask=None, recomputed_logp=None,
               rollout_topk_logp=None, rollout_topk_ids=None, logits=None, token_ids=None) -> TokenBatch:
        b = prepare_batch(self.anchor, self.params.get("is_cap"), logp, rollout_logp, advantages,
                          response_mask, recomputed_logp, rollout_topk_logp, rollout_topk_ids, logits, token_ids)
        self._check_inputs(b)
        return b

    @staticmethod
    def _finish(b: TokenBatch, J: Tensor) -> Tensor:
        if b.is_weight is not None:
            J = J * b.is_weight
        if b.mask is not None:
            J = torch.where(b.mask, J, J.new_zeros(()))
        return J
