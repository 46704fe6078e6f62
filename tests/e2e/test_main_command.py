"""The README's main command, exactly as written, on the embedded default: 48 FINISHED runs in MLflow (two
objectives × three δ × eight seeds, trained as ensembles) with the right objective and δ, per-step metrics,
learning (eval accuracy well above the warm start), and a sensitivity page with a verdict per objective (or, where
undecided, the seeds that would decide it)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mlflow_store import runs_of

pytestmark = pytest.mark.slow


def readme_main_command() -> list:
    """The overrides of the README's first command (`... python -m harness multirun <overrides>`)."""
    import shlex

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    words = shlex.split(block.split("-m harness", 1)[1])
    assert words[0] == "multirun", block
    return words


def test_main_command_runs_48_learning_runs_and_decides(run_harness):
    proc = run_harness(*readme_main_command(), check=True, timeout=1800)
    assert "48 runs: 48 finished" in proc.stdout
    assert "launching 48 jobs (launcher=local): 2 ensembles of 24 runs on 2 worker processes" in proc.stdout
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 48 and all(r.info.status == "FINISHED" for r in runs)
    _, parents = runs_of(run_harness.root, role="parent")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert sorted((r.data.params["algo.name"], float(r.data.params["algo.delta"]), int(r.data.params["seed"]))
                  for r in runs) == sorted((a, d, s) for a in ("dppo", "drpo") for d in (0.1, 0.15, 0.2) for s in range(8))
    for run in runs:
        history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "eval/accuracy"))
        assert history[0][0] == 0 and history[-1][0] == 60
        start, end = history[0][1], history[-1][1]
        assert end >= start + 0.15, (run.data.params["algo.name"], run.data.params["algo.delta"], start, end)
        assert len(client.get_metric_history(run.info.run_id, "train/reward")) == 60
    summary = next((run_harness.root / "multirun").glob("*/*/reports/sensitivity/summary.md")).read_text()
    verdicts = [line for line in summary.splitlines() if line.startswith("**dppo:") or line.startswith("**drpo:")]
    assert len(verdicts) == 2, verdicts
    # A test of the harness, not of the training outcome: a verdict may be undecided, and then the page says how
    # many fresh seeds would decide it (more than the 8 it had) and the command that runs them.
    # the page's account of what δ did is the runs' own: DPPO's masked share at δ = 0.1, mean over training
    masked = [m.value for r in runs if r.data.params["algo.name"] == "dppo" and float(r.data.params["algo.delta"]) == 0.1
              for m in client.get_metric_history(r.info.run_id, "objective/masked_frac") if m.step > 0]
    assert f"| dppo | δ=0.1 | 8 | {np.mean(masked):.2%} |" in summary, summary
    if any("undecided" in line for line in verdicts):
        wanted = re.search(r"Undecided: run (\d+) fresh seeds", summary)
        assert wanted and int(wanted.group(1)) > 8 and "python -m harness multirun" in summary, summary
