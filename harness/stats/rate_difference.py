"""An exact test of the difference of two event rates (collapses per run) against a margin: is arm a's rate
minus arm b's above (or below) a bound? This is the non-inferiority test on rates that Fisher's exact test
cannot give (Fisher tests equal rates only).

The statistic is the Farrington–Manning score: the observed difference minus the bound, over its standard
error at the rates that fit the counts best among those whose difference is the bound (the restricted
maximum-likelihood rates, a closed-form cubic root). The p-value is exact and unconditional: the chance of a
statistic at least as extreme, maximised over the nuisance (the common level of the two rates) along the
null's boundary, where that chance is largest. Binomial counts only, so the level holds at any rates.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import stats

from harness.stats.inference import min_fisher_p
from harness.stats.rates import Count

NUISANCE_POINTS = 1001  # grid of the nuisance rate the p-value is maximised over


def restricted_rates(events_a, runs_a: int, events_b, runs_b: int, bound: float):
    """The rates (ra, rb) with ra − rb = bound that maximise the likelihood of the counts (arrays broadcast):
    Farrington and Manning's closed form (the real root of a cubic in ra)."""
    a_hat, b_hat = np.asarray(events_a) / runs_a, np.asarray(events_b) / runs_b
    theta = runs_b / runs_a
    a = 1.0 + theta
    b = -(1.0 + theta + a_hat + theta * b_hat + bound * (theta + 2.0))
    c = bound * bound + bound * (2.0 * a_hat + theta + 1.0) + a_hat + theta * b_hat
    d = -a_hat * bound * (1.0 + bound)
    v = b ** 3 / (3.0 * a) ** 3 - b * c / (6.0 * a * a) + d / (2.0 * a)
    u = np.sign(v) * np.sqrt(np.maximum(b * b / (3.0 * a) ** 2 - c / (3.0 * a), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(u != 0, v / u ** 3, 1.0)
    w = (np.pi + np.arccos(np.clip(ratio, -1.0, 1.0))) / 3.0
    ra = np.clip(2.0 * u * np.cos(w) - b / (3.0 * a), 0.0, 1.0)
    return ra, np.clip(ra - bound, 0.0, 1.0)


def score(events_a, runs_a: int, events_b, runs_b: int, bound: float):
    """The score statistic of ra − rb against `bound` (±inf where both restricted rates sit at 0 or 1)."""
    ra, rb = restricted_rates(events_a, runs_a, events_b, runs_b, bound)
    diff = np.asarray(events_a) / runs_a - np.asarray(events_b) / runs_b - bound
    var = ra * (1.0 - ra) / runs_a + rb * (1.0 - rb) / runs_b
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, diff / np.sqrt(var), np.sign(diff) * np.inf)


@lru_cache(maxsize=64)
def _p_table(runs_a: int, runs_b: int, bound: float) -> np.ndarray:
    """p-values of H0: ra − rb ≤ bound for every pair of counts [events_a, events_b] (small: a's rate is above
    b's plus the bound). The chance of a score at least as large is increasing in ra and decreasing in rb, so
    over the null it is largest on the boundary ra = rb + bound, where the nuisance rb is maximised over."""
    ka, kb = np.arange(runs_a + 1), np.arange(runs_b + 1)
    t = np.round(score(ka[:, None], runs_a, kb[None, :], runs_b, bound), 10).ravel()
    order = np.argsort(-t, kind="stable")
    ranked = t[order]
    last_tie = np.searchsorted(-ranked, -ranked, side="right") - 1  # a tie counts as at least as extreme
    rb = np.linspace(max(0.0, -bound), min(1.0, 1.0 - bound), NUISANCE_POINTS)
    worst = np.zeros(len(t))
    for chunk in np.array_split(rb, max(1, NUISANCE_POINTS // 100)):
        pa = stats.binom.pmf(ka[None, :], runs_a, np.clip(chunk + bound, 0.0, 1.0)[:, None])
        pb = stats.binom.pmf(kb[None, :], runs_b, chunk[:, None])
        joint = (pa[:, :, None] * pb[:, None, :]).reshape(len(chunk), -1)[:, order]
        worst = np.maximum(worst, np.cumsum(joint, axis=1)[:, last_tie].max(axis=0))
    p = np.empty_like(worst)
    p[order] = np.minimum(worst, 1.0)
    return p.reshape(runs_a + 1, runs_b + 1)


def p_above(a: Count, b: Count, bound: float) -> float:
    """Exact test of H0: rate_a − rate_b ≤ bound (a small p shows the difference is above `bound`)."""
    if a.runs == 0 or b.runs == 0 or bound <= -1.0:
        return 1.0
    if bound >= 1.0:
        return 1.0
    return float(_p_table(a.runs, b.runs, round(float(bound), 12))[a.events, b.events])


def p_below(a: Count, b: Count, bound: float) -> float:
    """Exact test of H0: rate_a − rate_b ≥ bound (a small p shows the difference is below `bound`)."""
    return p_above(b, a, -bound)


def power_above(rate_a: float, rate_b: float, runs: int, bound: float, alpha: float) -> float:
    """Exact power of p_above at level α with `runs` runs per arm when the true rates are rate_a and rate_b:
    the probability of the counts on which it rejects."""
    table = _p_table(runs, runs, round(float(bound), 12))
    ka = stats.binom.pmf(np.arange(runs + 1), runs, rate_a)
    kb = stats.binom.pmf(np.arange(runs + 1), runs, rate_b)
    return float((np.outer(ka, kb) * (table <= alpha)).sum())


def power_below(rate_a: float, rate_b: float, runs: int, bound: float, alpha: float) -> float:
    """Exact power of p_below (the mirror of power_above)."""
    return power_above(rate_b, rate_a, runs, -bound, alpha)


def runs_for_power(power_at, target: float, most: int = 400):
    """The fewest runs per arm n with power_at(n) ≥ target, by bisection over 2..most (an exact test's power
    wobbles by a little with n, so this is the first crossing bisection finds: power_at(n − 1) < target);
    None when even `most` falls short."""
    if power_at(most) < target:
        return None
    low, high = 1, most  # power_at(low) < target is taken for one run per arm (no test decides on one)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if power_at(middle) >= target else (middle, high)
    return high


def smallest_p(method: str, runs: int, margin: float) -> float:
    """The smallest p a design's test on two arms' event counts can give with `runs` runs per arm (all of one
    arm events, none of the other): a rule asking for p < α with fewer runs can never succeed."""
    if method == "fisher":
        return min_fisher_p(runs, runs)
    return p_above(Count(runs, runs), Count(0, runs), -margin)
