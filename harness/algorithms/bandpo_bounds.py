"""BandPO's probability-aware ratio bounds lo(p), hi(p), p = ν (BandPO paper §5.5, §9.6). No gradient.

  tv:    lo = 1 − δ/p,               hi = 1 + δ/p
  chi2:  lo = 1 − sqrt(δ(1−p)/p),    hi = 1 + sqrt(δ(1−p)/p)
  kl:    the roots of g(r) = p·f(r) + (1−p)·f((1−rp)/(1−p)) = δ, f(u) = u − 1 − log u (= Bernoulli
         KL(p‖rp)): hi in [1, 1/p], lo in [0, 1].
Then lo is clamped to [0, 1] and hi to [1, min(1/p, hi_max)]; for p > 1 − 1e-6, hi = 1 and lo = e^{−δ}
(kl), 1 − δ (tv), 1 (chi2).

KL roots are computed on whole tensors, never per token:
* `kl_roots_bisect`: vectorised bisection on torch tensors or numpy arrays (builds the table).
* `kl_roots_table` (used by the objective): a table over y = −log p ∈ [1e-6, 40], 1024 cells per
  octave of y (~26k cells, found from the bits of y), built once per δ by bisection and cached. On each
  cell it interpolates z = log(−log lo) and v = 1/log c_hi linearly in y, where c_hi = (1 − hi·p)/(1 − p)
  is the complement ratio at hi; both are nearly linear in y, so g(r) = δ holds to < 1e-7 for δ <= 1
  (tested); hi = c + (1 − c)/p is then exact for the interpolated c.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor

Array = Union[Tensor, np.ndarray]

NEAR_ONE_LOGP = -1e-6            # log p above this: p > 1 − 1e-6, the limiting bounds apply
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


Y_MIN, Y_MAX = -NEAR_ONE_LOGP, 40.0  # table range of y = −log p
CELL_BITS = 10                   # cells per octave of y: 2^CELL_BITS (the top mantissa bits of y)
# float dtype -> (same-width int dtype, mantissa bits): a cell is the exponent and top mantissa bits of y
_BIT_LAYOUT = {torch.float32: (torch.int32, 23), torch.float64: (torch.int64, 52)}


def _key(y: float, dtype: torch.dtype = torch.float32) -> int:
    """Cell key of y from its bits as `dtype`; keys of float32 and float64 differ by a constant offset."""
    int_dtype, mantissa = _BIT_LAYOUT[dtype]
    return int(torch.tensor(y, dtype=dtype).view(int_dtype)) >> (mantissa - CELL_BITS)


@functools.lru_cache(maxsize=32)
def _grid_values(delta: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, z = log(−log lo), u = −log c_hi) at the cell edges (float64; bisection in numpy: single-threaded,
    so fast even when torch's thread pool is contended)."""
    keys = torch.arange(_key(Y_MIN), _key(Y_MAX) + 2, dtype=torch.int32) << (23 - CELL_BITS)
    y = keys.view(torch.float32).double().numpy()
    s_lo, t_hi = kl_roots_bisect(-y, delta, iters=100)
    return y, np.log(np.minimum(-s_lo, MAX_NEG_LOG)), np.minimum(-t_hi, MAX_NEG_LOG)


@functools.lru_cache(maxsize=64)
def _table(delta: float, dtype: torch.dtype, device: str) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(z0, z1, v0, v1) per cell: z ≈ z0 + y·z1 and v = 1/log c_hi ≈ v0 + y·v1 on the cell, the chords
    through its edges (in this form no in-cell fraction is needed; the cancellation costs ~1e-14).

    z = log(−log lo) and v are the variables nearly linear in y: −log lo ≈ δ/p for small p and
    −log c_hi ≈ δ/(1 − p) for p near 1. Values are capped so that lo and c stay normal numbers of
    `dtype` (denormals are slow).
    """
    cap = min(MAX_NEG_LOG, -math.log(torch.finfo(dtype).tiny) - 0.5)
    y, z, u = _grid_values(delta)
    cols = []
    for v in (np.minimum(z, math.log(cap)), -1.0 / np.minimum(u, cap)):
        slope = np.diff(v) / np.diff(y)
        cols += [v[:-1] - y[:-1] * slope, slope]
    return tuple(torch.from_numpy(np.ascontiguousarray(c)).to(dtype=dtype, device=device) for c in cols)


@functools.lru_cache(maxsize=16)
def _operands(dtype: torch.dtype, device: str) -> Tuple[Tensor, Tensor, Tensor]:
    """0-dim (1, bit shift, key of Y_MIN) for `dtype`: Python scalars would become tensors on every op."""
    int_dtype, mantissa = _BIT_LAYOUT[dtype]
    return (torch.ones((), dtype=dtype, device=device),
            torch.tensor(mantissa - CELL_BITS, dtype=int_dtype, device=device),
            torch.tensor(_key(Y_MIN, dtype), dtype=int_dtype, device=device))


CHUNK_BYTES = 1 << 17            # per buffer per pass of kl_roots_table: its working set stays in L2


def chunk_tokens(dtype: torch.dtype) -> int:
    return CHUNK_BYTES // torch.finfo(dtype).bits * 8


def kl_roots_table(log_p: Tensor, delta: float, inv_p: Optional[Tensor] = None,
                   hi_max: Optional[float] = None, near_one_lo: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    """(lo, hi) of the KL band, before clamping, by table interpolation (float32/64, any device, no grad).

    inv_p: 1/p if the caller has it (read only). hi_max: also clamp hi to [1, hi_max] (lo and hi are
    already in (0, 1] and [1, 1/p]). near_one_lo: where p > 1 − 1e-6, lo = near_one_lo and hi = 1
    (set per chunk while it is in cache, instead of another pass over log_p; no host sync).

    This runs on every token, so it is a fixed chain of in-place / out= ops over chunks of
    `chunk_tokens(dtype)` tokens on three reused scratch rows and an index buffer (each pass on
    cache-resident data, nothing allocated per pass; lo and hi share one allocation, which the allocator
    keeps for the next call instead of mapping fresh pages). The cell of y = −log p comes from the bits
    of y itself (no log, no conversion). No expm1 (not vectorised on CPU): hi = c + (1 − c)/p is a lerp
    from 1/p towards 1 by c, with relative error eps·c/(1 − c), small because 1 − c = O(δ) or more.
    """
    z0, z1, v0, v1 = _table(float(delta), log_p.dtype, str(log_p.device))
    one, shift, first = _operands(log_p.dtype, str(log_p.device))
    flat = log_p.reshape(-1)
    n, size = flat.numel(), chunk_tokens(flat.dtype)
    lo, hi = torch.empty(2, n, dtype=flat.dtype, device=flat.device).unbind(0)
    m = min(n, size)
    y, c, tmp = torch.empty(3, m, dtype=flat.dtype, device=flat.device).unbind(0)
    cell = torch.empty(m, dtype=shift.dtype, device=flat.device)
    words = y.view(shift.dtype)
    inv_chunks = itertools.repeat(None) if inv_p is None else inv_p.reshape(-1).split(size)
    for lp, lo_k, hi_k, inv_k in zip(flat.split(size), lo.split(size), hi.split(size), inv_chunks):
        k = lp.numel()
        y_k, c_k, tmp_k, cell_k, words_k = (y, c, tmp, cell, words) if k == m else (
            y[:k], c[:k], tmp[:k], cell[:k], words[:k])
        torch.neg(lp, out=hi_k)
        torch.clamp(hi_k, Y_MIN, Y_MAX, out=y_k)
        torch.bitwise_right_shift(words_k, shift, out=cell_k).sub_(first)
        torch.index_select(z0, 0, cell_k, out=lo_k)
        torch.index_select(z1, 0, cell_k, out=tmp_k)
        lo_k.addcmul_(tmp_k, y_k).exp_().neg_().exp_()               # lo = exp(−exp(z))
        torch.index_select(v0, 0, cell_k, out=c_k)
        torch.index_select(v1, 0, cell_k, out=tmp_k)
        c_k.addcmul_(tmp_k, y_k).reciprocal_().exp_()                # c = exp(1/v)
        if inv_k is None:
            hi_k.exp_()
        else:
            hi_k.copy_(inv_k)
        hi_k.lerp_(one, c_k)                                         # hi = 1/p + c·(1 − 1/p)
        if hi_max is not None:
            hi_k.clamp_(1.0, hi_max)
        if near_one_lo is not None:  # every chunk (no host sync to learn whether one token needs it)
            mask = lp > NEAR_ONE_LOGP
            lo_k.masked_fill_(mask, near_one_lo)
            hi_k.masked_fill_(mask, 1.0)
    return lo.view(log_p.shape), hi.view(log_p.shape)


def band_bounds(band: str, log_p: Tensor, delta: float, hi_max: float) -> Tuple[Tensor, Tensor]:
    """Clamped (lo, hi) per token for p = exp(log_p); shapes and dtype of log_p; no gradient."""
    with torch.no_grad():
        out_dtype = log_p.dtype
        log_p = log_p.detach()
        if log_p.dtype not in (torch.float32, torch.float64):
            log_p = log_p.float()
        if band == "kl":  # 0 < lo <= 1 <= hi <= min(1/p, hi_max)
            lo, hi = kl_roots_table(log_p, delta, hi_max=hi_max, near_one_lo=math.exp(-delta))
        elif band in ("tv", "chi2"):
            inv_p = torch.neg(log_p).exp_()
            if band == "tv":
                width, lo_one = inv_p.mul(delta), 1.0 - delta
            else:
                width, lo_one = torch.expm1(-log_p).mul_(delta).sqrt_(), 1.0
            lo = torch.sub(1.0, width).clamp_(0.0, 1.0)
            hi = torch.minimum(width.add_(1.0), inv_p).clamp_(1.0, hi_max)
            near_one = log_p > NEAR_ONE_LOGP  # always: knowing whether any p is that close to 1 is a host sync
            lo.masked_fill_(near_one, lo_one)
            hi.masked_fill_(near_one, 1.0)
        else:
            raise ValueError(f"algo.band={band!r} is not allowed; choose one of tv, chi2, kl")
    return lo.to(out_dtype), hi.to(out_dtype)
