"""Value rules for objective parameters (torch-free).

Each rule checks one config value and either returns it normalised (an int given for a float becomes a
float) or raises `ValueError` with one line naming the key, the bad value and what is allowed, e.g.
``algo.delta=-0.1 is out of range: must be > 0``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Optional, Tuple


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _bad_type(key: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"algo.{key}={_show(value)} has the wrong type ({type(value).__name__}): {allowed}")


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Real:
    """A finite real number in an interval; `nullable` allows None (meaning given in `null_means`)."""

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = True
    high_open: bool = True
    nullable: bool = False
    null_means: str = ""

    def _bounds(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_fmt(self.low)}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {_fmt(self.high)}")
        return " and ".join(parts)

    def _null(self) -> str:
        return f", or null ({self.null_means})" if self.nullable else ""

    def describe(self) -> str:
        bounds = self._bounds()
        return (f"must be {bounds}" if bounds else "must be a finite number") + self._null()

    def check(self, key: str, value: Any) -> Optional[float]:
        if value is None and self.nullable:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _bad_type(key, value, f"must be a number {self._bounds()}".rstrip() + self._null())
        x = float(value)
        too_low = self.low is not None and (x <= self.low if self.low_open else x < self.low)
        too_high = self.high is not None and (x >= self.high if self.high_open else x > self.high)
        if not math.isfinite(x) or too_low or too_high:
            raise ValueError(f"algo.{key}={_show(value)} is out of range: {self.describe()}")
        return x


@dataclass(frozen=True)
class Integer:
    """An integer >= `low` (bools refused)."""

    low: int = 1

    def describe(self) -> str:
        return f"must be an integer >= {self.low}"

    def check(self, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise _bad_type(key, value, self.describe())
        if value < self.low:
            raise ValueError(f"algo.{key}={value} is out of range: {self.describe()}")
        return int(value)


@dataclass(frozen=True)
class Choice:
    """One string out of a fixed list."""

    options: Tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(self.options)

    def check(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise ValueError(f"algo.{key}={_show(value)} is not allowed; choose one of {', '.join(self.options)}")
        return value


@dataclass(frozen=True)
class Flag:
    """A boolean (true/false); strings and numbers are refused."""

    def describe(self) -> str:
        return "true or false"

    def check(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _bad_type(key, value, "must be true or false")
        return value
