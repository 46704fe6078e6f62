"""Statistics for reports: Student-t intervals over seeds, a percentile bootstrap, pooled seed noise.

Torch- and scipy-free: the t quantile comes from the regularised incomplete beta function (continued
fraction, Lentz's method) inverted by bisection, exact to ~1e-10 (tests pin it against scipy's values).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

CONFIDENCE = 0.95
T_METHOD = "two-sided Student-t interval of the mean over seeds, 95%: mean ± t(0.975, n−1)·s/√n"


def _betacf(a: float, b: float, x: float) -> float:
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=None)
def t_quantile(p: float, df: float) -> float:
    """Inverse of `t_cdf`: the t with P(T <= t) = p (e.g. t_quantile(0.975, 2) = 4.302652729...)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Interval:
    """Mean of n values with a confidence interval; low/high are None when n < 2 (no CI from one seed)."""

    mean: Optional[float]
    low: Optional[float]
    high: Optional[float]
    n: int
    std: Optional[float]

    @property
    def half_width(self) -> Optional[float]:
        return None if self.low is None else (self.high - self.low) / 2.0


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Student-t interval of the mean; non-finite values are dropped first."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return Interval(None, None, None, 0, None)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, None, None, 1, None)
    std = float(x.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * std / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, std)


def bootstrap_interval(values: Sequence[float], confidence: float = CONFIDENCE, n_boot: int = 10000,
                       seed: int = 0) -> Interval:
    """Percentile bootstrap of the mean (numpy default_rng(seed), so reproducible); None bounds if n < 2."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return t_interval(x)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(x.mean()), float(low), float(high), len(x), float(x.std(ddof=1)))


def mean_curve(curves: Sequence[Tuple[np.ndarray, np.ndarray]], confidence: float = CONFIDENCE):
    """Per-step mean over runs with a t-interval band.

    curves: (steps [T_i], values [T_i]) per run. Returns (steps [S], mean [S], low [S], high [S], n [S]) over
    the union of steps; low/high are NaN where fewer than two runs have a finite value at that step.
    """
    curves = [(np.asarray(s), np.asarray(v, dtype=np.float64)) for s, v in curves if len(s)]
    if not curves:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty, empty, empty.astype(np.int64)
    steps = np.unique(np.concatenate([s for s, _ in curves]))
    grid = np.full((len(curves), len(steps)), np.nan)
    for i, (s, v) in enumerate(curves):
        grid[i, np.searchsorted(steps, s)] = v
    grid[~np.isfinite(grid)] = np.nan
    n = np.sum(~np.isnan(grid), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(np.where(n > 0, grid, 0.0), axis=0)
        mean[n == 0] = np.nan
        std = np.sqrt(np.nansum((grid - mean) ** 2, axis=0) / np.maximum(n - 1, 1))
        tcrit = np.array([t_quantile(0.5 + confidence / 2.0, k - 1) if k >= 2 else np.nan for k in n])
        half = tcrit * std / np.sqrt(n)
    return steps, mean, mean - half, mean + half, n


def pooled_std(groups: Dict[object, Sequence[float]]) -> Tuple[Optional[float], int]:
    """Within-group (seed) standard deviation pooled over groups with n >= 2, and its degrees of freedom."""
    num, dof = 0.0, 0
    for values in groups.values():
        x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
        if len(x) >= 2:
            num += float(((x - x.mean()) ** 2).sum())
            dof += len(x) - 1
    return (math.sqrt(num / dof), dof) if dof else (None, 0)
