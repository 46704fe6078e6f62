"""`python -m harness sync <run_folder|sweep_folder> ...`: upload spooled tracking records exactly once.

Exactly once, even when a sync is interrupted or repeated, or when a call that failed during the outage
had in fact reached the server:
  - the run is found by its `harness.run_uid` tag before one is created, and keeps its id when it was
    created before the outage;
  - a metric point is sent only if the run has no point of that metric at that step yet;
  - params already on the run are skipped; tags, artifacts and the final status simply overwrite;
  - `synced.json` records how many operations are done, after every uploaded batch.
The running tracker uses the same `SpoolUpload` to catch up by itself when the store comes back."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from harness.tracking.outage import apply_client_defaults, describe, is_rejected
from harness.infra.locks import LockHeld, locked
from harness.infra.run_record import job_folders, run_id_of
from harness.tracking.params import scrub
from harness.tracking.spool import SPOOL_DIR, Spool, SyncState, find_spools
from harness.tracking.store_check import StoreFault, check_store
from harness.tracking.stored_uri import UriNeeded, on_disk, reconnect, same_store

log = logging.getLogger("harness")

UID_TAG = "harness.run_uid"
PARENT_UID_TAG = "harness.parent_uid"
PARENT_TAG = "mlflow.parentRunId"
MAX_METRICS_PER_BATCH = 900  # MLflow allows 1000 entities per log_batch, the step tag included
MAX_PARAMS_PER_BATCH = 100
MAX_PARAM_LENGTH = 6000


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
        from harness.tracking.store import get_or_create_experiment

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
        try:
            send()
        except Exception as err:
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
            step_tag = [RunTag("harness.step", str(max(p.step for p in points)))] if last_chunk else []
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


def _describe(spool: Spool, s: UploadSummary) -> str:
    run = f"run {s.run_id} ({'created' if s.created else 'existing'})"
    parts = [f"{s.metrics} metric points sent"]
    if s.already_there:
        parts.append(f"{s.already_there} already on the server")
    if s.artifacts:
        parts.append(f"{s.artifacts} artifacts")
    if s.rejected:
        parts.append(f"{s.rejected} refused")
    if s.status:
        parts.append(f"status {s.status}")
    return f"synced {spool.folder.parent}: {run}, " + ", ".join(parts)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness sync",
                                     description="Upload tracking records spooled during an outage.")
    parser.add_argument("folders", nargs="+", type=Path, help="run folders or sweep folders")
    parser.add_argument("--tracking-uri", help="upload here instead of the store each run was meant for")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # one summary line a run instead
    if args.tracking_uri:
        try:
            check_store(args.tracking_uri)
        except StoreFault as err:
            print(f"harness sync: error: {err} (nothing lost: run sync again once it is back)", file=sys.stderr)
            return 2
    failed = 0
    for folder in args.folders:
        if not folder.is_dir():
            print(f"harness sync: error: folder={str(folder)!r} is not allowed: not a folder "
                  "(give a run folder or a sweep folder)", file=sys.stderr)
            return 2
        spools = find_spools(folder)
        if not spools:
            print(f"nothing to sync in {folder}: no spool/ (every record reached the store)")
        for spool in spools:
            try:
                upload = SpoolUpload(spool, tracking_uri=args.tracking_uri)
                check_store(upload.target)
                if upload.is_synced():
                    print(f"already synced: {spool.folder.parent} (run {upload.state().run_id})")
                    continue
                summary = upload.upload()
            except UriNeeded as err:
                failed += 1
                print(f"harness sync: {spool.folder.parent}: {err}", file=sys.stderr)
                continue
            except StoreFault as err:
                failed += 1
                print(f"harness sync: {spool.folder.parent}: {err} (nothing lost: run sync again later)", file=sys.stderr)
                continue
            except Exception as err:
                failed += 1
                uri = scrub(args.tracking_uri or spool.record().tracking_uri)
                print(f"harness sync: {spool.folder.parent}: {uri} unreachable ({describe(err)}); "
                      "nothing lost, run sync again later", file=sys.stderr)
                continue
            print(_describe(spool, summary))
    missing = _missing(args)
    for job in missing:
        print(f"harness sync: {job} is missing from the store and has no spool to upload: its folder holds "
              "what it recorded", file=sys.stderr)
    return 1 if failed or missing else 0


def _missing(args) -> List[str]:
    """Jobs whose run the store lacks with nothing spooled (asked of --tracking-uri, else MLFLOW_TRACKING_URI,
    else the default store; nothing said when none of them can be read)."""
    from mlflow.tracking import MlflowClient

    from harness.tracking.store import default_uri

    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_uri()
    try:
        check_store(uri)
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
            return []
        return jobs_missing_from(MlflowClient(tracking_uri=uri), args.folders)
    except StoreFault:
        return []


def jobs_missing_from(client, folders: List[Path]) -> List[str]:
    """The job folders (of the given run or sweep folders) whose recorded run the store at `client` lacks."""
    missing = []
    for folder in folders:
        for job in job_folders(folder):
            run_id = run_id_of(job)
            if run_id is None or (job / SPOOL_DIR).is_dir():
                continue  # nothing to tell by, or its spool says it (sync uploads it)
            try:
                client.get_run(run_id)
            except Exception as err:  # MLflow's RESOURCE_DOES_NOT_EXIST; any other failure is not "missing"
                if "RESOURCE_DOES_NOT_EXIST" in str(getattr(err, "error_code", "")) or "not found" in str(err):
                    missing.append(f"{job} (mlflow run {run_id})")
    return missing
