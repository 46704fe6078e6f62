"""A short real training run, end to end through the CLI, tracked in a real MLflow SQLite store."""
from __future__ import annotations

import json
import math

from mlflow_store import runs_of


def test_short_run_trains_and_is_tracked(run_harness):
    proc = run_harness("algo=drpo", "delta=0.2", "precision=bf16", "debug=quick", check=True)
    assert "FINISHED" in proc.stdout
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.params["algo.name"] == "drpo"
    assert float(run.data.params["algo.delta"]) == 0.2
    assert run.data.params["precision.name"] == "bf16"
    assert run.data.tags["harness.config_hash"] and run.data.tags["algo"] == "drpo"
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/reward")]
    assert steps == list(range(1, 13))  # debug=quick: 12 steps
    for key in ("train/entropy", "train/mismatch", "train/grad_norm", "objective/masked_frac",
                "perf/tokens_per_s", "eval/accuracy"):
        assert key in run.data.metrics, key
    # bf16 rollouts against an fp32 trainer: the mismatch is real, small and non-zero
    mismatch = [m.value for m in client.get_metric_history(run.info.run_id, "train/mismatch")]
    assert all(0 < v < 0.2 for v in mismatch), mismatch
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert "config.yaml" in artifacts
    run_dir = next((run_harness.root / "outputs").glob("*/*"))
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [d["step"] for d in lines if "train/reward" in d] == list(range(1, 13))
    assert all(math.isfinite(d["train/loss"]) for d in lines if "train/loss" in d)
    assert (run_dir / "checkpoints" / "last.pt").is_file()


def test_cfg_job_prints_the_spec_without_running(run_harness):
    proc = run_harness("--cfg", "job", "algo=spo", "delta=3", check=True)
    assert "name: spo" in proc.stdout and "delta: 3" in proc.stdout
    assert not (run_harness.root / "mlruns.db").exists()
    assert not (run_harness.root / "outputs").exists()


def test_algos_prints_the_library(run_harness):
    out = run_harness("algos", check=True).stdout
    for name in ("pg_is", "cispo", "grpo_cliphigher", "dppo", "drpo", "bandpo", "tv_reg"):
        assert name in out
