"""A sweep's session, and re-running the command of a stopped sweep continues that sweep, in its folder.

What a sweeper does around its jobs (`run_sweep`), once every job has been composed and validated (so bad input
leaves nothing behind): claim the sweep folder, record its command (below), open the sweep's MLflow parent run,
and when the jobs have ended, give the parent its status from what they returned, build the sweep's reports and
release the folder.

A sweep records its command in `<sweep folder>/command.json`: a fingerprint of its normalized overrides (the
task's and Hydra's, sorted; `hydra.mode` and `hydra.verbose` (-v) left out), its job count, when it
started, and the experiment and store its runs are tracked in (a sweep is continued only into those: one
sweep never spans two experiments; another one starts a new sweep, said in one line). The same overrides in
another order are the same command: they are put back in the recorded order (`in_recorded_order`), so that
each job is numbered as it was and goes on in the job folder that holds it.
A `multirun` whose sweep folder is made new for each invocation (the default
`${output_root}/multirun/${now:...}/${now:...}`) first looks, among the folders that pattern makes, for the
latest sweep of the same fingerprint that was stopped: not every one of its jobs ended (a job KILLED, one
without a status, one never started), and no live process holds it. It then runs in that folder: its FINISHED
jobs are skipped, its stopped jobs resume from their checkpoints into their own MLflow runs, the others start,
and its MLflow parent run is reopened.

Not continued: a sweep whose every job ended (FINISHED, FAILED, SKIPPED): the same command starts a new sweep,
where skip-finished skips the FINISHED configs; an explicit `hydra.sweep.dir=` (that folder is used as given);
`--new-sweep` (the command's `Options.new_sweep`); named sweeps (`sweep <name> --continue=<folder>`),
detached sweeps, Optuna (its own study)."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence, TypeVar

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from harness.infra.atomic_file import write_text_atomically
from harness.infra.claim import held_by
from harness.infra.secrets import mask_tree
from harness.launchers.folder_claims import FolderTaken, check_sweep_jobs
from harness.launchers.folder_guard import claim_folder, release_sweep_folder
from harness.launchers.job_returns import job_results
from harness.launchers.sweep_parent import SweepParent, job_statuses, tracking_uri_of
from harness.launchers.sweep_progress import busy
from harness.reports import build_sweep_reports
from harness.sweeps.design_identity import override_key
from harness.tracking.params import changes_computation
from harness.tracking.store import experiment_name, mlflow_store
from harness.tracking.stored_uri import on_disk

COMMAND_FILE = "command.json"
STOPPED = ("KILLED", "UNKNOWN", "RUNNING")  # a job that did not end: its process was stopped or died
NOW = "${now:"

log = logging.getLogger("harness")


def fingerprint(config: DictConfig) -> str:
    """The command's overrides, normalized (sorted; Hydra's `hydra.mode`, which the command line adds, its
    `hydra.verbose` (-v), and the task's overrides that change no computation, a launcher or its packing, left
    out), as a SHA-256."""
    given = [*(str(o) for o in config.hydra.overrides.task if changes_computation(str(o))),
             *(str(o) for o in config.hydra.overrides.hydra)]
    kept = sorted(o for o in given if not o.startswith(("hydra.mode=", "hydra.verbose=")))
    return hashlib.sha256(json.dumps(kept).encode()).hexdigest()


def record_command(sweep_dir: Path, config: DictConfig, jobs: int) -> None:
    """Write the sweep's `command.json` (kept as it is when the sweep is continued)."""
    path = Path(sweep_dir) / COMMAND_FILE
    if path.is_file():
        return
    overrides = [str(o) for o in config.hydra.overrides.task]
    write_text_atomically(path, json.dumps({"fingerprint": fingerprint(config), "jobs": jobs,
                                            "overrides": mask_tree(overrides), "started": time.time(),
                                            **records_to(config)}, indent=1))


def records_to(config: DictConfig) -> dict:
    """Where the sweep's runs are tracked: {"store": the store as written to disk, "experiment": its name};
    a sweep is continued only into the same (one sweep never spans two experiments or stores)."""
    try:
        store = mlflow_store(config)
        return {"store": on_disk(store) if store else None, "experiment": experiment_name(config) if store else None}
    except Exception:  # a config without the harness's tracking keys: nothing to pin
        return {}


def _elsewhere(record: dict, config: DictConfig) -> Optional[str]:
    """How the stopped sweep `record` is tracked elsewhere than this command's runs would be, or None."""
    mine = records_to(config)
    differ = [key for key in ("experiment", "store") if key in record and key in mine and record[key] != mine[key]]
    return None if not differ else " and ".join(f"{key} {record[key]!r} (this command: {mine[key]!r})"
                                                 for key in differ)


def _search_root(config: DictConfig) -> Optional[tuple]:
    """(folder, glob) under which this command's sweep folders are made, when each invocation makes a new one
    (its last components are `${now:...}`); None for a fixed folder (an explicit `hydra.sweep.dir=`)."""
    raw = str(OmegaConf.to_container(config.hydra.sweep, resolve=False).get("dir"))
    parts = raw.rstrip("/").split("/")
    stamped = 0
    while stamped < len(parts) and NOW in parts[len(parts) - 1 - stamped]:
        stamped += 1
    if not stamped or any(NOW in part for part in parts[:len(parts) - stamped]):
        return None
    resolved = Path(str(config.hydra.sweep.dir))
    return resolved.parents[stamped - 1], "/".join(["*"] * stamped)


def stopped_sweep(config: DictConfig, new_sweep: bool = False, anywhere: bool = False) -> Optional[Path]:
    """The latest stopped sweep of this command, or None (always, with `--new-sweep`: new_sweep, or detached).
    Only one tracked in this command's experiment and store, unless `anywhere`."""
    continues = not (new_sweep or OmegaConf.select(config, "launcher.detach", default=False))
    where = _search_root(config) if continues else None
    if where is None or not _is_folder(where[0]):
        return None
    mine = fingerprint(config)
    found = []
    for path in where[0].glob(f"{where[1]}/{COMMAND_FILE}"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("fingerprint") == mine and _stopped(path.parent, record) and (
                anywhere or not _elsewhere(record, config)):
            found.append((float(record.get("started") or 0), str(path.parent)))
    return Path(max(found)[1]) if found else None


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system, say: no sweep was ever made there (claiming it says why)
        return False


def in_recorded_order(config: DictConfig, arguments: Sequence[str], new_sweep: bool = False) -> List[str]:
    """The command's overrides (`arguments`) in the order the latest stopped sweep of the same command gave
    them: the same overrides in any order are the same command, and a grid's jobs are numbered in the order of
    its overrides, so the jobs then land in the job folders that hold them. `arguments` as they are when no
    sweep is continued."""
    folder = stopped_sweep(config, new_sweep)
    try:
        recorded = json.loads((folder / COMMAND_FILE).read_text()).get("overrides") if folder else None
    except (OSError, ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, list):
        return list(arguments)
    place = {key: index for index, key in reversed(list(enumerate(override_key(str(o)) for o in recorded)))}
    return sorted(arguments, key=lambda o: place.get(override_key(str(o)), len(place)))  # stable: others last


def _stopped(folder: Path, record: dict) -> bool:
    if held_by(folder):  # running now, in another process
        return False
    statuses = job_statuses(folder)
    return len(statuses) < int(record.get("jobs") or 0) or any(s in STOPPED for s in statuses.values())


def continue_stopped_sweep(config: DictConfig, jobs: Sequence, new_sweep: bool = False) -> Optional[Path]:
    """Point the sweep (`config`, Hydra's primary config, and its composed `jobs`) at the latest stopped sweep
    of the same command, and say so in one line; the folder, or None (a new sweep; always with new_sweep)."""
    folder = stopped_sweep(config, new_sweep)
    if folder is None:
        _say_new_sweep(config, new_sweep)
        return None
    try:
        check_sweep_jobs(folder, jobs)
    except FolderTaken as err:  # the same command no longer makes the same jobs (other sweep files, configs)
        print(f"sweep: not continuing {folder}: {err}", flush=True)
        return None
    statuses = job_statuses(folder)
    done = sum(s == "FINISHED" for s in statuses.values())
    print(f"sweep: continuing the stopped sweep {folder} ({done} of {len(jobs)} runs FINISHED there, the others "
          f"resume from their checkpoints or start; --new-sweep starts a new sweep instead)", flush=True)
    _point_at(config, [job.config for job in jobs], folder)
    return folder


def _say_new_sweep(config: DictConfig, new_sweep: bool) -> None:
    """A stopped sweep of this command tracked in another experiment or store is not continued into this one:
    a new sweep starts, and says why in one line."""
    folder = stopped_sweep(config, new_sweep, anywhere=True)
    try:
        why = _elsewhere(json.loads((folder / COMMAND_FILE).read_text()), config) if folder else None
    except (OSError, ValueError, AttributeError):
        why = None
    if why:
        print(f"sweep: not continuing the stopped sweep {folder}: its runs are tracked in {why}; one sweep never "
              "spans two, so a new sweep starts (to continue that one, run the command with its experiment and "
              "store)", flush=True)


def _point_at(config: DictConfig, job_configs: List[DictConfig], folder: Path) -> None:
    """Every config of the sweep runs in `folder`: each job's, and the primary config with `hydra.sweep.dir=<folder>`
    among its Hydra overrides, so that a job composed again from it (to resume its checkpoint) lands there too."""
    for each in (config, *job_configs):
        with read_write(each.hydra), open_dict(each.hydra):
            each.hydra.sweep.dir = str(folder)
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.overrides.hydra.append(f"hydra.sweep.dir={folder}")


Returned = TypeVar("Returned")


def run_sweep(config: DictConfig, size: Optional[int], launch: Callable[[], Returned],
              continuable: bool = False, named: bool = False) -> Returned:
    """Run `launch` (the sweep's launches: it returns what the launcher returned) inside the sweep's session;
    `config` is the sweep's (Hydra's primary config), `size` its job count. Returns what `launch` returned.
    continuable: record the sweep's command, so that re-running it continues the sweep if it stops (see the
    module's docstring). named: a named sweep's grids (harness/sweeps/grid_runs.py), which join the
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
