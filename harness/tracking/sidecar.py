"""A job's MLflow tracking in a sidecar process, so that MLflow's imports (seconds), opening the store, the
heartbeat and every write run beside training, on another core and under another GIL.

`SidecarTracker` is what the job holds: `log_metrics` writes metrics.jsonl here, synchronously, and queues
the step in memory (a few µs); a thread of the job sends what is queued to the sidecar as one pickled batch
on a socket pair once every HARNESS_METRICS_INTERVAL_S (default 5 s; 0: every step at once), which is when
the sidecar's metrics writer would send it to the store anyway. So a step costs neither a system call nor a
wake-up of the sidecar (each wake-up of a process costs the machine far more than the few records it
carries). `log_artifact`, `log_text`, `flush` and `finish` send at once, after what is queued. `flush()`
returns once the sidecar has recorded everything logged before it (the trainer calls it before each
checkpoint); `finish()` once the sidecar has closed the run and exited. `run_id` waits for the sidecar to
open the run only when someone reads it. The sidecar (`sidecar_child`) runs the unchanged `MlflowTracker`,
so outages spool and heal there as they did in the job's process. A job killed with SIGKILL loses, in the
store, the steps logged since its last send or flush, as the in-process writer lost those of its last
interval (metrics.jsonl has them all).

If the sidecar cannot start or dies, the job says so once and goes on with an in-process `MlflowTracker`
(continuing the run the sidecar opened) that first records what the sidecar had not confirmed."""
from __future__ import annotations

import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from harness.tracking.local_tracker import Tracker, now_ms
from harness.tracking.params import scrub
from harness.tracking.sidecar_child import STOP_SIGNALS, mark_warned, replay, warned_keys
from harness.tracking.tracker import metrics_interval

log = logging.getLogger("harness")

PYTHON_ENV = "HARNESS_SIDECAR_PYTHON"  # the sidecar's interpreter (default: this one); tests break it on purpose
CHILD_CODE = ("import sys; sys.path.append(sys.argv[2]); "
              "from harness.tracking.sidecar_child import main; main(int(sys.argv[1]))")
REPLAY_LIMIT = 20000  # records kept until the sidecar confirms them (at least every CONFIRM_EVERY_S)
EXIT_TIMEOUT_S = 60.0


@contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """A blocked signal mask survives fork and exec: the sidecar starts with the stop signals held back and
    ignores them before it lets them through, so a Ctrl-C during its start cannot kill it."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def start_sidecar() -> Tuple[Connection, subprocess.Popen]:
    ours, theirs = socket.socketpair()
    importable_from = str(Path(__file__).resolve().parents[2])  # appended: the installed harness wins
    python = os.environ.get(PYTHON_ENV) or sys.executable
    try:
        with stop_signals_blocked():
            proc = subprocess.Popen([python, "-c", CHILD_CODE, str(theirs.fileno()), importable_from],
                                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return Connection(ours.detach()), proc


def emit(fields: Dict[str, Any]) -> None:
    """A log record of the sidecar, through this process's handlers (the job's console and log file)."""
    record = logging.makeLogRecord(fields)
    logger = logging.getLogger(record.name)
    if logger.isEnabledFor(record.levelno):
        logger.handle(record)


class SidecarTracker(Tracker):
    """The job's side of its tracking run (the module's docstring says how it behaves)."""

    def __init__(self, run_dir: Path, job: Dict[str, Any]):
        """`job`: what `run_tracker.mlflow_tracker` opens the run from (see `run_tracker.tracker_job`)."""
        super().__init__(run_dir)
        self.job = job
        self.child_cpu_s = 0.0  # CPU seconds of the sidecar (and its children), as it last reported
        self._send_lock = threading.Lock()
        self._replies = threading.Condition()
        self._send_every = metrics_interval()
        self._numbered = self._confirmed = 0  # numbers of the last record queued / confirmed recorded
        self._queued: List[tuple] = []  # (number, record) not sent yet
        self._unsent: Optional[bytes] = None  # a batch a stop signal's exception may have kept from going
        self._unconfirmed: deque = deque(maxlen=REPLAY_LIMIT)  # (number, record) for a fallback to replay
        self._opened = self._finished = self._ended = False
        self._run_id: Optional[str] = None
        self._why = "exited"  # what happened to the sidecar, for the warning
        self._fallback: Optional[Tracker] = None
        self._fallback_lock = threading.Lock()
        self._proc: Optional[subprocess.Popen] = None
        try:
            self._conn, self._proc = start_sidecar()
        except Exception as err:
            self._why, self._ended = f"could not start ({type(err).__name__}: {err})", True
            return
        threading.Thread(target=self._read, name="harness-sidecar-replies", daemon=True).start()
        self._post(("open", {**job, "warned": warned_keys()}))

    # -- sending -----------------------------------------------------------------------------------------
    def _record(self, record: tuple, now: bool) -> None:
        """Queue a record (sent at once when `now`, else by the reply thread); to the fallback once the
        sidecar is gone."""
        with self._send_lock:
            queued = not self._ended
            if queued:
                self._numbered += 1
                self._unconfirmed.append((self._numbered, record))
                self._queued.append((self._numbered, record))
                if not now or self._send_queued():
                    return
        fallback = self._fallback_tracker()  # replays a record queued above, with the others not confirmed
        if not queued:
            replay(fallback, record)

    def _post(self, record: tuple) -> int:
        """Send a control record now, after what is queued; its number, 0 when the sidecar is gone."""
        with self._send_lock:
            if self._ended:
                return 0
            self._numbered += 1
            self._queued.append((self._numbered, record))
            return self._numbered if self._send_queued() else 0

    def _send_queued(self) -> bool:
        """(Holding the send lock.) False when the sidecar is gone."""
        # The job's SIGTERM handler raises wherever the job is, maybe between these lines: a batch that may not
        # have gone stays in _unsent or _queued and goes with the next send; the sidecar skips what it has.
        try:
            if self._unsent is not None:
                self._conn.send_bytes(self._unsent)
                self._unsent = None
            if self._queued:
                self._unsent = pickle.dumps(self._queued, protocol=pickle.HIGHEST_PROTOCOL)
                self._queued = []
                self._conn.send_bytes(self._unsent)
                self._unsent = None
        except OSError:
            self._ended = True
            return False
        return True

    def _remote_log_metrics(self, metrics: Dict[str, float], step: int) -> None:
        self._record(("metrics", step, {k: float(v) for k, v in metrics.items()}, now_ms()), now=not self._send_every)

    def log_artifact(self, path: Path, artifact_path: Optional[str] = None) -> None:
        self._record(("artifact", str(Path(path).resolve()), artifact_path), now=True)

    def log_text(self, text: str, name: str) -> None:
        self._record(("text", text, name), now=True)

    # -- waiting on the sidecar --------------------------------------------------------------------------
    def _wait(self, done: Callable[[], bool]) -> bool:
        """Wait until `done()`; False when the sidecar ended first."""
        with self._replies:
            while not done() and not self._ended:
                self._replies.wait(1.0)
            return done()

    def flush(self) -> None:
        """Return once every record sent so far is in the store (or the sidecar's spool)."""
        if self._fallback is None:
            number = self._post(("flush",))
            if number and self._wait(lambda: self._confirmed >= number):
                return
        self._fallback_tracker().flush()

    @property
    def run_id(self) -> Optional[str]:
        if self._fallback is None and self._wait(lambda: self._opened):
            return self._run_id
        return self._fallback_tracker().run_id

    def finish(self, status: str, error: Optional[str] = None) -> None:
        """Close the run (status.txt, error.txt, the store) and wait for the sidecar to exit."""
        if self._finished:
            return
        error = scrub(error) if error else error
        try:
            closed = self._fallback is None and self._post(("finish", status, error)) and self._wait(
                lambda: self._finished)
            if not closed:
                self._fallback_tracker().finish(status, error)
            self._reap()
        finally:
            if self._metrics_file is not None:
                self._metrics_file.close()

    def _reap(self) -> None:
        if self._proc is None:
            return
        try:
            self._proc.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("tracking: the sidecar did not exit after closing the run; killed")
            self._proc.kill()
            self._proc.wait()

    # -- replies, and sending what is queued (a thread) ---------------------------------------------------
    def _read(self) -> None:
        try:
            while True:
                if self._conn.poll(self._send_every or None):
                    self._on_reply(pickle.loads(self._conn.recv_bytes()))
                if self._queued:
                    with self._send_lock:
                        if not self._ended and not self._send_queued():
                            break
        except (EOFError, OSError):
            pass
        finally:
            with self._send_lock:
                self._conn.close()
            with self._replies:
                self._ended = True
                self._replies.notify_all()

    def _on_reply(self, reply: tuple) -> None:
        kind = reply[0]
        if kind == "log":
            emit(reply[1])
            return
        with self._replies:
            if kind == "opened":
                _, self._run_id, self.skip_through_step, warned = reply
                self._opened = True
                mark_warned(warned)
            elif kind == "flushed":
                _, self._confirmed, self._run_id, self.child_cpu_s = reply
                while self._unconfirmed and self._unconfirmed[0][0] <= self._confirmed:
                    self._unconfirmed.popleft()
            elif kind == "finished":
                _, self._run_id, self.child_cpu_s, warned = reply
                self._finished = True
                mark_warned(warned)
            elif kind == "failed":
                self._why = reply[1]
            self._replies.notify_all()

    # -- when the sidecar is gone ------------------------------------------------------------------------
    def _fallback_tracker(self) -> Tracker:
        with self._fallback_lock:
            if self._fallback is None:
                self._fallback = self._open_fallback()
            return self._fallback

    def _exit(self) -> str:
        code = self._proc.poll() if self._proc is not None and self._why == "exited" else None
        if code is None:
            return self._why
        return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"

    def _open_fallback(self) -> Tracker:
        from harness.tracking.run_tracker import mlflow_tracker

        with self._send_lock, self._replies:
            self._ended = True  # nothing more goes to the sidecar
            pending, opened = list(self._unconfirmed), self._opened and self._run_id
            self._unconfirmed.clear()
            self._queued = []
        log.warning("tracking: the MLflow sidecar %s; this job records its run itself from now on%s", self._exit(),
                    f" (run {self._run_id}, {len(pending)} records to repeat)" if opened else "")
        job = {**self.job, "resume_run_id": self._run_id} if opened else self.job
        try:
            tracker: Tracker = mlflow_tracker(job)
        except Exception as err:
            log.warning("tracking: no MLflow run either (%s: %s); metrics go to metrics.jsonl only",
                        type(err).__name__, err)
            return Tracker(self.run_dir)
        for _, record in pending:
            replay(tracker, record)
        return tracker
