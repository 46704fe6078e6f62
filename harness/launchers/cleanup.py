"""`python -m harness clean [--older-than 7d] [--yes] [--root DIR]`: list (with --yes, delete) the old sweep and run
folders under the output root, never one that is running or unfinished.

A folder is kept, and the listing says why, when: a live process holds it (its `.harness.lock` claim,
harness/infra/claim.py; or a job's process named in its `job.json` still runs on this host); any of its runs did
not end (a status other than FINISHED, FAILED, SKIPPED or PRUNED: KILLED, RUNNING, no status at all, or fewer
job folders than its `command.json` counts), since the same command continues such a sweep
(harness/sweeps/continued.py); it holds an adaptive study that `sweep <name> --continue=<folder>` can carry on;
or its last change is newer than --older-than. With --yes each folder to delete is claimed first (a process that
took it meanwhile keeps it), checked again, then removed. MLflow is left alone: its runs and artifacts stay in
the tracking store."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from harness.infra.paths import check_no_loop, tools_output_root
from harness.infra.claim import LOCK_FILE, FolderInUse, claim, held_by, release
from harness.infra.run_record import live_job
from harness.launchers.sweep_parent import job_statuses

ENDED = ("FINISHED", "FAILED", "SKIPPED", "PRUNED")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
STUDY_FILE = "adaptive.yaml"  # harness/sweeps/adaptive.py's state (a layer above: named, not imported)
COMMAND_FILE = "command.json"  # harness/sweeps/continued.py's record of the sweep's command
SUBMITTED_FILE = "jobs.json"  # the Slurm / submitit jobs a sweep submitted (harness/launchers/submitit_launcher.py)
MLFLOW_NOTE = ("MLflow is left alone: the runs of deleted folders stay in the tracking store (delete them in the "
               "MLflow UI, then `mlflow gc --backend-store-uri <store>` frees their artifacts)")


@dataclass
class Folder:
    path: Path
    kind: str  # "sweep" or "run"
    delete: bool = False
    why: str = ""
    size: int = 0


def parse_age(text: str) -> float:
    """'7d', '12h', '30m', '2w', '90s' or a number of days, in seconds; ValueError otherwise."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not found:
        raise ValueError(f"--older-than={text!r} is not an age: give e.g. 7d, 12h, 30m, 2w")
    return float(found.group(1)) * UNITS[found.group(2) or "d"]


def _walk(folder: Path) -> Tuple[int, float]:
    """(bytes, newest modification time) of everything under `folder`; a claim's lock file counts for its size
    only (taking or asking for a claim rewrites it: `clean` itself does)."""
    size, newest = 0, folder.stat().st_mtime
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            size += stat.st_size
            newest = newest if name == LOCK_FILE else max(newest, stat.st_mtime)
    return size, newest


def candidates(root: Path) -> List[Folder]:
    """Sweep folders (`multirun/<date>/<time>`, a named sweep's `multirun/<name>/<stamp>`) and single runs'
    (`outputs/<date>/<time>`), oldest first."""
    found = [Folder(p, "sweep") for p in root.glob("multirun/*/*") if p.is_dir()]
    found += [Folder(p, "run") for p in root.glob("outputs/*/*") if p.is_dir()]
    return sorted(found, key=lambda f: f.path.stat().st_mtime)


def _statuses(folder: Folder) -> dict:
    if folder.kind == "run":
        status = folder.path / "status.txt"
        return {str(folder.path): status.read_text().strip() if status.is_file() else "UNKNOWN"}
    return job_statuses(folder.path)


def _expected_jobs(folder: Path) -> int:
    """The jobs the sweep launched or submitted: its `command.json`'s count, its Slurm `jobs.json`'s entries."""
    counts = [0]
    for name, count in ((COMMAND_FILE, lambda data: int(data.get("jobs") or 0)), (SUBMITTED_FILE, len)):
        try:
            counts.append(count(json.loads((folder / name).read_text())))
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return max(counts)


def _in_use(folder: Folder, statuses: dict, own_claim: bool) -> Optional[str]:
    holder = None if own_claim else held_by(folder.path)
    if holder:
        return f"in use by {holder}"
    for job in statuses:
        alive = live_job(Path(job)) or (held_by(Path(job)) if Path(job) != folder.path else None)
        if alive:
            return f"a run's process is alive ({alive})"
    return None


def judge(folder: Folder, older_than: float, now: float, own_claim: bool = False) -> Folder:
    """Decide whether `folder` may be deleted, and say why (own_claim: this process holds its claim)."""
    statuses = _statuses(folder)
    busy = _in_use(folder, statuses, own_claim)
    if busy:
        return _keep(folder, busy)
    open_runs = Counter("no status" if s == "UNKNOWN" else s for s in statuses.values() if s not in ENDED)
    missing = _expected_jobs(folder.path) - len(statuses)
    if missing > 0:
        open_runs["never started"] += missing
    if open_runs:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(open_runs.items()))
        again = "; the same command continues it" if folder.kind == "sweep" else ""
        return _keep(folder, f"{sum(open_runs.values())} run(s) not ended ({counts}){again}")
    if (folder.path / STUDY_FILE).is_file():
        return _keep(folder, "an adaptive study (`sweep <name> --continue=<folder>` can add rounds): delete it by "
                             "hand when it is done")
    folder.size, newest = _walk(folder.path)
    age = now - newest
    if age < older_than:
        return _keep(folder, f"last changed {_days(age)} ago, newer than --older-than")
    ended = Counter(statuses.values())
    runs = ", ".join(f"{n} {s}" for s, n in sorted(ended.items())) or "no runs"
    folder.delete, folder.why = True, f"{runs}; last changed {_days(age)} ago"
    return folder


def _keep(folder: Folder, why: str) -> Folder:
    folder.delete, folder.why = False, why
    return folder


def _days(seconds: float) -> str:
    return f"{seconds / 86400:.1f} days" if seconds >= 86400 else f"{seconds / 3600:.1f} hours"


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def delete(folder: Folder, older_than: float, now: float) -> Optional[str]:
    """Remove `folder` under its claim, checked again; the reason it was kept instead, or None once removed."""
    try:
        claim(folder.path, f"{folder.kind} folder")
    except (FolderInUse, OSError) as err:
        return str(err)
    try:
        again = judge(Folder(folder.path, folder.kind), older_than, now, own_claim=True)
        if not again.delete:
            return again.why
        shutil.rmtree(folder.path)
    finally:
        release(folder.path)
    try:
        folder.path.parent.rmdir()  # the date (or sweep name) folder, once empty
    except OSError:
        pass
    return None


USAGE = "python -m harness clean"
DESCRIPTION = ("List the sweep and run folders under the output root (multirun/, outputs/) that are older than "
               "--older-than and whose runs all ended (FINISHED, FAILED, SKIPPED), and what is kept and why: a "
               "folder held by a live process, a sweep with runs not ended (KILLED, RUNNING, no status, never "
               "started: the same command continues it), an adaptive study, a recent folder. Nothing is deleted "
               "without --yes. " + MLFLOW_NOTE + ".")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog=USAGE, description=DESCRIPTION)
    parser.add_argument("--older-than", default="7d", help="age of a folder's last change (default 7d; e.g. 12h, 0)")
    parser.add_argument("--yes", action="store_true", help="delete the folders listed as 'delete'")
    parser.add_argument("--root", default=None, help="the output root (default: $HARNESS_OUTPUT_ROOT, else .)")
    args = parser.parse_args(argv)
    try:
        older_than = parse_age(args.older_than)
    except ValueError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2
    if args.root:
        check_no_loop(args.root, f"--root {args.root}")
    root = Path(args.root).expanduser().resolve() if args.root else tools_output_root()
    now = time.time()
    folders = [judge(f, older_than, now) for f in candidates(root)]
    print(f"clean: sweep and run folders under {root} (--older-than {args.older_than}); {MLFLOW_NOTE}")
    for folder in folders:
        verb = "delete" if folder.delete else "keep"
        size = f", {_mb(folder.size)}" if folder.delete else ""
        print(f"  {verb:6s} {folder.path.relative_to(root)}  {folder.kind}: {folder.why}{size}")
    doomed = [f for f in folders if f.delete]
    if not args.yes:
        print(f"{len(doomed)} folder(s) to delete ({_mb(sum(f.size for f in doomed))}), {len(folders) - len(doomed)} "
              "kept" + ("; run again with --yes to delete them" if doomed else ""))
        return 0
    removed = []
    for folder in doomed:
        kept = delete(folder, older_than, now)
        if kept:
            print(f"  kept   {folder.path.relative_to(root)}: {kept}")
        else:
            removed.append(folder)
    print(f"deleted {len(removed)} folder(s) ({_mb(sum(f.size for f in removed))}), {len(folders) - len(removed)} kept")
    return 0
