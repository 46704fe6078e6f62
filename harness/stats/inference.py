"""Decisions on a declared contrast between arms of a sweep, built on scipy.stats.

Every test is a linear contrast c = Σ wᵢ·mean(armᵢ) − offset (two arms: w = (+1, −1); an interaction:
(+1, −1, −1, +1); a target: one arm, offset = target). When the arms share seeds the contrast is formed
per seed and tested with a one-sample t-test on those per-seed values (paired); otherwise the arms' means
are combined with a Welch–Satterthwaite standard error. Three one-sided questions are asked of c:

  effect      c > 0 (or > −SESOI for `noninferior`): the claim,
  opposite    c < 0 (or < −SESOI), the data contradict the claim,
  equivalence |c| < SESOI (two one-sided tests, TOST): no effect worth the name.

Each answers at the level α the caller gives (a sequential design gives each look its share of α). No
question is answered when the per-seed contrasts have no spread (a discrete outcome ties: the spread is
unknown, not zero), with too few seeds for α (2^−n ≥ α: a smaller p would rest on the normal model
alone), or with too few per-seed contrasts beyond the measure's resolution (ties, resolution.py); the
decision says why. `method: exact` answers them with tests that hold when runs collapse
(robust.py). The interval shown is the (1 − 2α) t-interval of c intersected with the contrast's possible range (a mean of
values in [0, 1] lies in [0, 1]; intersecting keeps its coverage and keeps bands inside the axis).
Power: the seeds per arm that the declared SESOI needs at the target power, given the observed standard
deviation, from the noncentral t distribution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import stats

from harness.stats import robust
from harness.stats.combine import combine, holm  # noqa: F401 (the verdict of a claim's parts)
from harness.stats.resolution import floor_untestable, too_many_ties
from harness.stats.words import (DIRECTION_ONLY, HYPOTHESES, INCONCLUSIVE, NOT_REPRODUCED,  # noqa: F401
                                 NOT_TESTABLE, REPRODUCED)

METHODS = ("t", "exact", "sign")
MAX_SEEDS_SEARCHED = 10000


@dataclass(frozen=True)
class Estimate:
    """A contrast's estimate: value, standard error, degrees of freedom, seeds per arm, paired or not."""

    value: float
    se: float
    df: float
    n: int
    paired: bool
    sd_unit: float  # SD of one seed's contrast (paired) or sqrt(Σ w² s²) (unpaired): what power scales
    values: Tuple[float, ...] = ()  # the per-seed contrasts (paired)
    sizes: Tuple[int, ...] = ()  # seeds in each arm
    resolution: float = 0.0  # per-seed contrasts within it of 0 are ties (resolution.py)

    def p_above(self, threshold: float) -> float:
        """One-sided p-value of H0: c ≤ threshold against c > threshold (1 when there is no spread: no test)."""
        if self.se == 0:
            return 1.0
        return float(stats.t.sf((self.value - threshold) / self.se, self.df))

    def p_below(self, threshold: float) -> float:
        """One-sided p-value of H0: c ≥ threshold against c < threshold (1 when there is no spread: no test)."""
        if self.se == 0:
            return 1.0
        return float(stats.t.cdf((self.value - threshold) / self.se, self.df))

    @property
    def smallest_exact_p(self) -> float:
        """The smallest one-sided p a test that does not assume normal outcomes can give with these seeds:
        2^−n for n paired seeds (the sign-flip test), 1 / C(n₁ + n₂, n₁) for two unpaired arms."""
        if self.paired:
            return 0.5 ** self.n
        small = sorted(self.sizes)[:2] if len(self.sizes) >= 2 else [self.n, self.n]
        return 1.0 / math.comb(small[0] + small[1], small[0])

    def untestable(self, alpha: float) -> Optional[str]:
        """Why no test may decide at `alpha` with these data, or None. No spread: every seed's contrast is
        the same (a discrete outcome ties), so the t statistic is undefined, not infinite. Too few seeds:
        a p below what any exact test with n seeds can reach would rest on the normal model alone. Ties:
        contrasts within the resolution show nothing, and too few are left for α."""
        tied = too_many_ties(self.values, self.resolution, alpha) if self.paired else None
        if tied:
            return tied
        if self.se == 0 or not np.isfinite(self.se):
            return (f"no spread: all {self.n} per-seed contrasts equal {self.value:.4g} (ties of a discrete "
                    "outcome): the spread is unknown, not zero, so no test decides; more seeds are needed")
        if self.smallest_exact_p >= alpha:
            return (f"too few seeds for α {alpha:.3g}: with n = {self.n} the smallest p a test that does not "
                    f"assume normal outcomes can reach is {self.smallest_exact_p:.3g}; at least "
                    f"{min_seeds(alpha, self.paired)} seeds per arm are needed")
        return None

    def interval(self, level: float, bounds: Tuple[Optional[float], Optional[float]] = (None, None)):
        """Two-sided (1 − 2·level) interval, the one whose ends are the one-sided tests at `level`."""
        half = 0.0 if self.se == 0 else float(stats.t.ppf(1.0 - level, self.df)) * self.se
        low, high = self.value - half, self.value + half
        if bounds[0] is not None:
            low, high = max(low, bounds[0]), max(high, bounds[0])
        if bounds[1] is not None:
            low, high = min(low, bounds[1]), min(high, bounds[1])
        return low, high


def estimate(arms: Sequence[Dict[object, float]], weights: Sequence[float], offset: float = 0.0,
             resolution: float = 0.0) -> Optional[Estimate]:
    """The contrast Σ wᵢ·armᵢ − offset. arms: {seed: value} per arm. Paired over the seeds every arm has
    when there are ≥ 2 of them; else Welch over each arm's values. None when an arm has < 2 values.
    resolution: the contrast's (resolution.py); paired contrasts within it of 0 are ties."""
    shared = set.intersection(*(set(a) for a in arms)) if arms else set()
    w = np.asarray(weights, dtype=np.float64)
    if len(shared) >= 2:
        seeds = sorted(shared, key=str)
        per_seed = np.array([sum(wi * arm[s] for wi, arm in zip(w, arms)) for s in seeds]) - offset
        sd = float(per_seed.std(ddof=1))
        if sd < 1e-12 * max(1.0, float(np.abs(per_seed).max())):  # equal up to rounding: no spread
            sd = 0.0
        return Estimate(float(per_seed.mean()), sd / math.sqrt(len(seeds)), len(seeds) - 1, len(seeds), True, sd,
                        tuple(float(v) for v in per_seed), tuple(len(seeds) for _ in arms), resolution)
    values = [np.asarray(list(a.values()), dtype=np.float64) for a in arms]
    if any(len(v) < 2 for v in values):
        return None
    terms = np.array([wi ** 2 * v.var(ddof=1) / len(v) for wi, v in zip(w, values)])
    se = float(math.sqrt(terms.sum()))
    df_den = sum(t ** 2 / (len(v) - 1) for t, v in zip(terms, values))
    df = float(terms.sum() ** 2 / df_den) if df_den > 0 else float(sum(len(v) - 1 for v in values))
    value = float(sum(wi * v.mean() for wi, v in zip(w, values))) - offset
    sd_unit = float(math.sqrt(sum(wi ** 2 * v.var(ddof=1) for wi, v in zip(w, values))))
    return Estimate(value, se, df, min(len(v) for v in values), False, sd_unit, (), tuple(len(v) for v in values),
                    resolution)


def min_seeds(alpha: float, paired: bool = True) -> int:
    """Fewest seeds per arm with which a test that does not assume normal outcomes can reach p < α."""
    n = 2
    while (0.5 ** n if paired else 1.0 / math.comb(2 * n, n)) >= alpha:
        n += 1
    return n


def seeds_needed(sd_unit: float, effect: float, alpha: float, power: float, paired: bool, arms: int = 2) -> Optional[int]:
    """Smallest seeds per arm for a one-sided t-test at `alpha` to detect `effect` with `power`, if the
    per-seed standard deviation of the contrast is `sd_unit` (unpaired: sqrt(Σ w²σ²)). None if effect ≤ 0."""
    if effect <= 0:
        return None
    fewest = min_seeds(alpha, paired)  # below it no test decides (Estimate.untestable)
    if sd_unit <= 0:
        return fewest
    normal = ((stats.norm.isf(alpha) + stats.norm.ppf(power)) * sd_unit / effect) ** 2  # z-test: a lower bound
    if normal >= MAX_SEEDS_SEARCHED:
        return MAX_SEEDS_SEARCHED
    for n in range(max(fewest, int(normal)), MAX_SEEDS_SEARCHED):
        df = n - 1 if paired else arms * (n - 1)
        ncp = effect / (sd_unit / math.sqrt(n))
        critical = stats.t.ppf(1.0 - alpha, df)
        achieved = stats.nct.sf(critical, df, ncp)
        if not np.isfinite(achieved):  # the noncentral t's series fails far in the tail: the normal limit
            achieved = stats.norm.sf(critical - ncp)
        if achieved >= power:
            return n
    return MAX_SEEDS_SEARCHED


@dataclass(frozen=True)
class Decision:
    word: str  # reproduced | not reproduced | inconclusive
    reason: str
    estimate: Optional[Estimate]
    low: Optional[float]
    high: Optional[float]
    p_effect: Optional[float]
    p_against: Optional[float]
    alpha: float
    seeds_needed: Optional[int]
    median: bool = False  # the tests (and low, high) are about the median per-seed contrast (method: sign)

    @property
    def decided(self) -> bool:  # a size not shown is not decided: more seeds may show it
        return self.word not in (INCONCLUSIVE, DIRECTION_ONLY)

    @property
    def centre(self) -> Optional[float]:
        """The contrast the tests are about: the mean, or the median per-seed contrast (method: sign)."""
        if self.estimate is None:
            return None
        return float(np.median(self.estimate.values)) if self.median else self.estimate.value


def decide(est: Optional[Estimate], hypothesis: str, sesoi: float, alpha: float, power: float = 0.8,
           bounds: Tuple[Optional[float], Optional[float]] = (None, None), arms: int = 2,
           alpha_power: Optional[float] = None, with_power: bool = True, method: str = "t",
           exchangeable: bool = False, size: bool = False) -> Decision:
    """Verdict on one contrast at level `alpha` (one-sided, per question).

    greater: reproduced if c > 0; not reproduced if c < 0 or |c| < SESOI (TOST) is shown. With `size` (the
    hypothesis states c ≥ SESOI): reproduced needs c > SESOI shown; c > 0 alone is DIRECTION_ONLY, unless
    |c| < SESOI is also shown (not reproduced: the stated size is ruled out).
    less: the mirror image. noninferior: reproduced if c > −SESOI; not reproduced if c < −SESOI.
    equivalent: reproduced if |c| < SESOI (TOST); not reproduced if c > SESOI or c < −SESOI is shown
    (each side at α/2). alpha_power: the level the power figure assumes (default `alpha`).
    method: t (t-tests), exact (robust.py: sign-flip where the null is "no difference between the arms"
    — `exchangeable`: weights summing to 0, no offset — else Anderson's bound on the contrast's range
    `bounds`) or sign (robust.MedianTests: exact sign tests of the median per-seed contrast). No test decides
    without spread, with too few seeds for `alpha`, or with too many ties (Estimate.untestable)."""
    if hypothesis not in HYPOTHESES:
        raise ValueError(f"hypothesis {hypothesis!r} is not allowed; allowed: {', '.join(HYPOTHESES)}")
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not allowed; allowed: {', '.join(METHODS)}")
    if est is None:
        return Decision(INCONCLUSIVE, "fewer than 2 seeds in some arm: no test", None, None, None, None, None,
                        alpha, None)
    if method == "exact" and est.paired:
        tests = robust.ExactTests(est, bounds, exchangeable)
    elif method == "sign" and est.paired:
        tests = robust.MedianTests(est)
    else:
        tests = est
    low, high = tests.interval(alpha, bounds)
    needed = seeds_needed(est.sd_unit, sesoi, alpha_power or alpha, power, est.paired, arms) if with_power else None
    median = isinstance(tests, robust.MedianTests)  # low, high bound the median: the centre must be it
    blocked = est.untestable(alpha) or floor_untestable(est)
    if blocked:
        return Decision(INCONCLUSIVE, blocked, est, low, high, None, None, alpha, needed, median=median)
    if hypothesis in ("greater", "less"):
        up = hypothesis == "greater"
        claim, opposite = (">", "<") if up else ("<", ">")
        p_effect = tests.p_above(0.0) if up else tests.p_below(0.0)
        p_opposite = tests.p_below(0.0) if up else tests.p_above(0.0)
        p_equiv = max(tests.p_above(-sesoi), tests.p_below(sesoi))
        p_size = (tests.p_above(sesoi) if up else tests.p_below(-sesoi)) if size else p_effect
        if size and p_size < alpha:
            word, why = REPRODUCED, (f"c {claim} {'' if up else '−'}{sesoi:g} (the stated size) shown "
                                     f"(p = {_p(p_size)} < {alpha:.3g})")
        elif size and p_effect < alpha and min(p_opposite, p_equiv) >= alpha:
            word, why = DIRECTION_ONLY, (f"c {claim} 0 shown (p = {_p(p_effect)}), the stated size {sesoi:g} not "
                                         f"(p = {_p(p_size)}) at {alpha:.3g}")
        elif p_effect < alpha and not size:
            word, why = REPRODUCED, f"c {claim} 0 shown (p = {_p(p_effect)} < {alpha:.3g})"
        elif p_opposite < alpha:
            word, why = NOT_REPRODUCED, (f"c {opposite} 0 shown: the opposite direction (p = {_p(p_opposite)} "
                                         f"< {alpha:.3g})")
        elif p_equiv < alpha:
            word, why = NOT_REPRODUCED, (f"equivalence shown: |c| < SESOI {sesoi:g} (TOST p = {_p(p_equiv)} "
                                         f"< {alpha:.3g})")
        else:
            word, why = INCONCLUSIVE, (f"neither c {claim} 0 (p = {_p(p_effect)}), c {opposite} 0 "
                                       f"(p = {_p(p_opposite)}) nor |c| < {sesoi:g} (TOST p = {_p(p_equiv)}) "
                                       f"at {alpha:.3g}")
        p_against = min(p_opposite, p_equiv)
        p_effect = p_size
    elif hypothesis == "noninferior":
        p_effect, p_against = tests.p_above(-sesoi), tests.p_below(-sesoi)
        if p_effect < alpha:
            word, why = REPRODUCED, f"c > −{sesoi:g} shown (p = {_p(p_effect)} < {alpha:.3g})"
        elif p_against < alpha:
            word, why = NOT_REPRODUCED, f"c < −{sesoi:g} shown (p = {_p(p_against)} < {alpha:.3g})"
        else:
            word, why = INCONCLUSIVE, (f"neither c > −{sesoi:g} (p = {_p(p_effect)}) nor c < −{sesoi:g} "
                                       f"(p = {_p(p_against)}) at {alpha:.3g}")
    else:  # equivalent
        p_effect = max(tests.p_above(-sesoi), tests.p_below(sesoi))
        p_against = min(1.0, 2.0 * min(tests.p_above(sesoi), tests.p_below(-sesoi)))
        if p_effect < alpha:
            word, why = REPRODUCED, f"|c| < {sesoi:g} shown (TOST p = {_p(p_effect)} < {alpha:.3g})"
        elif p_against < alpha:
            word, why = NOT_REPRODUCED, f"|c| > {sesoi:g} shown (p = {_p(p_against)} < {alpha:.3g}, both sides)"
        else:
            word, why = INCONCLUSIVE, (f"neither |c| < {sesoi:g} (TOST p = {_p(p_effect)}) nor |c| > {sesoi:g} "
                                       f"(p = {_p(p_against)}) at {alpha:.3g}")
    if method in ("exact", "sign"):
        why += f" [{tests.name if est.paired else 'Welch t: exact tests need arms that share seeds'}]"
    return Decision(word, why, est, low, high, p_effect, p_against, alpha, needed, median=median)


def min_fisher_p(n1: int, n2: int) -> float:
    """The smallest one-sided p a Fisher exact test can give with n1 and n2 runs (all of one group
    events, none of the other): a rule asking for p < α with fewer runs can never succeed."""
    return float(stats.fisher_exact([[n1, 0], [0, n2]], alternative="greater")[1])


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"
