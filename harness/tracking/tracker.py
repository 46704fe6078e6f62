"""A run's tracking handle. Every metric also goes to `<run_dir>/metrics.jsonl`, so a run keeps its record
even without MLflow; with MLflow the steps' metrics go to the store in batches.

MLflow metric logging is asynchronous: `log_metrics` writes metrics.jsonl and queues the step for a
background writer thread, so a training step never waits on the store's commits. The writer sends what
is queued as one `log_batch` in step order, at most once every HARNESS_METRICS_INTERVAL_S seconds
(default 5): each MLflow call costs tens of ms of CPU (SQLAlchemy), which a run on a busy machine would
otherwise pay on every step; a local SQLite store gets the same rows from sqlite3 (`sqlite_metrics`) for
a fraction of that. `flush()` waits until every queued step is in the store (or spooled); the trainer
calls it before it writes a checkpoint (so a resumed run, which skips the steps the store already has,
never misses one), and `finish()` calls it before the run is closed (also on SIGTERM or failure).

When the store is unreachable (at start or mid-run) the MLflow tracker warns once and records to
`<run_dir>/spool/` instead; training never waits on tracking. Its heartbeat thread then tries to catch
up every beat, so a short outage heals by itself; otherwise `python -m harness sync` uploads the spool."""
from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from harness.tracking.env_seconds import env_seconds
from harness.tracking.heartbeat import HEARTBEAT_TAG, Heartbeat, now_s
from harness.tracking.local_tracker import Tracker, now_ms
from harness.tracking.outage import apply_client_defaults, describe, is_rejected, warn_once
from harness.tracking.params import scrub
from harness.tracking.signals import deferred_signals
from harness.tracking.spool import SPOOL_DIR, RunRecord, Spool
from harness.tracking.sqlite_metrics import SqliteMetrics
from harness.tracking.sync import (MAX_PARAM_LENGTH, MAX_PARAMS_PER_BATCH, PARENT_TAG, PARENT_UID_TAG, UID_TAG,
                                   SpoolBusy, SpoolUpload, find_run_by_uid)

log = logging.getLogger("harness")

STEP_TAG = "harness.step"
MAX_METRICS_PER_BATCH = 1000  # MLflow's log_batch limit
INTERVAL_ENV = "HARNESS_METRICS_INTERVAL_S"
DEFAULT_INTERVAL_S = 5.0


def metrics_interval() -> float:
    """Seconds between the metrics writer's calls: HARNESS_METRICS_INTERVAL_S (>= 0), default 5."""
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
        self._lock = threading.RLock()
        self._upload: Optional[SpoolUpload] = None
        self._finishing = False
        self._queue: "queue.Queue[Optional[tuple]]" = queue.Queue()  # (step, ts, values) or None: stop
        self._writer: Optional[threading.Thread] = None
        self._writer_lock = threading.Lock()
        self._wake = threading.Event()  # flush() / finish(): send now, without waiting for the interval
        self._interval = metrics_interval()
        self.writer_cpu_s = 0.0  # CPU seconds the writer thread spent sending (for the benchmarks)
        self._sqlite = SqliteMetrics(spec.tracking_uri)  # a local SQLite store's metrics, without SQLAlchemy
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

    def _open_run(self, client_class, experiment_id: Callable[[], str], resume_run_id: Optional[str]) -> None:
        if resume_run_id:
            self.client = client_class(tracking_uri=self.spec.tracking_uri)
            self.run_id = resume_run_id
            self.client.update_run(resume_run_id, status="RUNNING")
            self.skip_through_step = self._last_logged_step()
            return
        # experiment_id() first: it creates a fresh local store under a lock, and so would a client
        # (MlflowClient opens a SQLite store on construction), so no client may come before it.
        experiment = experiment_id()
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
            self.spool.open(RunRecord(uid=self.uid, tracking_uri=s.tracking_uri, experiment_name=s.experiment_name,
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

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int, timestamp_ms: Optional[int] = None) -> None:
        """Queue the step for the writer thread (the caller only pays for the float conversion); its timestamp
        is now unless the step was logged earlier elsewhere (a sidecar's job)."""
        with self._writer_lock:  # not self._lock: a catch-up upload holds that one, a step must not wait
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_loop, name="harness-metrics", daemon=True)
                self._writer.start()
        self._queue.put((step, timestamp_ms or now_ms(), {k: float(v) for k, v in metrics.items()}))

    def flush(self) -> None:
        """Wait until every queued step is in the store, or in the spool when the store is away."""
        if self._writer is None:
            return
        done = self._queue.all_tasks_done
        while True:
            self._wake.set()  # again each round: the writer clears it when it starts a call
            with done:
                if not self._queue.unfinished_tasks:
                    return
                done.wait(0.05)

    def _write_loop(self) -> None:
        last = -float("inf")
        while True:
            items = [self._queue.get()]
            wait = last + self._interval - time.monotonic()
            if wait > 0 and items[0] is not None:
                self._wake.wait(wait)  # set by a flush: send what is queued now
            self._wake.clear()
            last = time.monotonic()
            while True:  # everything queued meanwhile goes in the same call
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            steps = [item for item in items if item is not None]
            started = time.thread_time()
            try:
                if steps:
                    self._write_metrics(steps)
            except Exception as err:  # never lose the thread; _write_metrics already spools on errors
                log.debug("tracking: metrics writer error: %s", err)
            finally:
                self.writer_cpu_s += time.thread_time() - started
                for _ in items:
                    self._queue.task_done()
            if len(steps) < len(items):
                return

    def _write_metrics(self, steps: list) -> None:
        """Send queued steps as few store calls (<= MAX_METRICS_PER_BATCH metrics each), in order."""
        chunk, count = [], 0
        for item in steps + [None]:
            if item is not None and (not chunk or count + len(item[2]) <= MAX_METRICS_PER_BATCH):
                chunk.append(item)
                count += len(item[2])
                continue
            ops = [{"op": "metrics", "step": step, "ts": ts, "values": values} for step, ts, values in chunk]
            if len(chunk) == 1:
                self._send(lambda: ops[0], lambda: self._log_steps(chunk))
            else:
                self._send_steps(chunk, ops)
            if item is not None:
                chunk, count = [item], len(item[2])

    def _log_steps(self, steps: list) -> None:
        """One store call for `steps`, tagged with their highest step: sqlite3 when it can, else `log_batch`."""
        from mlflow.entities import Metric, RunTag

        tags = {STEP_TAG: str(max(step for step, _, _ in steps))}
        if not self._sqlite.log(self.run_id, steps, tags):
            batch = [Metric(k, v, ts, step) for step, ts, values in steps for k, v in values.items()]
            self.client.log_batch(self.run_id, metrics=batch, tags=[RunTag(k, v) for k, v in tags.items()])

    def _send_steps(self, chunk: list, ops: list) -> None:
        """`_send` for several steps in one call: all spooled when the store is away; when the store refuses
        the call, the steps are sent one by one so that only a refused step is skipped."""
        with self._lock:
            if self.offline:
                for op in ops:
                    self.spool.append(op)
                return
        try:
            with deferred_signals():
                self._log_steps(chunk)
        except Exception as err:
            if is_rejected(err):
                for item, op in zip(chunk, ops):
                    self._send(lambda op=op: op, lambda item=item: self._log_steps([item]))
                return
            with self._lock:
                self._go_offline(err)
                for op in ops:
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
            self._send(None, lambda: self.client.set_tag(self.run_id, HEARTBEAT_TAG, str(now_s())))

    def _catch_up(self) -> bool:
        """Upload the spool and go back online; False while the store is still away."""
        try:
            if self._upload is None:
                self._upload = SpoolUpload(self.spool, client=self.client)
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
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout=30)
        self._sqlite.close()
        super().finish(status, scrub(error) if error else error)
        if error:
            self.log_text(error, "error.txt")
        end = now_ms()
        self._send(lambda: {"op": "terminate", "status": status, "end_time": end},
                   lambda: self.client.set_terminated(self.run_id, status=status, end_time=end))
        if self.offline and not self._catch_up():
            log.info("tracking: %d records of this run wait in %s; upload them with: python -m harness sync %s",
                     self.spool.pending(), self.spool.folder, self.run_dir)
