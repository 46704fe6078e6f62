"""Trust-region geometry: the gradient weight G/(r·A) over a grid of (ν, π), by autograd.

Used by the reports' geometry plots: PPO gives 0/1 bands in the ratio, DPPO in |π − ν|, DRPO a bounded
smooth weight, SPO a weight unbounded as ν → 0. The weight is differentiated through the library's own
`token_objective` (anchor=rollout), not re-derived. Top-K divergences are evaluated as their binary
counterparts (a grid point has no full distribution): topk_tv -> binary_tv, topk_kl -> binary_kl.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from harness.algorithms.build import build_objective


def gradient_weight_grid(name: str, nu: Tensor, pi: Tensor, adv_sign: float, **params: Any) -> Tensor:
    """G/(r·A) at every (ν_i, π_j): [len(nu), len(pi)] float64.

    nu, pi: 1-D probabilities in (0, 1]; adv_sign: the advantage A used (±1 usually; any non-zero value,
    which matters for kl_reg/k3_reg/tv_reg with adv_weighted=false); params as for `build_objective`.
    """
    if params.get("anchor", "rollout") != "rollout":
        raise ValueError(f"algo.anchor={params['anchor']!r} is not allowed here: the geometry grid uses anchor=rollout")
    if not adv_sign:
        raise ValueError(f"adv_sign={adv_sign!r} is not allowed: the weight G/(r·A) needs A != 0")
    if name == "dppo" and str(params.get("divergence", "")).startswith("topk"):
        params = {**params, "divergence": "binary_" + params["divergence"][len("topk_"):]}
    obj = build_objective(name, **{**params, "anchor": "rollout"})
    nu = torch.as_tensor(nu, dtype=torch.float64).reshape(-1)
    pi = torch.as_tensor(pi, dtype=torch.float64).reshape(-1)
    if ((nu <= 0) | (nu > 1)).any() or ((pi <= 0) | (pi > 1)).any():
        raise ValueError("nu and pi must be probabilities in (0, 1]")
    grid_nu, grid_pi = torch.meshgrid(nu, pi, indexing="ij")
    logp = grid_pi.log().requires_grad_(True)
    log_nu = grid_nu.log()
    adv = torch.full_like(grid_nu, float(adv_sign))
    J = obj.token_objective(logp, log_nu, adv)
    (grad,) = torch.autograd.grad(J.sum(), logp)
    ratio = torch.exp(logp.detach() - log_nu)  # the objective's own r, so kept tokens give exactly 1
    return grad / (ratio * adv)
