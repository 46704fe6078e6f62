"""A run's tracking handle. Every metric also goes to `<run_dir>/metrics.jsonl`, so a run keeps its record
even without MLflow; with MLflow the steps' metrics go to the store through MLflow's own asynchronous
logging (`MlflowClient.log_batch(..., synchronous=False)`), so a training step never waits on the store.

`log_metrics` keeps the step in memory and, at most once every HARNESS_METRICS_INTERVAL_S seconds
(default 5; 0: every step), hands what is kept to MLflow as one asynchronous `log_batch`: each MLflow call
costs milliseconds of CPU (SQLAlchemy), which a run on a busy machine would otherwise pay on every step.
`flush()` waits on the calls' RunOperations until every step is in the store (or spooled); the trainer
calls it before it writes a checkpoint (so a resumed run, which skips the steps the store already has,
never misses one), and `finish()` calls it before the run is closed (also on SIGTERM or failure).

When the store is unreachable (at start or mid-run) the MLflow tracker warns once and records to
`<run_dir>/spool/` instead; training never waits on tracking. Its heartbeat thread then tries to catch
up every beat, so a short outage heals by itself; otherwise `python -m harness sync` uploads the spool."""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

from harness.tracking.env_seconds import env_seconds
from harness.tracking.heartbeat import HEARTBEAT_TAG, Heartbeat, now_s
from harness.tracking.local_tracker import Tracker, now_ms
from harness.tracking.outage import apply_client_defaults, describe, is_rejected, warn_once
from harness.tracking.params import scrub
from harness.tracking.signals import deferred_signals
from harness.tracking.spool import SPOOL_DIR, RunRecord, Spool
from harness.tracking.stored_uri import on_disk
from harness.tracking.sync import (MAX_PARAM_LENGTH, MAX_PARAMS_PER_BATCH, PARENT_TAG, PARENT_UID_TAG, UID_TAG,
                                   SpoolBusy, SpoolUpload, find_run_by_uid)

log = logging.getLogger("harness")

STEP_TAG = "harness.step"
MAX_METRICS_PER_BATCH = 999  # MLflow's log_batch limit is 1000 entities, the step tag is one
INTERVAL_ENV = "HARNESS_METRICS_INTERVAL_S"
DEFAULT_INTERVAL_S = 5.0


def metrics_interval() -> float:
    """Seconds between the asynchronous metrics calls: HARNESS_METRICS_INTERVAL_S (>= 0), default 5."""
    return env_seconds(INTERVAL_ENV, DEFAULT_INTERVAL_S, allow_zero=True)


@dataclass
class RunSpec:
    """What the MLflow run is: where it goes and what it says about itself (already free of secrets)."""
    tracking_uri: str
    experiment_name: str
    run_name: str
    params: Dict[str, str]
    tags: Dict[str, str]
    artifact_location: Optional[str] = None  # for the experiment, if it has to be created


class MlflowTracker(Tracker):
    def __init__(self, run_dir: Path, spec: RunSpec, experiment_id: Callable[[], str],
                 resume_run_id: Optional[str] = None):
        """`experiment_id()` returns the experiment's id, creating it if needed (called only when online)."""
        super().__init__(run_dir)
        self.spec, self.uid, self.start_time = spec, uuid.uuid4().hex, now_ms()
        self.create_tags = {**spec.tags, UID_TAG: self.uid, HEARTBEAT_TAG: str(now_s())}
        self.spool = Spool(self.run_dir / SPOOL_DIR)
        self.offline = False
        self.client = None
        self.experiment_id: Optional[str] = None
        self._lock = threading.RLock()
        self._upload: Optional[SpoolUpload] = None
        self._finishing = False
        self._queued: List[tuple] = []  # (step, timestamp ms, values) kept for the next send
        self._queue_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._last_send = -float("inf")
        self._interval = metrics_interval()
        self._pending: "deque[tuple]" = deque()  # (steps, RunOperations or None) sent, not yet confirmed
        self._settle_lock = threading.Lock()
        try:
            from mlflow.tracking import MlflowClient

            apply_client_defaults()
            with deferred_signals():
                self._open_run(MlflowClient, experiment_id, resume_run_id)
        except Exception as err:  # unreachable or malformed URI: not fatal, the spool keeps everything
            self._go_offline(err)
        if not resume_run_id:
            self._send(lambda: {"op": "params", "values": spec.params}, self._log_params)
        dir_tag = {"harness.run_dir": str(self.run_dir.resolve())}
        self._send(lambda: {"op": "tags", "values": dir_tag},
                   lambda: self.client.set_tag(self.run_id, "harness.run_dir", dir_tag["harness.run_dir"]))
        self._heartbeat = Heartbeat(self._beat, name="heartbeat").start()

    def where(self) -> str:
        from harness.tracking.ui import runs_url

        s = self.spec
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
        except Exception as err:
            if is_rejected(err):
                warn_once(f"rejected:{describe(err)}", f"tracking: the store refused a record, skipped: "
                                                       f"{describe(err)}")
                return
            with self._lock:
                self._go_offline(err)
                if op is not None:
                    self.spool.append(op())

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

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        """Keep the step for the next send (the caller only pays for the float conversion); the steps kept
        go to MLflow's asynchronous logging once HARNESS_METRICS_INTERVAL_S has passed since the last send."""
        item = (step, now_ms(), {k: float(v) for k, v in metrics.items()})
        with self._queue_lock:
            self._queued.append(item)
            due = time.monotonic() - self._last_send >= self._interval
        if due:
            self._send_queued()

    def _send_queued(self) -> None:
        """Hand the kept steps to MLflow's asynchronous logging (`log_batch(..., synchronous=False)`) in
        calls of <= MAX_METRICS_PER_BATCH metrics, tagged with their highest step; spool them when offline."""
        with self._send_lock:  # one sender at a time (a step, a flush, a beat): the calls keep step order
            with self._queue_lock:
                steps, self._queued = self._queued, []
                self._last_send = time.monotonic()
            self._hand_over(steps)

    def _hand_over(self, steps: List[tuple]) -> None:
        for chunk in _chunks(steps):
            with self._lock:
                if self.offline:
                    for op in _metric_ops(chunk):
                        self.spool.append(op)
                    continue
                try:
                    operation = self._log_steps(chunk, synchronous=False)
                except Exception as err:  # the queue refused the call (shutting down): send it ourselves
                    log.debug("tracking: asynchronous logging unavailable (%s); sending synchronously", err)
                    operation = None
                self._pending.append((chunk, operation))

    def _log_steps(self, steps: list, synchronous: bool = True):
        """One `log_batch` for `steps`, tagged with their highest step (asynchronous: its RunOperations)."""
        from mlflow.entities import Metric, RunTag

        batch = [Metric(k, v, ts, step) for step, ts, values in steps for k, v in values.items()]
        tag = [RunTag(STEP_TAG, str(max(step for step, _, _ in steps)))]
        return self.client.log_batch(self.run_id, metrics=batch, tags=tag, synchronous=synchronous)

    def flush(self) -> None:
        """Return once every step logged so far is in the store, or in the spool when the store is away."""
        self._send_queued()
        self._settle()

    def _settle(self) -> None:
        """Wait for the asynchronous calls in order. A call that failed is sent again synchronously, which
        tells a refused record (skipped, with a warning) from an outage (the run goes offline and spools
        it and every step after it). Then the step tag is set once more to the highest step settled: MLflow
        before 3.18 may apply asynchronous calls out of order, and the last tag written wins."""
        settled = -1
        with self._settle_lock:
            while True:
                with self._lock:
                    if not self._pending:
                        break
                    chunk, operation = self._pending[0]  # left in place until settled: a SIGTERM may cut the wait
                try:
                    if operation is None:
                        raise RuntimeError("not sent")
                    operation.wait()
                except Exception as err:
                    log.debug("tracking: an asynchronous metrics call failed: %s", describe(err))
                    with self._lock:
                        self._pending.popleft()
                    self._resend(chunk)
                else:
                    with self._lock:
                        self._pending.popleft()
                settled = max(settled, max(step for step, _, _ in chunk))
            if settled >= 0:
                self._send(None, lambda: self.client.set_tag(self.run_id, STEP_TAG, str(settled)))

    def _resend(self, chunk: list) -> None:
        with self._lock:
            if self.offline:
                for op in _metric_ops(chunk):
                    self.spool.append(op)
                return
        try:
            with deferred_signals():
                self._log_steps(chunk)
        except Exception as err:
            if is_rejected(err):
                for item in chunk if len(chunk) > 1 else ():
                    self._send(lambda item=item: _metric_ops([item])[0], lambda item=item: self._log_steps([item]))
                if len(chunk) == 1:
                    warn_once(f"rejected:{describe(err)}", f"tracking: the store refused a record, skipped: "
                                                           f"{describe(err)}")
                return
            with self._lock:
                self._go_offline(err)
                for op in _metric_ops(chunk):
                    self.spool.append(op)
                while self._pending:  # sent after the failed one: spooled too (sync skips what landed)
                    for op in _metric_ops(self._pending.popleft()[0]):
                        self.spool.append(op)

    def log_artifact(self, path: Path, artifact_path: Optional[str] = None) -> None:
        self._send(lambda: self.spool.artifact_op(Path(path), artifact_path),
                   lambda: self.client.log_artifact(self.run_id, str(path), artifact_path))

    def log_text(self, text: str, name: str) -> None:
        text = scrub(text)
        self._send(lambda: self.spool.text_op(text, name), lambda: self.client.log_text(self.run_id, text, name))

    # -- heartbeat and catching up -------------------------------------------------------------------------
    def _beat(self) -> None:
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
        except Exception as err:
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
        if self.offline and not self._catch_up():
            log.info("tracking: %d records of this run wait in %s; upload them with: python -m harness sync %s",
                     self.spool.pending(), self.spool.folder, self.run_dir)


def _chunks(steps: List[tuple]) -> Iterator[List[tuple]]:
    """Consecutive steps in groups of at most MAX_METRICS_PER_BATCH metrics (a larger step alone)."""
    chunk: List[tuple] = []
    count = 0
    for item in steps:
        if chunk and count + len(item[2]) > MAX_METRICS_PER_BATCH:
            yield chunk
            chunk, count = [], 0
        chunk.append(item)
        count += len(item[2])
    if chunk:
        yield chunk


def _metric_ops(steps: List[tuple]) -> List[Dict[str, Any]]:
    return [{"op": "metrics", "step": step, "ts": ts, "values": values} for step, ts, values in steps]
