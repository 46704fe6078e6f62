"""`build_objective`: validated parameters + the class named in the registry -> an Objective instance."""
from __future__ import annotations

from typing import Any

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
