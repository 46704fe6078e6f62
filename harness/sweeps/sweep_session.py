"""What a sweeper does around its jobs, once every job has been composed and validated (so bad input leaves
nothing behind): claim the sweep folder, open the sweep's MLflow parent run, and when the jobs have ended,
give the parent its status from what they returned, build the sweep's reports and release the folder."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Optional, TypeVar

from omegaconf import DictConfig

from harness.launchers.folder_guard import claim_folder, release_sweep_folder
from harness.launchers.job_returns import job_results
from harness.launchers.sweep_parent import SweepParent, tracking_uri_of
from harness.launchers.sweep_progress import busy
from harness.reports import build_sweep_reports
from harness.sweeps.continued import record_command

log = logging.getLogger("harness")

Returned = TypeVar("Returned")


def run_sweep(config: DictConfig, size: Optional[int], launch: Callable[[], Returned],
              continuable: bool = False, named: bool = False) -> Returned:
    """Run `launch` (the sweep's launches: it returns what the launcher returned) inside the sweep's session;
    `config` is the sweep's (Hydra's primary config), `size` its job count. Returns what `launch` returned.
    continuable: record the sweep's command, so that re-running it continues the sweep if it stops
    (harness/sweeps/continued.py). named: a named sweep's grids (harness/sweeps/grid_runs.py), which join the
    parent run an earlier call opened in the folder and leave it open, and whose reports the named sweep builds."""
    claim_folder(config, "hydra.sweep.dir", "sweep folder")
    try:
        if continuable and size:
            record_command(Path(str(config.hydra.sweep.dir)), config, size)
        parent = SweepParent(config, size, joins=named).open()
        returned = launch()
        if parent.end(job_results(returned), keep_open=named):
            build_reports(parent.sweep_dir, tracking_uri_of(config))
        return returned
    finally:
        release_sweep_folder(config)


def build_reports(sweep_dir: Path, tracking_uri: Optional[str]) -> None:
    """The sweep's reports; a report never fails a sweep."""
    try:
        with busy("building the sweep's reports"):
            build_sweep_reports(sweep_dir, tracking_uri=tracking_uri)
    except Exception as err:  # a report problem (any) is logged; the runs are recorded either way
        log.warning("sweep reports for %s failed: %s", sweep_dir, err)
