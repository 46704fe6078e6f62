"""How many project files a parameter passes through from argv to the loss (issue 37; counted by
benchmarks/trace_pipeline.py, whose docstring says how): a single run's chain stays at or under its ceiling, so
a new pass-through layer is a decision, not an accident. 38 files before the named sweeps ran in-process and
the command line was read in one place (hydra_plugins/harness_launcher/arguments.py); 30 once the functions
that need one key were handed that key instead of the whole config, the trainer registry answered with the
backend's class instead of building it, and the one-run trainer joined the loop it runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CEILING = 30  # any string holding `delta=0.37` counts, labels made of it too (a run's name, its description)
PARAMETER_CEILING = 26  # only the override itself, the number or a config holding it
STACK_CEILING = 8  # cli, single_run, job, loop, trainer, batched_loss, grouped, base


@pytest.mark.slow  # a real run under a profiler: about a minute here
def test_a_single_runs_parameter_passes_few_files(tmp_path, warm_cache):
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'm.db'}"}
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "trace_pipeline.py"), "delta=0.37", "algo=dppo",
                           "debug=quick", "trainer.steps=1", f"cache_dir={warm_cache}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    traced = json.loads(proc.stdout[proc.stdout.rindex('{\n "files"'):])
    assert traced["reached_loss"], proc.stderr[-3000:]
    assert traced["order"][0] == "harness/cli.py" and traced["order"][-1] != "harness/cli.py"
    assert traced["files"] <= CEILING, "\n".join(traced["order"])
    assert traced["parameter_files"] <= PARAMETER_CEILING, "\n".join(traced["parameter_order"])
    assert traced["stack_files"] <= STACK_CEILING, "\n".join(traced["stack"])
