"""Where a finished run or sweep can be seen: the last lines a command prints (its folder, its reports, its
MLflow run or the sweep's parent run, with a link to the MLflow UI)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence

from harness.launchers.results import JobResult
from harness.tracking.params import scrub
from harness.tracking.ui import run_page


def mlflow_link(tracking_uri: str, run_id: str, experiment_id: Optional[str] = None) -> str:
    """Where to see a run in the MLflow UI: its URL on a tracking server; for a local store, the store, the
    run id and the URL it has once `python -m harness server` serves that store."""
    page = run_page(run_id, experiment_id)
    if tracking_uri.startswith(("http://", "https://")):
        return f"{tracking_uri.rstrip('/')}/{page}"
    return (f"run {run_id} in {tracking_uri} (UI: python -m harness server --backend-store-uri {tracking_uri}, "
            f"then http://127.0.0.1:5000/{page})")


def run_where(result: JobResult) -> str:
    """A single run's last lines: its folder and its MLflow run."""
    lines = [f"  folder: {result.run_dir}"] if result.run_dir else [
        "  folder: none (skipped: nothing was run; the identical run's folder and MLflow run hold its results)"]
    if result.run_id and result.tracking_uri:
        lines.append(f"  mlflow: {mlflow_link(result.tracking_uri, result.run_id, result.experiment_id)}")
    return "\n".join(lines)


def sweep_folder(results: List[JobResult]) -> Optional[Path]:
    folders = {Path(r.run_dir).parent for r in results if r.run_dir}
    return folders.pop() if len(folders) == 1 else None


def sweep_where(sweep_dir: Path, answer: Sequence[str] = ()) -> str:
    """A sweep's last lines: its folder, its reports index, its MLflow parent run and, last, `answer` (the
    verdict lines of its reports, which the layers above read: harness/reports/rendering/verdicts.py)."""
    lines = [f"  folder: {sweep_dir}"]
    index = sweep_dir / "reports" / "index.html"
    if index.is_file():
        lines.append(f"  reports: {index}")
    try:
        parent = json.loads((sweep_dir / "parent_run.json").read_text())
    except (OSError, ValueError):
        parent = {}
    if parent.get("run_id") and parent.get("tracking_uri"):
        lines.append(f"  mlflow: {mlflow_link(scrub(parent['tracking_uri']), parent['run_id'], parent.get('experiment_id'))}")
    lines += list(answer)  # the answer last, where the eye lands
    return "\n".join(lines)
