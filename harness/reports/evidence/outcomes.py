"""Per-run outcomes that tests are declared on (`measure:` in a sweep's `tests:`), each with its range.

Less noisy than one evaluation: accuracy outcomes average the last k evaluations (k = the design's
`last_k`, default LAST_K); per-step outcomes average the last 10% of steps. `bounds` is the range the
measure (and so its mean) can take; intervals are intersected with it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from harness.reports.results.data import EVAL, Run, SweepData
from harness.reports.results.summary import eval_problem, summarize
from harness.stats.collapse import EVAL_WINDOW
from harness.stats.measures import MEASURES as MEASURE_INFO
from harness.stats.resolution import measure_resolution

LAST_K = EVAL_WINDOW
TAIL = 0.1  # fraction of steps in "the last 10% of steps"
RUNAWAY = math.log(10.0)  # a run's mismatch ran away: its end level at least 10 times its start


@dataclass(frozen=True)
class Measure:
    name: str
    description: str
    bounds: Tuple[Optional[float], Optional[float]]
    compute: Callable[[SweepData, Run, int], Optional[float]]


def _finite(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v[np.isfinite(v)]


def last_evals(data: SweepData, run: Run, k: int) -> Optional[float]:
    """Mean of the run's last k eval accuracies (a FINISHED run only: a stopped run has no end)."""
    v = _finite(data.curve(run, EVAL)[1])
    return float(v[-k:].mean()) if run.status == "FINISHED" and len(v) else None


def start_eval(data: SweepData, run: Run, k: int) -> Optional[float]:
    """The run's first eval accuracy (its warm start, before any RL step when step 0 is evaluated)."""
    v = _finite(data.curve(run, EVAL)[1])
    return float(v[0]) if len(v) else None


def tail_mean(data: SweepData, run: Run, key: str, first: bool = False) -> Optional[float]:
    v = _finite(data.curve(run, key)[1])
    if not len(v):
        return None
    n = max(1, int(round(len(v) * TAIL)))
    return float(v[:n].mean() if first else v[-n:].mean())


def whole_mean(data: SweepData, run: Run, key: str) -> Optional[float]:
    v = _finite(data.curve(run, key)[1])
    return float(v.mean()) if len(v) else None


def _gain(data, run, k):
    end, start = last_evals(data, run, k), start_eval(data, run, k)
    return None if end is None or start is None else end - start


def _early(data, run, k):
    steps, values = data.curve(run, EVAL)
    keep = np.isfinite(values) & (steps > 0) & (steps <= 0.5 * steps.max()) if len(steps) else []
    return float(values[keep].mean()) if len(steps) and keep.any() else None


def _log_change(key: str) -> Callable[[SweepData, Run, int], Optional[float]]:
    def compute(data, run, k):
        first, last = tail_mean(data, run, key, True), tail_mean(data, run, key)
        return math.log(last / first) if first and last and first > 0 and last > 0 else None
    return compute


def _log_mismatch(data, run, k):
    end = tail_mean(data, run, "train/mismatch")
    return math.log(end) if end and end > 0 else None


def _runaway(data, run, k):
    """1 if the mismatch ran away (log growth ≥ RUNAWAY) or became non-finite, 0 if it did not; None unlogged."""
    steps, values = data.curve(run, "train/mismatch")
    if len(values) and not np.all(np.isfinite(values)):
        return 1.0
    growth = _log_change("train/mismatch")(data, run, k)
    return None if growth is None else float(growth >= RUNAWAY)


def _clipped_lowprob(data, run, k):
    """Share of clipped tokens that are low-probability: per step (ML/L)·(L/V)/(M/V) = ML/M from
    lowprob_masked_frac, lowprob_frac and masked_frac (the same step's tokens), pooled over the steps the three
    share as Σ ML / Σ M (each step's tokens weighted alike: exact when steps have equal token counts)."""
    curves = [dict(zip(*data.curve(run, f"objective/{key}")))
              for key in ("lowprob_masked_frac", "lowprob_frac", "masked_frac")]
    steps = set(curves[0]) & set(curves[1]) & set(curves[2])
    rows = np.array([[c[s] for c in curves] for s in steps], dtype=np.float64).reshape(-1, 3)
    rows = rows[np.all(np.isfinite(rows), axis=1)]
    clipped = rows[:, 2].sum() if len(rows) else 0.0
    return float((rows[:, 0] * rows[:, 1]).sum() / clipped) if clipped > 0 else None


def _collapsed(data, run, k):
    return float(summarize(data, run).collapse is not None)


_COMPUTE: Dict[str, Callable[[SweepData, Run, int], Optional[float]]] = {
    "final_accuracy": last_evals,
    "gain": _gain,
    "learning_speed": _early,
    "train_accuracy": lambda d, r, k: tail_mean(d, r, "train/accuracy") if r.status == "FINISHED" else None,
    "entropy": lambda d, r, k: tail_mean(d, r, "train/entropy"),
    "masked_share": lambda d, r, k: whole_mean(d, r, "objective/masked_frac"),
    "lowprob_clipped": lambda d, r, k: whole_mean(d, r, "objective/lowprob_masked_frac"),
    "lowprob_share": lambda d, r, k: tail_mean(d, r, "objective/lowprob_frac", True),
    "mismatch": lambda d, r, k: tail_mean(d, r, "train/mismatch"),
    "mismatch_start": lambda d, r, k: tail_mean(d, r, "train/mismatch", True),
    "log_mismatch_growth": _log_change("train/mismatch"),
    "log_entropy_change": _log_change("train/entropy"),
    "log_mismatch": _log_mismatch,
    "runaway": _runaway,
    "clipped_lowprob_share": _clipped_lowprob,
    "collapsed": _collapsed,
}
MEASURES: Dict[str, Measure] = {name: Measure(name, description, bounds, _COMPUTE[name])
                                for name, (description, bounds) in MEASURE_INFO.items()}


def measure(name: str) -> Measure:
    if name not in MEASURES:
        raise ValueError(f"measure {name!r} is not allowed; allowed: {', '.join(MEASURES)}")
    return MEASURES[name]


def per_seed(data: SweepData, runs, name: str, k: int = LAST_K) -> Dict[object, float]:
    """{seed: value} of measure `name` over `runs` (runs without a value left out; a repeated seed keeps
    the mean of its runs)."""
    m = measure(name)
    out: Dict[object, list] = {}
    for run in runs:
        value = m.compute(data, run, k)
        if value is not None and np.isfinite(value):
            out.setdefault(run.seed, []).append(float(value))
    return {s: float(np.mean(v)) for s, v in out.items()}


def resolution(runs, name: str, weights, k: int = LAST_K) -> float:
    """The resolution of a contrast Σ w·mean(arm) of measure `name` over `runs`: the measure's
    (harness/stats/resolution.py; one eval problem's worth over k evaluations when every run records its
    eval set's size, the finest of them) times the smallest |w|."""
    problems = [eval_problem(r) for r in runs]
    known = min(problems) if problems and None not in problems else None
    return measure_resolution(name, known, k) * min((abs(w) for w in weights if w), default=1.0)
