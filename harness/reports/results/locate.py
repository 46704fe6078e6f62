"""What a report target names: a sweep folder, a sweep id (<date>/<time>) or a (parent) run id, resolved
to a sweep id, a tracking store, experiments, the parent run and the output folder.

A sweep folder is read for, in order: `parent_run.json` ({"run_id", "tracking_uri", "experiment_id"}),
then the first job's `config.yaml` (or `.hydra/config.yaml`): tracking.uri, else the SQLite store under
output_root (or, for a relative output_root, the folder above `multirun/<date>/<time>`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from harness.infra.paths import tools_output_root
from harness.config.yaml_errors import YAML_READ_ERRORS
from harness.reports.results.history_sql import sqlite_path
from harness.infra.run_record import run_id_of
from harness.tracking.stored_uri import UriNeeded, reconnect

SWEEP_ID = re.compile(r"^\d{4}-\d{2}-\d{2}/[\w.-]+$")
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class TargetError(ValueError):
    """A report target that names nothing usable (one line, said to the user)."""


@dataclass
class Target:
    sweep_id: Optional[str]
    tracking_uri: Optional[str]
    experiment_names: List[str]
    experiment_ids: List[str]
    parent_run_id: Optional[str] = None
    sweep_dir: Optional[Path] = None
    out_dir: Optional[Path] = None
    # Finished runs that skipped jobs of this sweep stand for (identical config, run by an earlier sweep).
    twin_run_ids: List[str] = field(default_factory=list)


def default_root() -> Path:
    return tools_output_root()


def natural_key(name: str) -> tuple:
    """'g1_10' sorts after 'g1_9': digit runs compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part)


def job_dirs(sweep_dir: Path) -> List[Path]:
    """Job folders of a sweep (sub-folders with a config.yaml or .hydra/: `0`, `1`, ... or a named sweep's
    `g0_0`, `g1_0`, ...), in job order."""
    folder = Path(sweep_dir)
    if not folder.is_dir():
        return []
    jobs = [d for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")  # .hydra is Hydra's record
            and ((d / "config.yaml").is_file() or (d / ".hydra").is_dir())]
    return sorted(jobs, key=lambda d: natural_key(d.name))


def sweep_folders(root: Path) -> List[Path]:
    """The sweep folders under `<root>/multirun` (`<date>/<time>`, or a named sweep's `<name>/<stamp>`), oldest
    first."""
    found = [d for d in Path(root).glob("multirun/*/*") if d.is_dir() and (job_dirs(d) or (d / "parent_run.json").is_file())]
    return sorted(found, key=lambda d: d.stat().st_mtime)


def _job_config(sweep_dir: Path):
    from omegaconf import OmegaConf

    for job in job_dirs(sweep_dir) or [sweep_dir]:  # a single run's folder is its own job
        for path in (job / "config.yaml", job / ".hydra" / "config.yaml"):
            if path.is_file():
                try:
                    return OmegaConf.load(path)
                except YAML_READ_ERRORS:
                    continue
    return None


def _store_from_config(cfg, sweep_dir: Path) -> Optional[str]:
    from omegaconf import OmegaConf

    if OmegaConf.select(cfg, "tracking.backend", default="mlflow") == "none":
        return None
    uri = OmegaConf.select(cfg, "tracking.uri", default=None, throw_on_missing=False)
    if uri:
        return str(uri)
    roots = []
    root = OmegaConf.select(cfg, "output_root", default=None, throw_on_missing=False, throw_on_resolution_failure=False)
    if root and Path(str(root)).expanduser().is_absolute():
        roots.append(Path(str(root)).expanduser())
    if len(sweep_dir.parts) >= 4 and sweep_dir.parents[1].name == "multirun":
        roots.append(sweep_dir.parents[2])
    for candidate in roots:
        if (candidate / "mlruns.db").is_file():
            return f"sqlite:///{candidate / 'mlruns.db'}"
    return f"sqlite:///{roots[0] / 'mlruns.db'}" if roots else None


def _skipped_twins(sweep_dir: Path) -> List[str]:
    twins = []
    for marker in sorted(sweep_dir.glob("*/skipped.json")):
        try:
            twins.append(str(json.loads(marker.read_text())["twin_run_id"]))
        except (OSError, ValueError, KeyError):
            continue
    return twins


def from_sweep_dir(sweep_dir: Path, tracking_uri: Optional[str] = None, experiment: Optional[str] = None,
                   out: Optional[Path] = None) -> Target:
    sweep_dir = Path(sweep_dir).expanduser().resolve()
    target = Target("/".join(sweep_dir.parts[-2:]), tracking_uri, [experiment] if experiment else [], [],
                    sweep_dir=sweep_dir, out_dir=Path(out) if out else sweep_dir / "reports")
    target.twin_run_ids = _skipped_twins(sweep_dir)
    if not job_dirs(sweep_dir):  # a single run's folder: its own tracking run, as its checkpoint records it
        own = run_id_of(sweep_dir)
        target.twin_run_ids += [own] if own else []
    parent_file = sweep_dir / "parent_run.json"
    if parent_file.is_file():
        try:
            info = json.loads(parent_file.read_text())
            target.parent_run_id = info.get("run_id")
            if not target.tracking_uri and info.get("tracking_uri"):
                target.tracking_uri = reconnect(info["tracking_uri"])  # written masked when it has a password
            if info.get("experiment_id") and not experiment:
                target.experiment_ids = [str(info["experiment_id"])]
        except UriNeeded as err:
            raise TargetError(str(err)) from None
        except (OSError, ValueError):
            pass
    cfg = _job_config(sweep_dir)
    if cfg is not None:
        from omegaconf import OmegaConf

        target.tracking_uri = target.tracking_uri or _store_from_config(cfg, sweep_dir)
        name = (OmegaConf.select(cfg, "tracking.experiment", default=None)
                or OmegaConf.select(cfg, "experiment_name", default=None))
        if name and not target.experiment_names and not target.experiment_ids:
            target.experiment_names = [str(name)]
    elif target.tracking_uri is None and len(sweep_dir.parts) >= 4 and sweep_dir.parents[1].name == "multirun":
        target.tracking_uri = f"sqlite:///{sweep_dir.parents[2] / 'mlruns.db'}"
    return target


def resolve(arg: str, tracking_uri: Optional[str] = None, experiment: Optional[str] = None,
            out: Optional[Path] = None) -> Target:
    """The target of `python -m harness report <arg>`; TargetError (one line) if it names nothing."""
    path = Path(arg).expanduser()
    if path.is_dir():
        return from_sweep_dir(path, tracking_uri, experiment, out)
    root = default_root()
    store = tracking_uri or f"sqlite:///{root / 'mlruns.db'}"
    if SWEEP_ID.match(arg):
        if (root / "multirun" / arg).is_dir():
            return from_sweep_dir(root / "multirun" / arg, tracking_uri, experiment, out)
        _check_store(store, arg)
        return Target(arg, store, [experiment] if experiment else [], [], out_dir=Path(out) if out else None)
    if RUN_ID.match(arg):
        _check_store(store, arg)
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        try:
            run = MlflowClient(tracking_uri=store).get_run(arg)
        except (MlflowException, OSError) as err:
            raise TargetError(f"run id {arg} not found in {store}: {str(err).splitlines()[0]}") from None
        tags = run.data.tags
        parent = arg if tags.get("harness.role") == "parent" else tags.get("mlflow.parentRunId")
        if not tags.get("harness.sweep_id") and not parent:
            raise TargetError(f"run {arg} is not part of a sweep: it has no harness.sweep_id tag and no parent run")
        return Target(tags.get("harness.sweep_id"), store, [experiment] if experiment else [],
                      [run.info.experiment_id], parent_run_id=parent, out_dir=Path(out) if out else None)
    raise TargetError(f"report target {arg!r} is not a sweep folder, a sweep id (<date>/<time>, e.g. "
                      "2026-11-29/10-00-00-000000) or an MLflow run id (32 hex digits)")


def _check_store(uri: str, arg: str) -> None:
    db = sqlite_path(uri)
    if db is not None and not db.is_file():
        raise TargetError(f"no sweep folder for {arg!r} under {default_root()} and no MLflow store at {db}; "
                          "pass --tracking-uri or run from the sweep's output root (or set HARNESS_OUTPUT_ROOT)")
