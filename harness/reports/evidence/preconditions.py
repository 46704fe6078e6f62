"""Regime checks that gate a claim's verdict (`preconditions:` in a sweep file, see design.py).

A claim can only be tested where its cause is present (e.g. a mismatch of LLM-like size), its control arm is
stable and its mechanism measurable. Each precondition is a measure, an arm and a threshold, and it passes on
a confidence bound, not a point estimate: the one-sided (1 − GATE_LEVEL) bound on the arm's seeds must meet
the threshold (at_least: the lower bound ≥ it; at_most: the upper bound ≤ it), so a gate that passes has
shown its regime, not guessed it. The bound is the exact Clopper–Pearson bound of the rate for a 0/1 measure
(collapsed, runaway), else the distribution-free order-statistic bound of the median seed (a sign test: it
holds under right tails and collapse mixtures, where a t-bound of a mean does not). Too few seeds for any
bound fail the gate. A precondition is never the claim's own outcome (a gate on it would turn a failed effect
into "not testable" instead of "not reproduced"). A failed or unmeasured precondition makes the verdict
**not testable here**, naming the check, the mean and the bound measured; the declared tests are then not
read, so a regime that cannot show the effect yields no "reproduced" or "not reproduced".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from scipy import stats

from harness.reports.evidence.arms import matches, selector_text
from harness.reports.evidence.design import BINARY
from harness.reports.results.data import SweepData, fmt
from harness.reports.evidence.outcomes import measure, per_seed

LOWPROB_ADMISSION = 0.15  # share of sampled tokens with ν < 0.2 a low-probability regime needs at its start
GATE_LEVEL = 0.05  # one-sided: a gate passes on the 95% bound


def bound(values: Sequence[float], measure: str, lower: bool, level: float = GATE_LEVEL) -> float:
    """One-sided (1 − level) bound: lower (or upper) Clopper–Pearson bound of a 0/1 measure's rate, else the
    order-statistic bound of the median (x_(r), r the largest rank with P(Binomial(n, ½) ≤ r − 1) ≤ level).
    −inf (lower) / +inf (upper) when the seeds are too few for any bound."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = len(x)
    if not n:
        return -math.inf if lower else math.inf
    if measure in BINARY:
        k = int(round(x.sum()))
        if lower:
            return 0.0 if k == 0 else float(stats.beta.ppf(level, k, n - k + 1))
        return 1.0 if k == n else float(stats.beta.ppf(1 - level, k + 1, n - k))
    ranks = [r for r in range(1, n + 1) if stats.binom.cdf(r - 1, n, 0.5) <= level]
    if not ranks:
        return -math.inf if lower else math.inf
    return float(x[ranks[-1] - 1] if lower else x[n - ranks[-1]])


@dataclass(frozen=True)
class Checked:
    condition: object  # design.Precondition
    value: Optional[float]  # mean over seeds; None: not measured
    seeds: int
    limit: Optional[float] = None  # the one-sided bound the gate is read on (None: not measured)

    @property
    def passed(self) -> bool:
        c = self.condition
        if self.limit is None or not np.isfinite(self.limit):
            return False
        return self.limit >= c.at_least if c.at_least is not None else self.limit <= c.at_most

    @property
    def bound_name(self) -> str:
        side = "lower" if self.condition.at_least is not None else "upper"
        what = "rate (Clopper–Pearson)" if self.condition.measure in BINARY else "median seed (sign test)"
        return f"one-sided {1 - GATE_LEVEL:.0%} {side} bound of the {what}"

    @property
    def text(self) -> str:
        c = self.condition
        where = f" in [{selector_text(c.arm)}]" if c.arm else ""
        if self.value is None:
            return f"{c.name}: {c.measure}{where} was not measured (no run logged it); needs {c.rule}"
        shown = fmt(self.limit, 4) if np.isfinite(self.limit) else "none (too few seeds)"
        unit = "runs" if c.measure in BINARY else "seeds"
        return (f"{c.name}: {c.measure}{where} measured {fmt(self.value, 4)} (mean over {self.seeds} {unit}), "
                f"{self.bound_name} {shown}; the bound needs {c.rule}")


def check(data: SweepData, conditions: Sequence, last_k: int) -> List[Checked]:
    out = []
    for c in conditions:
        runs = [r for r in data.runs if matches(r, c.arm)]
        if c.measure in BINARY:  # a rate over runs (two arms of one seed are two runs)
            found = (measure(c.measure).compute(data, r, last_k) for r in runs)
            values = [float(v) for v in found if v is not None and np.isfinite(v)]
        else:
            values = list(per_seed(data, runs, c.measure, last_k).values())
        if not values:
            out.append(Checked(c, None, 0))
            continue
        out.append(Checked(c, float(np.mean(values)), len(values), bound(values, c.measure, c.at_least is not None)))
    return out


def failed(checked: Sequence[Checked]) -> Optional[str]:
    """The verdict's reason when some precondition fails (every failed one named), else None."""
    bad = [c for c in checked if not c.passed]
    return None if not bad else "precondition failed: " + "; ".join(c.text for c in bad)


def lowprob_share(data: SweepData, runs: Sequence) -> Tuple[Optional[float], int]:
    """Is this a low-probability regime (the claims about tokens with ν < 0.2)? The share of sampled tokens with
    ν < 0.2 over the first 10% of steps, mean over seeds (None: no run logged it), and the seeds measured;
    admitted at ≥ LOWPROB_ADMISSION."""
    values = list(per_seed(data, runs, "lowprob_share").values())
    return (float(np.mean(values)) if values else None), len(values)
