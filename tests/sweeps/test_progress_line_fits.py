"""The progress line fits the terminal from 60 columns up, leads with the sweep's overall state (runs ended, the
time left), adds each running ensemble only where it fits, and its time left does not jump: it follows the whole
sweep's pace (work done over time) and moves toward a new estimate gradually."""
from __future__ import annotations

import io
import itertools
import random
import re

import pytest

from harness.launchers.sweep_console import SweepConsole
from harness.launchers.sweep_eta import Eta
from harness.launchers.sweep_progress import Unit, describe

HEAD = re.compile(r"^\d+/48 runs · about \d+:\d\d left")


def _units(step: int):
    units = [Unit(f"ensemble {k}", [f"/x/{k}/{i}" for i in range(24)], 60) for k in (1, 2)]
    for unit in units:
        unit.step, unit.pace = step, 17.0
    return units


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
def test_the_line_fits_and_leads_with_the_overall_state(columns):
    line = describe(_units(4), elapsed=1013.0, workers=2, width=columns - 1)
    assert len(line) <= columns - 1, line
    assert HEAD.match(line), line
    if columns >= 120:
        assert "ensemble 1: step 4/60" in line and "ensemble 2: step 4/60" in line, line
        assert line.endswith(" · sweep 16:53"), line
    if columns == 80:
        assert "ensemble 1: step 4/60" in line and line.endswith("1 more"), line
    if columns == 60:  # no room for an ensemble's detail: counted
        assert line == "0/48 runs · about 15:52 left · 2 running · sweep 16:53", line


def test_a_terminal_status_gets_the_lines_width():
    console = SweepConsole(live=True, out=io.StringIO(), err=io.StringIO())
    assert console.width() == 79  # not a real terminal: 80 columns assumed, less the cursor's
    assert SweepConsole(live=False, out=io.StringIO(), err=io.StringIO()).width() is None


def test_the_time_left_follows_the_sweeps_pace_without_jumping():
    random.seed(3)
    units, eta, shown = _units(0), Eta(), []
    # each unit's steps end after 11-23 s each (17 s on average), the two units starting 8 s apart
    ends = [list(itertools.accumulate(random.uniform(11, 23) for _ in range(60))) for _ in units]
    for unit in units:
        unit.step, unit.pace = None, None
    for second in range(1, 500):
        now = float(second)
        for k, unit in enumerate(units):
            unit.step = sum(end + 8 * k <= now for end in ends[k]) if now >= 8 * k else None
            unit.pace = (now - 8 * k) / unit.step if unit.step else None  # what `read` keeps: the unit's own pace
        lefts = [(u.steps - u.step) * u.pace for u in units if u.pace is not None]
        shown.append(eta.update(units, now, fallback=max(lefts) if len(lefts) == len(units) else None))
    pairs = [(a, b) for a, b in zip(shown, shown[1:]) if a is not None and b is not None]
    # a countdown, corrected by at most 2% of itself a second (the units' own estimates moved by minutes)
    assert all(abs(b - (a - 1.0)) <= 0.02 * max(a, 30.0) + 1e-6 for a, b in pairs), pairs
    true_left = max(end[-1] + 8 * k for k, end in enumerate(ends)) - now
    assert abs(shown[-1] - true_left) < 0.15 * true_left, (shown[-1], true_left)


def test_the_time_left_is_zero_once_every_unit_ended():
    units = _units(60)
    for unit in units:
        unit.ended = 24
    assert Eta().update(units, 10.0) == 0.0
