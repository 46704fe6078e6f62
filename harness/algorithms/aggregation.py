"""Reduce the per-token objective J [B, T] to the scalar the trainer maximises (it minimises −value).

  token-mean               Σ_tokens J / #tokens over the whole batch
  seq-mean-token-mean      mean over sequences of (Σ_t J / #tokens of that sequence)
  seq-mean-token-sum       mean over sequences of Σ_t J                    (DPPO recipe)
  seq-mean-token-sum-norm  mean over sequences of Σ_t J / norm_len          (DRPO / Dr. GRPO recipe;
                           norm_len = the maximum response length, a constant)
Sequence means run over sequences with at least one real token; an all-padding batch gives 0.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from harness.algorithms.names import LOSS_AGG_MODES


def aggregate(J: Tensor, response_mask: Optional[Tensor], mode: str, norm_len: Optional[float] = None) -> Tensor:
    """Scalar objective from J [B, T] and response_mask [B, T] (1 = real token; None = all real)."""
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg={mode!r} is not allowed; choose one of {', '.join(LOSS_AGG_MODES)}")
    mask = torch.ones_like(J) if response_mask is None else response_mask.to(J.dtype)
    if mask.shape != J.shape:
        raise ValueError(f"shape mismatch: response_mask has shape {tuple(mask.shape)} but J has shape "
                         f"{tuple(J.shape)}")
    rows = J.reshape(1, -1, J.shape[-1]) if J.dim() else J.reshape(1, 1, 1)
    return aggregate_rows(rows, mask.reshape(rows.shape), mode, norm_len)[0]


def aggregate_rows(J: Tensor, response_mask: Tensor, mode: str, norm_len: Optional[float] = None) -> Tensor:
    """`aggregate` of each run stacked on the leading dim: J, response_mask [G, B, T] -> [G]."""
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg={mode!r} is not allowed; choose one of {', '.join(LOSS_AGG_MODES)}")
    mask = response_mask.to(J.dtype)
    Jm = torch.where(mask > 0, J, J.new_zeros(()))
    if mode == "token-mean":
        return Jm.sum((-2, -1)) / mask.sum((-2, -1)).clamp(min=1)
    lengths = mask.sum(-1)
    per_seq = Jm.sum(-1)
    if mode == "seq-mean-token-mean":
        per_seq = per_seq / lengths.clamp(min=1)
    elif mode == "seq-mean-token-sum-norm":
        if norm_len is None or not norm_len > 0:
            raise ValueError(f"loss_agg={mode} needs norm_len > 0 (the maximum response length); got {norm_len!r}")
        per_seq = per_seq / norm_len
    real = (lengths > 0).to(J.dtype)
    return (per_seq * real).sum(-1) / real.sum(-1).clamp(min=1)
