"""Collapse detection: pure functions over a run's metric histories (no MLflow, no plotting).

A run has collapsed when
  * its smoothed accuracy (eval: trailing mean of `EVAL_WINDOW` evaluations; train: of `TRAIN_WINDOW`
    steps) ends below the run's own start (the mean of its first window) by more than
    min(`drop`, `rel_drop` × start) and stays there, i.e. training left the run worse than its warm start:
    more than 0.15 points, or more than half of what it started with, whichever is smaller, so a run that
    starts below 0.3 (even at 0.078) can collapse too. When the eval set's size is known, an eval fall must
    also be at least one problem's worth of accuracy (`eval_resolution`): a run near 0 whose smoothed
    accuracy wobbles by less than one problem has not collapsed; or
  * its loss becomes non-finite, or it FAILED with a non-finite error (FloatingPointError, nan, inf).
The collapse step is the first step of the final, never-recovered fall (or of the first non-finite loss).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

DROP = 0.15  # accuracy points (fraction correct) below the run's start
REL_DROP = 0.5  # share of the run's start lost: the bar for runs that start below DROP / REL_DROP
EVAL_WINDOW = 3  # evaluations in the trailing mean applied to eval accuracy before detection
TRAIN_WINDOW = 5  # steps of the moving average applied to train accuracy before detection
NON_FINITE_ERROR = re.compile(r"non-finite|FloatingPointError|\bnan\b|\binf\b", re.IGNORECASE)
ERROR_STEP = re.compile(r"\bstep (\d+)")


@dataclass(frozen=True)
class Collapse:
    step: int
    reason: str  # e.g. "eval/accuracy fell 0.5 → 0.1 (best 0.6)", "non-finite train/loss"
    metric: str


def fall_threshold(start: float, drop: float = DROP, rel_drop: float = REL_DROP) -> float:
    """How far below its start a run must end to have collapsed: min(drop, rel_drop × start)."""
    return min(drop, rel_drop * max(start, 0.0))


def fall_below_start(steps, values, drop: float = DROP, window: int = 1, rel_drop: float = REL_DROP,
                     resolution: float = 0.0) -> Optional[int]:
    """Index of the first point of a final stretch where the smoothed values stay more than
    fall_threshold(start) below the start (mean of the first `window` finite values), and at least
    `resolution` below it, or None. Non-finite values are ignored."""
    values = np.asarray(values, dtype=np.float64)
    index = np.flatnonzero(np.isfinite(values))
    if len(index) < max(2, window + 1):
        return None
    v = values[index]
    start = float(v[:window].mean())
    smooth = moving_average(v, window)
    fall = start - smooth
    below = (fall > fall_threshold(start, drop, rel_drop) + 1e-12) & (fall >= resolution - 1e-12)
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
                    train_window: int = TRAIN_WINDOW, eval_window: int = EVAL_WINDOW,
                    rel_drop: float = REL_DROP, eval_resolution: float = 0.0) -> Optional[Collapse]:
    """The earliest collapse of a run, or None.

    eval_acc, train_acc, loss: (steps [T], values [T]) or None; accuracies are fractions in [0, 1].
    eval_resolution: one eval problem's worth of accuracy (1 / problems scored), 0 when unknown.
    status/error: the run's status and (first line of) its error; a FAILED run whose error says the loss
    went non-finite collapsed at the step named in the error, else right after its last logged step.
    """
    found = []
    if loss is not None and len(loss[0]):
        bad = np.flatnonzero(~np.isfinite(np.asarray(loss[1], dtype=np.float64)))
        if len(bad):
            found.append(Collapse(int(loss[0][bad[0]]), "non-finite train/loss", "train/loss"))
    for key, series, window, resolution in (("eval/accuracy", eval_acc, eval_window, eval_resolution),
                                            ("train/accuracy", train_acc, train_window, 0.0)):
        if series is None or len(series[0]) < 2:
            continue
        steps, raw = np.asarray(series[0]), np.asarray(series[1], dtype=np.float64)
        at = fall_below_start(steps, raw, drop, window, rel_drop, resolution)
        if at is not None:
            finite = raw[np.isfinite(raw)]
            start, end = float(finite[:window].mean()), float(moving_average(finite, window)[-1])
            what = f"{key}{' (%d-point mean)' % window if window > 1 else ''}"
            bar = fall_threshold(start, drop, rel_drop)
            rule = f"{drop:g} points" if bar == drop else f"{rel_drop:.0%} of its start"
            found.append(Collapse(int(steps[at]), f"{what} fell from its start {start:.3f} to {end:.3f} "
                                  f"(more than {bar:.3g} below: {rule}) and stayed there", key))
    if status == "FAILED" and error and NON_FINITE_ERROR.search(error):
        named = ERROR_STEP.search(error)
        last = max([int(s[0][-1]) for s in (eval_acc, train_acc, loss) if s is not None and len(s[0])],
                   default=0)
        step = int(named.group(1)) if named else last + 1
        found.append(Collapse(step, f"FAILED: {error.strip()[:120]}", "error"))
    return min(found, key=lambda c: c.step) if found else None
