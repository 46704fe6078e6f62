"""What a threshold did in the runs a sensitivity verdict reads: the share of tokens the objective stopped
pushing, its gradient weights, the rollout's mismatch and the runs that collapsed, per threshold value; and
the lines that say when a verdict says little (a threshold that barely acts, a rollout without mismatch, a
value far from the objective's paper scale)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from harness.reports.results.data import Run, SweepData, fmt
from harness.reports.evidence.outcomes import whole_mean
from harness.reports.results.summary import summarize
from harness.reports.results.thresholds import default_threshold

MASKED, MISMATCH = "objective/masked_frac", "train/mismatch"
WEIGHT_MEAN, WEIGHT_MIN, WEIGHT_MAX = "objective/weight_mean", "objective/weight_min", "objective/weight_max"
BINDS = 0.01  # a threshold that stops pushing fewer tokens than this over training barely acts
REAL_MISMATCH = 1e-4  # mean |μ − π'| below this is float noise (fp32 rollout ~1e-8; a bf16 rollout ~1e-3)
OFF_SCALE = 5.0  # a value more than this factor from the paper's default is off its scale


@dataclass(frozen=True)
class Action:
    value: float
    runs: int
    masked: Optional[float]  # mean over runs of the mean over training steps
    weight_mean: Optional[float]
    weight_low: Optional[float]  # mean over runs of the mean per-step smallest weight
    weight_high: Optional[float]
    mismatch: Optional[float]
    collapsed: int
    judged: int  # the runs a collapse rate counts (finished, or collapsed before they ended)


def actions(data: SweepData, by_value: Dict[float, List[Run]]) -> List[Action]:
    """Per value; its collapse count is the one the verdict uses (`collapses`), so the two never disagree."""
    flags = collapses(data, by_value)
    return [Action(value, len(runs), _mean_of(data, runs, MASKED), _mean_of(data, runs, WEIGHT_MEAN),
                   _mean_of(data, runs, WEIGHT_MIN), _mean_of(data, runs, WEIGHT_MAX), _mean_of(data, runs, MISMATCH),
                   sum(flags.get(value, {}).values()), len(flags.get(value, {})))
            for value, runs in sorted(by_value.items())]


def row(name: str, symbol: str, action: Action) -> list:
    weights = (None if action.weight_low is None else
               f"{action.weight_mean:.3f} [{action.weight_low:.3f}, {action.weight_high:.3f}]")
    return [name, f"{symbol}={fmt(action.value)}", action.runs, _share(action.masked), weights,
            None if action.mismatch is None else f"{action.mismatch:.2g}", f"{action.collapsed}/{action.judged}"]


HEADER = ["variant", "threshold", "runs", "tokens masked (mean over training)",
          "gradient weight: mean [per-step min, max]", "mismatch |μ − π'|",
          "collapsed (of the runs finished or collapsed)"]


def caveats(objective: str, name: str, symbol: str, acts: Sequence[Action]) -> List[str]:
    """Lines that say what the verdict cannot mean in these runs."""
    lines = []
    weak = [a for a in acts if a.masked is not None and a.masked < BINDS]
    if weak:
        lines.append(f"{name}: at {', '.join(f'{symbol}={fmt(a.value)} ({_share(a.masked)})' for a in weak)} the "
                     f"objective stopped pushing fewer than {BINDS:.0%} of tokens: the threshold barely acts there, "
                     "so an outcome that does not move with it says little about the trust region.")
    mismatch = [a.mismatch for a in acts if a.mismatch is not None]
    if mismatch and max(mismatch) < REAL_MISMATCH:
        lines.append(f"{name}: the rollout's mismatch with the trainer is float noise (mean |μ − π'| ≤ "
                     f"{max(mismatch):.2g}): the threshold acts only on the policy's own staleness; a low-precision "
                     "rollout (precision=bf16) gives every real RL stack's mismatch (~1e-3).")
    paper = default_threshold(objective)
    if isinstance(paper, (int, float)) and paper > 0:
        far = [a.value for a in acts if not 1.0 / OFF_SCALE <= a.value / paper <= OFF_SCALE]
        if far:
            lines.append(f"{name}: {symbol} = {', '.join(fmt(v) for v in far)} is off the paper's scale "
                         f"({symbol} = {fmt(paper)}, the library default; docs/algorithms.md): a different regime "
                         "from the one the paper reports.")
    return lines


def _mean_of(data: SweepData, runs: Sequence[Run], key: str) -> Optional[float]:
    per_run = [m for m in (whole_mean(data, run, key) for run in runs) if m is not None]
    return float(np.mean(per_run)) if per_run else None


def _share(value: Optional[float]) -> Optional[str]:
    return None if value is None else f"{value:.2%}"


def collapses(data: SweepData, by_value: Dict[float, List[Run]]) -> Dict[float, Dict[object, bool]]:
    """{value: {seed: collapsed?}} over the runs a collapse rate counts: finished ones and any that collapsed
    (a run that FAILED on a non-finite loss has no final accuracy but did collapse)."""
    out: Dict[float, Dict[object, bool]] = {}
    for value, runs in by_value.items():
        for run in runs:
            collapsed = summarize(data, run).collapse is not None
            if run.status == "FINISHED" or collapsed:
                out.setdefault(value, {})[run.seed] = collapsed or out.get(value, {}).get(run.seed, False)
    return out
