"""The generated batch script, run for real on CPU: data preparation, a Ray head started by the script,
the wait for the cluster, and verl's entry point replaced by a stand-in (verl_side/fake_main_ppo.py) that
composes the very arguments it receives against verl's config, uses the loss plugin through
model.external_lib, and writes verl-style metrics. VerlTrainer forwards them to the tracker.
The GPU run (real verl training) is the manual check in launchers/verl/README.md."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.trainer import VerlTrainer

pytestmark = [pytest.mark.verl, pytest.mark.slow]
VERL_SIDE = Path(__file__).resolve().parent / "verl_side"


class Tracker:
    run_id = "e2e"

    def __init__(self):
        self.metrics = []

    def log_metrics(self, metrics, step):
        self.metrics.append((step, metrics))

    def log_artifact(self, path, artifact_path=None):
        pass


def python_wrapper(tmp_path: Path, verl_python: Path) -> Path:
    """$VERL_PYTHON for the script: verl's env, with main_ppo swapped for the stand-in and data
    preparation run by this environment's python (pandas is not in the minimal verl env)."""
    wrapper = tmp_path / "verl-python"
    wrapper.write_text(f"""#!/usr/bin/env bash
if [ "$1 $2" = "-m verl.trainer.main_ppo" ]; then shift 2
  PYTHONPATH="{VERL_SIDE}:$PYTHONPATH" exec {verl_python} {VERL_SIDE / 'fake_main_ppo.py'} "$@"; fi
if [ "$1 $2" = "-m harness.trainers.verl.prepare_data" ]; then exec {sys.executable} "$@"; fi
exec {verl_python} "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def test_batch_script_runs_ray_and_the_entry_point(tmp_path, verl_python, monkeypatch):
    from harness.trainers.verl import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "POLL_S", 0.5)
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"problem": f"{i}+1?", "answer": str(i + 1)}) + "\n" for i in range(16)))
    cfg = validate(compose([
        "trainer=verl", "algo=drpo", "trainer.prompts_per_step=4", "trainer.mini_batches=2",
        "trainer.verl.local_gpus=2", "trainer.verl.micro_batch_per_gpu=2", f"trainer.verl.python={python_wrapper(tmp_path, verl_python)}",
        f"trainer.verl.data.train=[{data}]", f"trainer.verl.data.eval={{aime2024: [{data}]}}",
        f"trainer.verl.ray_port={20000 + os.getpid() % 20000}",
    ]))
    tracker = Tracker()
    final = VerlTrainer(cfg, tmp_path / "run", tracker).train()
    log = (tmp_path / "run" / "verl" / "launch.log").read_text()
    assert "fake main_ppo: ppo_trainer" in log and "2 GPUs in Ray" in log, log[-3000:]
    assert [s for s, _ in tracker.metrics] == [0, 1]
    assert tracker.metrics[1][1]["train/accuracy"] == 0.5 and "objective/masked_frac" in tracker.metrics[1][1]
    assert tracker.metrics[1][1]["perf/cluster_gpus"] == 2.0
    assert final["eval/accuracy"] == 0.25
    assert len(pd.read_parquet(tmp_path / "run" / "verl" / "data" / "train.parquet")) == 16
    assert json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text()) == {"step": 1, "run_id": "e2e"}
