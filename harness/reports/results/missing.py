"""Jobs of a sweep that the store does not hold: job folders whose run is not among the runs collected (a
run deleted from the store, a store that lost a write). Said on every report page and by `report` itself,
so a count of runs is never taken for the sweep's size."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Optional
from harness.reports.results.locate import job_dirs


def missing_jobs(sweep_dir: Optional[Path], runs: Iterable, twin_run_ids: Iterable[str] = ()) -> List[str]:
    """The names of `sweep_dir`'s job folders with no run among `runs` (a skipped job counts through its twin)."""
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

