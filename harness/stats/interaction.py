"""Is one objective less sensitive to its threshold than another is to its own? An objective × threshold
interaction on the outcomes of each objective run at several values of its threshold (DPPO paper App. F.4).

Spread of an objective: the standard deviation of its threshold values' true mean outcomes, estimated without
the seeds' noise: S² = max(0, B − W), B the variance of the values' observed means, W the mean over values of
s²/n (what noise alone adds to B). A threshold that does nothing has S = 0 whatever the noise, so a noisier
objective does not look more sensitive. The contrast D = S(other) − S(one) > 0 says `one` is less sensitive.

Test: a bootstrap over seeds (each value's seeds resampled with replacement, each objective on its own), the
percentile interval of D; D > 0 is shown at level α when the α-quantile of the bootstrap D is above 0, and
D < margin (the other is not more sensitive by what matters) when the (1 − α)-quantile is below the margin.
The margin is the spread of k values one of which differs from the rest by the SESOI: SESOI / √k.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional

import numpy as np

Arms = Mapping[float, Mapping[object, float]]  # {threshold value: {seed: outcome}}
BOOTSTRAP = 2000
MIN_SEEDS = 4  # per value: below it a bootstrap over seeds has too few distinct resamples to mean anything


def spread(arms: Arms) -> Optional[float]:
    """The noise-corrected SD of the values' true means (None with < 2 values of ≥ 2 seeds)."""
    xs = [np.asarray(list(a.values()), dtype=np.float64) for a in arms.values() if len(a) >= 2]
    if len(xs) < 2:
        return None
    return float(_spread(np.array([x.mean() for x in xs]), np.array([x.var(ddof=1) / len(x) for x in xs])))


def _spread(means: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """means, noise: [..., k]; the spread per leading index."""
    between = means.var(axis=-1, ddof=1)
    return np.sqrt(np.maximum(0.0, between - noise.mean(axis=-1)))


def boot_spread(arms: Arms, rng: np.random.Generator, draws: int = BOOTSTRAP) -> np.ndarray:
    """Bootstrap replicates of `spread`, each value's seeds resampled with replacement."""
    means, noise = [], []
    for a in arms.values():
        x = np.asarray(list(a.values()), dtype=np.float64)
        if len(x) < 2:
            continue
        sample = x[rng.integers(0, len(x), (draws, len(x)))]
        means.append(sample.mean(axis=1))
        noise.append(sample.var(axis=1, ddof=1) / len(x))
    return _spread(np.stack(means, axis=-1), np.stack(noise, axis=-1))


@dataclass(frozen=True)
class Contrast:
    less: float  # spread of the objective claimed less sensitive
    more: float  # spread of the one claimed more sensitive
    difference: float  # more − less
    low: float  # the α-quantile of the bootstrap difference
    high: float  # the (1 − α)-quantile
    p_less: float  # bootstrap share of differences ≤ 0: small shows `less` spreads less
    margin: float
    seeds: int  # fewest seeds any value of either has

    @property
    def shown(self) -> bool:
        return self.low > 0.0

    @property
    def excluded(self) -> bool:
        """The other objective's extra spread is shown below the margin."""
        return self.high < self.margin


def contrast(less: Arms, more: Arms, sesoi: float, alpha: float, seed: int = 0,
             draws: int = BOOTSTRAP) -> Optional[Contrast]:
    """The test that `less` spreads less across its threshold values than `more` across its own; None when
    either has < 2 values with ≥ MIN_SEEDS seeds (not testable)."""
    less = {v: a for v, a in less.items() if len(a) >= MIN_SEEDS}
    more = {v: a for v, a in more.items() if len(a) >= MIN_SEEDS}
    if len(less) < 2 or len(more) < 2:
        return None
    rng = np.random.default_rng(seed)
    d = boot_spread(more, rng, draws) - boot_spread(less, rng, draws)
    k = max(len(less), len(more))
    fewest = min(len(a) for a in (*less.values(), *more.values()))
    s_less, s_more = spread(less), spread(more)
    return Contrast(s_less, s_more, s_more - s_less, float(np.quantile(d, alpha)), float(np.quantile(d, 1 - alpha)),
                    float(np.mean(d <= 0.0)), sesoi / math.sqrt(k), fewest)


def simulated_power(sd: float, seeds: int, values: int, sesoi: float, alpha: float, shift: float, sims: int = 200,
                    seed: int = 1) -> float:
    """The share of simulated studies in which `contrast` shows D > 0 when `less` has no threshold effect and
    one value of `more` is off by `shift` (normal outcomes with SD `sd`, `seeds` per value)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(sims):
        flat = {v: dict(enumerate(rng.normal(0.0, sd, seeds))) for v in range(values)}
        moved = {v: dict(enumerate(rng.normal(shift if v == values - 1 else 0.0, sd, seeds))) for v in range(values)}
        found = contrast(flat, moved, sesoi, alpha, seed=seed + i, draws=400)
        hits += bool(found and found.shown)
    return hits / sims


def pooled_sd(*groups: Arms) -> Optional[float]:
    """The within-value SD pooled over every value of every group."""
    ss, df = 0.0, 0
    for arms in groups:
        for a in arms.values():
            x = np.asarray(list(a.values()), dtype=np.float64)
            if len(x) >= 2:
                ss += float(((x - x.mean()) ** 2).sum())
                df += len(x) - 1
    return math.sqrt(ss / df) if df else None


def by_objective(groups: Dict[str, Arms]) -> Dict[str, Optional[float]]:
    return {name: spread(arms) for name, arms in groups.items()}
