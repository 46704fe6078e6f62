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

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
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


_CODES_WITH = [[code for code in range(_N_CODES) if code & need == need] for need in range(_N_CODES)]


def _sum_over(table: List[float], *required: int) -> float:
    """Sum of a per-code table over the codes that have every bit in `required`."""
    return sum([table[code] for code in _CODES_WITH[sum(required)]])


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def shared_metrics(batch, weight: Tensor, extra: Optional[Dict[str, Tensor]] = None) -> Dict[str, float]:
    """Compute the shared metric set; `weight` is G/(r·A) per token, `extra` objective-specific scalars.

    Everything is reduced on the tensors' device and copied to the host once.
    """
    rows, keys = metric_rows(batch, weight, extra)
    return metrics_from_row(keys, rows[0].cpu().tolist())  # the one device -> host copy


def metric_rows(batch, weight: Tensor, extra: Optional[Dict[str, Tensor]] = None,
                groups: Optional[int] = None) -> Tuple[Tensor, Tuple[str, ...]]:
    """The shared metrics of each of `groups` runs stacked on the leading dim of the batch (None: one run,
    any shape) as one float64 tensor [groups, F] that stays on the device, and the keys that decode a row
    (`metrics_from_row`). `extra` values: a scalar, or one per run [groups].

    With groups, masked_entropy is reduced from every token's entropy (no boolean indexing, whose size the
    host must learn); one run takes only the masked tokens' rows (its logits may have a large vocabulary)."""
    with torch.no_grad():
        G = groups or 1
        adv = batch.adv.reshape(G, -1)
        weight = weight.expand_as(batch.adv).reshape(G, -1)
        nu = batch.log_nu.reshape(G, -1).exp()
        r = batch.ratio_detached().reshape(G, -1)
        valid = batch.mask.reshape(G, -1) if batch.mask is not None else None
        pos, neg = adv > 0, adv < 0
        signed = pos | neg if valid is None else (pos | neg) & valid
        masked = (weight <= 0) & signed
        code = masked.to(torch.int64).mul_(_MASKED)
        code.add_(pos, alpha=_POS).add_(neg, alpha=_NEG).add_(nu < LOW_PROB, alpha=_LOW)
        code.add_(valid if valid is not None else torch.ones_like(pos), alpha=_VALID)
        code.add_(torch.arange(G, device=code.device).view(G, 1), alpha=_N_CODES)  # run g's codes: g·32 + bits

        tables = {"n": None, "nu": nu, "weight": torch.where(signed, weight, weight.new_zeros(())), "ratio": r,
                  "shift": (batch.logp.detach().reshape(G, -1).exp() - nu).abs_()}
        if batch.is_weight is not None:
            tables["is_weight"] = batch.is_weight.reshape(G, -1)
        if batch.log_old is not None:
            tables["mismatch"] = (batch.log_mu.reshape(G, -1).exp() - batch.log_old.reshape(G, -1).exp()).abs_()
        empty = r.new_zeros(G)
        r_valid = r if valid is None else torch.where(valid, r, r.new_zeros(()))
        some = r.shape[1] > 0
        scalars = {
            "weight_min": torch.where(signed, weight, weight.new_full((), float("inf"))).amin(1) if some else empty,
            "weight_max": torch.where(signed, weight, weight.new_full((), -float("inf"))).amax(1) if some else empty,
            "ratio_max": r_valid.amax(1) if some else empty,
        }
        reported = []  # reported as they are
        if batch.logits is not None and groups is None:
            rows = batch.logits.reshape(-1, batch.logits.shape[-1])[masked.reshape(-1)]
            scalars["masked_entropy"] = (_entropy(rows).mean() if rows.shape[0] else r.new_zeros(())).reshape(1)
            reported.append("masked_entropy")
        elif batch.logits is not None:
            tables["masked_entropy"] = _entropy(batch.logits).reshape(G, -1)
        for key, val in (extra or {}).items():
            val = torch.as_tensor(val, device=r.device)
            scalars[key] = val.expand(G) if val.dim() == 0 else val.reshape(G)
            reported.append(key)
        flat = [torch.bincount(code.reshape(-1), weights=None if v is None else v.reshape(-1),
                               minlength=G * _N_CODES).to(torch.float64).view(G, _N_CODES) for v in tables.values()]
        flat += [v.detach().to(torch.float64).reshape(G, 1) for v in scalars.values()]
    return torch.cat(flat, dim=1), (*tables, "", *scalars)


def metrics_from_row(keys: Sequence[str], host: Sequence[float]) -> Dict[str, float]:
    """The metrics `objective/...` of one run from its row of `metric_rows` on the host."""
    split = keys.index("")
    tables, scalars = keys[:split], keys[split + 1:]
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
    if "masked_entropy" in per_code:
        out["masked_entropy"] = mean("masked_entropy", _MASKED)
    out.update({k: scalar[k] for k in scalars if k not in ("weight_min", "weight_max", "ratio_max")})
    return {f"objective/{k}": float(v) for k, v in out.items()}


def metrics_from_rows(keys: Sequence[str], host) -> List[Dict[str, float]]:
    """`metrics_from_row` of each row of host [G, F] (a numpy float64 array) at once: the same metrics (sums
    over codes as numpy reductions, to float rounding), in a few array ops for any number of runs."""
    host = np.asarray(host, dtype=np.float64)
    split = keys.index("")
    tables, scalars = keys[:split], keys[split + 1:]
    per_code = {k: host[:, i * _N_CODES:(i + 1) * _N_CODES] for i, k in enumerate(tables)}
    scalar = {k: host[:, len(tables) * _N_CODES + j] for j, k in enumerate(scalars)}

    def over(table, *required: int):
        return table[:, _CODES_WITH[sum(required)]].sum(axis=1)

    def ratio(num, den):
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)

    n = per_code["n"]
    n_valid = over(n, _VALID)
    n_signed = over(n, _VALID, _POS) + over(n, _VALID, _NEG)

    def frac(*bits: int):
        return ratio(over(n, _VALID, _MASKED, *bits), over(n, _VALID, *bits))

    def mean(key: str, *bits: int):
        return ratio(over(per_code[key], _VALID, *bits), over(n, _VALID, *bits))

    w = per_code["weight"]
    out = {
        "masked_frac": frac(), "masked_frac_pos": frac(_POS), "masked_frac_neg": frac(_NEG),
        "lowprob_frac": ratio(over(n, _VALID, _LOW), n_valid), "lowprob_masked_frac": frac(_LOW),
        "lowprob_masked_frac_pos": frac(_LOW, _POS), "lowprob_masked_frac_neg": frac(_LOW, _NEG),
        "masked_nu_mean": mean("nu", _MASKED),
        "weight_min": np.where(n_signed != 0, scalar["weight_min"], 0.0),
        "weight_mean": ratio(over(w, _VALID, _POS) + over(w, _VALID, _NEG), n_signed),
        "weight_max": np.where(n_signed != 0, scalar["weight_max"], 0.0),
        "abs_pi_minus_nu": mean("shift"), "ratio_mean": mean("ratio"),
        "ratio_max": np.where(n_valid != 0, scalar["ratio_max"], 0.0),
        "is_weight_mean": mean("is_weight") if "is_weight" in per_code else np.ones(len(host)),
    }
    if "mismatch" in per_code:
        out["mismatch"] = mean("mismatch")
    if "masked_entropy" in per_code:
        out["masked_entropy"] = mean("masked_entropy", _MASKED)
    out.update({k: scalar[k] for k in scalars if k not in ("weight_min", "weight_max", "ratio_max")})
    names = [f"objective/{k}" for k in out]
    columns = np.stack(list(out.values()), axis=1).tolist()
    return [dict(zip(names, row)) for row in columns]
