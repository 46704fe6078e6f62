"""A run's metrics on their way to MLflow: each step is kept in memory and, at most once every
HARNESS_METRICS_INTERVAL_S seconds (default 5; 0: every step), handed to MLflow's asynchronous logging
(`log_batch(..., synchronous=False)`) as calls of <= MAX_METRICS_PER_BATCH metrics; settling waits on
those calls in order, sends a failed one again synchronously, and spools what the store cannot take.

`MetricBatches` is the part of `MlflowTracker` that does this (it uses the tracker's client, run id, lock,
spool and `_send` / `_go_offline`)."""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Dict, Iterator, List

from harness.tracking.env_seconds import env_seconds
from harness.tracking.local_tracker import now_ms
from harness.tracking.mlflow_limits import MAX_METRICS_PER_BATCH
from harness.tracking.outage import describe, is_rejected, warn_once
from harness.tracking.signals import deferred_signals
from harness.tracking.tags import STEP_TAG

log = logging.getLogger("harness")

INTERVAL_ENV = "HARNESS_METRICS_INTERVAL_S"
DEFAULT_INTERVAL_S = 5.0


def metrics_interval() -> float:
    """Seconds between the asynchronous metrics calls: HARNESS_METRICS_INTERVAL_S (>= 0), default 5."""
    return env_seconds(INTERVAL_ENV, DEFAULT_INTERVAL_S, allow_zero=True)


class MetricBatches:
    """Keeps, sends and settles the steps' metrics of an `MlflowTracker`."""

    def _init_batches(self) -> None:
        self._queued: List[tuple] = []  # (step, timestamp ms, values) kept for the next send
        self._queue_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._last_send = -float("inf")
        self._interval = metrics_interval()
        self._pending: "deque[tuple]" = deque()  # (steps, RunOperations or None) sent, not yet confirmed
        self._settle_lock = threading.Lock()

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
                except Exception as err:  # a store fault never stops a run: the batch is sent again when settling
                    log.debug("tracking: asynchronous logging unavailable (%s); sending synchronously", err)
                    operation = None
                self._pending.append((chunk, operation))

    def _log_steps(self, steps: list, synchronous: bool = True):
        """One `log_batch` for `steps`, tagged with their highest step (asynchronous: its RunOperations)."""
        from mlflow.entities import Metric, RunTag

        batch = [Metric(k, v, ts, step) for step, ts, values in steps for k, v in values.items()]
        tag = [RunTag(STEP_TAG, str(max(step for step, _, _ in steps)))]
        return self.client.log_batch(self.run_id, metrics=batch, tags=tag, synchronous=synchronous)

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
                except Exception as err:  # a store fault never stops a run: sent again, spooled if still failing
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
        except Exception as err:  # a store fault never stops a run: a refused record is skipped, else spooled
            if self._refused_by(err):  # the whole run refused (harness/tracking/refusal.py): nothing to spool
                return
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
