"""Collapse detection: pure functions over a run's metric histories (no MLflow, no plotting).

A run has collapsed when
  * its accuracy (eval, or train smoothed over `TRAIN_WINDOW` steps) falls more than `drop` below its
    running best and never comes back within `drop` of that best before the end of the run, or
  * its loss becomes non-finite, or it FAILED with a non-finite error (FloatingPointError, nan, inf).
The collapse step is the first step of the final, never-recovered fall (or of the first non-finite loss).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

DROP = 0.2  # accuracy points (fraction correct) below the running best
TRAIN_WINDOW = 5  # steps of the moving average applied to train accuracy before detection
NON_FINITE_ERROR = re.compile(r"non-finite|FloatingPointError|\bnan\b|\binf\b", re.IGNORECASE)
ERROR_STEP = re.compile(r"\bstep (\d+)")


@dataclass(frozen=True)
class Collapse:
    step: int
    reason: str  # e.g. "eval/accuracy fell 0.5 → 0.1 (best 0.6)", "non-finite train/loss"
    metric: str


def fall_from_best(steps, values, drop: float = DROP) -> Optional[int]:
    """Index of the first point of a final fall of more than `drop` below the running best, or None.

    steps, values: 1-D, same length, sorted by step. Non-finite values are ignored. The fall must last to
    the end: a run that dips and recovers to within `drop` of its best has not collapsed.
    """
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values)
    index = np.flatnonzero(keep)
    if len(index) < 2:
        return None
    v = values[keep]
    running_best = np.maximum.accumulate(v)
    healthy = v >= running_best - drop - 1e-12
    last_healthy = int(np.flatnonzero(healthy)[-1])  # the first point is always healthy
    if last_healthy == len(v) - 1:
        return None
    return int(index[last_healthy + 1])


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
                    train_window: int = TRAIN_WINDOW) -> Optional[Collapse]:
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
    for key, series, window in (("eval/accuracy", eval_acc, 1), ("train/accuracy", train_acc, train_window)):
        if series is None or len(series[0]) < 2:
            continue
        steps, raw = np.asarray(series[0]), np.asarray(series[1], dtype=np.float64)
        smooth = moving_average(raw, window)
        at = fall_from_best(steps, smooth, drop)
        if at is not None:
            best = float(np.nanmax(smooth[:at + 1]))
            what = f"{key}{' (%d-step mean)' % window if window > 1 else ''}"
            found.append(Collapse(int(steps[at]), f"{what} fell from best {best:.3f} to {smooth[-1]:.3f} "
                                  f"(drop > {drop:g}) without recovering", key))
    if status == "FAILED" and error and NON_FINITE_ERROR.search(error):
        named = ERROR_STEP.search(error)
        last = max([int(s[0][-1]) for s in (eval_acc, train_acc, loss) if s is not None and len(s[0])],
                   default=0)
        step = int(named.group(1)) if named else last + 1
        found.append(Collapse(step, f"FAILED: {error.strip()[:120]}", "error"))
    return min(found, key=lambda c: c.step) if found else None
