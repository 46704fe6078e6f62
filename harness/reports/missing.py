"""Jobs of a sweep that the store does not hold: job folders whose run is not among the runs collected (a
run deleted from the store, a store that lost a write). Said on every report page and by `report` itself,
so a count of runs is never taken for the sweep's size."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Optional


def missing_jobs(sweep_dir: Optional[Path], runs: Iterable, twin_run_ids: Iterable[str] = ()) -> List[str]:
    """The names of `sweep_dir`'s job folders with no run among `runs` (a skipped job counts through its twin)."""
    from harness.reports.locate import job_dirs

    if sweep_dir is None:
        return []
    runs = list(runs)
    held = {str(r.run_dir.resolve()) for r in runs if r.run_dir is not None}
    ids = {r.run_id for r in runs} | set(twin_run_ids)
    missing = []
    for job in job_dirs(Path(sweep_dir)):
        if str(job.resolve()) in held or _twin(job) in ids:
            continue
        missing.append(job.name)
    return missing


def _twin(job: Path) -> Optional[str]:
    try:
        return str(json.loads((job / "skipped.json").read_text())["twin_run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def missing_note(names: List[str], store: Optional[str]) -> str:
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return (f"{len(names)} job{'s' if len(names) != 1 else ''} of this sweep {'are' if len(names) != 1 else 'is'} "
            f"missing from the store {store}: {shown} (their folders hold what they recorded; "
            "python -m harness sync <sweep folder> uploads spooled records)")


def run_id_of(job: Path) -> Optional[str]:
    """The tracking run a job folder recorded to, from its checkpoint's record (None when it has none)."""
    try:
        return json.loads((job / "checkpoints" / "last.json").read_text()).get("run_id") or None
    except (OSError, ValueError, AttributeError):
        return None


def jobs_missing_from(client, folders: Iterable[Path]) -> List[str]:
    """The job folders (of the given run or sweep folders) whose recorded run the store at `client` lacks."""
    from harness.reports.locate import job_dirs

    missing = []
    for folder in folders:
        for job in job_dirs(Path(folder)) or [Path(folder)]:
            run_id = run_id_of(job)
            if run_id is None or (job / "spool").is_dir():
                continue  # nothing to tell by, or its spool says it (sync uploads it)
            try:
                client.get_run(run_id)
            except Exception as err:  # MLflow's RESOURCE_DOES_NOT_EXIST; any other failure is not "missing"
                if "RESOURCE_DOES_NOT_EXIST" in str(getattr(err, "error_code", "")) or "not found" in str(err):
                    missing.append(f"{job} (mlflow run {run_id})")
    return missing
