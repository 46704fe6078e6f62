"""`report` on a single tracked run's folder tells the facts (issue #25): the run is the one MLflow holds
(not "not tracked"), Hydra's `.hydra/` is no job, and a corrupt `metrics.jsonl` is named with its line."""
from __future__ import annotations

import json


def test_report_on_a_single_tracked_run(run_harness, tmp_path):
    run = tmp_path / "run"
    run_harness("debug=quick", "trainer.steps=2", "trainer.checkpoint_every=1", f"hydra.run.dir={run}",
                "hydra.output_subdir=.hydra", check=True)
    assert (run / ".hydra").is_dir()
    run_id = json.loads((run / "checkpoints" / "last.json").read_text())["run_id"]
    proc = run_harness("report", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    overview = (run / "reports" / "overview" / "summary.md").read_text()
    assert "1 runs: 1 finished" in overview and run_id[:8] in overview, overview
    assert "not tracked" not in overview and ".hydra" not in overview and "MLflow" in overview, overview


def test_a_corrupt_metrics_file_is_named_with_its_line(run_harness, tmp_path):
    sweep = tmp_path / "sweep"
    job = sweep / "0"
    job.mkdir(parents=True)
    (job / "config.yaml").write_text("tracking:\n  backend: none\n")
    (job / "status.txt").write_text("FINISHED\n")
    (job / "metrics.jsonl").write_text('{"step": 0, "eval/accuracy": 0.5}\n{"step": "x1", "eval/accuracy": 0.6}\n'
                                       '{"step": 2, "eval/accuracy": 0.7}\n')
    proc = run_harness("report", str(sweep))
    assert proc.returncode == 2, proc.stderr[-3000:]
    line, = proc.stderr.strip().splitlines()
    assert f"{job / 'metrics.jsonl'} line 2" in line and "'x1' is not an integer" in line, line
