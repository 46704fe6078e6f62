"""A run's tracking handle. Every metric also goes to `<run_dir>/metrics.jsonl`, so a run keeps its record
even without MLflow; with MLflow the steps' metrics go to the store through MLflow's own asynchronous
logging (`MlflowClient.log_batch(..., synchronous=False)`), so a training step never waits on the store.

`log_metrics` keeps the step for the next asynchronous call (`harness.tracking.metric_batches`): each
MLflow call costs milliseconds of CPU (SQLAlchemy), which a run on a busy machine would otherwise pay on
every step. `flush()` waits until every step is in the store (or spooled); the trainer calls it before it
writes a checkpoint (so a resumed run, which skips the steps the store already has, never misses one),
and `finish()` calls it before the run is closed (also on SIGTERM or failure).

When the store is unreachable (at start or mid-run) the MLflow tracker warns once and records to
`<run_dir>/spool/` instead; training never waits on tracking. Its heartbeat thread then tries to catch
up every beat, so a short outage heals by itself; otherwise `python -m harness sync` uploads the spool."""
from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from harness.tracking.heartbeat import HEARTBEAT_TAG, Heartbeat, now_s
from harness.tracking.local_tracker import Tracker, now_ms
from harness.tracking.metric_batches import MetricBatches
from harness.tracking.mlflow_limits import MAX_PARAM_LENGTH, MAX_PARAMS_PER_BATCH
from harness.tracking.outage import apply_client_defaults, describe, is_rejected, warn_once
from harness.tracking.params import scrub
from harness.tracking.refusal import NoSpool, refused_line, run_refused
from harness.tracking.signals import deferred_signals
from harness.tracking.spool import SPOOL_DIR, RunRecord, Spool
from harness.tracking.stored_uri import on_disk
from harness.tracking.tags import PARENT_TAG, PARENT_UID_TAG, UID_TAG
from harness.tracking.ui import runs_url
from harness.tracking.upload import SpoolBusy, SpoolUpload, find_run_by_uid

log = logging.getLogger("harness")


@dataclass
class RunSpec:
    """What the MLflow run is: where it goes and what it says about itself (already free of secrets)."""
    tracking_uri: str
    experiment_name: str
    run_name: str
    params: Dict[str, str]
    tags: Dict[str, str]
    artifact_location: Optional[str] = None  # for the experiment, if it has to be created


class MlflowTracker(MetricBatches, Tracker):
    def __init__(self, run_dir: Path, spec: RunSpec, experiment_id: Callable[[], str],
                 resume_run_id: Optional[str] = None):
        """`experiment_id()` returns the experiment's id, creating it if needed (called only when online)."""
        super().__init__(run_dir)
        self.spec, self.uid, self.start_time = spec, uuid.uuid4().hex, now_ms()
        self.create_tags = {**spec.tags, UID_TAG: self.uid, HEARTBEAT_TAG: str(now_s())}
        self.spool = Spool(self.run_dir / SPOOL_DIR)
        self.offline = False
        self.refused: Optional[str] = None  # why the store refuses this run (refusal.py), once it did
        self.client = None
        self.experiment_id: Optional[str] = None
        self._lock = threading.RLock()
        self._upload: Optional[SpoolUpload] = None
        self._finishing = False
        self._init_batches()
        try:
            from mlflow.tracking import MlflowClient

            apply_client_defaults()
            with deferred_signals():
                self._open_run(MlflowClient, experiment_id, resume_run_id)
        except Exception as err:  # a store fault never stops a run (unreachable, malformed URI): it spools
            if is_rejected(err):  # the store answered and refused the run: no sync could ever add it
                self._refuse(describe(err))
            else:
                self._go_offline(err)
        if not resume_run_id:
            self._send(lambda: {"op": "params", "values": spec.params}, self._log_params)
        dir_tag = {"harness.run_dir": str(self.run_dir.resolve())}
        self._send(lambda: {"op": "tags", "values": dir_tag},
                   lambda: self.client.set_tag(self.run_id, "harness.run_dir", dir_tag["harness.run_dir"]))
        self._heartbeat = Heartbeat(self._beat, name="heartbeat").start()

    def set_tags(self, tags: Dict[str, str]) -> None:
        from mlflow.entities import RunTag

        values = {k: scrub(str(v)) for k, v in tags.items()}
        self._send(lambda: {"op": "tags", "values": values},
                   lambda: self.client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in values.items()]))

    def where(self) -> str:
        s = self.spec
        if self.refused:
            return f"not tracked in MLflow (its store refused the run); metrics in {self.run_dir / 'metrics.jsonl'}"
        if self.offline:
            return (f"tracking store {scrub(s.tracking_uri)} unreachable: recording to {self.spool.folder} "
                    f"(experiment {s.experiment_name})")
        url = runs_url(s.tracking_uri, self.experiment_id) if self.experiment_id else None
        return f"tracked in {scrub(s.tracking_uri)}, experiment {s.experiment_name}, mlflow run {self.run_id}" + (
            f" ({url})" if url else "")

    def _open_run(self, client_class, experiment_id: Callable[[], str], resume_run_id: Optional[str]) -> None:
        if resume_run_id:
            self.client = client_class(tracking_uri=self.spec.tracking_uri)
            self.run_id = resume_run_id
            self.client.update_run(resume_run_id, status="RUNNING")
            self.experiment_id = self.client.get_run(resume_run_id).info.experiment_id  # for its link
            self.skip_through_step = self._last_logged_step()
            return
        # experiment_id() first: it creates a fresh local store under a lock, and so would a client
        # (MlflowClient opens a SQLite store on construction), so no client may come before it.
        experiment = self.experiment_id = experiment_id()
        self.client = client_class(tracking_uri=self.spec.tracking_uri)
        parent_uid = self.create_tags.get(PARENT_UID_TAG)
        if parent_uid and PARENT_TAG not in self.create_tags:  # a parent created late (after an outage)
            parent = find_run_by_uid(self.client, experiment, parent_uid)
            if parent:
                self.create_tags[PARENT_TAG] = parent
        run = self.client.create_run(experiment, run_name=self.spec.run_name, start_time=self.start_time,
                                     tags=self.create_tags)
        self.run_id = run.info.run_id

    # -- online calls, or the spool ------------------------------------------------------------------------
    def _send(self, op: Optional[Callable[[], Dict[str, Any]]], call: Callable[[], Any]) -> None:
        """Make `call` against the store; when the store is away, spool `op()` instead (None: drop it)."""
        with self._lock:
            if self.offline:
                if op is not None:
                    self.spool.append(op())
                return
        try:
            with deferred_signals():
                call()
        except Exception as err:  # a store fault never stops a run: a refused record is skipped, else spooled
            if self._refused_by(err):
                return
            if is_rejected(err):
                warn_once(f"rejected:{describe(err)}", f"tracking: the store refused a record, skipped: "
                                                       f"{describe(err)}")
                return
            with self._lock:
                self._go_offline(err)
                if op is not None:
                    self.spool.append(op())

    def _refused_by(self, err: BaseException) -> bool:
        """Whether `err` is the store refusing the whole run (harness/tracking/refusal.py); if so the run stops
        calling it, and says so once."""
        why = run_refused(self.client, self.run_id, err)
        if why:
            self._refuse(why)
        return bool(why)

    def _refuse(self, why: str) -> None:
        with self._lock:
            first = self.refused is None
            self.refused, self.offline, self.spool = why, True, NoSpool(self.spool.folder)
        if first:
            log.error("%s", refused_line(scrub(self.spec.tracking_uri), self.run_dir, why))

    def _go_offline(self, err: BaseException) -> None:
        with self._lock:
            if self.offline:
                return
            self.offline = True
            self._upload = None  # a fresh upload re-reads what the store has (the failed call may have landed)
            s = self.spec
            self.spool.open(RunRecord(uid=self.uid, tracking_uri=on_disk(s.tracking_uri), experiment_name=s.experiment_name,
                                      run_name=s.run_name, start_time=self.start_time, tags=self.create_tags,
                                      artifact_location=s.artifact_location, run_id=self.run_id))
        warn_once(s.tracking_uri, f"tracking store {scrub(s.tracking_uri)} unreachable ({describe(err)}): the run "
                                  f"goes on and records to {self.spool.folder}; it uploads by itself when the "
                                  f"store is back, else run: python -m harness sync {self.run_dir}")

    def _log_params(self) -> None:
        from mlflow.entities import Param

        items = [Param(k, v[:MAX_PARAM_LENGTH]) for k, v in sorted(self.spec.params.items())]
        for i in range(0, len(items), MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=items[i:i + MAX_PARAMS_PER_BATCH])

    def _last_logged_step(self) -> int:
        """Resumed runs recompute steps after their checkpoint exactly; skip those already logged."""
        history = self.client.get_metric_history(self.run_id, "train/reward")
        return max((m.step for m in history), default=-1)

    def flush(self) -> None:
        """Return once every step logged so far is in the store, or in the spool when the store is away."""
        self._send_queued()
        self._settle()

    def log_artifact(self, path: Path, artifact_path: Optional[str] = None) -> None:
        self._send(lambda: self.spool.artifact_op(Path(path), artifact_path),
                   lambda: self.client.log_artifact(self.run_id, str(path), artifact_path))

    def log_text(self, text: str, name: str) -> None:
        text = scrub(text)
        self._send(lambda: self.spool.text_op(text, name), lambda: self.client.log_text(self.run_id, text, name))

    # -- heartbeat and catching up -------------------------------------------------------------------------
    def _beat(self) -> None:
        if self.refused:
            return
        if self.offline:
            self._catch_up()
        else:
            self._send_queued()  # steps kept while training was quiet (a long evaluation)
            self._settle()
            self._send(None, lambda: self.client.set_tag(self.run_id, HEARTBEAT_TAG, str(now_s())))

    def _catch_up(self) -> bool:
        """Upload the spool and go back online; False while the store is still away."""
        try:
            if self._upload is None:
                self._upload = SpoolUpload(self.spool, client=self.client, tracking_uri=self.spec.tracking_uri)
            self._upload.upload(blocking=False)  # the bulk, while training goes on
            with self._lock:
                summary = self._upload.upload(blocking=False)  # what was spooled meanwhile
                self.run_id, self.client, self.offline = summary.run_id, self._upload.client, False
                if not self._finishing:  # `repair` may have closed it while we were away: we are alive
                    self.client.update_run(self.run_id, status="RUNNING")
        except SpoolBusy:
            return False
        except Exception as err:  # a store fault never stops a run: the next beat tries again
            if self._refused_by(err):
                return False
            log.debug("tracking store still unreachable: %s", describe(err))
            return False
        log.info("tracking store %s is back: spooled records of %s uploaded", scrub(self.spec.tracking_uri),
                 self.run_dir)
        return True

    def finish(self, status: str, error: Optional[str] = None) -> None:
        self._finishing = True
        # a beat may be uploading the spool (after an outage): let it end, or the catch-up below finds the
        # spool busy and the exit would cut that upload short
        self._heartbeat.stop(timeout=30)
        self.flush()
        super().finish(status, scrub(error) if error else error)
        if error:
            self.log_text(error, "error.txt")
        end = now_ms()
        self._send(lambda: {"op": "terminate", "status": status, "end_time": end},
                   lambda: self.client.set_terminated(self.run_id, status=status, end_time=end))
        if self.offline and not self.refused and not self._catch_up():
            log.info("tracking: %d records of this run wait in %s; upload them with: python -m harness sync %s",
                     self.spool.pending(), self.spool.folder, self.run_dir)
