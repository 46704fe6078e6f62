"""A named sweep's grids, run in this process under one sweep session: every job of every grid composed and
validated once, by the launcher that runs it (`prepare_jobs`), then the grids launched one after another into
the sweep's folder under one parent run (`run_grids`), then the parent closed and the reports the sweep names
built (`finish`). Used by `sweep`, `findings` and adaptive seeding.

Each grid is what a `multirun` of its overrides would be: its primary config composed as Hydra's multirun
composes it, the launcher that config names, the grid sweeper's jobs. Hydra's configured callbacks act on
single runs only (harness/launchers/folder_guard.py), so a grid's launcher gets none."""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from omegaconf import DictConfig, OmegaConf

from harness.config.errors import ConfigError
from harness.config.flags import HARNESS_FLAGS, VERBOSE_FLAGS, VERBOSE_OVERRIDE, YES_FLAG
from harness.config.overrides import expand_sweep
from harness.infra.refused import Refused
from harness.launchers import job_returns, results
from harness.launchers.base import no_callbacks
from harness.launchers.compose import Job, check_overrides, compose_sweep_config, hydra_session
from harness.launchers.job import run_job
from harness.launchers.preflight import check_jobs, print_dry_run
from harness.launchers.sweep_parent import close_parent
from harness.launchers.sweep_progress import busy
from harness.launchers.where import sweep_where
from harness.reports import build_sweep_reports
from harness.reports.evidence.sweep_spec import SweepSpec
from harness.reports.rendering.verdicts import sweep_answer
from harness.sweeps.continued import run_sweep
from harness.tracking.run_tracker import PARENT_FILE
from harness.tracking.store import mlflow_store


@dataclass
class Grid:
    """One grid of a named sweep: its overrides (`task`; `argv` with its folder and the flags' overrides), its
    primary config, the launcher holding its jobs as composed and validated (`jobs`, launched from there: each
    job is composed once) and their overrides."""
    task: List[str]
    argv: List[str]
    config: DictConfig
    launcher: object
    jobs: List[Job]
    overrides: List[List[str]]


def prepare(spec: SweepSpec, user: List[str]) -> Tuple[Path, List[List[str]]]:
    """The sweep's folder and the overrides of each grid, every job validated (ConfigError/ValueError)."""
    sweep_dir, grids, _ = prepare_jobs(spec, user, [])
    return sweep_dir, [grid.task for grid in grids]


def prepare_jobs(spec: SweepSpec, user: List[str], flags: List[str], tag: str = "",
                 into: Optional[Path] = None) -> Tuple[Path, List[Grid], List[List[Job]]]:
    """The sweep's folder (a new one, or `into`: a study's next round), its grids (job folders
    g<grid><tag>_<job>) and each grid's jobs, every job of every grid composed and validated before anything
    starts (ConfigError, one line, for the first that cannot run)."""
    given = {o.partition("=")[0].lstrip("+~") for o in user if "=" in o}
    common = [o for o in spec.common_overrides() if o.partition("=")[0].lstrip("+~") not in given]  # the user's win
    folder = f"multirun/{spec.name}/{datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"
    place = str(into) if into is not None else f"${{output_root}}/{folder}"
    tasks = [[*common, *grid, *user] for grid in spec.grid_overrides(user)]
    with hydra_session():
        grids = [_prepared_grid(task, _grid_argv(task, index, place, flags, tag), YES_FLAG in flags)
                 for index, task in enumerate(tasks)]
    root = Path(grids[0].jobs[0].spec.output_root).expanduser().resolve()
    return into or root / folder, grids, [grid.jobs for grid in grids]


def _grid_argv(grid: List[str], index: int, folder: str, flags: List[str], tag: str = "") -> List[str]:
    """One grid's overrides as its multirun would get them: its folder, harness flags as their overrides."""
    place = [f"hydra.sweep.dir={folder}", f"hydra.sweep.subdir=g{index}{tag}_${{hydra.job.num}}"]
    verbose = [VERBOSE_OVERRIDE] if set(VERBOSE_FLAGS) & set(flags) else []
    return [*grid, *place, *(HARNESS_FLAGS[f] for f in flags if f in HARNESS_FLAGS), *verbose]


def _prepared_grid(task: List[str], argv: List[str], any_size: bool) -> Grid:
    """The grid's launcher (as Hydra's sweeper sets one up) with every job of the grid composed and validated."""
    from hydra.core.global_hydra import GlobalHydra  # (Hydra loads where jobs are composed)
    from hydra.types import HydraContext
    from hydra.utils import instantiate

    check_overrides(argv, multirun=True, any_size=any_size)
    config = compose_sweep_config(argv)
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    overrides = expand_sweep([*(f"{key}={value}" for key, value in params.items()),
                              *OmegaConf.to_container(config.hydra.overrides.task)])
    if not overrides:
        raise ConfigError("the sweep is empty: no job to run")
    launcher = instantiate(config.hydra.launcher)
    launcher.setup(hydra_context=HydraContext(config_loader=GlobalHydra.instance().config_loader(),
                                              callbacks=no_callbacks()), task_function=run_job, config=config)
    try:
        jobs = launcher.prepare(overrides)
    except Refused as err:
        raise ConfigError(str(err)) from None
    return Grid(task, argv, config, launcher, jobs, overrides)


def run(spec: SweepSpec, sweep_dir: Path, grids: List[Grid], flags: List[str],
        jobs: Optional[list] = None) -> int:
    """Run the grids into `sweep_dir`, close the parent run, build the reports; the exit code."""
    print(f"sweep {spec.name}: {spec.hypothesis.strip()}\n  folder: {sweep_dir}\n  reports: {', '.join(spec.reports)}")
    code = run_grids(sweep_dir, grids, flags)
    finish(spec, sweep_dir, store_of([grid.jobs for grid in grids]))
    return code


def store_of(jobs: Optional[list]) -> Optional[str]:
    """The sweep's store, full URI (its `parent_run.json` holds it masked), from its first composed job."""
    return mlflow_store(jobs[0][0].spec) if jobs and jobs[0] else None


def run_grids(sweep_dir: Path, grids: List[Grid], flags: Sequence[str] = ()) -> int:
    """The grids launched one after another in one sweep session (the folder claimed, one parent run, joined
    by a later call's grids and left open for `finish`), after the checks that need every job of every grid;
    1 if a job did not end well, else 0. Refused (one line) for a check that fails."""
    every = [job for grid in grids for job in grid.jobs]
    if print_dry_run(every):  # --dry-run: the plans only, nothing checked against the cluster or started
        return 0
    check_jobs(every, multirun=True)
    returned: list = []

    def launch() -> list:
        for grid in grids:
            ended = _launch(grid)
            returned.extend(ended)
            print(results.summarize(job_returns.job_results(ended)), flush=True)
        return returned

    try:
        run_sweep(grids[0].config, len(every), launch, named=True)
    finally:
        # a job run in this process left Hydra's job logging on the root logger (INFO, to the console): what
        # follows (the reports, their libraries' INFO lines) logs as this process did before the jobs
        logging.getLogger().setLevel(logging.WARNING)
    return 0 if all(r.status in results.OK_STATUSES for r in job_returns.job_results(returned)) else 1


def _launch(grid: Grid) -> list:
    """What the grid's launcher returned for its jobs (composed by `prepare_jobs`), with Hydra's sweep record
    (`multirun.yaml`) written into the folder as Hydra's sweeper writes it."""
    from hydra.core.hydra_config import HydraConfig

    sweep_dir = Path(str(grid.config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    HydraConfig.instance().set_config(grid.config)
    OmegaConf.save(grid.config, sweep_dir / "multirun.yaml")
    return list(grid.launcher.launch(grid.overrides, initial_job_idx=0))


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
