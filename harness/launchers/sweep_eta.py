"""The sweep's time left, as a steady number: the work left (each unit's steps still to train) at the pace the
whole sweep has kept so far (its work done since its first step was seen, over the time since), not one unit's
last steps; and what is shown moves toward that estimate gradually, so that a slow step or a unit starting does
not make the status line jump (17:43 to 20:00 within seconds, as it did)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

WARM_UP_S = 5.0  # before this long of steps the sweep's own pace is too young: the units' estimate is shown
FOLLOW = 0.25  # the share of the gap to the new estimate that the shown time closes at each update (1 s apart)
MOST_MOVED = 0.02  # ... at most this share of the time shown (of 30 s at least) per update


def work_done(units: Sequence) -> int:
    """Unit-steps trained: a unit's step (its whole length once it ended)."""
    return sum(u.steps if u.done else (u.step or 0) for u in units)


def work_left(units: Sequence) -> int:
    return sum(max(0, u.steps - (u.step or 0)) for u in units if not u.done)


@dataclass
class Eta:
    """Call `update` with the units and the time at each redraw; it returns the seconds left to show (None:
    unknown yet). `fallback`: the units' own estimate, used until the sweep's pace is WARM_UP_S old."""
    first: Optional[tuple] = None  # (time, work done) when a step was first seen
    last: Optional[tuple] = None  # (time, work done) when the work done last grew
    shown: Optional[tuple] = None  # (time, seconds left shown then)

    def update(self, units: Sequence, now: float, fallback: Optional[float] = None) -> Optional[float]:
        if all(u.done for u in units):
            self.shown = (now, 0.0)
            return 0.0
        done = work_done(units)
        if self.first is None and done > 0:
            self.first = (now, done)
        if self.last is None or done > self.last[1]:
            self.last = (now, done)
        estimate = fallback
        span = self.last[0] - self.first[0] if self.first is not None else 0.0
        if span >= WARM_UP_S and self.last[1] > self.first[1]:  # the pace between steps seen ending, not to now
            rate = (self.last[1] - self.first[1]) / span
            estimate = max(0.0, work_left(units) / rate - (now - self.last[0]))
        if estimate is None:
            return None if self.shown is None else self._carry(now)
        if self.shown is None:
            self.shown = (now, estimate)
        else:
            carried = self._carry(now)
            most = MOST_MOVED * max(carried, 30.0)
            self.shown = (now, carried + max(-most, min(most, FOLLOW * (estimate - carried))))
        return self.shown[1]

    def _carry(self, now: float) -> float:
        """The time shown last, counted down since."""
        return max(0.0, self.shown[1] - (now - self.shown[0]))
