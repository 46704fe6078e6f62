"""A named sweep file: its hypothesis, the reports it feeds, and its grids.

Each grid is one Hydra multirun (axis -> list of values); several grids let a sweep use a different δ
range per objective. All grids of one invocation share one sweep folder and one experiment."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List

import yaml

from harness.config.names import did_you_mean
from harness.resources import available, find_yaml, search_dirs
from harness.sweeps.design import Design, parse_design

DESIGN_KEYS = ("alpha", "power", "last_k", "seeds", "budget", "tests", "sesoi", "preconditions", "pilot",
               "underpowered")


@dataclass
class SweepSpec:
    name: str
    hypothesis: str
    reports: List[str]
    grids: List[Dict[str, Any]]
    overrides: List[str] = field(default_factory=list)
    experiment_name: str = ""
    source: str = ""
    claim: str = ""  # a paper claim this sweep tests (`python -m harness findings` runs every such sweep)
    design: Design = field(default_factory=Design)  # declared tests, α, power, seeds (see design.py)

    def grid_overrides(self, replace: List[str] = ()) -> List[List[str]]:
        """Hydra overrides of each grid: {'delta': [0.1, 0.2], 'algo': 'dppo'} -> ['delta=0.1,0.2', 'algo=dppo'].
        A grid axis that an override in `replace` sets ('seed=range(3,9)') is left to that override; a
        top-level seed list fills grids that name no seeds."""
        taken = {o.split("=", 1)[0].lstrip("+~") for o in replace if "=" in o}
        seeds = self.design.seeds if isinstance(self.design.seeds, list) else None
        out = []
        for grid in self.grids:
            axes = dict(grid)
            if seeds is not None and "seed" not in axes:
                axes["seed"] = seeds
            out.append([f"{axis}={_sweep_value(values)}" for axis, values in axes.items() if axis not in taken])
        return out


def _sweep_value(values: Any) -> str:
    if isinstance(values, (list, tuple)):
        if not values:
            raise ValueError("empty grid axis")
        return ",".join(_scalar(v) for v in values)
    return _scalar(values)


def _scalar(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def sweep_dirs() -> List[Path]:
    return search_dirs("HARNESS_SWEEPS", "sweeps", "harness.sweep_specs")


def available_sweeps() -> List[str]:
    return available(sweep_dirs())


def load_sweep(name: str) -> SweepSpec:
    path = find_yaml(name, sweep_dirs())
    if path is None:
        names = available_sweeps()
        raise ValueError(f"sweep {name!r} does not exist; {did_you_mean(name, names)}available: "
                         f"{', '.join(names) or 'none'}")
    data = yaml.safe_load(path.read_text()) or {}
    allowed = ({f.name for f in fields(SweepSpec)} - {"name", "design"}) | set(DESIGN_KEYS)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f"sweep {name!r}: key {unknown[0]!r} is not allowed; allowed: {', '.join(sorted(allowed))}")
    for key in ("hypothesis", "reports", "grids"):
        if not data.get(key):
            raise ValueError(f"sweep {name!r}: {key!r} is missing or empty")
    for i, grid in enumerate(data["grids"]):
        for axis, values in (grid or {}).items():
            if isinstance(values, list) and not values:
                raise ValueError(f"sweep {name!r}: grid {i} axis {axis!r} is empty; give at least one value")
    design = parse_design(name, data)
    return SweepSpec(name=name, experiment_name=data.pop("experiment_name", None) or name, design=design, **data)
