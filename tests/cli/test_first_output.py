"""Something on the screen within about a second of every command, before the heavy imports (torch, mlflow,
hydra): measured in a subprocess on a pseudo-terminal, as a person would see it, with the interpreter's import
log (`python -X importtime`) saying what was imported before the first line."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from cpu_time import process_cpu_seconds

# CPU seconds the command has used when its first line shows (0.0-0.2 s; ~0.3 s of wall time on an idle
# machine): a bound on work, which a busy shared machine does not stretch the way it stretches wall time.
FIRST_LINE_CPU_S = 1.0
HEAVY = ("torch", "mlflow", "hydra")


def on_terminal(run_harness, *args: str, lines: int = 1, importtime: bool = True):
    """(CPU seconds the command had used at its first line, heavy modules imported before it, the first `lines`
    lines) of `python -m harness <args>` with its stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    flags = ["-X", "importtime"] if importtime else []
    proc = subprocess.Popen([sys.executable, *flags, "-m", "harness", *args], cwd=run_harness.root,
                            env=run_harness.env(), stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    heavy, shown, buffer, first = [], [], b"", None
    try:
        while len(shown) < lines:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the command exited
                break
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace").rstrip("\r")
                if line.startswith("import time:"):
                    if not shown and line.rsplit("|", 1)[-1].strip().split(".")[0] in HEAVY:
                        heavy.append(line.rsplit("|", 1)[-1].strip())
                    continue
                if first is None:
                    first = process_cpu_seconds(proc.pid)
                shown.append(line)
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    assert shown, f"harness {' '.join(args)} printed nothing"
    return first, heavy, shown


@pytest.mark.parametrize("args", [("debug=quick",), ("multirun", "algo=dppo,drpo", "debug=quick"), ("algos",),
                                  ("status",), ("report", "multirun/2026-01-01/00-00-00"), ("sweep",),
                                  ("sweep", "delta_sensitivity"), ("help",)])
def test_the_first_line_comes_at_once_and_before_the_heavy_imports(run_harness, args):
    cpu_seconds, heavy, shown = on_terminal(run_harness, *args)
    line = shown[0]
    assert not heavy, f"{heavy[:3]} imported before the first line {line!r}"
    assert cpu_seconds < FIRST_LINE_CPU_S, f"first line after {cpu_seconds:.2f} CPU seconds: {line!r}"


def test_a_run_says_what_it_prepares_before_it_starts(run_harness):
    _, _, shown = on_terminal(run_harness, "debug=quick", "trainer.steps=1", "cache_dir=x", lines=2,
                              importtime=False)
    assert shown[:2] == ["harness: composing the run…",
                     "harness: starting run debug=quick,trainer.steps=1 (loading torch, mlflow)…"], shown


def test_notices_stay_off_a_pipe(run_harness):
    """Read by a program (stderr not a terminal), bad input is still exactly one line."""
    proc = run_harness("trainer.lr=-1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
