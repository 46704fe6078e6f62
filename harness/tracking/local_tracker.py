"""The run folder's own record of a run: every step's metrics in `<run_dir>/metrics.jsonl`, and at the end
`status.txt` (and `error.txt`). The base of every tracker, so a run keeps its record without MLflow. A run
resumed in its folder first trims the file to its checkpoint's step (`trim_metrics`); an earlier attempt's
`error.txt` moves to `history/` (`keep_in_history`)."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict, Optional

from harness.infra.atomic_file import write_text_atomically


def now_ms() -> int:
    return int(time.time() * 1000)


class Tracker:
    """Local-only tracker: the base of the MLflow one."""

    run_id: Optional[str] = None

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        keep_in_history(self.run_dir)
        self._metrics_file = None
        self.skip_through_step = -1  # steps already recorded by a run this one resumes

    def log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        if self._metrics_file is None:
            self._metrics_file = open(self.run_dir / "metrics.jsonl", "a", buffering=1)
        self._metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")
        if step > self.skip_through_step:
            self._remote_log_metrics(metrics, step)

    def log_artifact(self, path: Path, artifact_path: Optional[str] = None) -> None:
        pass

    def set_tags(self, tags: Dict[str, str]) -> None:
        """Tags of the tracking run (none here: the run folder's job.log says what they say)."""

    def where(self) -> str:
        """Where the run is recorded, for the run's first line."""
        return f"not tracked in MLflow (tracking=none); metrics in {self.run_dir / 'metrics.jsonl'}"

    def flush(self) -> None:
        """Wait until every logged metric is recorded (no-op: metrics.jsonl is written synchronously)."""

    def finish(self, status: str, error: Optional[str] = None) -> None:
        try:
            write_text_atomically(self.run_dir / "status.txt", status + "\n")  # first: a few bytes saying how it ended
            if error:
                write_text_atomically(self.run_dir / "error.txt", error)
        finally:
            if self._metrics_file is not None:
                self._metrics_file.close()

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        pass


def keep_in_history(run_dir: Path) -> Optional[Path]:
    """A run (or a sweep's parent) taken up again in its folder (a continued sweep, a resume): the earlier
    attempt's `error.txt` (its KeyboardInterrupt, "the sweep stopped before all its jobs ended") moves to
    `history/error-<n>.txt`, so that it is kept but no longer sits beside the status this attempt ends with."""
    error = run_dir / "error.txt"
    if not error.is_file():
        return None
    history = run_dir / "history"
    history.mkdir(exist_ok=True)
    kept = history / f"error-{len(list(history.glob('error-*.txt'))) + 1}.txt"
    error.replace(kept)
    return kept


def trim_metrics(run_dir: Path, through_step: int) -> None:
    """Keep only the steps up to `through_step` in `<run_dir>/metrics.jsonl` (a run resumed from its checkpoint
    at that step computes the later ones again, and records each once); a line cut short by a crash goes too."""
    path = Path(run_dir) / "metrics.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError:  # none yet: a resume into a new folder
        return
    kept = []
    for line in lines:
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int) and step <= through_step:
            kept.append(line + "\n")
    if len(kept) != len(lines):
        write_text_atomically(path, "".join(kept))
