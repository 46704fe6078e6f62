"""Regime checks that gate a claim's verdict (`preconditions:` in a sweep file, see design.py).

A claim can only be tested where its cause is present (e.g. a mismatch of LLM-like size), its control arm is
stable and its mechanism measurable. Each precondition is a measure, an arm and a threshold: the mean over
the arm's seeds of the per-run measure must meet it. A failed or unmeasured precondition makes the verdict
**not testable here**, naming the check and the value measured; the declared tests are then not read, so a
regime that cannot show the effect yields no "reproduced" or "not reproduced".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from harness.reports.evidence.arms import matches, selector_text
from harness.reports.results.data import SweepData, fmt
from harness.reports.evidence.outcomes import per_seed

LOWPROB_ADMISSION = 0.15  # share of sampled tokens with ν < 0.2 a low-probability regime needs at its start


@dataclass(frozen=True)
class Checked:
    condition: object  # design.Precondition
    value: Optional[float]  # mean over seeds; None: not measured
    seeds: int

    @property
    def passed(self) -> bool:
        c = self.condition
        if self.value is None:
            return False
        return self.value >= c.at_least if c.at_least is not None else self.value <= c.at_most

    @property
    def text(self) -> str:
        c = self.condition
        where = f" in [{selector_text(c.arm)}]" if c.arm else ""
        if self.value is None:
            return f"{c.name}: {c.measure}{where} was not measured (no run logged it); needs {c.rule}"
        return (f"{c.name}: {c.measure}{where} measured {fmt(self.value, 4)} (mean over {self.seeds} seeds), "
                f"needs {c.rule}")


def check(data: SweepData, conditions: Sequence, last_k: int) -> List[Checked]:
    out = []
    for c in conditions:
        runs = [r for r in data.runs if matches(r, c.arm)]
        values = list(per_seed(data, runs, c.measure, last_k).values())
        out.append(Checked(c, float(np.mean(values)) if values else None, len(values)))
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
