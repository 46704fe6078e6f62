"""A sweep's progress, read from its job folders while it runs: per ensemble (or run alone) the step reached
of its total and the time left, for any launcher that runs the jobs where this process sees their folders.

Every run appends each step's metrics to `<job folder>/metrics.jsonl` as the step ends (harness/tracking/
local_tracker.py) and writes `status.txt` when it ends, so a thread of the driver reads the last line of each
job's file every second: no message from the workers, no change to the trainers. The time left of a unit
comes from its own pace since its first step was seen (its start-up, torch and the warm start, is not a step)."""
from __future__ import annotations

import math
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional, Sequence

from harness.launchers.output_relay import RelayServer
from harness.launchers.sweep_console import LineRelay, SweepConsole

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


def describe(units: Sequence[Unit], elapsed: float, workers: int) -> str:
    """One line: the sweep's time so far, runs ended, each running unit's step and time left, the time left."""
    runs = sum(len(u.folders) for u in units)
    parts = [f"sweep {clock(elapsed)}", f"{sum(u.ended for u in units)}/{runs} runs ended"]
    running = [u for u in units if not u.done]
    for unit in running[:SHOWN_UNITS]:
        if unit.step is None:
            parts.append(f"{unit.label}: starting")
        else:
            parts.append(f"{unit.label}: step {unit.step}/{unit.steps}, {clock(unit.left_s())} left")
    if len(running) > SHOWN_UNITS:
        parts.append(f"{len(running) - SHOWN_UNITS} more")
    parts.append(f"about {clock(left_in_all(units, workers))} left")
    return " · ".join(parts)


@dataclass
class SweepProgress:
    """Shows the units' progress on `console` every `tick` seconds, from `start` until `stop`."""
    units: List[Unit]
    console: SweepConsole
    workers: int = 1
    tick: float = 1.0
    started: float = field(default_factory=time.monotonic)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: Optional[threading.Thread] = None

    def start(self) -> "SweepProgress":
        self._thread = threading.Thread(target=self._run, name="sweep-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.console.close()

    def line(self) -> str:
        now = time.monotonic()
        for unit in self.units:
            if not unit.done:
                read(unit, now)
        return describe(self.units, now - self.started, self.workers)

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            try:
                self.console.status(self.line())
            except Exception:  # a folder read mid-write, a closed terminal: progress is never worth a failure
                continue


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
            label = f"ensemble {ensembles} ({len(group)} runs)"
        else:
            label = f"run #{indices[group[0]]}"
        units.append(Unit(label, known, max(steps[p] for p in group)))
    return units


@contextmanager
def watching(units: Optional[List[Unit]], workers: int = 1, pool: bool = False) -> Iterator[Optional[RelayServer]]:
    """While the body runs the sweep's jobs, show their progress (units None: nothing is shown). pool: worker
    processes run them, and yields the server their output goes through (`RelayServer.initializer`); else
    this process runs them, and its own output goes through the console for the time."""
    if units is None:
        yield None
        return
    console = SweepConsole()
    server = RelayServer(console) if pool else None
    saved = sys.stdout, sys.stderr
    if not pool:
        sys.stdout = LineRelay("out", console.line, fileno=_fileno(saved[0]))
        sys.stderr = LineRelay("err", console.line, fileno=_fileno(saved[1]))
    progress = SweepProgress(units, console, workers).start()
    try:
        yield server
    finally:
        progress.stop()
        if server is not None:
            server.close()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved


def _fileno(stream) -> Optional[int]:
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError):
        return None
