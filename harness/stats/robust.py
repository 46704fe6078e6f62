"""Tests whose error rates hold when some runs collapse: `method: exact` in a sweep's declared tests.

A training outcome is a mixture (most runs learn, a few collapse), often discrete (accuracy on a fixed eval
set ties between seeds), and with a handful of seeds a collapse that happens in 15% of runs is often not
seen at all. A t-test (and TOST, built on it) then under-states the spread and declares equivalence or
non-inferiority it has not shown. Each question is answered here by a test whose level holds for every
outcome distribution:

- A question of no difference (c > 0 or c < 0, where c compares arms: weights summing to 0, no offset):
  the exact sign-flip permutation test of the per-seed contrasts. Under the null that the arms' outcomes
  are exchangeable within a seed, every sign pattern of the contrasts is equally likely, so its size is at
  most α whatever the outcomes' distribution (collapses, ties, discreteness). All 2^n patterns are
  enumerated up to n = EXACT_UP_TO seeds; beyond, a fixed-seed Monte Carlo draw with the (1 + k)/(1 + B)
  p-value, which keeps the level.
- A shifted question (c > −SESOI, |c| < SESOI, a target given by an offset): under such a null no symmetry
  holds, so the p-value comes from Anderson's (1969) bound on a mean, which holds for every distribution on
  the contrast's range [lo, hi]: the one-sided Kolmogorov–Smirnov band (scipy.stats.ksone; conservative for
  discrete outcomes) lets a share ε of the mass sit at the range's end, where an unseen collapse would be.
  Showing equivalence or non-inferiority of a mean therefore needs many seeds, as it must: with 8 seeds a
  30% collapse rate is not yet ruled out.

An unbounded measure (entropy, mismatch) has no range to bound a mean in: its shifted questions keep the
t-test, and the reason says so. Unpaired arms (no shared seeds) keep Welch's t.

`method: sign` asks every question of the *median* per-seed contrast instead of the mean, with the exact
binomial sign test (MedianTests): "median > θ" is shown when more contrasts lie above θ than Binomial(n, ½)
allows (values at θ count against). Contrasts within the measure's resolution of 0 (resolution.py) are ties,
no evidence either way about a difference: the tests of θ = 0 drop them (the sign-flip test by setting them
to 0), so n counts the contrasts beyond the resolution (is a contrast that shows a difference more often
above 0 than below); a shifted test (θ = ±SESOI) keeps them, since a contrast of 0 lies on one side of θ and
is evidence about it; the intervals keep every contrast. The sign test's
level holds for every distribution, shifted or not, so it can show equivalence (|median| < SESOI) and
non-inferiority from a handful of seeds where a bound on a mean cannot;
the price is the question: a typical seed's contrast, not the average over seeds, so rare collapses do not
move it. Collapse counts, with exact bounds, are reported beside it (the claim tables).
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Sequence, Tuple

import numpy as np
from scipy import stats

from harness.stats.resolution import ties

EXACT_UP_TO = 16  # 2^16 sign patterns: enumerated; more seeds: Monte Carlo
MONTE_CARLO_DRAWS = 2 ** 16


@functools.lru_cache(maxsize=None)
def _all_signs(n: int) -> np.ndarray:
    """Every sign pattern of n seeds, [2^n, n] (computed once per n; callers only read it)."""
    codes = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]
    return np.where(codes & 1, -1.0, 1.0)


def sign_flip_p(values: Sequence[float], alternative: str = "greater") -> float:
    """One-sided p of the sign-flip permutation test of the mean of paired differences against 0.
    (scipy.stats.permutation_test with permutation_type="samples" gives the same p, at ~100× the cost the
    simulations cannot afford; tests/reports/test_robust.py checks the two agree.)"""
    d = np.asarray(values, dtype=np.float64)
    if alternative == "less":
        d = -d
    n = len(d)
    if n == 0:
        return 1.0
    observed = d.sum()
    tolerance = 1e-12 * max(1.0, float(np.abs(d).sum()))
    if n <= EXACT_UP_TO:
        sums = _all_signs(n) @ d
        return float(np.mean(sums >= observed - tolerance))
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(MONTE_CARLO_DRAWS, n))
    return float((1 + np.sum(signs @ d >= observed - tolerance)) / (1 + MONTE_CARLO_DRAWS))


def _lower_steps(x: np.ndarray, lo: float) -> np.ndarray:
    """The bound at ε = 1 − j/n for j = 0..n: mass ε at lo, the lowest j sample points 1/n each."""
    n = len(x)
    j = np.arange(n + 1)
    return (1.0 - j / n) * lo + np.concatenate([[0.0], np.cumsum(x)]) / n


def anderson_lower(values: Sequence[float], lo: float, alpha: float) -> float:
    """Lower (1 − α) confidence bound of the mean of a variable ≥ lo (Anderson's bound)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = len(x)
    eps = float(stats.ksone.isf(alpha, n))
    if eps >= 1.0:
        return lo
    m = (1.0 - eps) * n  # sample mass kept, in points
    j = int(math.floor(m))
    steps = _lower_steps(x, lo)
    return float(steps[j] + ((m - j) / n) * ((x[j] if j < n else lo) - lo))


def anderson_p_above(values: Sequence[float], theta: float, lo: float) -> float:
    """p of H0: mean ≤ θ against mean > θ, for a variable ≥ lo: the smallest α at which Anderson's lower
    bound exceeds θ."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = len(x)
    steps = _lower_steps(x, lo)  # increasing in j
    if steps[-1] <= theta:
        return 1.0
    if steps[0] > theta:  # θ below the range: H0 cannot hold
        return 0.0
    j = int(np.searchsorted(steps, theta, side="right"))  # steps[j-1] ≤ θ < steps[j]
    kept = (j - 1) / n + (theta - steps[j - 1]) / (x[j - 1] - lo)  # sample mass where the bound equals θ
    return float(stats.ksone.sf(1.0 - kept, n))


class ExactTests:
    """The p-values and interval of `method: exact` for one paired contrast (see the module)."""

    def __init__(self, estimate, bounds: Tuple[Optional[float], Optional[float]], exchangeable: bool):
        self.estimate = estimate
        self.values = np.asarray(estimate.values, dtype=np.float64)
        self.untied = np.where(ties(self.values, estimate.resolution), 0.0, self.values)
        self.lo, self.hi = bounds
        self.exchangeable = exchangeable
        self.bounded = self.lo is not None and self.hi is not None

    @property
    def name(self) -> str:
        parts = ["sign-flip" if self.exchangeable else "",
                 "Anderson bound" if self.bounded else "t (unbounded measure)"]
        return "exact: " + " and ".join(p for p in parts if p)

    def p_above(self, theta: float) -> float:
        if theta == 0 and self.exchangeable:
            return sign_flip_p(self.untied, "greater")
        if self.bounded:
            return anderson_p_above(self.values, theta, self.lo)
        return self.estimate.p_above(theta)

    def p_below(self, theta: float) -> float:
        if theta == 0 and self.exchangeable:
            return sign_flip_p(self.untied, "less")
        if self.bounded:
            return anderson_p_above(-self.values, -theta, -self.hi)
        return self.estimate.p_below(theta)

    def interval(self, level: float, bounds=(None, None)) -> Tuple[float, float]:
        if not self.bounded:
            return self.estimate.interval(level, bounds)
        return anderson_lower(self.values, self.lo, level), -anderson_lower(-self.values, -self.hi, level)


class MedianTests:
    """The p-values and interval of `method: sign` for one paired contrast: exact binomial sign tests of its
    median per-seed value (see the module)."""

    name = "sign test of the median contrast (exact binomial)"

    def __init__(self, estimate):
        self.values = np.sort(np.asarray(estimate.values, dtype=np.float64))
        self.untied = self.values[~ties(self.values, estimate.resolution)]

    def _counted(self, theta: float) -> np.ndarray:
        """The contrasts a test against θ counts: for θ = 0, those beyond the resolution (a tie at 0 is no
        evidence either way); for a shifted θ (±SESOI), every contrast: a tie at 0 is not a tie with θ, it lies
        on one side of it and counts there (ten ties and six at −0.3 do not show "median < −0.1")."""
        return self.untied if theta == 0 else self.values

    def p_above(self, theta: float) -> float:
        """p of H0: median ≤ θ against median > θ (at most half the counted contrasts lie above θ; values at θ
        count against)."""
        counted = self._counted(theta)
        n, above = len(counted), int(np.sum(counted > theta))
        return float(stats.binom.sf(above - 1, n, 0.5)) if n else 1.0

    def p_below(self, theta: float) -> float:
        counted = self._counted(theta)
        n, below = len(counted), int(np.sum(counted < theta))
        return float(stats.binom.sf(below - 1, n, 0.5)) if n else 1.0

    def interval(self, level: float, bounds=(None, None)) -> Tuple[float, float]:
        """Distribution-free (1 − 2·level) interval of the median from order statistics: x_(r) and
        x_(n+1−r), r the largest rank whose miss chance P(Binomial(n, ½) ≤ r − 1) is ≤ level."""
        n = len(self.values)
        ranks = [r for r in range(1, n + 1) if stats.binom.cdf(r - 1, n, 0.5) <= level]
        lo, hi = bounds
        if not ranks:
            return (-math.inf if lo is None else lo), (math.inf if hi is None else hi)
        r = ranks[-1]
        return float(self.values[r - 1]), float(self.values[n - r])


def collapse_bounds(collapsed: int, runs: int, level: float = 0.05) -> Tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided (1 − level) interval of a collapse rate (scipy.stats.binomtest)."""
    if runs == 0:
        return 0.0, 1.0
    ci = stats.binomtest(collapsed, runs).proportion_ci(confidence_level=1.0 - level, method="exact")
    return float(ci.low), float(ci.high)
