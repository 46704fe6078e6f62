"""Which folders a command may write into, checked at preflight (before Hydra creates anything):

- a run folder given with `hydra.run.dir=` only if it is new (or empty), or it is the run that
  `trainer.resume` continues;
- a sweep folder given with `hydra.sweep.dir=` only into job folders that are new, or that hold the same
  job (a re-run that skips what FINISHED); never a single run's folder;
- `trainer.resume` only a run that no live process holds, whose checkpoint belongs to the folder (its
  recorded config digest is the folder's `config.yaml`'s, and no symlink leads out of the folder);
- `report --out` only a new folder or one that holds reports already;
- no run or sweep folder through a symlink loop (an output root inside one).

Every refusal is a ValueError of one line; nothing is created or changed here. (`harness.infra.claim` keeps two
processes out of one folder while they run.)"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence

import yaml
from omegaconf import OmegaConf

from harness.infra.claim import LOCK_FILE, FolderInUse, check_free, held_by
from harness.infra.paths import check_no_loop
from harness.infra.run_record import live_job
from harness.infra.secrets import mask_tree
from harness.tracking.params import changes_computation
from harness.trainers.checkpoint import CHECKPOINT_DIR, checkpoint_paths, file_sha256
from harness.trainers.resume import run_folder

RUN_FILES = ("config.yaml", "job.json", "metrics.jsonl", "status.txt", "checkpoints", ".hydra")
REPORT_FILES = ("index.html", "README.md")


class FolderTaken(ValueError):
    """A folder this command may not write into; the message is one line."""


def _explicit(overrides: Sequence[str], key: str) -> bool:
    return any(o.partition("=")[0].lstrip("+~") == key for o in overrides)


def _status(folder: Path) -> str:
    try:
        return (folder / "status.txt").read_text().strip() or "unknown"
    except OSError:
        return "no status: not ended, or killed"


def contents(folder: Path) -> List[str]:
    try:
        return sorted(p.name for p in folder.iterdir() if p.name != LOCK_FILE)
    except OSError:
        return []


def check_output_folders(jobs: Sequence, multirun: bool) -> None:
    """Refuse an explicit `hydra.run.dir` / `hydra.sweep.dir` that would overwrite or mix another run."""
    if not jobs:
        return
    first = jobs[0]
    # the command line's overrides: a launcher's job has its task overrides, Hydra keeps hydra.* ones apart
    hydra_overrides = OmegaConf.select(first.config, "hydra.overrides.hydra")  # as given: interpolations unresolved
    given = [*first.overrides, *(OmegaConf.to_container(hydra_overrides, resolve=False) if hydra_overrides else [])]
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    folder = OmegaConf.select(first.config, key)
    if folder is not None:  # else Hydra's first mkdir fails with ELOOP, in a traceback
        source = "" if _explicit(given, key) else f" (from output_root={OmegaConf.select(first.config, 'output_root')})"
        check_no_loop(str(folder), f"{key}={folder}{source}")
    if not multirun:
        if _explicit(given, "hydra.run.dir"):
            _check_run_dir(Path(str(OmegaConf.select(first.config, "hydra.run.dir"))), first.spec)
        return
    if _explicit(given, "hydra.sweep.dir"):
        _check_sweep_dir(Path(str(OmegaConf.select(first.config, "hydra.sweep.dir"))), jobs)


def _refuse_if_in_use(folder: Path, what: str) -> None:
    # first: a live sweep's half-made job folders would otherwise read as another sweep's
    try:
        check_free(folder, what)
    except FolderInUse as err:
        raise FolderTaken(str(err)) from None


def _check_run_dir(folder: Path, spec) -> None:
    folder = folder.expanduser()
    held = contents(folder)
    if not held:
        return
    resume = spec.trainer.get("resume")
    if resume and _same(_run_folder(str(resume)), folder):
        return  # the run being resumed, in its own folder (its lock is checked with the resume)
    _refuse_if_in_use(folder, "run folder")
    what = f"run (status: {_status(folder)})" if set(held) & set(RUN_FILES) else f"files ({', '.join(held[:3])})"
    raise FolderTaken(f"hydra.run.dir={folder} already holds a {what}; a run writes only into a new folder: "
                      f"choose another (to continue that run: trainer.resume={folder})")


def _check_sweep_dir(folder: Path, jobs: Sequence) -> None:
    folder = folder.expanduser()
    held = contents(folder)
    if not held:
        return
    _refuse_if_in_use(folder, "sweep folder")
    if "multirun.yaml" not in held and set(held) & set(RUN_FILES):
        raise FolderTaken(f"hydra.sweep.dir={folder} is a single run's folder (status: {_status(folder)}); a sweep "
                          "writes only into a new folder or its own: choose another")
    for index, job, sub in check_sweep_jobs(folder, jobs):
        status = _status(folder / sub)
        if status == "FINISHED" and (job.spec.get("force") or job.spec.tracking.backend == "none"):
            why = "--force reruns it" if job.spec.get("force") else "tracking=none cannot skip it"
            raise FolderTaken(f"hydra.sweep.dir={folder}: job {sub} FINISHED there and would be overwritten ({why}); "
                              "choose a new folder")


def check_sweep_jobs(folder: Path, jobs: Sequence) -> List[tuple]:
    """(index, job, subfolder) of each of `jobs` whose folder exists in the sweep folder `folder`; FolderTaken
    if one of them holds another job (other overrides)."""
    found = []
    for index, job in enumerate(jobs):
        sub = _job_subdir(job, index)
        if sub is None or not (folder / sub).exists():
            continue
        try:
            theirs = yaml.safe_load((folder / sub / ".hydra" / "overrides.yaml").read_text())
        except (OSError, yaml.YAMLError):
            theirs = None
        ours = [o for o in job.overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]  # as Hydra records
        # the same job on another launcher or packing (launcher.members) is still this job
        if not isinstance(theirs, list) or _computing(theirs) != _computing(mask_tree(ours)):
            shown = " ".join(theirs) if isinstance(theirs, list) else "files of another sweep"
            raise FolderTaken(f"hydra.sweep.dir={folder}: its job folder {sub} holds another job ({shown}), not "
                              f"this sweep's job {index}; a sweep writes only into new job folders or re-runs its "
                              "own: choose another folder")
        found.append((index, job, sub))
    return found


def _computing(overrides: List[str]) -> List[str]:
    """A job's overrides that change what it computes, sorted: their order changes nothing in the job."""
    return sorted(str(o) for o in overrides if changes_computation(str(o)))


def _job_subdir(job, index: int) -> Optional[str]:
    raw = OmegaConf.to_container(job.config.hydra.sweep, resolve=False).get("subdir")
    text = str(raw).replace("${hydra.job.num}", str(index))
    return None if "${" in text else text


def _run_folder(source: str) -> Path:
    return run_folder(source)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return False


def check_resume_source(source: str, key: str = "trainer.resume") -> None:
    """The run to continue is not running (no live holder of its folder or its sweep's), and its checkpoint
    belongs to the folder."""
    folder = _run_folder(source).expanduser()
    for candidate in (folder, folder.parent):
        holder = held_by(candidate) if (candidate / LOCK_FILE).is_file() else None
        if holder:
            raise FolderTaken(f"{key}={source}: the run is still running ({holder} holds "
                              f"{'its folder' if candidate == folder else 'its sweep folder'}); resume it once it "
                              "has ended")
    alive = live_job(folder)
    if alive:
        raise FolderTaken(f"{key}={source}: the run is still running ({alive}); resume it once it has ended")
    _check_checkpoint_belongs(folder, key, source)


def _check_checkpoint_belongs(folder: Path, key: str, source: str) -> None:
    root = folder.resolve()
    state_path, meta_path = checkpoint_paths(folder)
    for path in (folder / CHECKPOINT_DIR, state_path, meta_path):
        if (path.is_symlink() or path.exists()) and root not in path.resolve().parents:
            raise FolderTaken(f"{key}={source}: {path} leads out of the run folder (to {path.resolve()}); a run "
                              "resumes only its own checkpoint")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return  # no record beside the checkpoint: the checkpoint's own checks decide
    recorded = meta.get("config_sha256") if isinstance(meta, dict) else None
    config = folder / "config.yaml"
    if recorded and config.is_file() and file_sha256(config) != recorded:
        raise FolderTaken(f"{key}={source}: the checkpoint in {state_path.parent} was written by another run (its "
                          f"config is not this folder's config.yaml; mlflow run {meta.get('run_id')}); a run resumes "
                          "only its own checkpoint")
