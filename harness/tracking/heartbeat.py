"""A run's pulse: a daemon thread refreshes the tag `harness.heartbeat` (unix seconds) every ~30 s.

A run killed with SIGKILL (OOM killer, `scancel`, node loss) never closes its MLflow run; its heartbeat
stops instead, and `python -m harness status` shows it STALE, `python -m harness repair` marks it KILLED."""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from harness.tracking.env_seconds import env_seconds

log = logging.getLogger("harness")

HEARTBEAT_TAG = "harness.heartbeat"
HEARTBEAT_ENV = "HARNESS_HEARTBEAT_S"
DEFAULT_PERIOD_S = 30.0
MISSED_BEATS_BEFORE_STALE = 6
MIN_STALE_AFTER_S = 180.0


def heartbeat_period() -> float:
    """Seconds between beats: HARNESS_HEARTBEAT_S, default 30."""
    return env_seconds(HEARTBEAT_ENV, DEFAULT_PERIOD_S, allow_zero=False)


def default_stale_after() -> float:
    """A RUNNING run whose heartbeat is older than this is presumed dead (6 missed beats, at least 3 min)."""
    return max(MIN_STALE_AFTER_S, MISSED_BEATS_BEFORE_STALE * heartbeat_period())


def now_s() -> int:
    return int(time.time())


class Heartbeat:
    """Calls `beat()` every `period` seconds on a daemon thread until `stop()`; errors are logged, not raised."""

    def __init__(self, beat: Callable[[], None], period: Optional[float] = None, name: str = "heartbeat"):
        self._beat = beat
        self.period = heartbeat_period() if period is None else period
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"harness-{name}", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopped.wait(self.period):
            try:
                self._beat()
            except Exception as err:  # the thread's boundary: a missed beat is not worth a crash; the next may succeed
                log.debug("heartbeat failed: %s", err)
