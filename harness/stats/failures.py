"""Failed runs at any start level: a run failed when it collapsed (stats/collapse.py: it ended below its own
start, or its loss went non-finite) or when it did not learn: its gain (final accuracy minus its own first
evaluation) stayed below `FAIL_SHARE` of the typical gain, the median gain of every run of the objective in
the study, whatever value of the threshold they ran at (so the rule is the same for every value, and a
threshold value with no effect has the same chance of a false flag as any other).

Why relative to the run's own start and the typical gain: a run that starts at 0.35 and stays there has lost
everything training gives (0.3 points in the default regime) without ever dropping below its start, which the
collapse detector alone cannot see; a fixed accuracy bar would mean something else at every start level. When
the typical run gains less than `MIN_TYPICAL_GAIN` (nothing learns), "did not learn" cannot be told from a
typical run, and only collapses count.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional

import numpy as np

FAIL_SHARE = 0.25  # a run that gained less than a quarter of the typical gain did not learn
MIN_TYPICAL_GAIN = 0.05  # below it (five problems in a hundred) no run is said not to have learnt

RULE = (f"a run failed if it collapsed (ended below its own start, or a non-finite loss: "
        f"harness/stats/collapse.py) or did not learn: its gain over its own first evaluation stayed below "
        f"{FAIL_SHARE:.0%} of the median gain of all the objective's runs (every threshold value pooled; only "
        f"when that median is at least {MIN_TYPICAL_GAIN:g}) (harness/stats/failures.py)")


def typical_gain(gains: Mapping[object, Mapping[object, float]]) -> Optional[float]:
    """The median gain over every run of every value, or None without runs."""
    pooled = [g for seeds in gains.values() for g in seeds.values() if np.isfinite(g)]
    return float(np.median(pooled)) if pooled else None


def gain_bar(gains: Mapping[object, Mapping[object, float]], share: float = FAIL_SHARE) -> Optional[float]:
    """The gain below which a run did not learn, or None when the typical run does not learn either."""
    typical = typical_gain(gains)
    if typical is None or typical < MIN_TYPICAL_GAIN:
        return None
    return share * typical


def flags(gains: Mapping[object, Mapping[object, float]],
          collapsed: Optional[Mapping[object, Mapping[object, bool]]] = None,
          share: float = FAIL_SHARE) -> Dict[object, Dict[object, bool]]:
    """{value: {seed: failed?}} over every run either map names: collapsed, or gained less than the bar."""
    bar = gain_bar(gains, share)
    out: Dict[object, Dict[object, bool]] = {}
    for value in set(gains) | set(collapsed or {}):
        seeds = dict.fromkeys(gains.get(value, {}), False)
        for seed, gain in gains.get(value, {}).items():
            seeds[seed] = bar is not None and bool(gain < bar)
        for seed, c in (collapsed or {}).get(value, {}).items():
            seeds[seed] = seeds.get(seed, False) or bool(c)
        out[value] = seeds
    return out
