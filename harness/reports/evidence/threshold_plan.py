"""The sentences and seed counts of a threshold verdict (threshold_effect.py): its two parts in words (the
typical seed, the failures) and the seeds per value that would decide what is still open."""
from __future__ import annotations

from typing import Dict, List, Optional

from harness.stats import inference, rates


def name(pair) -> str:
    return f"{pair.a:g} vs {pair.b:g}"


def p(value: float) -> str:
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def sized(pair) -> str:
    """The contrast with its interval: '−0.043 [−0.070, −0.016]'."""
    return f"{pair.estimate.value:+.3f} [{pair.low:+.3f}, {pair.high:+.3f}]"


def typical_part(pairs: List, size, sesoi: float, alpha: float, within: bool, beyond: bool, differs: bool) -> str:
    """One sentence on the typical seed (the runs that did not fail)."""
    level = f"{1 - 2 * alpha:.0%} interval"
    if beyond:
        return (f"typical seed: {name(size)} differ by more than ±{sesoi:g}: c = {sized(size)} ({level})")
    if within and differs:
        return (f"typical seed: {name(size)} differ by less than ±{sesoi:g}: c = {sized(size)} ({level}), every "
                f"pair shown within ±{sesoi:g}")
    if within:
        return (f"typical seed: insensitive, every pair within ±{sesoi:g} (largest c = {sized(size)}, {level})")
    if differs:
        return (f"typical seed: {name(size)} differ, c = {sized(size)} ({level}); whether by more than ±{sesoi:g} "
                "is not decided")
    return f"typical seed: not decided (largest c = {sized(size)}, {level}; SESOI ±{sesoi:g})"


def failure_part(counts: Dict[float, rates.Count], upper: Dict[float, float], p_bounded: Dict[float, float],
                 margin: float, alpha: float, failing: List) -> str:
    """One sentence on the failed runs: counts, each value's (1 − α) upper bound, and what it excludes."""
    if failing:
        a, b, p_fail = min(failing, key=lambda t: t[2])
        return f"failures: {a:g} vs {b:g} fail at different rates ({counts[a]} vs {counts[b]}, Fisher exact p = {p(p_fail)})"
    values = sorted(p_bounded)
    shown = ", ".join(f"{v:g}: {counts[v]}" for v in values)
    worst = max(values, key=lambda v: upper[v]) if values else None
    if worst is None:
        return ""
    bound = upper[worst]
    level = f"{1 - alpha:.0%} bound"
    if all(p_bounded[v] < alpha for v in values):
        return (f"failures: every value's rate shown below the margin {margin:.0%} ({shown}); failures rarer than "
                f"{bound:.0%} not excluded ({counts[worst]}, {level})")
    return (f"failures: not every value's rate shown below the margin {margin:.0%} ({shown}); failures up to "
            f"{bound:.0%} not excluded ({counts[worst]} at {worst:g}, {level})")


class OpenSeeds:
    """Seeds per value that would decide what a verdict leaves open, at the power target."""

    def __init__(self, pairs: List, counts: Dict[float, rates.Count], sesoi: float, alpha: float, power: float,
                 margin: float):
        self.pairs, self.counts, self.sesoi, self.alpha, self.power, self.margin = (pairs, counts, sesoi, alpha,
                                                                                   power, margin)
        noisiest = max(pairs, key=lambda q: q.estimate.sd_unit)
        self.sd, self.paired = noisiest.estimate.sd_unit, noisiest.estimate.paired

    def failures(self) -> Optional[int]:
        """Runs per value that show every value's failure rate below the margin, at the rate seen so far."""
        needed = []
        for count in self.counts.values():
            rate = count.events / count.runs if count.runs else 0.0
            needed.append(rates.runs_to_show_below_at(rate, self.margin, self.alpha))
        return None if None in needed else max(needed, default=None)

    def tost(self) -> Optional[int]:
        return inference.seeds_needed(self.sd, self.sesoi, self.alpha, 1.0 - (1.0 - self.power) / 2.0, self.paired)

    def insensitive(self) -> Optional[int]:
        both = [self.tost(), self.failures()]
        return None if None in both else max(both)

    def sensitive(self) -> Optional[int]:
        """To detect a difference of the SESOI in a pair, after Holm over the 2m tests."""
        return inference.seeds_needed(self.sd, self.sesoi, self.alpha / (2.0 * len(self.pairs)), self.power,
                                      self.paired)

    def size(self, pair, bounded: bool) -> Optional[int]:
        """To decide whether a shown difference exceeds the SESOI: the power to tell the observed |c| from the
        SESOI (each side at α/2m, as Holm's first step), and the failure bound when it is still open."""
        gap = max(abs(abs(pair.estimate.value) - self.sesoi), self.sesoi / 10.0)
        n = inference.seeds_needed(pair.estimate.sd_unit, gap, self.alpha / (2.0 * len(self.pairs)), self.power,
                                   pair.estimate.paired)
        if bounded or n is None:
            return n
        fail = self.failures()
        return None if fail is None else max(n, fail)
