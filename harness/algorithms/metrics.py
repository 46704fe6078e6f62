"""The metrics every objective reports each step (docs/algorithms.md, "What every objective reports").

Names are namespaced `objective/...` and identical across objectives. All values are python floats
averaged over real (unmasked) tokens; a statistic over an empty set is 0.0. Sums accumulate in the
inputs' dtype (float32 sums of 1M tokens are good to ~1e-4 relative, plenty for monitoring).

"Masked" means the objective stopped pushing the token in the advantage's direction: its gradient
weight G/(r·A) is <= 0 (clipped or masked tokens have weight 0, regularizers past their stationary
point have weight < 0). Tokens with A = 0 are never masked and are left out of the weight statistics.
The weight excludes the decoupled IS factor, which is reported separately (`is_weight_mean`).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import torch
from torch import Tensor

LOW_PROB = 0.2  # ν below this counts as a low-probability token

SHARED_KEYS = (  # always present; plus mismatch (recomputed_logp given), masked_entropy (logits given)
    "masked_frac", "masked_frac_pos", "masked_frac_neg", "lowprob_frac", "lowprob_masked_frac",
    "lowprob_masked_frac_pos", "lowprob_masked_frac_neg", "masked_nu_mean", "weight_min", "weight_mean",
    "weight_max", "abs_pi_minus_nu", "ratio_mean", "ratio_max", "is_weight_mean",
)


def _entropy(logits: Tensor) -> Tensor:
    """Entropy of softmax(logits) over the last dim, in float32 or wider."""
    logits = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


# Token categories are bit codes, so one bincount gives every count and (with weights) every sum.
_VALID, _MASKED, _POS, _NEG, _LOW = 1, 2, 4, 8, 16
_N_CODES = 32


def _sum_over(table: List[float], *required: int) -> float:
    """Sum of a per-code table over the codes that have every bit in `required`."""
    need = sum(required)
    return sum(v for code, v in enumerate(table) if code & need == need)


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def shared_metrics(batch, weight: Tensor, extra: Optional[Dict[str, Tensor]] = None) -> Dict[str, float]:
    """Compute the shared metric set; `weight` is G/(r·A) per token, `extra` objective-specific scalars.

    Everything is reduced on the tensors' device and copied to the host once.
    """
    with torch.no_grad():
        adv = batch.adv.reshape(-1)
        weight = weight.reshape(-1)
        nu = batch.log_nu.reshape(-1).exp()
        r = batch.ratio_detached().reshape(-1)
        valid = batch.mask.reshape(-1) if batch.mask is not None else None
        pos, neg = adv > 0, adv < 0
        signed = pos | neg if valid is None else (pos | neg) & valid
        masked = (weight <= 0) & signed
        code = masked.to(torch.int64).mul_(_MASKED)
        code.add_(pos, alpha=_POS).add_(neg, alpha=_NEG).add_(nu < LOW_PROB, alpha=_LOW)
        code.add_(valid if valid is not None else torch.ones_like(pos), alpha=_VALID)

        tables = {"n": None, "nu": nu, "weight": torch.where(signed, weight, weight.new_zeros(())), "ratio": r,
                  "shift": (batch.logp.detach().reshape(-1).exp() - nu).abs_()}
        if batch.is_weight is not None:
            tables["is_weight"] = batch.is_weight.reshape(-1)
        if batch.log_old is not None:
            tables["mismatch"] = (batch.log_mu.reshape(-1).exp() - batch.log_old.reshape(-1).exp()).abs_()
        empty = r.new_zeros(())
        r_valid = r if valid is None else torch.where(valid, r, empty)
        scalars = {
            "weight_min": torch.where(signed, weight, weight.new_full((), float("inf"))).min() if r.numel() else empty,
            "weight_max": torch.where(signed, weight, weight.new_full((), -float("inf"))).max() if r.numel() else empty,
            "ratio_max": r_valid.max() if r.numel() else empty,
        }
        reported = {}  # reported as they are
        if batch.logits is not None:
            rows = batch.logits.reshape(-1, batch.logits.shape[-1])[masked]
            reported["masked_entropy"] = _entropy(rows).mean() if rows.shape[0] else empty
        for key, val in (extra or {}).items():
            reported[key] = torch.as_tensor(val, device=r.device)
        scalars.update(reported)
        flat = [torch.bincount(code, weights=v, minlength=_N_CODES).to(torch.float64) for v in tables.values()]
        flat += [v.detach().to(torch.float64).reshape(1) for v in scalars.values()]
        host = torch.cat(flat).cpu().tolist()  # the one device -> host copy

    per_code = {k: host[i * _N_CODES:(i + 1) * _N_CODES] for i, k in enumerate(tables)}
    scalar = dict(zip(scalars, host[len(tables) * _N_CODES:]))
    n = per_code["n"]
    n_valid = _sum_over(n, _VALID)
    n_signed = _sum_over(n, _VALID, _POS) + _sum_over(n, _VALID, _NEG)

    def frac(*bits: int) -> float:
        return _ratio(_sum_over(n, _VALID, _MASKED, *bits), _sum_over(n, _VALID, *bits))

    def mean(key: str, *bits: int) -> float:
        return _ratio(_sum_over(per_code[key], _VALID, *bits), _sum_over(n, _VALID, *bits))

    w = per_code["weight"]
    out = {
        "masked_frac": frac(), "masked_frac_pos": frac(_POS), "masked_frac_neg": frac(_NEG),
        "lowprob_frac": _ratio(_sum_over(n, _VALID, _LOW), n_valid), "lowprob_masked_frac": frac(_LOW),
        "lowprob_masked_frac_pos": frac(_LOW, _POS), "lowprob_masked_frac_neg": frac(_LOW, _NEG),
        "masked_nu_mean": mean("nu", _MASKED),
        "weight_min": scalar["weight_min"] if n_signed else 0.0,
        "weight_mean": _ratio(_sum_over(w, _VALID, _POS) + _sum_over(w, _VALID, _NEG), n_signed),
        "weight_max": scalar["weight_max"] if n_signed else 0.0,
        "abs_pi_minus_nu": mean("shift"), "ratio_mean": mean("ratio"),
        "ratio_max": scalar["ratio_max"] if n_valid else 0.0,
        "is_weight_mean": mean("is_weight") if "is_weight" in per_code else 1.0,
    }
    if "mismatch" in per_code:
        out["mismatch"] = mean("mismatch")
    out.update({k: scalar[k] for k in reported})
    return {f"objective/{k}": float(v) for k, v in out.items()}
