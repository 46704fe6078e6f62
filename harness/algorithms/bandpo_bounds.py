"""BandPO's probability-aware ratio bounds lo(p), hi(p), p = ν (BandPO paper §5.5, §9.6). No gradient.

  tv:    lo = 1 − δ/p,               hi = 1 + δ/p
  chi2:  lo = 1 − sqrt(δ(1−p)/p),    hi = 1 + sqrt(δ(1−p)/p)
  kl:    the roots of g(r) = p·f(r) + (1−p)·f((1−rp)/(1−p)) = δ, f(u) = u − 1 − log u (= Bernoulli
         KL(p‖rp)): hi in [1, 1/p], lo in [0, 1].
Then lo is clamped to [0, 1] and hi to [1, min(1/p, hi_max)]; for p > 1 − 1e-6, hi = 1 and lo = e^{−δ}
(kl), 1 − δ (tv), 1 (chi2).

KL roots are computed on whole tensors, never per token:
* `kl_roots_bisect`: vectorised bisection on torch tensors or numpy arrays (builds the table).
* `kl_roots_table` (used by the objective): a table over x = log(−log p), built once per δ by bisection
  and cached, storing z = log(−log lo) and w = log(−log c_hi), where c_hi = (1 − hi·p)/(1 − p) is the
  complement ratio at hi. Both are smooth in x over p ∈ (e^{−40}, 1 − 1e-6), so linear interpolation on
  16k cells meets g(r) = δ to < 1e-7 (tested); hi = c + (1 − c)/p is then exact for the interpolated c.
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor

Array = Union[Tensor, np.ndarray]

NEAR_ONE_LOGP = -1e-6            # log p above this: p > 1 − 1e-6, the limiting bounds apply
X_MIN, X_MAX = math.log(1e-6), math.log(40.0)  # table range of x = log(−log p)
TABLE_CELLS = 16384
BISECT_ITERS = 64                # bracket width · 2^-64: < 1e-12 for p >= 1e-8 (table build uses 100)
MAX_NEG_LOG = 700.0              # cap of −log c and −log lo (exp(−700) is already 0 for the clip)


def _xp(x):
    """The array module of x: these formulas run on torch tensors and on numpy arrays alike."""
    return np if isinstance(x, np.ndarray) else torch


def kl_g_lo(log_p: Array, s: Array) -> Array:
    """g at r = e^s (used for lo, s <= 0), computed without cancellation."""
    xp = _xp(log_p)
    p, q = xp.exp(log_p), -xp.expm1(log_p)
    cm1 = -p * xp.expm1(s) / q  # c − 1
    return p * (xp.expm1(s) - s) + q * (cm1 - xp.log1p(cm1))


def hi_from_log_c(log_p: Array, t: Array) -> Array:
    """r from t = log c, c = (1 − rp)/(1 − p): r = c + (1 − c)/p."""
    xp = _xp(log_p)
    return xp.exp(t) - xp.expm1(t) / xp.exp(log_p)


def kl_g_hi(log_p: Array, t: Array) -> Array:
    """g at the r whose complement ratio is c = e^t (used for hi, t <= 0)."""
    xp = _xp(log_p)
    p, q = xp.exp(log_p), -xp.expm1(log_p)
    r = hi_from_log_c(log_p, t)
    return p * (r - 1.0 - xp.log(r)) + q * (xp.expm1(t) - t)


def kl_roots_bisect(log_p: Array, delta: float, iters: int = BISECT_ITERS) -> Tuple[Array, Array]:
    """(log lo, log c_hi) of g = δ by bisection on whole arrays (torch or numpy; p < 1 − 1e-6; float64).

    Brackets: log lo in [−(δ/p + 2), 0] and log c_hi in [−(δ/(1−p) + 2), 0], since g >= p(−1 − log r)
    and g >= (1−p)(−1 − log c); g decreases in log lo and in log c_hi on them.
    """
    xp = _xp(log_p)
    p, q = xp.exp(log_p), -xp.expm1(log_p)
    roots = []
    for g, width in ((kl_g_lo, delta / p + 2.0), (kl_g_hi, delta / q + 2.0)):
        a, b = -width, xp.zeros_like(log_p)
        for _ in range(iters):
            m = 0.5 * (a + b)
            above = g(log_p, m) > delta
            a, b = xp.where(above, m, a), xp.where(above, b, m)
        roots.append(0.5 * (a + b))
    return roots[0], roots[1]


@functools.lru_cache(maxsize=32)
def _grid_values(delta: float) -> Tuple[np.ndarray, np.ndarray]:
    """z = log(−log lo) and w = log(−log c_hi) on the x grid (float64, TABLE_CELLS + 1 points)."""
    # numpy: single-threaded, so building is fast even when torch's thread pool is contended
    x = np.linspace(X_MIN, X_MAX, TABLE_CELLS + 1)
    s_lo, t_hi = kl_roots_bisect(-np.exp(x), delta, iters=100)
    return np.log(np.minimum(-s_lo, MAX_NEG_LOG)), np.log(np.minimum(-t_hi, MAX_NEG_LOG))


@functools.lru_cache(maxsize=64)
def _table(delta: float, dtype: torch.dtype, device: str) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(z_i, w_i, z_{i+1} − z_i, w_{i+1} − w_i) as contiguous 1-D tensors of TABLE_CELLS entries.

    Values are capped so that exp(−exp(z)) stays a normal number of `dtype`: denormals are slow.
    """
    cap = math.log(min(MAX_NEG_LOG, -math.log(torch.finfo(dtype).tiny) - 0.5))
    z, w = (np.minimum(v, cap) for v in _grid_values(delta))
    cols = (z[:-1], w[:-1], np.diff(z), np.diff(w))
    return tuple(torch.from_numpy(np.ascontiguousarray(c)).to(dtype=dtype, device=device) for c in cols)


CHUNK = 1 << 14                  # tokens per pass of kl_roots_table: its temporaries stay in L1/L2


def kl_roots_table(log_p: Tensor, delta: float, inv_p: Optional[Tensor] = None,
                   hi_max: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    """(lo, hi) of the KL band, before clamping, by table interpolation (float32/64, any device, no grad).

    inv_p: 1/p if the caller has it (read only). hi_max: also clamp hi to [1, hi_max] (lo and hi are
    already in (0, 1] and [1, 1/p]). This runs on every token, so it is written as a fixed chain of
    in-place / out= ops over chunks of CHUNK tokens, reusing three scratch buffers: every one of the ~20
    elementwise passes then works on cache-resident data instead of streaming the whole tensor through
    memory, and nothing is allocated per pass. No expm1 (not vectorised on CPU): hi is formed as
    1/p − c/p + c, whose relative error eps·c/(1 − c) stays small because 1 − c = O(δ) or more.
    """
    z0, w0, dz, dw = _table(float(delta), log_p.dtype, str(log_p.device))
    flat = log_p.reshape(-1)
    inv_flat = None if inv_p is None else inv_p.reshape(-1)
    n = flat.numel()
    lo, hi = torch.empty_like(flat), torch.empty_like(flat)
    m = min(n, CHUNK)
    pos, c, tmp = (torch.empty(m, dtype=flat.dtype, device=flat.device) for _ in range(3))
    cell = torch.empty(m, dtype=torch.int32, device=flat.device)
    scale = TABLE_CELLS / (X_MAX - X_MIN)
    for a in range(0, n, CHUNK):
        b = min(n, a + CHUNK)
        k = b - a
        lp, lo_k, hi_k = flat[a:b], lo[a:b], hi[a:b]
        pos_k, c_k, tmp_k, cell_k = pos[:k], c[:k], tmp[:k], cell[:k]
        # pos = scale·(x − X_MIN) = scale·log(−log p / e^X_MIN), clamped to the table
        torch.mul(lp, -math.exp(-X_MIN), out=pos_k).clamp_(min=1.0).log_().mul_(scale)
        pos_k.clamp_(max=TABLE_CELLS - 1e-3)
        cell_k.copy_(pos_k)  # truncation; int32 (float64 -> int64 is not vectorised on AVX2 CPUs)
        pos_k.frac_()
        torch.index_select(z0, 0, cell_k, out=lo_k)
        torch.index_select(dz, 0, cell_k, out=tmp_k)
        lo_k.addcmul_(tmp_k, pos_k).exp_().neg_().exp_()             # lo = exp(−exp(z))
        torch.index_select(w0, 0, cell_k, out=c_k)
        torch.index_select(dw, 0, cell_k, out=tmp_k)
        c_k.addcmul_(tmp_k, pos_k).exp_().neg_().exp_()              # c = exp(−exp(w))
        if inv_flat is None:
            torch.neg(lp, out=hi_k).exp_()
        else:
            hi_k.copy_(inv_flat[a:b])
        hi_k.sub_(torch.mul(c_k, hi_k, out=tmp_k)).add_(c_k)          # hi = c + (1 − c)/p
        if hi_max is not None:
            hi_k.clamp_(1.0, hi_max)
    return lo.view(log_p.shape), hi.view(log_p.shape)


def band_bounds(band: str, log_p: Tensor, delta: float, hi_max: float) -> Tuple[Tensor, Tensor]:
    """Clamped (lo, hi) per token for p = exp(log_p); shapes and dtype of log_p; no gradient."""
    with torch.no_grad():
        out_dtype = log_p.dtype
        log_p = log_p.detach()
        if log_p.dtype not in (torch.float32, torch.float64):
            log_p = log_p.float()
        if band == "kl":
            lo, hi = kl_roots_table(log_p, delta, hi_max=hi_max)  # 0 < lo <= 1 <= hi <= min(1/p, hi_max)
            lo_one = math.exp(-delta)
        elif band in ("tv", "chi2"):
            inv_p = torch.neg(log_p).exp_()
            if band == "tv":
                width, lo_one = inv_p.mul(delta), 1.0 - delta
            else:
                width, lo_one = torch.expm1(-log_p).mul_(delta).sqrt_(), 1.0
            lo = torch.sub(1.0, width).clamp_(0.0, 1.0)
            hi = torch.minimum(width.add_(1.0), inv_p).clamp_(1.0, hi_max)
        else:
            raise ValueError(f"algo.band={band!r} is not allowed; choose one of tv, chi2, kl")
        # a max-reduction is cheaper than building the mask; the mask only when some p is that close to 1
        if log_p.numel() and float(torch.amax(log_p)) > NEAR_ONE_LOGP:
            near_one = log_p > NEAR_ONE_LOGP
            lo.masked_fill_(near_one, lo_one)
            hi.masked_fill_(near_one, 1.0)
    return lo.to(out_dtype), hi.to(out_dtype)
