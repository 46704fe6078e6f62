"""One true `--plan`: its lines agree with each other (no "to train: 0 runs" above "2 ensembles of 4 runs"), and
it does no work it need not do (no torch where no GPU driver is: `trainer.device=auto` is then the CPU)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.trainers.ensemble.grouping import gpu_driver_here

TINY = ("debug=quick", "trainer.steps=2", "trainer.eval_every=2", "trainer.checkpoint_every=2")


def _lines(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\w[\w ]*): (.*)$", text, re.M)}


def test_the_ensembles_line_counts_only_the_runs_that_train(run_harness):
    run_harness("multirun", *TINY, "seed=0,1", check=True)
    every = _lines(run_harness("multirun", *TINY, "seed=0,1", "--plan", check=True).stdout)
    assert every["to train"] == "0 runs", every
    assert every["ensembles"] == "none (nothing to train)", every
    some = _lines(run_harness("multirun", *TINY, "seed=0,1,2", "--plan", check=True).stdout)
    assert some["to train"] == "1 run", some
    assert some["ensembles"].startswith("1 run, each alone"), some


@pytest.mark.skipif(gpu_driver_here(), reason="a GPU driver here: the plan asks torch how much memory it has")
def test_a_plan_on_a_machine_without_a_gpu_imports_no_torch(run_harness):
    proc = subprocess.run([sys.executable, "-X", "importtime", *run_harness.argv("multirun", *TINY, "seed=0,1",
                                                                                 "--plan")[1:]],
                          cwd=run_harness.root, env=run_harness.env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}
    assert "torch" not in imported
