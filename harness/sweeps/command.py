"""`python -m harness sweep <name> [overrides] [--force] [--detach]`: run a named sweep.

Every job of every grid is validated before the first one starts; then each grid runs as one Hydra
multirun into the sweep's folder, and the reports the sweep names are built when it ends."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import List, Tuple

from harness.sweeps.spec import SweepSpec, available_sweeps, load_sweep


def _list() -> str:
    lines = ["named sweeps (python -m harness sweep <name> [overrides]):"]
    for name in available_sweeps():
        try:
            spec = load_sweep(name)
            lines.append(f"  {name:22s} {spec.hypothesis.strip().splitlines()[0]}  [reports: {', '.join(spec.reports)}]")
        except ValueError as err:
            lines.append(f"  {name:22s} (invalid: {err})")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    from harness.config.validate import ConfigError

    if not argv or argv[0].startswith("-"):
        print(_list())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        spec = load_sweep(argv[0])
    except ValueError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2
    flags = [a for a in argv[1:] if a.startswith("--")]
    user = [a for a in argv[1:] if not a.startswith("--")]
    try:
        sweep_dir, grids = prepare(spec, user)
    except (ConfigError, ValueError) as err:
        print(f"harness: error: sweep {spec.name}: {err}", file=sys.stderr)
        return 2
    return run(spec, sweep_dir, grids, flags)


def prepare(spec: SweepSpec, user: List[str]) -> Tuple[Path, List[List[str]]]:
    """The sweep's folder and the overrides of each grid, every job validated (ConfigError/ValueError)."""
    from harness.config.compose import preflight

    common = [f"experiment_name={spec.experiment_name}", *spec.overrides]
    grids = [[*common, *grid, *user] for grid in spec.grid_overrides()]
    first = [preflight(grid, multirun=True)[0] for grid in grids][0]
    root = Path(first.output_root).expanduser().resolve()
    sweep_dir = root / "multirun" / spec.name / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return sweep_dir, grids


def run(spec: SweepSpec, sweep_dir: Path, grids: List[List[str]], flags: List[str]) -> int:
    """Run each grid as one multirun into `sweep_dir`, close the parent run, build the reports; worst exit code."""
    print(f"sweep {spec.name}: {spec.hypothesis.strip()}\n  folder: {sweep_dir}\n  reports: {', '.join(spec.reports)}")
    from harness.sweeps.tracking_callback import NAMED_SWEEP_ENV, PARENT_FILE, close_parent

    worst = 0
    env = {**os.environ, NAMED_SWEEP_ENV: "1"}
    for index, grid in enumerate(grids):
        place = [f"hydra.sweep.dir={sweep_dir}", f"hydra.sweep.subdir=g{index}_${{hydra.job.num}}"]
        code = subprocess.run([sys.executable, "-m", "harness", "multirun", *grid, *place, *flags], env=env).returncode
        worst = max(worst, code)
    if (sweep_dir / PARENT_FILE).is_file():
        try:
            print(f"sweep {spec.name}: parent run {close_parent(sweep_dir)}")
        except Exception as err:  # the runs are recorded either way
            print(f"harness: warning: could not close the parent run: {err}", file=sys.stderr)
    _build_reports(sweep_dir, spec.reports)
    return worst


def _build_reports(sweep_dir: Path, kinds: List[str]) -> None:
    try:
        from harness.reports import build_sweep_reports
    except ImportError:
        return
    try:
        for path in build_sweep_reports(sweep_dir, kinds=kinds):
            print(f"  report: {path}")
    except Exception as err:  # a report problem never fails the sweep
        print(f"harness: warning: reports for {sweep_dir} failed: {err}", file=sys.stderr)
