"""Tracking calls that Ctrl-C / SIGTERM / SIGHUP cannot cut in half.

A job turns SIGTERM into an exception (harness/launchers/job.py). Raised inside a SQLite write, it would leave the
transaction open and the database locked for this process's next calls, so the run could not even be
closed as KILLED. Inside `deferred_signals()` the signal is only noted; the job's own handler runs right
after the call, with the store consistent."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def deferred_signals() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only: other threads are never interrupted
        return
    received = []
    previous = {}
    for signum in DEFERRED:
        previous[signum] = signal.signal(signum, lambda num, frame: received.append((num, frame)))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if received:
            signum, frame = received[0]
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler in (signal.SIG_DFL, None):
                signal.raise_signal(signum)
