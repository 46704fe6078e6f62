"""Runs whose numeric objective parameters are not numbers in the store (`algo.delta=abc`, written by hand or by
another tool: MLflow keeps params as strings) cannot be placed on any threshold axis or drawn: they are left out of
every report, each named in one note that every page and the command's output show (issue #50, case 14), instead of
a TypeError from the first kind that sorts the thresholds."""
from __future__ import annotations

from typing import List, Optional

from harness.algorithms import SPECS
from harness.algorithms.checks import Integer, Real
from harness.algorithms.params import rules
from harness.reports.results.data import Run, SweepData


def set_aside_odd_params(data: SweepData) -> List[str]:
    """Leave the runs whose numeric `algo.*` params are not numbers out of `data.runs`; their notes, one line each
    (also in `data.notes`, shown on every page, and `data.left_out`, said by the command)."""
    kept, notes = [], []
    for run in data.runs:
        problem = odd_param(run)
        if problem is None:
            kept.append(run)
        else:
            notes.append(f"run {run.label} ({run.short_id}): {problem}; left out of every report")
    data.runs = kept
    data.notes.extend(notes)
    data.left_out.extend(notes)
    return notes


def odd_param(run: Run) -> Optional[str]:
    """What is wrong with the run's first numeric `algo.*` param that is not a number, None when none is."""
    spec = SPECS.get(run.objective)
    if spec is None:
        return None
    for name, rule in rules(spec.params_cls).items():
        key = f"algo.{name}"
        if key not in run.params or not isinstance(rule, (Real, Integer)):
            continue
        value = run.param(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not number:
            return f"{key}={run.params[key]!r} is not a number"
    return None
