"""Arms of a sweep: the runs an arm selector ("key=value,key=value", parsed by design.parse_selector) picks."""
from __future__ import annotations

import numpy as np

from harness.reports.data import Run


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
