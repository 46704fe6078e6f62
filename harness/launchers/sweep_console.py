"""The terminal while a sweep runs: one writer for every line its processes print, and the sweep's status.

Worker processes do not write to the terminal themselves: their `sys.stdout` / `sys.stderr` are `LineRelay`s
that hand each whole line to the driver (a queue), and the driver prints it through `SweepConsole.line`.
So two processes' lines never run into each other (Python writes a line's text and its newline separately
when unbuffered), and on a terminal the status line can stay at the bottom, redrawn in place: a line is
printed above it. Off a terminal (a log file, CI) the status is a plain line every `every` seconds."""
from __future__ import annotations

import io
import os
import sys
import threading
import time
from typing import Callable, Optional, TextIO

from harness.tracking.quiet import verbose

PROGRESS_EVERY_ENV = "HARNESS_PROGRESS_EVERY"  # seconds between status lines off a terminal
LINES_EVERY_S = 30.0  # off a terminal: a CI log gets a line every half minute, not a bar's redraws
CLEAR = "\r\x1b[K"  # back to the line's start and erase it


def lines_every() -> float:
    """Seconds between status lines off a terminal: HARNESS_PROGRESS_EVERY, else 30."""
    try:
        return max(0.5, float(os.environ.get(PROGRESS_EVERY_ENV, LINES_EVERY_S)))
    except ValueError:
        return LINES_EVERY_S


class LineRelay(io.TextIOBase):
    """A text stream that hands `sink(name, line)` each whole line written to it (the newline included);
    `flush` hands on a partial line too. Not a terminal: progress bars written to it turn themselves off."""

    def __init__(self, name: str, sink: Callable[[str, str], None], fileno: Optional[int] = None) -> None:
        super().__init__()
        self.name, self._sink, self._fileno = name, sink, fileno
        self._pending = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        """The original stream's descriptor (for code that writes below Python, e.g. faulthandler)."""
        if self._fileno is None:
            raise io.UnsupportedOperation("fileno")
        return self._fileno

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            *whole, self._pending = self._pending.split("\n")
        for line in whole:
            self._sink(self.name, line + "\n")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._pending = self._pending, ""
        if rest:
            self._sink(self.name, rest)


class SweepConsole:
    """Prints the sweep's lines and its status. live (a terminal): the status is the last line, redrawn in
    place; else the status is printed as a line of its own at most every `every` seconds."""

    def __init__(self, live: Optional[bool] = None, every: Optional[float] = None,
                 out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> None:
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.live = _is_terminal(self.err) if live is None else live
        self.every = lines_every() if every is None else every
        self._shown = ""  # the status line on the terminal (live)
        self._last = time.monotonic()  # when the last status line was printed (not live): the first after `every`
        self._lock = threading.RLock()

    def line(self, name: str, text: str) -> None:
        """Print `text` (a whole line, or the rest of one: it is ended here) on stdout (name "out") or stderr,
        above the status."""
        stream = self.err if name == "err" else self.out
        if self.live and name == "out" and _a_runs_result(text) and not verbose():
            return  # on a terminal the status line counts them and each run's job.log holds its line (-v shows it)
        with self._lock:
            self._clear()
            stream.write(text if text.endswith("\n") else text + "\n")
            stream.flush()
            self._draw()

    def say(self, text: str) -> None:
        """One line of the sweep's own on stdout."""
        self.line("out", text.rstrip("\n") + "\n")

    def status(self, text: str, force: bool = False) -> None:
        """The sweep's state now. Off a terminal it is printed when `every` seconds have passed (or force)."""
        with self._lock:
            if self.live:
                self._clear()
                self._shown = text[:max(20, _columns(self.err) - 1)]
                self._draw()
            elif force or time.monotonic() - self._last >= self.every:
                self._last = time.monotonic()
                self.err.write(text + "\n")
                self.err.flush()

    def width(self) -> Optional[int]:
        """The characters a status line may have: the terminal's width less one (None off a terminal)."""
        return _columns(self.err) - 1 if self.live else None

    def close(self) -> None:
        """Leave the terminal without a status line."""
        with self._lock:
            self._clear()
            self._shown = ""

    def _clear(self) -> None:
        if self.live and self._shown:
            self.err.write(CLEAR)
            self.err.flush()

    def _draw(self) -> None:
        if self.live and self._shown:
            self.err.write(self._shown)
            self.err.flush()


def _a_runs_result(text: str) -> bool:
    """A finished run's result line (harness/launchers/job.py finish_run): one per run, hundreds in a study."""
    return text.startswith("run ") and ": FINISHED " in text


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return 80
