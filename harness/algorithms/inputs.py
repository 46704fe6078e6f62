"""Input checking and the anchor rule: raw trainer tensors -> one `TokenBatch` every objective reads.

Shapes (B sequences × T tokens; any leading shape works the same way):
  logp, rollout_logp, recomputed_logp, response_mask, token_ids: [B, T]
  advantages: [B, T] or [B] (broadcast over tokens)
  rollout_topk_logp, rollout_topk_ids: [B, T, K];  logits: [B, T, V]
All log-probabilities are natural logs of the sampled token's probability.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import torch
from torch import Tensor


@dataclass
class TokenBatch:
    """Checked per-token inputs in the dtype of `logp`.

    logp has the gradient; everything else is detached. At masked positions (mask False) every tensor
    is replaced by a harmless finite value (log-prob 0, advantage 0) so no NaN/inf reaches autograd.
    """

    logp: Tensor                     # log π, with grad
    log_nu: Tensor                   # log ν, the anchor (μ for anchor=rollout, π' for recompute)
    log_mu: Tensor                   # log μ, rollout engine
    adv: Tensor                      # A, broadcast to logp's shape
    mask: Optional[Tensor] = None    # bool, True = real token; None = all real
    log_old: Optional[Tensor] = None  # log π' (recomputed), if given
    is_weight: Optional[Tensor] = None  # sg(min(π'/μ, C_is)) under anchor=recompute
    topk_logp: Optional[Tensor] = None
    topk_ids: Optional[Tensor] = None
    logits: Optional[Tensor] = None
    token_ids: Optional[Tensor] = None
    stash: Dict[str, Any] = field(default_factory=dict)  # per-call cache (bounds, masks) for metrics
    groups: Optional[int] = None     # runs stacked on the leading dim (ObjectiveGroup); None: one run

    def per_run(self, x: Tensor) -> Tensor:
        """x [G, ...] -> [G, n]: each run's values in a row (one row for one run)."""
        return x.reshape(self.groups or 1, -1)

    def ratio(self) -> Tensor:
        """r = π/ν computed in log space (differentiable)."""
        return torch.exp(self.logp - self.log_nu)

    def ratio_detached(self) -> Tensor:
        if "ratio" not in self.stash:
            self.stash["ratio"] = torch.exp(self.logp.detach() - self.log_nu)
        return self.stash["ratio"]


def _shape(t: Tensor) -> tuple:
    return tuple(t.shape)


def _need_same(name: str, t: Tensor, ref: Tensor, extra: str = "") -> None:
    if _shape(t) != _shape(ref):
        raise ValueError(f"shape mismatch: {name} has shape {_shape(t)} but logp has shape {_shape(ref)}{extra}")


def _need_trailing(name: str, t: Tensor, ref: Tensor, what: str) -> None:
    if t.dim() != ref.dim() + 1 or _shape(t)[:-1] != _shape(ref):
        raise ValueError(f"shape mismatch: {name} has shape {_shape(t)}; expected {_shape(ref)} + ({what},) "
                         f"to match logp {_shape(ref)}")


def _as_tensor(x: Any, like: Tensor, dtype=None) -> Tensor:
    t = x if isinstance(x, Tensor) else torch.as_tensor(x, device=like.device)
    return t.detach().to(dtype=dtype or like.dtype, device=like.device)


def prepare_batch(
    anchor: str,
    is_cap: Optional[float],
    logp: Tensor,
    rollout_logp: Tensor,
    advantages: Tensor,
    response_mask: Optional[Tensor] = None,
    recomputed_logp: Optional[Tensor] = None,
    rollout_topk_logp: Optional[Tensor] = None,
    rollout_topk_ids: Optional[Tensor] = None,
    logits: Optional[Tensor] = None,
    token_ids: Optional[Tensor] = None,
) -> TokenBatch:
    """Check shapes, pick the anchor ν and the decoupled IS weight; ValueError names the bad tensor."""
    if not isinstance(logp, Tensor) or not logp.is_floating_point() or logp.dim() < 1:
        raise ValueError(f"logp must be a floating-point tensor [B, T]; got {type(logp).__name__} "
                         f"{getattr(logp, 'shape', '')}")
    rollout_logp = _as_tensor(rollout_logp, logp)
    _need_same("rollout_logp", rollout_logp, logp)
    adv = _as_tensor(advantages, logp)
    if _shape(adv) == _shape(logp)[:-1]:
        adv = adv.unsqueeze(-1).expand_as(logp)
    elif _shape(adv) != _shape(logp):
        raise ValueError(f"shape mismatch: advantages has shape {_shape(adv)}; expected {_shape(logp)} "
                         f"(per token) or {_shape(logp)[:-1]} (per sequence) to match logp")
    mask = None
    if response_mask is not None:
        mask = _as_tensor(response_mask, logp, dtype=torch.bool)
        _need_same("response_mask", mask, logp)
    log_old = None
    if recomputed_logp is not None:
        log_old = _as_tensor(recomputed_logp, logp)
        _need_same("recomputed_logp", log_old, logp)
    if anchor == "recompute" and log_old is None:
        raise ValueError("anchor=recompute needs recomputed_logp (the trainer's log-probs of the sampled "
                         "tokens before this update); pass it or use anchor=rollout")
    if rollout_topk_logp is not None:
        rollout_topk_logp = _as_tensor(rollout_topk_logp, logp)
        _need_trailing("rollout_topk_logp", rollout_topk_logp, logp, "K")
    if rollout_topk_ids is not None:
        rollout_topk_ids = _as_tensor(rollout_topk_ids, logp, dtype=torch.long)
        _need_trailing("rollout_topk_ids", rollout_topk_ids, logp, "K")
    both = rollout_topk_logp is not None and rollout_topk_ids is not None
    if both and _shape(rollout_topk_ids) != _shape(rollout_topk_logp):
        raise ValueError(f"shape mismatch: rollout_topk_ids has shape {_shape(rollout_topk_ids)} but "
                         f"rollout_topk_logp has shape {_shape(rollout_topk_logp)}")
    if logits is not None:
        logits = logits.detach()
        _need_trailing("logits", logits, logp, "V")
    if token_ids is not None:
        token_ids = _as_tensor(token_ids, logp, dtype=torch.long)
        _need_same("token_ids", token_ids, logp)

    if mask is not None:  # neutral finite values at padding: masked tokens get exactly zero gradient
        zero = logp.new_zeros(())
        logp = torch.where(mask, logp, zero)
        rollout_logp = torch.where(mask, rollout_logp, zero)
        adv = torch.where(mask, adv, zero)
        if log_old is not None:
            log_old = torch.where(mask, log_old, zero)
    is_weight = None
    log_nu = rollout_logp
    if anchor == "recompute":
        log_nu = log_old
        log_w = log_old - rollout_logp
        if is_cap is not None:
            log_w = torch.clamp(log_w, max=torch.log(is_cap) if isinstance(is_cap, Tensor) else math.log(is_cap))
        is_weight = torch.exp(log_w)
    return TokenBatch(logp=logp, log_nu=log_nu, log_mu=rollout_logp, adv=adv, mask=mask, log_old=log_old,
                      is_weight=is_weight, topk_logp=rollout_topk_logp, topk_ids=rollout_topk_ids,
                      logits=logits, token_ids=token_ids)
