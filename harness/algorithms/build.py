"""`build_objective`: validated parameters + registered class -> an Objective instance."""
from __future__ import annotations

from typing import Any

# Importing the family modules registers their objectives.
from harness.algorithms import bandpo, baselines, clipping, dppo, penalties, regularizers  # noqa: F401
from harness.algorithms.base import Objective
from harness.algorithms.registry import objective_class
from harness.algorithms.specs import validate_params


def build_objective(name: str, **params: Any) -> Objective:
    """The objective `name` with `params` (defaults filled in).

    Unknown name or parameter, wrong type or out-of-range value: ValueError naming the key, the value
    and what is allowed (see `specs.validate_params`).
    """
    full = validate_params(name, params)
    return objective_class(name)(name, full)
