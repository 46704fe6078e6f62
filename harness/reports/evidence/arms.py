"""Arms of a sweep: the runs an arm selector ("key=value,key=value", parsed by config/selectors.py) picks."""
from __future__ import annotations

import numpy as np

from harness.reports.results.data import Run


def matches(run: Run, selector) -> bool:
    for key, wanted in selector:
        have = run.param(key)
        if key == "algo.name":
            have = run.objective
        if key == "precision.name":
            have = run.precision
        if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and isinstance(have, (int, float)):
            if not np.isclose(float(have), float(wanted)):
                return False
        elif str(have) != str(wanted):
            return False
    return True


def selector_text(selector) -> str:
    return ",".join(f"{k.replace('algo.name', 'algo').replace('precision.name', 'precision')}={v}"
                    for k, v in selector)


def exchangeable(test) -> bool:
    """Is "c = 0" the null that the arms do not differ (weights summing to 0, no offset)? Then the exact
    method may use the sign-flip test."""
    return abs(sum(w for _, w in test.contrast)) < 1e-12 and test.offset == 0


def contrast_bounds(bounds, weights, offset):
    """Range of Σ w·mean − offset when each mean lies in `bounds` (None where unbounded)."""
    low = high = -offset
    for w in weights:
        lo, hi = bounds
        ends = [w * lo if lo is not None else None, w * hi if hi is not None else None]
        if w < 0:
            ends.reverse()
        low = None if low is None or ends[0] is None else low + ends[0]
        high = None if high is None or ends[1] is None else high + ends[1]
    return low, high
