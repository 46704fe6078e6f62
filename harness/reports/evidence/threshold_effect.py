"""Does a threshold (δ, ε, α …) matter? A decision on the outcomes of one objective run at several values of
its threshold, on the statistics core (harness/stats/: `inference.py`, `rates.py`, `failures.py`).

The estimand has two parts, each with its own declared margin, because a threshold can matter in two ways:

  typical seed   the mean outcome of the runs that did not fail; every pair of values gives a contrast
                 c = mean(a) − mean(b), paired over the seeds that did not fail at either value (else Welch),
  failures       each value's share of failed runs (stats/failures.py: collapsed, or did not learn: gained
                 less than a quarter of the typical gain over the run's own start), exact on the counts.

Per pair at level α: beyond |c| > SESOI and differs c ≠ 0 (each side at α/2), equivalent |c| < SESOI (TOST),
failures differ (Fisher's exact test). Per value: failure rate below the failure margin (exact binomial).

Verdict over the m pairs:
  **sensitive**: some pair's `beyond` or `failures differ` survives Holm over all 2m of them (the size: that
      pair's c with its interval, beyond the SESOI; or the failure counts);
  **sensitive, within the SESOI**: some pair's c ≠ 0 survives Holm, every pair is shown within ±SESOI and every
      value's failure rate below the margin (the size is decided: real, and smaller than matters);
  **insensitive**: every pair shown within ±SESOI and every value's failure rate shown below the margin (an
      intersection–union test: each part at α, no correction);
  **insensitive for the typical seed**: every pair within ±SESOI, but some value's failure rate is not yet shown
      below the margin: the verdict says so, with each value's exact upper bound (split, never hidden);
  **sensitive (size undecided)**: a difference is shown (Holm), its size against the SESOI is not;
  **undecided**: none of these.
`decided` is true only for the first three: sign and size both decided. `seeds_for_insensitive` and
`seeds_for_sensitive` are the seeds per value that would decide what is still open (None when nothing is).
Each part is tested at the α the caller gives, so a sequential study passes each look's share (`alpha=`).

Why two parts: a t-TOST on the mean of all runs is blind to a failure the seeds did not happen to show, and
a failure in the data inflates the spread so much that no mean is shown equivalent with few seeds; a bound on
the failure rate by itself (the earlier rule: below SESOI / depth, 0.077 here) needs 39 seeds with none.
Separated, the typical seed decides with few seeds, and the failure rate is held to its own margin: a value
that fails in `FAILURE_MARGIN` of its seeds or more is called insensitive at most α of the time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Dict, List, Mapping, Optional

from harness.reports.evidence import threshold_plan as plan
from harness.stats import failures, inference, rates

SENSITIVE, INSENSITIVE, DIFFERS, UNDECIDED = "sensitive", "insensitive", "sensitive (size undecided)", "undecided"
SMALL, TYPICAL = "sensitive, within the SESOI", "insensitive for the typical seed"
DECIDED = (SENSITIVE, SMALL, INSENSITIVE)
DEFAULT_SESOI = 0.05  # accuracy: five problems in a hundred
FAILURE_MARGIN = 0.15  # a value whose runs fail this often (one seed in seven) matters, whatever its mean


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
    p_collapse_differs: float = 1.0  # failure rates differ (Fisher); the name kept from the collapse-only rule


@dataclass(frozen=True)
class ThresholdVerdict:
    word: str
    reason: str
    pairs: List[Pair]
    seeds_for_insensitive: Optional[int]  # per value, to decide what is open toward insensitivity
    seeds_for_sensitive: Optional[int]  # per value, to decide what is open toward a difference (or its size)
    seeds: int  # fewest seeds any value has
    collapses: Dict[float, rates.Count] = None  # per value: failed runs of those judged
    collapse_bound: Optional[float] = None  # the failure rate each value must be shown below (the margin)
    p_collapse_bounded: Dict[float, float] = None  # per value
    typical: str = ""  # the typical-seed part, one sentence
    failure: str = ""  # the failure part, one sentence
    failure_upper: Dict[float, float] = field(default_factory=dict)  # per value: (1 − α) upper bound of its rate
    size: Optional[Pair] = None  # the pair whose difference the verdict reports (largest shown, or largest)
    alpha: float = 0.05
    sesoi: float = DEFAULT_SESOI

    @property
    def decided(self) -> bool:
        """Sign and size both decided: sensitive (beyond the SESOI, or failures differ), sensitive within the
        SESOI, or insensitive (typical seed and failure rate)."""
        return self.word in DECIDED

    @property
    def parts(self) -> List[str]:
        return [p for p in (self.typical, self.failure) if p]


def decide(by_value: Dict[float, Dict[object, float]], sesoi: float = DEFAULT_SESOI, alpha: float = 0.05,
           power: float = 0.8, bounds=(0.0, 1.0),
           collapsed: Optional[Mapping[float, Mapping[object, bool]]] = None,
           resolution: float = 0.0, *, gains: Optional[Mapping[float, Mapping[object, float]]] = None,
           failure_margin: float = FAILURE_MARGIN) -> ThresholdVerdict:
    """by_value: {threshold value: {seed: outcome}}; values with < 2 seeds take no part in the contrasts.
    collapsed: {threshold value: {seed: collapsed?}} over the runs judged (a run that failed on a non-finite
    loss has no outcome but did collapse); a seed missing there counts as a run that did not collapse.
    gains: {threshold value: {seed: final − the run's own first evaluation}}: with them a run that did not learn
    fails too (stats/failures.py). alpha: this decision's level (a sequential study's look passes its share)."""
    failed = failures.flags(gains or {}, collapsed or {})
    counts = _counts(by_value, failed)
    kept = {v: {s: x for s, x in seeds.items() if not failed.get(v, {}).get(s, False)} for v, seeds in by_value.items()}
    usable = {v: seeds for v, seeds in kept.items() if len(seeds) >= 2}
    fewest = min((len(s) for s in by_value.values()), default=0)
    upper = {v: rates.upper_bound(c, alpha) for v, c in counts.items()}
    base = dict(seeds=fewest, collapses=counts, collapse_bound=failure_margin, failure_upper=upper, alpha=alpha,
                sesoi=sesoi)
    judged = sorted(v for v, c in counts.items() if c.runs)
    fail_tests = [(a, b, rates.p_differ(counts[a], counts[b])) for a, b in combinations(judged, 2)]
    if len(usable) < 2 and not any(inference.holm([t[2] for t in fail_tests], alpha)):
        return ThresholdVerdict(UNDECIDED, "fewer than 2 threshold values with ≥ 2 finished seeds: no test (runs "
                                "that failed take no part in the contrasts)", [], None, None, **base)
    width = (bounds[1] - bounds[0]) if None not in bounds else None
    pairs, untestable = [], []
    for a, b in combinations(sorted(usable), 2):
        est = inference.estimate([usable[a], usable[b]], [1.0, -1.0], resolution=resolution)
        low, high = est.interval(alpha, (-width, width) if width is not None else (None, None))
        p_fail = rates.p_differ(counts[a], counts[b])
        why = est.untestable(alpha)
        if why:  # no spread, or too few seeds: this pair's contrast shows nothing either way
            untestable.append(f"{a:g} vs {b:g}: {why}")
            pairs.append(Pair(a, b, est, low, high, 1.0, 1.0, 1.0, p_fail))
            continue
        pairs.append(Pair(a, b, est, low, high,
                          p_equivalent=max(est.p_above(-sesoi), est.p_below(sesoi)),
                          p_differs=min(1.0, 2.0 * min(est.p_above(0.0), est.p_below(0.0))),
                          p_beyond=min(1.0, 2.0 * min(est.p_above(sesoi), est.p_below(-sesoi))),
                          p_collapse_differs=p_fail))
    p_bounded = {v: rates.p_below(counts[v], failure_margin) for v in judged}
    m = len(pairs)
    facts = f"{m} pair{'s' if m > 1 else ''} of values, SESOI ±{sesoi:g}, α {alpha:g}"
    shown = inference.holm([p.p_beyond for p in pairs] + [t[2] for t in fail_tests], alpha)
    differs = [p for p, r in zip(pairs, inference.holm([p.p_differs for p in pairs], alpha)) if r]
    within = bool(pairs) and all(p.p_equivalent < alpha for p in pairs)
    bounded = all(p < alpha for p in p_bounded.values())
    beyond = [p for p, r in zip(pairs, shown[:m]) if r]
    failing = [t for t, r in zip(fail_tests, shown[m:]) if r]
    size = max(beyond or differs or pairs, key=lambda p: abs(p.estimate.value)) if pairs else None
    typical = plan.typical_part(pairs, size, sesoi, alpha, within, bool(beyond), bool(differs)) if pairs else ""
    failure = plan.failure_part(counts, upper, p_bounded, failure_margin, alpha, failing)
    made = dict(pairs=pairs, p_collapse_bounded=p_bounded, typical=typical, failure=failure, size=size, **base)
    open_seeds = plan.OpenSeeds(pairs, counts, sesoi, alpha, power, failure_margin) if pairs else None
    if beyond:
        return ThresholdVerdict(SENSITIVE, f"{plan.name(size)} differ by more than the SESOI: c = "
                                f"{plan.sized(size)} (|c| > {sesoi:g}, p = {plan.p(size.p_beyond)}, Holm over "
                                f"{facts} and their failure rates)", seeds_for_insensitive=None,
                                seeds_for_sensitive=None, **made)
    if failing:
        a, b, p_fail = min(failing, key=lambda t: t[2])
        return ThresholdVerdict(SENSITIVE, f"{a:g} vs {b:g} fail at different rates ({counts[a]} vs {counts[b]} "
                                f"runs, Fisher exact p = {plan.p(p_fail)}, Holm over {facts} and their failure "
                                "rates)", seeds_for_insensitive=None, seeds_for_sensitive=None, **made)
    if differs and within and bounded:
        return ThresholdVerdict(SMALL, f"{plan.name(size)} differ (c = {plan.sized(size)}, p = "
                                f"{plan.p(size.p_differs)}, Holm), by less than the SESOI: every pair within "
                                f"±{sesoi:g} (TOST) and every value's failure rate below {failure_margin:g} ({facts})",
                                seeds_for_insensitive=None, seeds_for_sensitive=None, **made)
    if differs:
        return ThresholdVerdict(DIFFERS, f"{plan.name(size)} differ (c = {plan.sized(size)}, p = "
                                f"{plan.p(size.p_differs)}, Holm over {facts}); whether by more than the SESOI is "
                                "not decided" + ("" if bounded else "; failure rates not yet bounded"),
                                seeds_for_insensitive=None, seeds_for_sensitive=open_seeds.size(size, bounded),
                                **made)
    if within and bounded:
        worst = max(pairs, key=lambda p: p.p_equivalent)
        return ThresholdVerdict(INSENSITIVE, f"every pair within ±{sesoi:g} (TOST, largest p = "
                                f"{plan.p(worst.p_equivalent)} for {plan.name(worst)}) and every value's failure "
                                f"rate below {failure_margin:g} (exact, largest p = {plan.p(max(p_bounded.values()))};"
                                f" {facts})", seeds_for_insensitive=None, seeds_for_sensitive=None, **made)
    if within:
        return ThresholdVerdict(TYPICAL, f"every pair within ±{sesoi:g} for the typical seed (TOST), the failure "
                                f"rates not yet shown below the margin {failure_margin:g}",
                                seeds_for_insensitive=open_seeds.failures(), seeds_for_sensitive=None, **made)
    untested = f"; not testable: {'; '.join(untestable)}" if untestable else ""
    return ThresholdVerdict(UNDECIDED, f"no pair shown to differ and not every pair shown within ±{sesoi:g} ({facts})"
                            + ("" if bounded else f"; failure rates not yet shown below {failure_margin:g}") + untested,
                            seeds_for_insensitive=open_seeds.insensitive(), seeds_for_sensitive=open_seeds.sensitive(),
                            **made)


def _counts(by_value, failed) -> Dict[float, rates.Count]:
    counts = {}
    for value in set(by_value) | set(failed):
        flags = {seed: False for seed in by_value.get(value, {})}
        flags.update({seed: bool(c) for seed, c in failed.get(value, {}).items()})
        counts[value] = rates.Count(sum(flags.values()), len(flags))
    return counts
