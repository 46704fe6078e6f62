"""A run killed (SIGKILL) after step k resumes from its checkpoint, continues the same MLflow run
without duplicated steps, and ends with exactly the metrics of an uninterrupted run."""
from __future__ import annotations

import json
from pathlib import Path

from mlflow_store import runs_of

ARGS = ("algo=dppo", "precision=bf16", "debug=quick", "trainer.steps=7", "trainer.checkpoint_every=2",
        "trainer.mini_batches=2")


def last_metrics(run_dir: Path) -> dict:
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    final = [d for d in lines if d["step"] == 7]
    merged = {k: v for d in final for k, v in d.items()}
    return {k: v for k, v in merged.items() if not k.startswith("perf/")}


def test_killed_run_resumes_exactly(run_harness):
    run_harness(*ARGS, "experiment_name=reference", check=True)
    killed = run_harness(*ARGS, "experiment_name=resumed", env={"HARNESS_FAULT_KILL_AT_STEP": "5"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    run_dirs = sorted((run_harness.root / "outputs").glob("*/*"))
    reference_dir, killed_dir = run_dirs
    assert json.loads((killed_dir / "checkpoints" / "last.json").read_text())["step"] == 4
    run_harness(*ARGS, "experiment_name=resumed", f"trainer.resume={killed_dir}", check=True)
    resumed_dir = sorted((run_harness.root / "outputs").glob("*/*"))[-1]

    computed = [json.loads(line)["step"] for line in (resumed_dir / "metrics.jsonl").read_text().splitlines()]
    assert sorted(set(computed)) == [5, 6, 7], "the resumed job must start after its checkpoint"
    reference, resumed = last_metrics(reference_dir), last_metrics(resumed_dir)
    assert reference.keys() == resumed.keys() and len(reference) > 10
    assert reference == resumed

    client, runs = runs_of(run_harness.root, "resumed")
    assert len(runs) == 1, "the resumed job must continue the killed MLflow run"
    assert runs[0].info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, "train/reward")]
    assert sorted(steps) == [1, 2, 3, 4, 5, 6, 7]
