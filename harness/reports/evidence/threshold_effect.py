"""Does a threshold (δ, ε, α …) matter? A decision on the outcomes of one objective run at several values of
its threshold, on the statistics core (harness/stats/: `inference.py`, `rates.py`).

Every pair of threshold values gives a contrast c = mean(a) − mean(b), paired over the seeds both share
(else Welch). Three one-sided questions per pair at level α:

  beyond       |c| > SESOI  (each side at α/2): the threshold moves the outcome by more than matters,
  differs      c ≠ 0        (each side at α/2): it moves the outcome by some amount,
  equivalent   |c| < SESOI  (two one-sided tests, TOST),

and two on collapses (runs that ended far below their start, `stats/collapse.py`), exact on the counts:

  collapse differs     the pair's collapse rates differ (Fisher's exact test, two-sided),
  collapse bounded     each value's collapse rate is below SESOI / depth (exact binomial test), where depth
                       is the mean outcome of the runs that did not collapse: the most a collapse can take
                       from a run. A rarer collapse cannot move a mean by the SESOI, whatever its timing.

Verdict over the m pairs: **sensitive** if some pair's `beyond` or `collapse differs` survives Holm's
correction over all 2m of them; else **insensitive** if every pair is shown equivalent and every value's
collapse rate is shown bounded (an intersection–union test: each at α, no correction needed); else
**sensitive (size undecided)** if some pair's `differs` survives Holm; else **undecided**, with the seeds per
value that deciding needs. Why the collapse bound: a t-TOST on the mean is blind to a collapse that a few
seeds did not happen to show (with 8 seeds, a δ that collapses in 15% of runs shows none 27% of the time),
so without it "insensitive" would be said far more often than α when one δ collapses now and then.

A pair whose per-seed differences have no spread (ties), or with too few seeds for α (2^−n ≥ α, see
inference.Estimate.untestable), shows nothing either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Dict, List, Mapping, Optional

import numpy as np

from harness.stats import inference, rates

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
    p_collapse_differs: float = 1.0


@dataclass(frozen=True)
class ThresholdVerdict:
    word: str
    reason: str
    pairs: List[Pair]
    seeds_for_insensitive: Optional[int]  # per value: the TOST of the noisiest pair and the collapse bound
    seeds_for_sensitive: Optional[int]  # per value, to detect a difference of SESOI in that pair after Holm
    seeds: int  # fewest seeds any value has
    collapses: Dict[float, rates.Count] = None  # per value: collapsed runs of those judged
    collapse_bound: Optional[float] = None  # the collapse rate each value must be shown below
    p_collapse_bounded: Dict[float, float] = None  # per value

    @property
    def decided(self) -> bool:
        return self.word != UNDECIDED


def decide(by_value: Dict[float, Dict[object, float]], sesoi: float = DEFAULT_SESOI, alpha: float = 0.05,
           power: float = 0.8, bounds=(0.0, 1.0),
           collapsed: Optional[Mapping[float, Mapping[object, bool]]] = None,
           resolution: float = 0.0) -> ThresholdVerdict:
    """by_value: {threshold value: {seed: outcome}}; values with < 2 seeds take no part in the contrasts.
    collapsed: {threshold value: {seed: collapsed?}} over the runs judged (a run that failed on a non-finite
    loss has no outcome but did collapse); a seed missing there counts as an outcome that did not collapse."""
    counts = _collapse_counts(by_value, collapsed or {})
    usable = {v: seeds for v, seeds in by_value.items() if len(seeds) >= 2}
    fewest = min((len(s) for s in by_value.values()), default=0)
    if len(usable) < 2:
        return ThresholdVerdict(UNDECIDED, "fewer than 2 threshold values with ≥ 2 finished seeds: no test",
                                [], None, None, fewest, counts)
    width = (bounds[1] - bounds[0]) if None not in bounds else None
    pairs, untestable = [], []
    for a, b in combinations(sorted(usable), 2):
        est = inference.estimate([usable[a], usable[b]], [1.0, -1.0], resolution=resolution)
        low, high = est.interval(alpha, (-width, width) if width is not None else (None, None))
        p_collapse = rates.p_differ(counts[a], counts[b])
        why = est.untestable(alpha)
        if why:  # no spread, or too few seeds: this pair's contrast shows nothing either way
            untestable.append(f"{a:g} vs {b:g}: {why}")
            pairs.append(Pair(a, b, est, low, high, 1.0, 1.0, 1.0, p_collapse))
            continue
        pairs.append(Pair(a, b, est, low, high,
                          p_equivalent=max(est.p_above(-sesoi), est.p_below(sesoi)),
                          p_differs=min(1.0, 2.0 * min(est.p_above(0.0), est.p_below(0.0))),
                          p_beyond=min(1.0, 2.0 * min(est.p_above(sesoi), est.p_below(-sesoi))),
                          p_collapse_differs=p_collapse))
    bound = _collapse_bound(by_value, collapsed or {}, sesoi, bounds)
    p_bounded = {v: rates.p_below(counts[v], bound) for v in usable}
    m = len(pairs)
    noisiest = max(pairs, key=lambda p: p.estimate.sd_unit)
    sd, paired = noisiest.estimate.sd_unit, noisiest.estimate.paired
    for_tost = inference.seeds_needed(sd, sesoi, alpha, 1.0 - (1.0 - power) / 2.0, paired)
    for_insensitive = None if for_tost is None else max(for_tost, rates.runs_to_show_below(bound, alpha))
    for_sensitive = inference.seeds_needed(sd, sesoi, alpha / (2.0 * m), power, paired)
    facts = f"{m} pair{'s' if m > 1 else ''} of values, SESOI ±{sesoi:g}, α {alpha:g}"
    made = dict(pairs=pairs, seeds_for_insensitive=for_insensitive, seeds_for_sensitive=for_sensitive,
                seeds=fewest, collapses=counts, collapse_bound=bound, p_collapse_bounded=p_bounded)
    shown = inference.holm([p.p_beyond for p in pairs] + [p.p_collapse_differs for p in pairs], alpha)
    beyond = [p for p, r in zip(pairs, shown[:m]) if r]
    if beyond:
        top = max(beyond, key=lambda p: abs(p.estimate.value))
        return ThresholdVerdict(SENSITIVE, f"{_pair(top)} differ by more than the SESOI (|c| > {sesoi:g}, "
                                f"p = {_p(top.p_beyond)}, Holm over {facts} and their collapse rates)", **made)
    collapsing = [p for p, r in zip(pairs, shown[m:]) if r]
    if collapsing:
        top = min(collapsing, key=lambda p: p.p_collapse_differs)
        return ThresholdVerdict(SENSITIVE, f"{_pair(top)} collapse at different rates ({counts[top.a]} vs "
                                f"{counts[top.b]} runs, Fisher exact p = {_p(top.p_collapse_differs)}, Holm over "
                                f"{facts} and their collapse rates)", **made)
    if all(p.p_equivalent < alpha for p in pairs) and all(p < alpha for p in p_bounded.values()):
        worst = max(pairs, key=lambda p: p.p_equivalent)
        return ThresholdVerdict(INSENSITIVE, f"every pair within ±{sesoi:g} (TOST, largest p = "
                                f"{_p(worst.p_equivalent)} for {_pair(worst)}) and every value's collapse rate "
                                f"below {bound:.3g} (exact, largest p = {_p(max(p_bounded.values()))}; {facts})",
                                **made)
    differs = [p for p, r in zip(pairs, inference.holm([p.p_differs for p in pairs], alpha)) if r]
    if differs:
        top = max(differs, key=lambda p: abs(p.estimate.value))
        return ThresholdVerdict(DIFFERS, f"{_pair(top)} differ (c = {top.estimate.value:+.3f}, p = "
                                f"{_p(top.p_differs)}, Holm over {facts}); whether by more than the SESOI is not "
                                "decided", **made)
    untested = f"; not testable: {'; '.join(untestable)}" if untestable else ""
    unbounded = [v for v, p in p_bounded.items() if p >= alpha]
    rare = (f"; collapse rate not shown below {bound:.3g} for {', '.join(f'{v:g}' for v in sorted(unbounded))} "
            f"({', '.join(str(counts[v]) for v in sorted(unbounded))} collapsed)") if unbounded else ""
    return ThresholdVerdict(UNDECIDED, f"no pair shown to differ and not every pair shown within ±{sesoi:g} ({facts})"
                            + rare + untested, **made)


def _collapse_counts(by_value, collapsed) -> Dict[float, rates.Count]:
    counts = {}
    for value in set(by_value) | set(collapsed):
        flags = {seed: False for seed in by_value.get(value, {})}
        flags.update({seed: bool(c) for seed, c in collapsed.get(value, {}).items()})
        counts[value] = rates.Count(sum(flags.values()), len(flags))
    return counts


def _collapse_bound(by_value, collapsed, sesoi: float, bounds) -> float:
    """SESOI / depth: the collapse rate below which collapses cannot move a value's mean by the SESOI."""
    kept = [x for v, seeds in by_value.items() for s, x in seeds.items() if not collapsed.get(v, {}).get(s, False)]
    floor = bounds[0] if bounds[0] is not None else min(kept, default=0.0)
    depth = float(np.mean(kept)) - floor if kept else 0.0
    return 1.0 if depth <= sesoi else sesoi / depth


def _pair(p: Pair) -> str:
    return f"{p.a:g} vs {p.b:g}"


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"
