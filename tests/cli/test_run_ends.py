"""A run ends by saying where its folder and MLflow run are; `debug=quick` is quick and learns; job.log holds
the run's record; a repeated single run is skipped without leaving a folder behind."""
from __future__ import annotations

import json
import resource

import pytest
from mlflow.tracking import MlflowClient

# CPU seconds of the whole command, its child processes included: ~6 s (~9 s with the one-off warm start) on an
# idle 2-core machine, where it takes ~10 s of wall time (README). A bound on work: a busy shared machine
# stretches wall time, not this.
QUICK_BOUND_CPU_S = 40


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_debug_quick_learns_logs_and_says_where_it_is(run_harness):
    before = _children_cpu_seconds()
    proc = run_harness("debug=quick", check=True)
    cpu_seconds = _children_cpu_seconds() - before
    assert cpu_seconds < QUICK_BOUND_CPU_S, f"debug=quick used {cpu_seconds:.1f} CPU seconds"
    (run_dir,) = (run_harness.root / "outputs").glob("*/*")
    last = proc.stdout.strip().splitlines()[-2:]
    assert last[0] == f"  folder: {run_dir}", last
    store = f"sqlite:///{run_harness.root / 'mlruns.db'}"
    (run,) = MlflowClient(store).search_runs(MlflowClient(store).get_experiment_by_name("harness").experiment_id)
    assert last[1].startswith(f"  mlflow: run {run.info.run_id} in sqlite:///{run_harness.root / 'mlruns.db'}")
    assert " s0 quick @ " in run.info.run_name, "a pipeline check named like a result"
    page = f"#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}?workflowType=machine_learning"
    assert last[1].endswith(f"http://127.0.0.1:5000/{page})"), "the UI drops the mode from a #/runs/<id> link"

    evals = [(d["step"], d["eval/accuracy"]) for d in map(json.loads, (run_dir / "metrics.jsonl").open())
             if "eval/accuracy" in d]
    assert [s for s, _ in evals] == [0, 4, 8, 12]
    assert evals[0][1] > 0 and evals[-1][1] > evals[0][1], f"eval accuracy does not rise: {evals}"
    (finished,) = [line for line in proc.stdout.splitlines() if line.startswith("run debug=quick: FINISHED")]
    mean = sum(a for _, a in evals[-3:]) / 3  # the reports' final accuracy
    assert (f"eval/accuracy (last evaluation) {evals[-1][1]:.4g}; mean of last 3 {mean:.4g} (the reports' final "
            "accuracy)") in finished, finished
    (logged,) = MlflowClient(store).get_metric_history(run.info.run_id, "eval/final_accuracy")
    assert (logged.step, logged.value) == (12, pytest.approx(mean)), "MLflow ranks runs by the reports' measure"

    log = (run_dir / "job.log").read_text()
    for line in ("run debug=quick: dppo, sorting, bf16, seed 0", "warm start:", "step 0/12: eval/accuracy=",
                 "step 12/12: train/reward=", "run debug=quick: FINISHED"):
        assert line in log, (line, log)
    assert "harness.run" not in proc.stdout + proc.stderr, "the run's record goes to job.log, not the screen"

    again = run_harness("debug=quick", check=True)
    assert "SKIPPED" in again.stdout
    assert list((run_harness.root / "outputs").glob("*/*")) == [run_dir], "a skipped single run left a folder"
    assert again.stdout.strip().splitlines()[-1].startswith(f"  mlflow: run {run.info.run_id} in ")
    assert again.stdout.strip().endswith(f"{page})"), "the skipped run's link names its twin's experiment"


def test_the_finished_line_says_which_accuracy_it_prints(tmp_path):
    from harness.launchers.results import finished_metrics

    rows = [{"step": 0, "eval/accuracy": 0.25}, {"step": 4, "eval/accuracy": 0.5}, {"step": 8, "eval/accuracy": 0.1},
            {"step": 8, "eval/accuracy": 0.75}, {"step": 12, "eval/accuracy": 1.0}]  # step 8 redone after a resume
    (tmp_path / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + '\n{"step": 13, "eval/acc')
    line = finished_metrics({"eval/accuracy": 1.0, "eval/best_accuracy": 1.0, "train/reward": 0.5}, tmp_path)
    assert line == "eval/accuracy (last evaluation) 1; mean of last 3 0.75 (the reports' final accuracy); best 1"
    assert finished_metrics({"eval/accuracy": 0.5}, tmp_path / "gone") == "eval/accuracy (last evaluation) 0.5"
