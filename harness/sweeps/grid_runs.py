"""A named sweep's grids as Hydra multiruns: compose and validate every job first (`prepare_jobs`), run each
grid as one multirun into the sweep's folder (`run_grids`), then close the parent run and build the reports
the sweep names (`finish`). Used by `sweep`, `findings` and adaptive seeding."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import List, Optional, Tuple

from harness.launchers.compose import preflight_jobs
from harness.config.flags import HARNESS_FLAGS
from harness.launchers.sweep_progress import busy
from harness.launchers.where import sweep_where
from harness.reports.rendering.verdicts import sweep_answer
from harness.launchers.sweep_parent import NAMED_SWEEP_ENV, close_parent
from harness.reports import build_sweep_reports
from harness.reports.evidence.sweep_spec import SweepSpec
from harness.tracking.run_tracker import PARENT_FILE
from harness.tracking.store import mlflow_store


def prepare(spec: SweepSpec, user: List[str]) -> Tuple[Path, List[List[str]]]:
    """The sweep's folder and the overrides of each grid, every job validated (ConfigError/ValueError)."""
    sweep_dir, grids, _ = prepare_jobs(spec, user, [])
    return sweep_dir, grids


def prepare_jobs(spec: SweepSpec, user: List[str], flags: List[str]) -> Tuple[Path, List[List[str]], list]:
    """`prepare`, also returning each grid's jobs as composed and validated with the overrides its multirun
    gets (`_grid_argv`): every job of every grid is checked before the first grid starts (each grid's
    multirun then composes its own jobs in its launcher, as any multirun does)."""
    given = {o.partition("=")[0].lstrip("+~") for o in user if "=" in o}
    common = [o for o in spec.common_overrides() if o.partition("=")[0].lstrip("+~") not in given]  # the user's win
    grids = [[*common, *grid, *user] for grid in spec.grid_overrides(user)]
    folder = f"multirun/{spec.name}/{datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"
    jobs = [preflight_jobs(_grid_argv(grid, index, folder, flags)[1:], multirun=True)
            for index, grid in enumerate(grids)]
    root = Path(jobs[0][0].spec.output_root).expanduser().resolve()
    return root / folder, grids, jobs


def _grid_argv(grid: List[str], index: int, folder: str, flags: List[str], tag: str = "") -> List[str]:
    """`multirun` and the overrides of one grid's multirun, harness flags as the CLI turns them into overrides."""
    place = [f"hydra.sweep.dir=${{output_root}}/{folder}", f"hydra.sweep.subdir=g{index}{tag}_${{hydra.job.num}}"]
    return ["multirun", *grid, *place, *(HARNESS_FLAGS[f] for f in flags if f in HARNESS_FLAGS)]


def run(spec: SweepSpec, sweep_dir: Path, grids: List[List[str]], flags: List[str],
        jobs: Optional[list] = None) -> int:
    """Run each grid as one multirun into `sweep_dir`, close the parent run, build the reports; worst exit code.
    `jobs`: each grid's, from `prepare_jobs` (the store is read from them)."""
    print(f"sweep {spec.name}: {spec.hypothesis.strip()}\n  folder: {sweep_dir}\n  reports: {', '.join(spec.reports)}")
    worst = run_grids(sweep_dir, grids, flags)
    finish(spec, sweep_dir, store_of(jobs))
    return worst


def store_of(jobs: Optional[list]) -> Optional[str]:
    """The sweep's store, full URI (its `parent_run.json` holds it masked), from its first composed job."""
    return mlflow_store(jobs[0][0].spec) if jobs and jobs[0] else None


def run_grids(sweep_dir: Path, grids: List[List[str]], flags: List[str], tag: str = "") -> int:
    """Each grid as one multirun into `sweep_dir` (job folders g<grid><tag>_<job>); worst exit code."""
    worst = 0
    folder = str(sweep_dir.relative_to(sweep_dir.parents[2]))
    for index, grid in enumerate(grids):
        env = {**os.environ, NAMED_SWEEP_ENV: "1"}
        argv = _grid_argv(grid, index, folder, flags, tag)
        worst = max(worst, subprocess.run([sys.executable, "-m", "harness", *argv], env=env).returncode)
    return worst


def finish(spec: SweepSpec, sweep_dir: Path, tracking_uri: Optional[str] = None) -> None:
    """Close the sweep's parent run and build its reports."""
    if (sweep_dir / PARENT_FILE).is_file():
        try:
            print(f"sweep {spec.name}: parent run {close_parent(sweep_dir, tracking_uri)}")
        except Exception as err:  # the runs are recorded either way
            print(f"harness: warning: could not close the parent run: {err}", file=sys.stderr)
    _build_reports(sweep_dir, spec.reports, tracking_uri)


def _build_reports(sweep_dir: Path, kinds: List[str], tracking_uri: Optional[str]) -> None:
    try:
        with busy("building the sweep's reports"):
            paths = build_sweep_reports(sweep_dir, kinds=kinds, tracking_uri=tracking_uri)
        for path in paths:
            print(f"  report: {path}")
    except Exception as err:  # a report problem never fails the sweep
        print(f"harness: warning: reports for {sweep_dir} failed: {err}", file=sys.stderr)
    print(sweep_where(sweep_dir, sweep_answer(sweep_dir)))
