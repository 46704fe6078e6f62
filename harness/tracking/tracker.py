"""A run's tracking handle. Every metric also goes to `<run_dir>/metrics.jsonl`, so a run keeps its record
even without MLflow; with MLflow each step's metrics are one `log_batch` call."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Dict, Optional

log = logging.getLogger("harness")

MAX_PARAMS_PER_BATCH = 100  # MLflow's limit per log_batch
MAX_PARAM_LENGTH = 6000


class Tracker:
    """Local-only tracker: the base of the MLflow one."""

    run_id: Optional[str] = None

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._metrics_file = open(self.run_dir / "metrics.jsonl", "a", buffering=1)
        self.skip_through_step = -1  # steps already recorded by a run this one resumes

    def log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        self._metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")
        if step > self.skip_through_step:
            self._remote_log_metrics(metrics, step)

    def log_artifact(self, path: Path) -> None:
        pass

    def finish(self, status: str, error: Optional[str] = None) -> None:
        if error:
            (self.run_dir / "error.txt").write_text(error)
        (self.run_dir / "status.txt").write_text(status + "\n")
        self._metrics_file.close()

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        pass


class MlflowTracker(Tracker):
    def __init__(self, run_dir: Path, uri: str, experiment_id: str, run_name: str,
                 params: Dict[str, str], tags: Dict[str, str], resume_run_id: Optional[str] = None):
        super().__init__(run_dir)
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri)
        if resume_run_id:
            self.run_id = resume_run_id
            self.client.update_run(resume_run_id, status="RUNNING")
            self.skip_through_step = self._last_logged_step()
        else:
            run = self.client.create_run(experiment_id, run_name=run_name, tags=tags)
            self.run_id = run.info.run_id
            items = [Param(k, v[:MAX_PARAM_LENGTH]) for k, v in sorted(params.items())]
            for i in range(0, len(items), MAX_PARAMS_PER_BATCH):
                self.client.log_batch(self.run_id, params=items[i:i + MAX_PARAMS_PER_BATCH])
        self.client.log_batch(self.run_id, tags=[RunTag("harness.run_dir", str(self.run_dir.resolve()))])

    def _last_logged_step(self) -> int:
        """Resumed runs recompute steps after their checkpoint exactly; skip those already logged."""
        history = self.client.get_metric_history(self.run_id, "train/reward")
        return max((m.step for m in history), default=-1)

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, step) for k, v in metrics.items()]
        self.client.log_batch(self.run_id, metrics=batch)

    def log_artifact(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path))

    def finish(self, status: str, error: Optional[str] = None) -> None:
        super().finish(status, error)
        if error:
            self.client.log_text(self.run_id, error, "error.txt")
        self.client.set_terminated(self.run_id, status=status)
