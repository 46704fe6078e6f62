"""Uploading one spool (the records a run kept while the store was away) exactly once, even when an upload
is interrupted or repeated, or when a call that failed during the outage had in fact reached the server:
  - the run is found by its `harness.run_uid` tag before one is created, and keeps its id when it was
    created before the outage;
  - a metric point is sent only if the run has no point of that metric at that step yet;
  - params already on the run are skipped; tags, artifacts and the final status simply overwrite;
  - `synced.json` records how many operations are done, after every uploaded batch.
`python -m harness sync` uses it, and so does the running tracker to catch up by itself when the store is back."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Tuple

from harness.infra.locks import LockHeld, locked
from harness.tracking.mlflow_limits import MAX_METRICS_PER_BATCH, MAX_PARAM_LENGTH, MAX_PARAMS_PER_BATCH
from harness.tracking.outage import apply_client_defaults, describe, is_rejected
from harness.tracking.spool import Spool, SyncState
from harness.tracking.store import get_or_create_experiment
from harness.tracking.stored_uri import on_disk, reconnect, same_store
from harness.tracking.tags import PARENT_TAG, PARENT_UID_TAG, STEP_TAG, UID_TAG

log = logging.getLogger("harness")


class SpoolBusy(RuntimeError):
    """Another process or thread is uploading this spool right now."""


@dataclass
class UploadSummary:
    run_id: str = ""
    created: bool = False
    metrics: int = 0  # points sent
    already_there: int = 0  # points skipped because the server had them
    artifacts: int = 0
    rejected: int = 0  # operations the server refused (bad values), skipped with a warning
    status: Optional[str] = None


def find_run_by_uid(client, experiment_id: str, uid: str) -> Optional[str]:
    from mlflow.entities import ViewType

    found = client.search_runs([experiment_id], filter_string=f"tags.`{UID_TAG}` = '{uid}'",
                               run_view_type=ViewType.ALL, max_results=1)
    return found[0].info.run_id if found else None


class SpoolUpload:
    """Uploads one spool; keeps what it learnt about the run between calls (the tracker calls it twice)."""

    def __init__(self, spool: Spool, client=None, tracking_uri: Optional[str] = None):
        """Upload to `tracking_uri` (default: the store the run was meant for) with `client` if given."""
        self.spool = spool
        self.record = spool.record()
        self.target = tracking_uri or reconnect(self.record.tracking_uri)
        if client is None:
            from mlflow.tracking import MlflowClient

            apply_client_defaults()
            client = MlflowClient(tracking_uri=self.target)
        self.client = client
        self.summary = UploadSummary()
        self._steps: Dict[str, Set[int]] = {}  # metric key -> steps the server has
        self._params: Optional[Set[str]] = None

    def upload(self, blocking: bool = True) -> UploadSummary:
        try:
            with locked(self.spool.folder / ".lock", blocking=blocking):
                return self._upload_held()
        except LockHeld:
            raise SpoolBusy(str(self.spool.folder)) from None

    def _upload_held(self) -> UploadSummary:
        """The upload, with the spool's lock held."""
        state = self.state()
        known = self.record.run_id if same_store(self.record.tracking_uri, self.target) else None
        state.run_id = state.run_id or known or self._find_or_create_run()
        state.tracking_uri = on_disk(self.target)
        self.summary.run_id = state.run_id
        self.spool.save_state(state)
        self._upload_ops(state)
        return self.summary

    def state(self) -> SyncState:
        """Progress towards this target (a sync to another store starts from the beginning)."""
        state = self.spool.state()
        if state.tracking_uri is None or same_store(state.tracking_uri, self.target):
            return state
        return SyncState(tracking_uri=on_disk(self.target))

    def is_synced(self) -> bool:
        state = self.state()
        return bool(state.run_id) and not self.spool.ops(state.done)

    # -- the run ------------------------------------------------------------------------------------------
    def _find_or_create_run(self) -> str:
        record = self.record
        experiment_id = get_or_create_experiment(self.client, record.experiment_name, record.artifact_location)
        run_id = find_run_by_uid(self.client, experiment_id, record.uid)
        if run_id:
            return run_id
        tags = {**record.tags, UID_TAG: record.uid}
        if PARENT_UID_TAG in tags and PARENT_TAG not in tags:
            parent = find_run_by_uid(self.client, experiment_id, tags[PARENT_UID_TAG])
            if parent:
                tags[PARENT_TAG] = parent
        run = self.client.create_run(experiment_id, start_time=record.start_time, tags=tags,
                                     run_name=record.run_name)
        self.summary.created = True
        self._steps = {}  # a new run has no points: nothing to look up
        self._params = set()
        return run.info.run_id

    # -- the operations -----------------------------------------------------------------------------------
    def _upload_ops(self, state: SyncState) -> None:
        pending: List[Tuple[int, Dict[str, Any]]] = []  # consecutive metric operations, sent as one batch
        for index, op in self.spool.ops(state.done):
            if op["op"] == "metrics":
                pending.append((index, op))
                if sum(len(o["values"]) for _, o in pending) >= MAX_METRICS_PER_BATCH:
                    self._send_metrics(state, pending)
                    pending = []
                continue
            if pending:
                self._send_metrics(state, pending)
                pending = []
            self._guarded(lambda: self._send_other(state.run_id, op))
            state.done = index + 1
            self.spool.save_state(state)
        if pending:
            self._send_metrics(state, pending)

    def _guarded(self, send) -> None:
        """Run `send`; a refused operation is skipped with a warning, an outage propagates."""
        from mlflow.exceptions import MlflowException  # loaded already: this upload has a client

        try:
            send()
        except MlflowException as err:
            if not is_rejected(err):
                raise
            self.summary.rejected += 1
            log.warning("sync %s: the server refused an operation, skipped: %s", self.spool.folder, describe(err))

    def _send_metrics(self, state: SyncState, ops: List[Tuple[int, Dict[str, Any]]]) -> None:
        from mlflow.entities import Metric, RunTag

        points = []
        for _, op in ops:
            for key, value in op["values"].items():
                if op["step"] in self._steps_of(state.run_id, key):
                    self.summary.already_there += 1
                else:
                    points.append(Metric(key, float(value), int(op["ts"]), int(op["step"])))
        for i in range(0, len(points), MAX_METRICS_PER_BATCH):
            chunk = points[i:i + MAX_METRICS_PER_BATCH]
            last_chunk = i + MAX_METRICS_PER_BATCH >= len(points)
            step_tag = [RunTag(STEP_TAG, str(max(p.step for p in points)))] if last_chunk else []
            self._guarded(lambda: self.client.log_batch(state.run_id, metrics=chunk, tags=step_tag))
            for p in chunk:
                self._steps[p.key].add(p.step)
        self.summary.metrics += len(points)
        state.done = ops[-1][0] + 1
        self.spool.save_state(state)

    def _steps_of(self, run_id: str, key: str) -> Set[int]:
        if key not in self._steps:
            self._steps[key] = {m.step for m in self.client.get_metric_history(run_id, key)}
        return self._steps[key]

    def _send_other(self, run_id: str, op: Dict[str, Any]) -> None:
        from mlflow.entities import Param, RunTag

        kind = op["op"]
        if kind == "params":
            if self._params is None:
                self._params = set(self.client.get_run(run_id).data.params)
            values = sorted(op["values"].items())
            items = [Param(k, v[:MAX_PARAM_LENGTH]) for k, v in values if k not in self._params]
            for i in range(0, len(items), MAX_PARAMS_PER_BATCH):
                self.client.log_batch(run_id, params=items[i:i + MAX_PARAMS_PER_BATCH])
            self._params.update(p.key for p in items)
        elif kind == "tags":
            self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in op["values"].items()])
        elif kind == "artifact":
            self.client.log_artifact(run_id, str(self.spool.folder / op["file"]), op.get("artifact_path"))
            self.summary.artifacts += 1
        elif kind == "terminate":
            self.client.set_terminated(run_id, status=op["status"], end_time=op["end_time"])
            self.summary.status = op["status"]
        else:
            raise ValueError(f"{self.spool.folder}/ops.jsonl: op={kind!r} is not allowed: one of "
                             "metrics, params, tags, artifact, terminate")
