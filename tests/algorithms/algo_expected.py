"""Expected values written independently of harness.algorithms, straight from ALGORITHMS.md.

G = ∂J/∂log π per objective (anchor ν; the caller multiplies by the IS weight), BandPO bounds by a
scalar root finder, Top-K divergences by a plain per-position loop.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.optimize import brentq


def _sign(x):
    return torch.sign(x)


def clip_keep(r, A, nu, p):
    lo = torch.full_like(r, 1 - p.get("eps_low", 0.2))
    hi = torch.full_like(r, 1 + p.get("eps_high", 0.2))
    alpha = p.get("relax_alpha", 0.0)
    if alpha > 0:
        relaxed = nu < alpha
        if p.get("relax", "both") in ("both", "high"):
            hi[relaxed] = math.inf
        if p.get("relax", "both") in ("both", "low"):
            lo[relaxed] = -math.inf
    cut = ((A > 0) & (r > hi)) | ((A < 0) & (r < lo))
    c = p.get("dual_clip_c")
    if c is not None:
        cut |= (A < 0) & (r > c)
    return (~cut).double()


def binary_divergence(kind, pi, nu):
    if kind == "binary_tv":
        return (pi - nu).abs()
    one_nu = (1 - nu).clamp(min=1e-8)
    one_pi = (1 - pi).clamp(min=1e-8)
    return nu * torch.log(nu / pi) + one_nu * torch.log(one_nu / one_pi)


def dppo_keep(pi, nu, A, p, D):
    delta = p.get("delta") or (0.05 if p.get("divergence", "binary_tv").endswith("kl") else 0.15)
    d_hi = p.get("delta_high") or delta
    d_lo = p.get("delta_low") or delta
    thr = torch.where(A > 0, torch.full_like(A, d_hi), torch.full_like(A, d_lo))
    diverging = _sign(A) * (pi - nu) > 0
    return (~(diverging & (D > thr))).double()


# ---- BandPO bounds, one token at a time ------------------------------------------------------------
def g_kl(p, r):
    """Bernoulli KL(p || r p)."""
    c = (1 - r * p) / (1 - p)
    return -p * math.log(r) - (1 - p) * math.log(c)


def band_bounds_scalar(band, p, delta, hi_max=10.0):
    if p > 1 - 1e-6:
        return {"kl": math.exp(-delta), "tv": 1 - delta, "chi2": 1.0}[band], 1.0
    if band == "tv":
        lo, hi = 1 - delta / p, 1 + delta / p
    elif band == "chi2":
        w = math.sqrt(delta * (1 - p) / p)
        lo, hi = 1 - w, 1 + w
    else:
        f = lambda r: g_kl(p, r) - delta  # noqa: E731
        top = 1 / p
        hi = top if f(top * (1 - 1e-15)) <= 0 else brentq(f, 1.0, top * (1 - 1e-15), xtol=1e-15, rtol=1e-14)
        # lo in log space: g >= p(-1 - log r), so the root lies in [-(delta/p + 2), 0]
        f_log = lambda s: -p * s - (1 - p) * math.log((1 - math.exp(s) * p) / (1 - p)) - delta  # noqa: E731
        lo = math.exp(brentq(f_log, -(delta / p + 2), 0.0, xtol=1e-13, rtol=1e-14))
    lo = min(max(lo, 0.0), 1.0)
    hi = min(max(hi, 1.0), min(1 / p, hi_max))
    return lo, hi


def band_bounds(band, nu, p):
    flat = [band_bounds_scalar(band, float(x), p.get("delta", 0.05), p.get("hi_max", 10.0))
            for x in nu.reshape(-1).tolist()]
    lo = torch.tensor([a for a, _ in flat], dtype=torch.float64).reshape(nu.shape)
    hi = torch.tensor([b for _, b in flat], dtype=torch.float64).reshape(nu.shape)
    if p.get("relax"):
        lo = lo.clamp(max=1 - p.get("eps_low", 0.2))
        hi = hi.clamp(min=1 + p.get("eps_high", 0.28))
    return lo, hi


# ---- Top-K divergence, one position at a time -------------------------------------------------------
def topk_divergence_loop(kind, nu_full, pi_full, y, nu_y, pi_y, k):
    """nu_full, pi_full: [N, V] numpy; y: [N] sampled ids; nu_y/pi_y: sampled-token probabilities."""
    out = []
    for i in range(nu_full.shape[0]):
        order = list(np.argsort(-nu_full[i], kind="stable")[:k])
        if y[i] not in order:
            order[-1] = y[i]
        nus = [nu_y[i] if a == y[i] else nu_full[i, a] for a in order]
        pis = [pi_y[i] if a == y[i] else pi_full[i, a] for a in order]
        rest_nu = max(1 - sum(nus), 1e-12)
        rest_pi = max(1 - sum(pis), 1e-12)
        if kind == "topk_tv":
            out.append(0.5 * (sum(abs(a - b) for a, b in zip(nus, pis)) + abs(rest_nu - rest_pi)))
        else:
            out.append(sum(a * math.log(a / b) for a, b in zip(nus, pis)) + rest_nu * math.log(rest_nu / rest_pi))
    return torch.tensor(out, dtype=torch.float64)


# ---- G per objective ---------------------------------------------------------------------------------
def expected_G(name, p, pi, nu, A, D=None):
    """∂J/∂log π for anchor ν (no IS weight). D: the DPPO divergence per token when needed."""
    r = pi / nu
    rA = r * A
    if name == "pg_is":
        return rA
    if name == "cispo":
        return torch.clamp(r, max=p.get("trunc_c", 3.0)) * A
    if name in ("grpo", "grpo_cliphigher", "minirl", "minirl_tis"):
        return clip_keep(r, A, nu, p) * rA
    if name == "dppo":
        return dppo_keep(pi, nu, A, p, D) * rA
    if name == "spo":
        return (1 - _sign(A * (r - 1)) * (r - 1).abs() / p.get("eps", 12.5)) * rA
    delta = p.get("delta", 12.5 if name != "bandpo" else 0.05)
    outside = ((pi - nu).abs() > delta).double()
    if name == "drpo":
        return (1 - _sign(A * (r - 1)) * (pi - nu).abs() / delta) * rA
    if name == "mask_drpo":
        return torch.where(outside > 0, (1 - _sign(A * (r - 1)) * (pi - nu).abs() / delta) * rA, rA)
    if name == "mask_spo":
        return rA - outside * A.abs() * (r - 1) * r / delta
    if name == "mask_kl":
        return rA - outside * A.abs() * torch.log(r) / delta
    w = A.abs() if p.get("adv_weighted", True) else torch.ones_like(A)
    if name == "kl_reg":
        return rA + w / (2 * delta)
    if name == "k3_reg":
        return rA - w / (2 * delta) * (r - 1)
    if name == "tv_reg":
        return rA - w / (2 * delta) * _sign(r - 1) * r
    if name == "bandpo":
        lo, hi = band_bounds(p.get("band", "kl"), nu, p)
        cut = ((A > 0) & (r > hi)) | ((A < 0) & (r < lo))
        c = p.get("dual_clip_c")
        if c is not None:
            cut |= (A < 0) & (r > c)
        return (~cut).double() * rA
    raise KeyError(name)
