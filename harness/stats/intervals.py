"""Intervals for reports, on scipy.stats: Student-t intervals over seeds (intersected with the measure's
possible range), scipy's bootstrap, per-step bands over runs.

A measure's bounds (accuracy in [0, 1], a mismatch ≥ 0) hold for its mean too, so intersecting an
interval with them keeps its coverage and keeps every band inside the figure's axis. Decisions (tests,
equivalence, power) are in `inference.py`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
T_METHOD = ("two-sided Student-t interval of the mean over seeds, 95%: mean ± t(0.975, n−1)·s/√n, intersected "
            "with the measure's possible range")
Bounds = Tuple[Optional[float], Optional[float]]
UNBOUNDED: Bounds = (None, None)


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p for Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    return float(stats.t.ppf(p, df))


def clip(low, high, bounds: Bounds):
    """(low, high) intersected with bounds (scalars or arrays)."""
    if bounds[0] is not None:
        low, high = np.maximum(low, bounds[0]), np.maximum(high, bounds[0])
    if bounds[1] is not None:
        low, high = np.minimum(low, bounds[1]), np.minimum(high, bounds[1])
    return low, high


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


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE, bounds: Bounds = UNBOUNDED) -> Interval:
    """Student-t interval of the mean, intersected with `bounds`; non-finite values are dropped first."""
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
    low, high = clip(mean - half, mean + half, bounds)
    return Interval(mean, float(low), float(high), n, std)


def bootstrap_interval(values: Sequence[float], confidence: float = CONFIDENCE, n_boot: int = 10000,
                       seed: int = 0, method: str = "percentile") -> Interval:
    """scipy.stats.bootstrap interval of the mean (percentile or BCa; reproducible with `seed`). Its ends
    are means of resampled values, so they stay inside the values' range. None bounds if n < 2."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return t_interval(x)
    if np.all(x == x[0]):
        return Interval(float(x[0]), float(x[0]), float(x[0]), len(x), 0.0)
    res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_boot, method=method,
                          random_state=np.random.default_rng(seed))
    low, high = res.confidence_interval
    return Interval(float(x.mean()), float(low), float(high), len(x), float(x.std(ddof=1)))


def mean_curve(curves: Sequence[Tuple[np.ndarray, np.ndarray]], confidence: float = CONFIDENCE,
               bounds: Bounds = UNBOUNDED, log: bool = False):
    """Per-step mean over runs with a t-interval band inside `bounds`.

    curves: (steps [T_i], values [T_i]) per run. Returns (steps [S], mean [S], low [S], high [S], n [S]) over
    the union of steps; low/high are NaN where fewer than two runs have a finite value at that step.
    log=True (positive measures on a log axis): the geometric mean with the t-interval of log values,
    exponentiated, so the band is positive and symmetric on the log axis; non-positive values are dropped.
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
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            grid = np.where(grid > 0, np.log(np.where(grid > 0, grid, 1.0)), np.nan)
    n = np.sum(~np.isnan(grid), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(np.where(n > 0, grid, 0.0), axis=0)
        mean[n == 0] = np.nan
        std = np.sqrt(np.nansum((grid - mean) ** 2, axis=0) / np.maximum(n - 1, 1))
        tcrit = np.where(n >= 2, stats.t.ppf(0.5 + confidence / 2.0, np.maximum(n - 1, 1)), np.nan)
        half = tcrit * std / np.sqrt(n)
    low, high = mean - half, mean + half
    if log:
        return steps, np.exp(mean), np.exp(low), np.exp(high), n
    low, high = clip(low, high, bounds)
    return steps, mean, low, high, n

