"""Preflight checks on what the command line and the environment ask for, before any job is composed:
an override given twice, a grid too large to be meant, environment knobs that are not numbers. Each
problem is a one-line `ConfigError`.

A grid above `HARNESS_MAX_JOBS` jobs (default 10,000) is refused before it is expanded; `--yes` (handed
in as `any_size`) or `HARNESS_MAX_JOBS=0` runs it anyway."""
from __future__ import annotations

import math
import os
from typing import List, Sequence

from harness.config.errors import ConfigError
from harness.config.flags import YES_FLAG

MAX_JOBS_ENV = "HARNESS_MAX_JOBS"
MAX_MEMBERS = 1024  # runs in one ensemble at most, on a GPU (launcher.members may ask fewer, never more)
CPU_MEMBERS = 256  # on a CPU: a step is compute-bound there, larger ensembles gain nothing
DEFAULT_MAX_JOBS = 10_000

# Environment knobs the harness reads, checked with the job's other settings: name -> (default, what is allowed).
# (`harness.tracking.heartbeat` / `tracker` read the first two when the run has started.)
SECONDS_KNOBS = {"HARNESS_METRICS_INTERVAL_S": (5.0, True), "HARNESS_HEARTBEAT_S": (30.0, False)}
COUNT_KNOBS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": 0, "MLFLOW_HTTP_REQUEST_TIMEOUT": 1, MAX_JOBS_ENV: 0}
NUMBER_KNOBS = {"MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": 0.0}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL", "NOTSET")


def refuse_duplicates(parsed: Sequence) -> None:
    """The same key given twice (`seed=1 seed=2`): Hydra would silently take the last."""
    seen = {}
    for override in parsed:
        key = (override.key_or_group, override.package)
        if key in seen:
            name = override.key_or_group + (f"@{override.package}" if override.package else "")
            raise ConfigError(f"{name} is given twice ({seen[key]} and {override.input_line}): give it once "
                              "(a sweep over several values: key=a,b)")
        seen[key] = override.input_line


def _sweep_size(override) -> int:
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    value = override.value()
    if isinstance(value, RangeSweep):
        if not value.step:
            return 0
        return max(0, math.ceil((value.stop - value.start) / value.step))
    if isinstance(value, ChoiceSweep):
        return len(value.list)
    return len(list(override.sweep_string_iterator()))  # glob(...): the group's options, a few


def max_jobs(any_size: bool = False) -> int:
    """The largest grid run (0: no limit, as with --yes: `any_size`)."""
    if any_size:
        return 0
    raw = os.environ.get(MAX_JOBS_ENV, "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MAX_JOBS


def check_grid_size(parsed: Sequence, any_size: bool = False) -> None:
    """Refuse a grid of more than `max_jobs()` jobs, counted from its axes (it is not expanded)."""
    axes = [(o.key_or_group, _sweep_size(o)) for o in parsed if o.is_sweep_override()]
    total = math.prod(size for _, size in axes)
    limit = max_jobs(any_size)
    if limit and total > limit:
        shown = " × ".join(f"{key}: {size:,}" for key, size in axes)
        raise ConfigError(f"the sweep has {total:,} jobs ({shown}), more than {limit:,}: give {YES_FLAG} to run them "
                          f"all (or {MAX_JOBS_ENV}=<largest grid>)")


def check_environment() -> None:
    """Every environment knob the harness reads is a value it can use (one line naming the variable)."""
    for name, (default, allow_zero) in SECONDS_KNOBS.items():
        _number(name, lambda v: v >= 0 if allow_zero else v > 0,
                f"a number of seconds {'>= 0' if allow_zero else '> 0'} (default {default:g})")
    for name, low in COUNT_KNOBS.items():
        _number(name, lambda v, low=low: v == int(v) and v >= low, f"an integer >= {low}")
    for name, low in NUMBER_KNOBS.items():
        _number(name, lambda v, low=low: v >= low, f"a number >= {low:g}")
    level = os.environ.get("HARNESS_LOG_LEVEL", "").strip()
    if level and level.upper() not in LOG_LEVELS:
        raise ConfigError(f"HARNESS_LOG_LEVEL={level!r} is not allowed: one of {', '.join(LOG_LEVELS)}")


def _number(name: str, ok, allowed: str) -> None:
    raw = os.environ.get(name, "")
    if not raw:
        return
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and ok(value)):
        raise ConfigError(f"environment variable {name}={raw!r} is not allowed: {allowed}")

