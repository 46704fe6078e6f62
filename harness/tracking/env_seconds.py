"""Reading a number of seconds from an environment variable, with a one-line error naming what is allowed."""
from __future__ import annotations

import os


def env_seconds(name: str, default: float, allow_zero: bool) -> float:
    """`$name` as seconds (> 0, or >= 0 with allow_zero); `default` when unset or empty."""
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value >= 0 if allow_zero else value > 0):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={raw!r} is not allowed: a number of seconds {bound} (default {default:g})")
    return value
