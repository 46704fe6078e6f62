"""A named sweep file: its hypothesis, the reports it feeds, and its grids.

Each grid is one Hydra multirun (axis -> list of values); several grids let a sweep use a different δ
range per objective. All grids of one invocation share one sweep folder and one experiment."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List

from harness.config.hydra_values import override
from harness.config.names import did_you_mean
from harness.reports.evidence.sweep_file import read_sweep_file, resolve_path
from harness.infra.resources import available, search_dirs
from harness.reports.evidence.design import Design


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
        Each value is one value of its own type (a string holding a comma is quoted, not a sweep). A grid axis
        that an override in `replace` sets ('seed=range(3,9)') is left to that override; a top-level seed list
        fills grids that name no seeds."""
        taken = {o.split("=", 1)[0].lstrip("+~") for o in replace if "=" in o}
        seeds = self.design.seeds if isinstance(self.design.seeds, list) else None
        out = []
        for grid in self.grids:
            axes = dict(grid)
            if seeds is not None and "seed" not in axes:
                axes["seed"] = seeds
            out.append([_sweep_override(axis, values) for axis, values in axes.items() if axis not in taken])
        return out

    def common_overrides(self) -> List[str]:
        """The overrides every job of the sweep gets: its experiment (one value, quoted as needed) and the
        file's `overrides`."""
        return [override("experiment_name", self.experiment_name), *self.overrides]


def _sweep_override(axis: str, values: Any) -> str:
    """`axis=v1,v2,...` with each value as `override` writes it."""
    if not isinstance(values, (list, tuple)):
        return override(axis, values)
    if not values:
        raise ValueError(f"grid axis {axis!r} is empty")
    return f"{axis}=" + ",".join(override(axis, v).partition("=")[2] for v in values)


def sweep_dirs() -> List[Path]:
    return search_dirs("HARNESS_SWEEPS", "sweeps", "harness.sweep_specs")


def available_sweeps() -> List[str]:
    return available(sweep_dirs())


def sweep_path(name: str) -> Path:
    """The file of sweep `name`: a name is looked up in the sweep folders only; a path ending in .yaml is that
    file. ValueError (one line) for anything else."""
    path, _ = resolve_path(name, sweep_dirs())
    if path is None:
        names = available_sweeps()
        raise ValueError(f"sweep {name!r} does not exist; {did_you_mean(name, names)}available: "
                         f"{', '.join(names) or 'none'}")
    return path


def load_sweep(name: str) -> SweepSpec:
    """The named sweep (or the sweep file at a path ending in .yaml), checked whole before anything runs;
    ValueError (a `SweepFileError`: one line naming the file, line and key) for a file that cannot run."""
    path = sweep_path(name)
    data = read_sweep_file(path, path.stem)
    return SweepSpec(name=path.stem, experiment_name=data.pop("experiment_name", None) or path.stem, **data)
