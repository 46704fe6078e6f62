"""Per-run key numbers every report shares: final/best eval accuracy, collapse, last step, and how runs
group into variants (objective + the sweep axes other than the ones a report compares)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.reports.results.data import EVAL, Run, SweepData, fmt
from harness.reports.results.thresholds import SYMBOLS
from harness.stats.collapse import EVAL_WINDOW, Collapse, detect_collapse

VARIANT_SYMBOLS = {**SYMBOLS, "relax_alpha": "α"}  # as run names write them (harness.tracking.ui)
LAST_K = EVAL_WINDOW  # evaluations averaged into a run's final accuracy (one evaluation is too noisy)


@dataclass(frozen=True)
class RunSummary:
    final_acc: Optional[float]  # mean of the last LAST_K eval accuracies of a FINISHED run (None otherwise)
    best_acc: Optional[float]  # best eval accuracy logged (any status)
    last_acc: Optional[float]  # last eval accuracy logged (any status)
    collapse: Optional[Collapse]
    last_step: Optional[int]


def summarize(data: SweepData, run: Run) -> RunSummary:
    cache = data.cache.setdefault("summaries", {})
    if run.run_id not in cache:
        last = data.last(run, EVAL)
        values = data.curve(run, EVAL)[1]
        values = values[np.isfinite(values)]
        final = float(values[-LAST_K:].mean()) if run.status == "FINISHED" and len(values) else None
        collapse = detect_collapse(eval_acc=data.curve(run, EVAL), train_acc=data.curve(run, "train/accuracy"),
                                   loss=data.curve(run, "train/loss"), status=run.status, error=run.error,
                                   eval_resolution=eval_problem(run) or 0.0)
        cache[run.run_id] = RunSummary(final, data.best(run, EVAL), last,
                                       collapse, data.last_step(run))
    return cache[run.run_id]


def eval_problem(run: Run) -> Optional[float]:
    """One eval problem's worth of the run's eval accuracy, 1 / dataset.eval_size, for the built-in trainer
    (one answer per problem); None where unknown (verl averages k samples over several eval sets)."""
    size = run.param("dataset.eval_size")
    if run.param("trainer.name") != "builtin" or not isinstance(size, int) or size < 1:
        return None
    return 1.0 / size


def short_key(key: str) -> str:
    return key.split(".", 1)[1] if key.startswith("algo.") else key


def axis_name(key: str) -> str:
    """A sweep axis as a label names it: a threshold by its symbol (`algo.delta` -> δ), else its short key."""
    short = short_key(key)
    if key.startswith("algo.") and short in VARIANT_SYMBOLS:
        return VARIANT_SYMBOLS[short]
    return "precision" if key == "precision.name" else short


def variants(data: SweepData, runs: Sequence[Run], compare: Sequence[str]) -> Dict[Tuple[str, str], List[Run]]:
    """Group runs by objective and every other sweep axis except `compare` (and seeds).

    Returns {(objective, label): runs}; label is e.g. 'dppo', 'dppo δ=0.1' or 'dppo δ=0.1 precision=bf16'
    (thresholds by their symbol, as in run names). The axes are found per objective, so a parameter only one
    objective has (dppo's divergence) does not split others.
    """
    out: Dict[Tuple[str, str], List[Run]] = {}
    by_objective: Dict[str, List[Run]] = {}
    for run in runs:
        by_objective.setdefault(run.objective, []).append(run)
    for objective, members in by_objective.items():
        axes = [k for k in data.factors(members, exclude=list(compare) + ["algo.name"])]
        for run in members:
            parts = [f"{axis_name(k)}={fmt(run.param(k))}" for k in axes]
            out.setdefault((objective, " ".join([objective] + parts)), []).append(run)
    return dict(sorted(out.items()))


def window_mean(values: np.ndarray, first: bool, frac: float = 0.1) -> Optional[float]:
    """Mean of the first (or last) `frac` of a history (at least one point); None if empty."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    k = max(1, int(round(len(v) * frac)))
    return float(v[:k].mean() if first else v[-k:].mean())
