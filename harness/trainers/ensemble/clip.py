"""Gradient clipping per member of stacked parameters."""
from __future__ import annotations

from typing import List, Sequence, Union

import torch


@torch.no_grad()
def clip_per_member(params: Sequence[torch.Tensor], max_norms: Union[Sequence[float], torch.Tensor]) -> torch.Tensor:
    """`torch.nn.utils.clip_grad_norm_` for each member k of parameters [M, ...], at max_norms[k]: the total
    norm is the 2-norm of the per-parameter 2-norms of member k's gradients, and its gradients are scaled by
    min(1, max_norm / (norm + 1e-6)). max_norms: numbers, or a tensor [M] on the parameters' device (made once
    by the caller: a copy from the host each call would wait for the device's queue). Returns the norms before
    clipping, [M] (0 for a member without gradients), on the parameters' device: no host sync."""
    grads: List[torch.Tensor] = [p.grad for p in params if p.grad is not None]
    M = len(max_norms)
    if not grads:
        return torch.zeros(M, device=params[0].device if params else None)
    per_param = torch.stack([torch.linalg.vector_norm(g.reshape(M, -1), 2, dim=1) for g in grads], dim=1)  # [M, n]
    # each member's norms reduced along a contiguous row: a reduction over dim 0 of [n, M] sums in an order
    # that depends on M (a member alone rounds its norm differently than in an ensemble)
    total = torch.linalg.vector_norm(per_param, 2, dim=1)  # [M]
    limits = max_norms if isinstance(max_norms, torch.Tensor) else \
        torch.tensor([float(m) for m in max_norms], dtype=total.dtype, device=total.device)
    coef = (limits / (total + 1e-6)).clamp(max=1.0)  # on the device: nothing waits for the norms
    for g in grads:
        g.mul_(coef.view(M, *([1] * (g.dim() - 1))))
    return total
