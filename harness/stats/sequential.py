"""Alpha spending over the looks of an adaptive-seed sweep (`seeds: auto`).

Looks happen after each round of seeds: n = r, 2r, ..., n_max seeds per arm (r = seeds per round, first
look at ≥ 2 seeds). A look at n seeds may spend f(n/n_max) − f(n_prev/n_max) of α, with the Lan–DeMets
O'Brien–Fleming-type spending function f(t) = 2·(1 − Φ(z_{1−α/2}/√t)), f(1) = α. Each look tests at its
own increment, so by the union bound the chance of any false decision over all looks is at most
Σ increments = α, whatever the correlation between looks and whenever the sweep stops: valid under
early stopping by construction (conservative: it does not use the positive correlation between looks).
The O'Brien–Fleming shape spends little early, when a handful of seeds carries little information, and
keeps most of α for the final looks. `study` runs these looks on any data source (the sweep runner,
sweeps/adaptive.py, applies the same looks and levels to real runs; simulations and pilots use it directly).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

from scipy import stats

from harness.stats import inference
from harness.stats.look_plan import looks


def spent(t: float, alpha: float) -> float:
    """α spent by information fraction t ∈ [0, 1] (O'Brien–Fleming-type Lan–DeMets function)."""
    if t <= 0:
        return 0.0
    t = min(1.0, t)
    return float(2.0 * stats.norm.sf(stats.norm.isf(alpha / 2.0) / t ** 0.5))


def level(n: int, per_round: int, max_seeds: int, alpha: float) -> float:
    """The α a look with n seeds per arm may use: the spending increment of the planned look whose round
    brought the data to n, i.e. the first planned look ≥ n (a round in which some run failed ends below its
    planned n, and must not reuse the previous look's increment, which that look already spent)."""
    planned = looks(per_round, max_seeds)
    if n <= 0:
        return 0.0
    i = next((i for i, m in enumerate(planned) if m >= n), len(planned) - 1)
    before = planned[i - 1] / max_seeds if i else 0.0
    return spent(planned[i] / max_seeds, alpha) - spent(before, alpha)


def study(draw: Callable[[int], Sequence[Dict[int, float]]], weights: Sequence[float], hypothesis: str,
          sesoi: float, alpha: float, per_round: int, max_seeds: int, offset: float = 0.0, method: str = "t",
          bounds=(None, None), level_scale: float = 1.0, size: bool = False) -> Tuple[str, int]:
    """One adaptive study on any data source: draw(n) returns each arm's {seed: value} for seeds < n.
    Returns (verdict word, seeds per arm used). The sweep runner applies the same looks and levels.
    level_scale: each look's α times this (1/m: the first step of Holm's correction over m parts). size: the
    hypothesis states a size (inference.decide)."""
    n = 0
    exchangeable = abs(sum(weights)) < 1e-12 and offset == 0
    for n in looks(per_round, max_seeds):
        est = inference.estimate(draw(n), weights, offset)
        decision = inference.decide(est, hypothesis, sesoi, level(n, per_round, max_seeds, alpha) * level_scale,
                                    bounds=bounds,
                                    with_power=False, method=method, exchangeable=exchangeable, size=size)
        if decision.decided:
            return decision.word, n
    return inference.INCONCLUSIVE, n
