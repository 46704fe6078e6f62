"""Exact tests on event rates (collapses per run): a difference between two arms and a rate shown below a
bound. Binomial counts only, so the tests hold their level at any rate (no normal approximation)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Count:
    events: int
    runs: int

    def __str__(self) -> str:
        return f"{self.events}/{self.runs}"


def p_differ(a: Count, b: Count) -> float:
    """Two-sided Fisher exact test of equal rates; 1.0 when either arm has no runs."""
    if a.runs == 0 or b.runs == 0:
        return 1.0
    table = [[a.events, a.runs - a.events], [b.events, b.runs - b.events]]
    return float(stats.fisher_exact(table, alternative="two-sided")[1])


def p_below(count: Count, bound: float) -> float:
    """One-sided exact binomial test of H0: rate ≥ bound (small p shows the rate is below `bound`)."""
    if count.runs == 0 or bound <= 0.0:
        return 1.0
    if bound >= 1.0:
        return 0.0
    return float(stats.binomtest(count.events, count.runs, bound, alternative="less").pvalue)


def runs_to_show_below(bound: float, alpha: float) -> int:
    """Runs without an event that show a rate below `bound` at level α: the smallest n with (1 − bound)^n ≤ α
    (the power is 1 when the true rate is 0, less when events happen at a rate near `bound`)."""
    if bound >= 1.0:
        return 1
    if bound <= 0.0:
        raise ValueError("a rate cannot be shown below 0")
    return max(1, math.ceil(math.log(alpha) / math.log1p(-bound) - 1e-12))


def p_greater(a: Count, b: Count) -> float:
    """One-sided Fisher exact test of H0: a's rate ≤ b's (small p shows a's rate is higher)."""
    if a.runs == 0 or b.runs == 0:
        return 1.0
    table = [[a.events, a.runs - a.events], [b.events, b.runs - b.events]]
    return float(stats.fisher_exact(table, alternative="greater")[1])


def fisher_power(rate_a: float, rate_b: float, runs: int, alpha: float) -> float:
    """Exact power of the one-sided Fisher test (a's rate above b's) at level α with `runs` runs per arm, when
    the true rates are rate_a and rate_b: the probability, summed over every pair of counts, that the test
    rejects. Its size (rate_a = rate_b) is ≤ α, as Fisher's test is conditional and conservative."""
    ks = range(runs + 1)
    pa = stats.binom.pmf(list(ks), runs, rate_a)
    pb = stats.binom.pmf(list(ks), runs, rate_b)
    power = 0.0
    for i in ks:
        for j in ks:
            if pa[i] * pb[j] > 0 and p_greater(Count(i, runs), Count(j, runs)) <= alpha:
                power += pa[i] * pb[j]
    return float(power)


def runs_for_fisher_power(rate_a: float, rate_b: float, alpha: float, power: float, most: int = 200) -> int:
    """The fewest runs per arm at which the one-sided Fisher test reaches `power` (None past `most`)."""
    for n in range(2, most + 1):
        if fisher_power(rate_a, rate_b, n, alpha) >= power:
            return n
    return None


def upper_bound(count: Count, alpha: float) -> float:
    """The one-sided (1 − α) Clopper–Pearson upper bound of the rate: rates above it are excluded at level α
    (0 events in n runs: 1 − α^(1/n), e.g. 11.7% for 0/24 at α 0.05)."""
    if count.runs == 0 or count.events >= count.runs:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, count.events + 1, count.runs - count.events))


def runs_to_show_below_at(rate: float, bound: float, alpha: float, most: int = 2000):
    """Runs that show a rate below `bound` at level α when events happen at the observed `rate`: the smallest n
    whose expected count round(rate·n) gives an exact p < α (None when rate ≥ bound, or past `most`)."""
    if rate <= 0.0:
        return runs_to_show_below(bound, alpha)
    if rate >= bound:
        return None
    n = np.arange(2, most + 1)
    shown = np.flatnonzero(stats.binom.cdf(np.round(rate * n), n, bound) < alpha)
    return int(n[shown[0]]) if len(shown) else None
