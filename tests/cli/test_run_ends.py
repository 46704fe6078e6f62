"""A run ends by saying where its folder and MLflow run are; `debug=quick` is quick and learns; job.log holds
the run's record; a repeated single run is skipped without leaving a folder behind."""
from __future__ import annotations

import json
import time

from mlflow.tracking import MlflowClient

QUICK_BOUND_S = 60  # ~10 s on an idle 2-core machine (README); generous for a busy one


def test_debug_quick_learns_logs_and_says_where_it_is(run_harness):
    started = time.perf_counter()
    proc = run_harness("debug=quick", check=True)
    seconds = time.perf_counter() - started
    assert seconds < QUICK_BOUND_S, f"debug=quick took {seconds:.1f} s"
    (run_dir,) = (run_harness.root / "outputs").glob("*/*")
    last = proc.stdout.strip().splitlines()[-2:]
    assert last[0] == f"  folder: {run_dir}", last
    store = f"sqlite:///{run_harness.root / 'mlruns.db'}"
    (run,) = MlflowClient(store).search_runs(MlflowClient(store).get_experiment_by_name("harness").experiment_id)
    assert last[1].startswith(f"  mlflow: run {run.info.run_id} in sqlite:///{run_harness.root / 'mlruns.db'}")
    assert f"http://127.0.0.1:5000/#/runs/{run.info.run_id}" in last[1]

    evals = [(d["step"], d["eval/accuracy"]) for d in map(json.loads, (run_dir / "metrics.jsonl").open())
             if "eval/accuracy" in d]
    assert [s for s, _ in evals] == [0, 4, 8, 12]
    assert evals[0][1] > 0 and evals[-1][1] > evals[0][1], f"eval accuracy does not rise: {evals}"

    log = (run_dir / "job.log").read_text()
    for line in ("run debug=quick: dppo, sorting, fp32, seed 0", "warm start:", "step 0/12: eval/accuracy=",
                 "step 12/12: train/reward=", "run debug=quick: FINISHED"):
        assert line in log, (line, log)
    assert "harness.run" not in proc.stdout + proc.stderr, "the run's record goes to job.log, not the screen"

    again = run_harness("debug=quick", check=True)
    assert "SKIPPED" in again.stdout
    assert list((run_harness.root / "outputs").glob("*/*")) == [run_dir], "a skipped single run left a folder"
    assert again.stdout.strip().splitlines()[-1].startswith(f"  mlflow: run {run.info.run_id} in ")
