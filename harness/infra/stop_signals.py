"""How a job process stops: SIGTERM (and SIGHUP: the terminal or ssh session that ran it closed) becomes Killed
and Ctrl-C KeyboardInterrupt, once; later stop signals
are ignored while the runs close, so a burst of them (Slurm, a dying driver, an impatient user) cannot leave a
run RUNNING.

A stop that arrives while the interpreter runs a finalizer (a weakref callback, `__del__`: garbage collection
in the middle of training) cannot be raised there: Python prints "Exception ignored in ..." and drops it, and
as later stop signals are ignored the process would train on. Such a stop is kept and raised at the next
safe point (`raise_if_stopped`, called by the training loop once a step and by the worker pool's driver)."""
from __future__ import annotations

import signal
from typing import Optional

FINALIZER_FILES = ("weakref.py", "_weakrefset.py")
_pending: Optional[BaseException] = None


class Killed(BaseException):
    """SIGTERM turned into an exception so the run can be closed as KILLED."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _ignored(_signum, _frame) -> None:
    """A stop signal while the runs close. A handler rather than SIG_IGN: one already pending when it is set
    would be reported with a traceback ("Signal 15 ignored due to race condition")."""


def ignore_stop_signals() -> None:
    """From now on this process is closing its runs: no Ctrl-C or SIGTERM may cut that short."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _ignored)


def _raise_killed(signum, frame):
    # the first SIGTERM stops the job; later ones (or a Ctrl-C) must not cut its closing short. They come:
    # Slurm may send more, and the kernel signals a child of a dying driver again each time one of the
    # driver's threads exits
    err = Killed(f"received signal {signal.Signals(signum).name}")
    err.signum = int(signum)  # the exit status says which (128 + signum)
    _stop(err, frame)


def _raise_interrupted(_signum, frame):
    # Ctrl-C, as Python's own handler, except that a second (a user pressing it again, impatient) cannot cut
    # the closing of the runs short and leave them RUNNING
    _stop(KeyboardInterrupt(), frame)


def _stop(err: BaseException, frame) -> None:
    global _pending
    ignore_stop_signals()
    if _in_finalizer(frame):
        _pending = err  # raised by the next raise_if_stopped: from here it would be printed and lost
        return
    raise err


def _in_finalizer(frame) -> bool:
    """Whether the interrupted code is a finalizer, where an exception is printed and dropped."""
    code = getattr(frame, "f_code", None)
    return code is not None and (code.co_name == "__del__" or code.co_filename.endswith(FINALIZER_FILES))


def raise_if_stopped() -> None:
    """Raise the stop that arrived inside a finalizer, if any (once)."""
    global _pending
    if _pending is not None:
        err, _pending = _pending, None
        raise err


def handle_stop_signals() -> dict:
    """SIGTERM and SIGHUP raise Killed and Ctrl-C KeyboardInterrupt, once: later ones are ignored while the runs close.
    Returns the previous handlers, for `restore_signals`."""
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    signal.signal(signal.SIGTERM, _raise_killed)
    if previous[signal.SIGHUP] is not signal.SIG_IGN:  # not under nohup, which asked to outlive the terminal
        signal.signal(signal.SIGHUP, _raise_killed)
    if previous[signal.SIGINT] is signal.default_int_handler:  # not where Ctrl-C is ignored (nohup, `&`)
        signal.signal(signal.SIGINT, _raise_interrupted)
    return previous


def restore_signals(previous: dict) -> None:
    """The handlers `handle_stop_signals` replaced; a process that was stopped keeps ignoring them."""
    if signal.getsignal(signal.SIGTERM) is _ignored:
        return
    for sig, handler in previous.items():
        signal.signal(sig, handler)
