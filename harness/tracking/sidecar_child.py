"""The sidecar process of a job's MLflow tracking (started by `harness.tracking.sidecar`): it opens the run
with the unchanged `MlflowTracker` and replays the job's calls on it, in order.

Stop signals (Ctrl-C, SIGTERM from Slurm's preemption or `scancel`, submitit's USR2) reach the whole
process group: the sidecar ignores them and waits for the job to close the run (`finish("KILLED")`). When
the job's process dies without closing it (SIGKILL, the OOM killer), the sidecar reads EOF: it records
what it received, stops the heartbeat and exits, leaving the run RUNNING with a stale heartbeat as an
in-process tracker would (`python -m harness status` shows it, `repair` closes it)."""
from __future__ import annotations

import logging
import os
import pickle
import queue
import resource
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Iterable, List, Tuple

from harness.tracking import outage

log = logging.getLogger("harness")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
CONFIRM_EVERY_S = 10.0  # a flush at least this often, so the job keeps only recent records for a fallback
EOF = None


# The warnings `outage.warn_once` gave, shared with the job's process: one warning per store per job process,
# as when every run of a sweep tracked in that process.
def warned_keys() -> List[str]:
    with outage._warned_lock:
        return sorted(outage._warned)


def mark_warned(keys: Iterable[str]) -> None:
    with outage._warned_lock:
        outage._warned.update(keys)


def replay(tracker: Any, record: tuple) -> None:
    """Apply one record of the job to a tracker (an MlflowTracker here, or the job's fallback)."""
    kind = record[0]
    if kind == "metrics":
        if record[1] > tracker.skip_through_step:  # a resumed run: the steps the store has are skipped
            tracker._remote_log_metrics(record[2], record[1], record[3])  # metrics.jsonl is the job's own
    elif kind == "artifact":
        tracker.log_artifact(Path(record[1]), record[2])
    elif kind == "text" and hasattr(tracker, "log_text"):
        tracker.log_text(record[1], record[2])


class Channel:
    """This end of the socket pair: the job's batches of records in (drained by a thread at once, so the job
    never waits on a full socket), replies out from any thread."""

    def __init__(self, fd: int):
        self.conn, self.lock, self.inbox = Connection(fd), threading.Lock(), queue.Queue()

    def drain(self) -> None:
        try:
            while True:
                for item in pickle.loads(self.conn.recv_bytes()):  # a batch of (number, record)
                    self.inbox.put(item)
        except Exception as err:  # EOF, or a record cut short by the job's death: treated alike
            if not isinstance(err, (EOFError, OSError)):
                log.warning("tracking: the job's records ended unreadable (%s); stopping", err)
        finally:
            self.inbox.put(EOF)

    def reply(self, *message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self.lock:
                self.conn.send_bytes(data)
        except OSError:
            pass  # the job is gone: its EOF is in the inbox


class ForwardLogs(logging.Handler):
    """harness's log records go to the job's process, which shows them like its own."""

    def __init__(self, channel: Channel):
        super().__init__(logging.INFO)
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + "".join(traceback.format_exception(*record.exc_info))
        fields = {k: getattr(record, k) for k in ("name", "levelno", "levelname", "pathname", "filename", "module",
                                                   "lineno", "funcName", "created", "msecs", "process",
                                                   "threadName")}
        self.channel.reply("log", {**fields, "msg": message, "args": None})


def cpu_seconds() -> float:
    """This process's threads (exact, unlike os.times' clock ticks) and its reaped children (git)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def confirm(tracker: Any, channel: Channel, received: int) -> Tuple[int, float]:
    """Flush, and tell the job that every record up to number `received` is recorded."""
    tracker.flush()
    channel.reply("flushed", received, tracker.run_id, cpu_seconds())
    return received, time.monotonic()


def serve(tracker: Any, channel: Channel, received: int) -> None:
    """Replay records until the job finishes the run (or goes away: EOF). `received`: the open record's number."""
    confirmed, last_confirmed = received, time.monotonic()
    while True:
        wait = None if received == confirmed else max(0.0, last_confirmed + CONFIRM_EVERY_S - time.monotonic())
        try:
            item = channel.inbox.get(timeout=wait)
        except queue.Empty:  # quiet for a while: confirm what is pending
            confirmed, last_confirmed = confirm(tracker, channel, received)
            continue
        if item is EOF:  # the job died without closing the run: keep what it sent, leave the run open
            tracker.flush()
            heartbeat = getattr(tracker, "_heartbeat", None)
            if heartbeat is not None:
                heartbeat.stop()
            return
        number, record = item
        if number <= received:
            continue  # sent again by the job (see SidecarTracker._post)
        received = number
        if record[0] == "finish":
            tracker.finish(record[1], record[2])
            channel.reply("finished", tracker.run_id, cpu_seconds(), warned_keys())
            return
        if record[0] != "flush":
            try:
                replay(tracker, record)
            except Exception as err:  # one bad record (a file gone before it was uploaded) must not end the run
                log.warning("tracking: %s not recorded: %s: %s", record[0], type(err).__name__, err)
        if record[0] == "flush" or time.monotonic() - last_confirmed >= CONFIRM_EVERY_S:
            confirmed, last_confirmed = confirm(tracker, channel, received)


def run(channel: Channel) -> int:
    first = channel.inbox.get()
    if first is EOF:
        return 0
    number, (_, job) = first
    mark_warned(job.pop("warned", ()))
    try:
        from harness.tracking.run_tracker import mlflow_tracker

        tracker = mlflow_tracker(job)
    except Exception as err:
        traceback.print_exc()
        channel.reply("failed", f"could not open the run ({type(err).__name__}: {err})")
        return 1
    channel.reply("opened", tracker.run_id, tracker.skip_through_step, warned_keys())
    serve(tracker, channel, number)
    return 0


def main(fd: int) -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the job for the start
    channel = Channel(fd)
    threading.Thread(target=channel.drain, name="harness-sidecar-inbox", daemon=True).start()
    harness_log = logging.getLogger("harness")
    harness_log.addHandler(ForwardLogs(channel))
    harness_log.setLevel(logging.INFO)
    harness_log.propagate = False
    code = run(channel)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (seconds of garbage collection over MLflow's objects)
