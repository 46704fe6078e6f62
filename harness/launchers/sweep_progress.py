"""A sweep's progress, read from its job folders while it runs: per ensemble (or run alone) the step reached
of its total and the time left, for any launcher that runs the jobs where this process sees their folders.

Every run appends each step's metrics to `<job folder>/metrics.jsonl` as the step ends (harness/tracking/
local_tracker.py) and writes `status.txt` when it ends, so a thread of the driver reads the last line of each
job's file every second: no message from the workers, no change to the trainers. The time left of a unit
comes from its own pace since its first step was seen (its start-up, torch and the warm start, is not a step)."""
from __future__ import annotations

import logging
import math
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence

from harness.launchers.output_relay import RelayServer
from harness.launchers.sweep_console import LineRelay, SweepConsole
from harness.launchers.sweep_eta import Eta

TAIL_BYTES = 16384  # a step's line of metrics is ~2 KB
STEP = re.compile(rb'\{"step": (\d+)')
SHOWN_UNITS = 4  # running units named on the status line; the others are counted


@dataclass
class Unit:
    """A group of jobs that trains as one (an ensemble, or a run alone): its job folders and total steps."""
    label: str
    folders: List[Path]
    steps: int
    step: Optional[int] = None  # the last step any member logged
    ended: int = 0  # members with a status.txt (or skipped)
    first: Optional[tuple] = None  # (time, step) when a step was first seen
    pace: Optional[float] = None  # seconds per step

    @property
    def done(self) -> bool:
        return self.ended >= len(self.folders)

    def left_s(self) -> Optional[float]:
        if self.done:
            return 0.0
        if self.pace is None or self.step is None:
            return None
        return max(0, self.steps - self.step) * self.pace


def last_step(metrics: Path) -> Optional[int]:
    """The step of the last whole line of a metrics.jsonl; None before its first."""
    try:
        with open(metrics, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return None
    found = STEP.findall(tail[:tail.rfind(b"\n") + 1])
    return int(found[-1]) if found else None


def _ended(folder: Path) -> bool:
    return (folder / "status.txt").is_file() or (folder / "skipped.json").is_file()


def read(unit: Unit, now: float) -> None:
    """Update `unit` from its folders."""
    unit.ended = sum(_ended(f) for f in unit.folders)
    steps = [s for s in (last_step(f / "metrics.jsonl") for f in unit.folders) if s is not None]
    if not steps:
        return
    unit.step = max(steps)
    if unit.first is None or unit.step < unit.first[1]:
        unit.first = (now, unit.step)
    elif unit.step > unit.first[1]:
        unit.pace = (now - unit.first[0]) / (unit.step - unit.first[1])


def clock(seconds: Optional[float]) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def left_in_all(units: Sequence[Unit], workers: int) -> Optional[float]:
    """The running units' longest time left, plus the queued units' turns at the pace seen so far."""
    running = [u for u in units if not u.done and u.step is not None]
    queued = [u for u in units if not u.done and u.step is None]
    lefts = [u.left_s() for u in running]
    if any(t is None for t in lefts) or (queued and not running):
        return None
    paced = [u.pace * u.steps for u in units if u.pace is not None]
    turns = math.ceil(len(queued) / max(1, workers)) if queued else 0
    if turns and not paced:
        return None
    return max(lefts, default=0.0) + turns * (sum(paced) / len(paced) if paced else 0.0)


def describe(units: Sequence[Unit], elapsed: float, workers: int, width: Optional[int] = None,
             left: Optional[float] = None) -> str:
    """One line, the overall state first (runs ended, the time left: `left`, else the units' estimate), then each
    running unit's step and time left and the sweep's time so far, as far as `width` characters hold them."""
    runs = sum(len(u.folders) for u in units)
    left = left_in_all(units, workers) if left is None else left
    head = [f"{sum(u.ended for u in units)}/{runs} runs", f"about {clock(left)} left"]
    running = [u for u in units if not u.done]
    parts = [f"{u.label}: starting" if u.step is None else
             f"{u.label}: step {u.step}/{u.steps}, {clock(u.left_s())} left" for u in running[:SHOWN_UNITS]]
    line, shown = " · ".join(head), 0
    for part in parts:
        after = len(running) - shown - 1
        more = f" · {after} more" if after else ""
        if width is not None and len(line) + 3 + len(part) + len(more) > width:
            break
        line, shown = line + " · " + part, shown + 1
    hidden = len(running) - shown
    more = f" · {hidden} {'more' if shown else 'running'}" if hidden else ""
    line += more if width is None or len(line) + len(more) <= width else ""
    so_far = f" · sweep {clock(elapsed)}"
    return line + so_far if width is None or len(line) + len(so_far) <= width else line


def units_of(groups: Sequence[Sequence[int]], folders: Sequence[Optional[Path]], steps: Sequence[int],
             indices: Sequence[int]) -> List[Unit]:
    """The units of a sweep: each group (positions into the jobs) with its jobs' folders, its longest total
    steps and a label (`ensemble k` for several runs, `run #idx` for one)."""
    units, ensembles = [], 0
    for group in groups:
        known = [folders[p] for p in group if folders[p] is not None]
        if not known:
            continue
        if len(group) > 1:
            ensembles += 1
            label = f"ensemble {ensembles}"  # its size is in the launch line
        else:
            label = f"run #{indices[group[0]]}"
        units.append(Unit(label, known, max(steps[p] for p in group)))
    return units


@dataclass
class Ticker:
    """Shows `text()` on `console` now and every `tick` seconds after, from `start` until `stop`."""
    text: Callable[[], str]
    console: SweepConsole
    tick: float = 1.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: Optional[threading.Thread] = None

    def start(self) -> "Ticker":
        self._thread = threading.Thread(target=self._run, name="sweep-progress", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            try:
                self.console.status(self.text())
            except Exception:  # a folder read mid-write, a closed terminal: progress is never worth a failure
                pass
            if self._stop.wait(self.tick):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.console.close()


def progress_text(units: List[Unit], workers: int, width: Callable[[], Optional[int]] = lambda: None
                  ) -> Callable[[], str]:
    """The units' status line, read afresh from their folders at each call, `width()` characters at most (None:
    any), with the sweep's steady time left (harness/launchers/sweep_eta.py)."""
    started, eta = time.monotonic(), Eta()

    def text() -> str:
        now = time.monotonic()
        for unit in units:
            if not unit.done:
                read(unit, now)
        left = eta.update(units, now, fallback=left_in_all(units, workers))
        return describe(units, now - started, workers, width(), left)
    return text


@contextmanager
def watching(units: Optional[List[Unit]], workers: int = 1, pool: bool = False) -> Iterator[Optional[RelayServer]]:
    """While the body runs the sweep's jobs, show their progress (units None: nothing is shown). pool: worker
    processes run them, and yields the server their output goes through (`RelayServer.initializer`)."""
    if units is None:
        yield None
        return
    console = SweepConsole()
    server = RelayServer(console) if pool else None
    ticker = Ticker(progress_text(units, workers, console.width), console)
    with routed(console):
        ticker.start()
        try:
            yield server
        finally:
            ticker.stop()
            if server is not None:
                server.close()


@contextmanager
def busy(label: str) -> Iterator[None]:
    """While the body runs, say so: on a terminal '<label>, m:ss' redrawn every second, elsewhere '<label>…'
    once (e.g. a sweep's reports, which take seconds to minutes after its last run)."""
    console = SweepConsole()
    if not console.live:
        console.status(f"{label}…", force=True)
        yield
        return
    started = time.monotonic()
    ticker = Ticker(lambda: f"{label}, {clock(time.monotonic() - started)}", console)
    with routed(console):
        ticker.start()
        try:
            yield
        finally:
            ticker.stop()


@contextmanager
def routed(console: SweepConsole) -> Iterator[None]:
    """This process's output goes through `console` for the time (its prints, and its log handlers that write
    to the terminal), so that none of it runs into the status line."""
    saved = sys.stdout, sys.stderr
    relays = {id(saved[0]): LineRelay("out", console.line, fileno=_fileno(saved[0])),
              id(saved[1]): LineRelay("err", console.line, fileno=_fileno(saved[1]))}
    handlers = [h for name in (None, "harness", "hydra") for h in logging.getLogger(name).handlers
                if isinstance(h, logging.StreamHandler) and id(h.stream) in relays]
    streams = [h.setStream(relays[id(h.stream)]) for h in handlers]
    sys.stdout, sys.stderr = relays[id(saved[0])], relays[id(saved[1])]
    try:
        yield
    finally:
        for relay in relays.values():
            relay.flush()
        sys.stdout, sys.stderr = saved
        for handler, stream in zip(handlers, streams):
            handler.setStream(stream)


def _fileno(stream) -> Optional[int]:
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError):
        return None
