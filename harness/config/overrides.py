"""What the command line's overrides alone say, before anything is composed: the jobs of a grid (as Hydra's
basic sweeper expands it) and the overrides a multirun's own config is composed with."""
from __future__ import annotations

import itertools
from typing import List, Sequence

from harness.config.compose_errors import parse_overrides
from harness.config.errors import ConfigError


def expand_sweep(overrides: Sequence[str]) -> List[List[str]]:
    """The override list of every job in a sweep, in the order of Hydra's basic sweeper: the cartesian product
    of each override's values (a choice sweep `a,b`, `range(...)`, `glob(...)`), the last key varying fastest."""
    axes = []
    for override in parse_overrides(overrides):
        key = override.get_key_element()
        if not override.is_sweep_override():
            axes.append([f"{key}={override.get_value_element_as_str()}"])
        elif override.is_discrete_sweep():
            values = [f"{key}={value}" for value in override.sweep_string_iterator()]
            if not values:
                raise ConfigError(f"{key} has an empty sweep: give at least one value")
            axes.append(values)
        else:
            raise ConfigError(f"{override.input_line}: an interval sweep needs sweeper=optuna (a grid takes "
                              "values: a,b,c or range(start,stop,step))")
    return [list(job) for job in itertools.product(*axes)]


def fixed_overrides(overrides: Sequence[str]) -> List[str]:
    """The overrides that are not sweeps (what Hydra composes a multirun's own config with)."""
    return [o.input_line for o in parse_overrides(overrides) if not o.is_sweep_override()]

