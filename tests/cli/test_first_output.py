"""Something on the screen within about a second of every command, before the heavy imports (torch, mlflow):
measured in a subprocess as a person would see it, the first line against the interpreter's import log."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

FIRST_LINE_S = 3.0  # ~1 s on an idle machine; slack for a busy 2-core one
HEAVY = ("torch", "mlflow", "hydra")


def first_line(run_harness, *args: str):
    """(seconds to the first line the command prints, heavy modules imported before it), with
    `python -X importtime` saying what was imported when."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "harness", *args], cwd=run_harness.root,
                            env=run_harness.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started, heavy = time.perf_counter(), []
    try:
        for line in proc.stdout:
            if line.startswith("import time:"):
                module = line.rsplit("|", 1)[-1].strip()
                if module.split(".")[0] in HEAVY:
                    heavy.append(module)
                continue
            return time.perf_counter() - started, heavy, line
        raise AssertionError(f"harness {' '.join(args)} printed nothing")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("args", [("debug=quick",), ("multirun", "algo=dppo,drpo", "debug=quick"), ("algos",),
                                  ("status",), ("report", "multirun/2026-01-01/00-00-00"), ("sweep",),
                                  ("sweep", "delta_sensitivity"), ("help",)])
def test_the_first_line_comes_at_once_and_before_the_heavy_imports(run_harness, args):
    seconds, heavy, line = first_line(run_harness, *args)
    assert not heavy, f"{heavy[:3]} imported before the first line {line!r}"
    assert seconds < FIRST_LINE_S, f"first line after {seconds:.2f} s: {line!r}"


def test_a_run_says_what_it_prepares_before_it_starts(run_harness):
    proc = run_harness("debug=quick", "trainer.steps=1", check=True)
    notices = [line for line in proc.stderr.splitlines() if line.startswith("harness: ")]
    assert notices[:2] == ["harness: composing the run…", "harness: starting run debug=quick,trainer.steps=1 "
                                                          "(loading torch, mlflow)…"], proc.stderr[:1000]
