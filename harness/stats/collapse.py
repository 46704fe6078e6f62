"""Collapse detection: pure functions over a run's metric histories (no MLflow, no plotting).

A run has collapsed when
  * its smoothed accuracy (eval: trailing mean of `EVAL_WINDOW` evaluations; train: of `TRAIN_WINDOW`
    steps) ends more than `drop` below the run's own start (the mean of its first window) and stays
    there, i.e. training left the run worse than its warm start; or
  * its loss becomes non-finite, or it FAILED with a non-finite error (FloatingPointError, nan, inf).
The collapse step is the first step of the final, never-recovered fall (or of the first non-finite loss).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

DROP = 0.15  # accuracy points (fraction correct) below the run's start
EVAL_WINDOW = 3  # evaluations in the trailing mean applied to eval accuracy before detection
TRAIN_WINDOW = 5  # steps of the moving average applied to train accuracy before detection
NON_FINITE_ERROR = re.compile(r"non-finite|FloatingPointError|\bnan\b|\binf\b", re.IGNORECASE)
ERROR_STEP = re.compile(r"\bstep (\d+)")


@dataclass(frozen=True)
class Collapse:
    step: int
    reason: str  # e.g. "eval/accuracy fell 0.5 → 0.1 (best 0.6)", "non-finite train/loss"
    metric: str


def fall_below_start(steps, values, drop: float = DROP, window: int = 1) -> Optional[int]:
    """Index of the first point of a final stretch where the smoothed values stay more than `drop` below
    the start (mean of the first `window` finite values), or None. Non-finite values are ignored."""
    values = np.asarray(values, dtype=np.float64)
    index = np.flatnonzero(np.isfinite(values))
    if len(index) < max(2, window + 1):
        return None
    v = values[index]
    start = float(v[:window].mean())
    smooth = moving_average(v, window)
    below = smooth < start - drop - 1e-12
    if not below[-1]:
        return None
    healthy = np.flatnonzero(~below)
    return int(index[(healthy[-1] + 1) if len(healthy) else 0])


def moving_average(values, window: int) -> np.ndarray:
    """Trailing moving average (the first points average what exists so far); NaNs propagate."""
    values = np.asarray(values, dtype=np.float64)
    if window <= 1 or len(values) == 0:
        return values
    csum = np.cumsum(np.insert(values, 0, 0.0))
    end = np.arange(1, len(values) + 1)
    start = np.maximum(0, end - window)
    return (csum[end] - csum[start]) / (end - start)


def detect_collapse(eval_acc=None, train_acc=None, loss=None, status: str = "FINISHED",
                    error: Optional[str] = None, drop: float = DROP,
                    train_window: int = TRAIN_WINDOW, eval_window: int = EVAL_WINDOW) -> Optional[Collapse]:
    """The earliest collapse of a run, or None.

    eval_acc, train_acc, loss: (steps [T], values [T]) or None; accuracies are fractions in [0, 1].
    status/error: the run's status and (first line of) its error; a FAILED run whose error says the loss
    went non-finite collapsed at the step named in the error, else right after its last logged step.
    """
    found = []
    if loss is not None and len(loss[0]):
        bad = np.flatnonzero(~np.isfinite(np.asarray(loss[1], dtype=np.float64)))
        if len(bad):
            found.append(Collapse(int(loss[0][bad[0]]), "non-finite train/loss", "train/loss"))
    for key, series, window in (("eval/accuracy", eval_acc, eval_window), ("train/accuracy", train_acc, train_window)):
        if series is None or len(series[0]) < 2:
            continue
        steps, raw = np.asarray(series[0]), np.asarray(series[1], dtype=np.float64)
        at = fall_below_start(steps, raw, drop, window)
        if at is not None:
            finite = raw[np.isfinite(raw)]
            start, end = float(finite[:window].mean()), float(moving_average(finite, window)[-1])
            what = f"{key}{' (%d-point mean)' % window if window > 1 else ''}"
            found.append(Collapse(int(steps[at]), f"{what} fell from its start {start:.3f} to {end:.3f} "
                                  f"(more than {drop:g} below) and stayed there", key))
    if status == "FAILED" and error and NON_FINITE_ERROR.search(error):
        named = ERROR_STEP.search(error)
        last = max([int(s[0][-1]) for s in (eval_acc, train_acc, loss) if s is not None and len(s[0])],
                   default=0)
        step = int(named.group(1)) if named else last + 1
        found.append(Collapse(step, f"FAILED: {error.strip()[:120]}", "error"))
    return min(found, key=lambda c: c.step) if found else None
