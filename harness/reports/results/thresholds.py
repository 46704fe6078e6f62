"""Which parameter is an objective's trust-region threshold, read from the objective library's specs.

`delta=` sets DPPO/DRPO/BandPO's δ and SPO's ε (the spec's `delta` shortcut says which); the PPO clipping
family's threshold is its clip ε (ε_high, the side Clip-Higher changes); CISPO's is its truncation C.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from harness.algorithms import SPECS, validate_params
from harness.algorithms.params import rules
from harness.reports.results.data import Run

SYMBOLS = {"delta": "δ", "eps": "ε", "eps_high": "ε_high", "trunc_c": "C"}
FAMILY_THRESHOLD = {"clipping": "eps_high", "baseline": "trunc_c"}


def threshold_param(objective: str) -> Optional[str]:
    """The algo.* parameter name of `objective`'s threshold (None: it has none, or is unknown)."""
    spec = SPECS.get(objective)
    if spec is None:
        return None
    if "delta" in spec.shortcuts:
        return spec.shortcuts["delta"]
    name = FAMILY_THRESHOLD.get(spec.family)
    return name if name in _param_names(objective) else None


def threshold(run: Run) -> Tuple[Optional[str], Optional[str], Any]:
    """(param key e.g. 'algo.delta', symbol e.g. 'δ', value) of the run's threshold; Nones if it has none."""
    name = threshold_param(run.objective)
    if name is None or f"algo.{name}" not in run.params:
        return None, None, None
    value = run.param(f"algo.{name}")
    if value is None:  # null = the library default (dppo: per divergence)
        try:
            value = validate_params(run.objective, objective_params(run)).get(name)
        except ValueError:
            return None, None, None
    return f"algo.{name}", SYMBOLS.get(name, name), value


def default_threshold(objective: str) -> Any:
    """The library default of the objective's threshold (DRPO: 12.5, DPPO binary_tv: 0.15, ...)."""
    name = threshold_param(objective)
    return None if name is None else validate_params(objective).get(name)


def objective_params(run: Run) -> Dict[str, Any]:
    """The run's algo.* params that the objective accepts, parsed (for `gradient_weight_grid`)."""
    names = _param_names(run.objective)
    return {key: run.param(f"algo.{key}") for key in names if f"algo.{key}" in run.params}


def _param_names(objective: str):
    spec = SPECS.get(objective)
    return set(rules(spec.params_cls)) if spec else set()
