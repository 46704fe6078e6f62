"""Does a threshold (δ, ε, α …) matter? A decision on the outcomes of one objective run at several values of
its threshold, on the statistics core (`inference.py`).

Every pair of threshold values gives a contrast c = mean(a) − mean(b), paired over the seeds both share
(else Welch). Three one-sided questions per pair at level α:

  beyond       |c| > SESOI  (each side at α/2): the threshold moves the outcome by more than matters,
  differs      c ≠ 0        (each side at α/2): it moves the outcome by some amount,
  equivalent   |c| < SESOI  (two one-sided tests, TOST).

Verdict over the m pairs: **sensitive** if some pair's `beyond` survives Holm's correction over the pairs;
else **insensitive** if every pair is shown equivalent (an intersection–union test: each pair at α, no
correction needed); else **sensitive (size undecided)** if some pair's `differs` survives Holm (a difference
is shown, whether it exceeds the SESOI is not); else **undecided**, with the seeds per value the noisiest
pair needs for 80% power on each question. A pair whose per-seed differences have no spread (ties), or
with too few seeds for α (2^−n ≥ α, see inference.Estimate.untestable), shows nothing either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Dict, List, Optional

from harness.stats import inference

SENSITIVE, INSENSITIVE, DIFFERS, UNDECIDED = "sensitive", "insensitive", "sensitive (size undecided)", "undecided"
DEFAULT_SESOI = 0.05  # accuracy: five problems in a hundred


@dataclass(frozen=True)
class Pair:
    a: float
    b: float
    estimate: inference.Estimate
    low: float
    high: float
    p_equivalent: float
    p_differs: float
    p_beyond: float


@dataclass(frozen=True)
class ThresholdVerdict:
    word: str
    reason: str
    pairs: List[Pair]
    seeds_for_insensitive: Optional[int]  # per value, for the TOST of the noisiest pair (true difference 0)
    seeds_for_sensitive: Optional[int]  # per value, to detect a difference of SESOI in that pair after Holm
    seeds: int  # fewest seeds any value has

    @property
    def decided(self) -> bool:
        return self.word != UNDECIDED


def decide(by_value: Dict[float, Dict[object, float]], sesoi: float = DEFAULT_SESOI, alpha: float = 0.05,
           power: float = 0.8, bounds=(0.0, 1.0)) -> ThresholdVerdict:
    """by_value: {threshold value: {seed: outcome}}. Values with < 2 seeds take no part."""
    usable = {v: seeds for v, seeds in by_value.items() if len(seeds) >= 2}
    fewest = min((len(s) for s in by_value.values()), default=0)
    if len(usable) < 2:
        return ThresholdVerdict(UNDECIDED, "fewer than 2 threshold values with ≥ 2 finished seeds: no test",
                                [], None, None, fewest)
    width = (bounds[1] - bounds[0]) if None not in bounds else None
    pairs, untestable = [], []
    for a, b in combinations(sorted(usable), 2):
        est = inference.estimate([usable[a], usable[b]], [1.0, -1.0])
        low, high = est.interval(alpha, (-width, width) if width is not None else (None, None))
        why = est.untestable(alpha)
        if why:  # no spread, or too few seeds: this pair shows nothing either way
            untestable.append(f"{a:g} vs {b:g}: {why}")
            pairs.append(Pair(a, b, est, low, high, 1.0, 1.0, 1.0))
            continue
        pairs.append(Pair(a, b, est, low, high,
                          p_equivalent=max(est.p_above(-sesoi), est.p_below(sesoi)),
                          p_differs=min(1.0, 2.0 * min(est.p_above(0.0), est.p_below(0.0))),
                          p_beyond=min(1.0, 2.0 * min(est.p_above(sesoi), est.p_below(-sesoi)))))
    m = len(pairs)
    noisiest = max(pairs, key=lambda p: p.estimate.sd_unit)
    sd, paired = noisiest.estimate.sd_unit, noisiest.estimate.paired
    for_insensitive = inference.seeds_needed(sd, sesoi, alpha, 1.0 - (1.0 - power) / 2.0, paired)
    for_sensitive = inference.seeds_needed(sd, sesoi, alpha / (2.0 * m), power, paired)
    facts = f"{m} pair{'s' if m > 1 else ''} of values, SESOI ±{sesoi:g}, α {alpha:g}"
    beyond = [p for p, r in zip(pairs, inference.holm([p.p_beyond for p in pairs], alpha)) if r]
    if beyond:
        top = max(beyond, key=lambda p: abs(p.estimate.value))
        return ThresholdVerdict(SENSITIVE, f"{_pair(top)} differ by more than the SESOI (|c| > {sesoi:g}, "
                                f"p = {_p(top.p_beyond)}, Holm over {facts})", pairs, for_insensitive,
                                for_sensitive, fewest)
    if all(p.p_equivalent < alpha for p in pairs):
        worst = max(pairs, key=lambda p: p.p_equivalent)
        return ThresholdVerdict(INSENSITIVE, f"every pair within ±{sesoi:g} (TOST, largest p = "
                                f"{_p(worst.p_equivalent)} for {_pair(worst)}; {facts})", pairs, for_insensitive,
                                for_sensitive, fewest)
    differs = [p for p, r in zip(pairs, inference.holm([p.p_differs for p in pairs], alpha)) if r]
    if differs:
        top = max(differs, key=lambda p: abs(p.estimate.value))
        return ThresholdVerdict(DIFFERS, f"{_pair(top)} differ (c = {top.estimate.value:+.3f}, p = "
                                f"{_p(top.p_differs)}, Holm over {facts}); whether by more than the SESOI is not "
                                "decided", pairs, for_insensitive, for_sensitive, fewest)
    untested = f"; not testable: {'; '.join(untestable)}" if untestable else ""
    return ThresholdVerdict(UNDECIDED, f"no pair shown to differ and not every pair shown within ±{sesoi:g} ({facts})"
                            + untested, pairs, for_insensitive, for_sensitive, fewest)


def _pair(p: Pair) -> str:
    return f"{p.a:g} vs {p.b:g}"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"

