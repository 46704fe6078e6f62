"""The embedded default is a regime where the trust region acts and the rollout has real mismatch (issue 35):
`multirun algo=dppo delta=0.1 seed=0,1` masks at least 2% of tokens over training and its bf16 rollout engine
differs from the fp32 trainer by at least 1e-4 per token (an fp32 rollout gave ~3e-8: float noise)."""
from __future__ import annotations

import numpy as np
import pytest

from mlflow_store import runs_of

pytestmark = pytest.mark.slow


def test_default_dppo_at_delta_0_1_masks_tokens_and_sees_mismatch(run_harness):
    run_harness("multirun", "algo=dppo", "delta=0.1", "seed=0,1", check=True, timeout=900)
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 2 and all(r.info.status == "FINISHED" for r in runs)

    def mean_over_training(key):
        values = [m.value for r in runs for m in client.get_metric_history(r.info.run_id, key) if m.step > 0]
        assert len(values) == 2 * 60, key
        return float(np.mean(values))

    assert mean_over_training("objective/masked_frac") >= 0.02
    assert mean_over_training("train/mismatch") >= 1e-4
    assert {r.data.params["precision.name"] for r in runs} == {"bf16"}
