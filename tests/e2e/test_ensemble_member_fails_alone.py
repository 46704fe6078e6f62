"""From the command line: a member of an ensemble whose sampling cannot draw (a temperature that rounds to 0
in float32) ends FAILED alone; its partner FINISHES with the numbers it logs alone."""
from __future__ import annotations

import json
from pathlib import Path

from mlflow_store import runs_of

# fp32: a bf16 rollout's batched kernels round by the ensemble's size (README, Ensembles)
QUICK = ("debug=quick", "trainer.steps=3", "trainer.eval_every=2", "precision=fp32")


def steps_of(run_dir: Path) -> dict:
    """{step: metrics without timings} of a run folder."""
    steps: dict = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        steps.setdefault(record["step"], {}).update(
            {k: v for k, v in record.items() if not k.startswith(("perf/", "warmstart/"))})
    return steps


def test_a_member_whose_sampling_fails_ends_alone(run_harness, tmp_path):
    together = run_harness("-m", "trainer.temperature=1.0,1e-300", *QUICK, "launcher=local_parallel",
                           "launcher.workers=1", f"hydra.sweep.dir={tmp_path / 'together'}",
                           "experiment_name=together")
    assert "1 ensemble of 2 runs" in together.stdout, together.stdout[-3000:]
    assert "2 runs: 1 finished, 1 failed, 0 killed" in together.stdout, together.stdout[-3000:]
    assert "sampling failed in the evaluation at step 0 (trainer.temperature=1e-300)" in together.stdout
    assert [(tmp_path / "together" / job / "status.txt").read_text().strip() for job in "01"] == ["FINISHED", "FAILED"]
    _, runs = runs_of(run_harness.root, "together")
    assert sorted(r.info.status for r in runs) == ["FAILED", "FINISHED"]
    run_harness("trainer.temperature=1.0", *QUICK, f"hydra.run.dir={tmp_path / 'alone'}", "experiment_name=alone",
                check=True)
    partner, alone = steps_of(tmp_path / "together" / "0"), steps_of(tmp_path / "alone")
    assert partner.keys() == alone.keys() == {0, 1, 2, 3}
    for step, metrics in partner.items():
        assert metrics.keys() == alone[step].keys()
        for key, value in metrics.items():
            assert abs(value - alone[step][key]) <= 1e-4, (step, key, value, alone[step][key])
