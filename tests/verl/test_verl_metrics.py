"""verl's metric records -> harness namespaces, and following verl's file logger; the harness loss's own
metrics along verl's real path (ppo_loss, its `actor/` prefix, its file logger) into the run's MLflow store."""
from __future__ import annotations

import json

import pytest
from mlflow import MlflowClient

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking import open_tracker
from harness.trainers.verl.metrics import MetricsFollower, translate
from harness.trainers.verl.trainer import VerlTrainer


def test_translate_namespaces():
    out = translate({
        "critic/score/mean": 0.25, "critic/rewards/mean": 0.25, "response_length/mean": 812.0,
        "actor/entropy": 0.4, "actor/pg_loss": -0.01, "actor/grad_norm": 0.3,
        "objective/masked_frac": 0.02, "perf/throughput": 1234.0, "timing_s/gen": 40.0,
        "val-core/aime2024/acc/mean@16": 0.30, "val-aux/aime2024/acc/mean@4": 0.1,
        "val-core/aime2024/acc/best@16/mean": 0.6, "val-core/aime2025/acc/mean@16": 0.20,
        "val-aux/aime2025/answered/mean@16": 0.9, "training/global_step": 3, "note": "text",
    })
    assert out["train/accuracy"] == 0.25 and out["train/reward"] == 0.25 and out["train/loss"] == -0.01
    assert out["train/response_length"] == 812.0 and out["train/entropy"] == 0.4
    assert out["objective/masked_frac"] == 0.02 and out["perf/throughput"] == 1234.0
    assert out["perf/time_s/gen"] == 40.0
    assert out["eval/aime2024/accuracy"] == 0.30  # the largest k wins over mean@4
    assert out["eval/aime2024/pass_at_16"] == 0.6
    assert abs(out["eval/accuracy"] - 0.25) < 1e-12
    assert out["verl/val-aux/aime2025/answered/mean_at_16"] == 0.9
    assert out["verl/training/global_step"] == 3.0
    assert "note" not in str(out)


def test_the_actor_prefix_verl_puts_on_the_loss_metrics_is_removed():
    out = translate({"actor/objective/masked_frac": 0.1, "actor/objective/abs_pi_minus_nu": 0.02,
                     "actor/pg_loss": 0.3, "actor/entropy_loss": 0.7, "actor/ppo_kl": 0.0,
                     "actor/perf/max_memory_allocated_gb": 1.5})
    assert out == {"objective/masked_frac": 0.1, "objective/abs_pi_minus_nu": 0.02, "train/loss": 0.3,
                   "train/entropy": 0.7, "verl/actor/ppo_kl": 0.0, "perf/actor/max_memory_allocated_gb": 1.5}
    # the old-log-prob forward's entropy (anchor=recompute) wins over the update's, in either order
    assert translate({"actor/entropy_loss": 0.7, "actor/entropy": 0.5})["train/entropy"] == 0.5
    assert translate({"actor/entropy": 0.5, "actor/entropy_loss": 0.7})["train/entropy"] == 0.5


@pytest.mark.verl
@pytest.mark.parametrize("algo", ["dppo", "minirl"])
def test_loss_metrics_reach_mlflow_as_objective_through_verls_own_path(algo, run_verl_side, tmp_path):
    log = tmp_path / "verl_metrics.jsonl"
    verl = run_verl_side("metrics_path.py", f"harness_{algo}", str(log))
    loss_keys = [k for k in verl["loss_keys"] if k.startswith("objective/")]
    assert "objective/masked_frac" in loss_keys and "objective/abs_pi_minus_nu" in loss_keys
    assert set(verl["logged_keys"]) >= {"actor/" + k for k in loss_keys}  # verl's prefix, as in a real run

    cfg = validate(compose([f"output_root={tmp_path}", "trainer=verl", f"algo={algo}"]))
    tracker = open_tracker(cfg, tmp_path / "run", run_name="metrics")
    trainer = VerlTrainer(cfg, tmp_path / "run", tracker)
    trainer._forward(MetricsFollower(log))  # what train() does with each new line of verl's file logger
    tracker.finish("FINISHED")
    logged = MlflowClient(f"sqlite:///{tmp_path / 'mlruns.db'}").get_run(tracker.run_id).data.metrics
    assert set(loss_keys) <= set(logged), sorted(logged)
    assert "train/loss" in logged and not any(k.startswith("verl/actor/objective") for k in logged)
    assert logged["perf/actor/max_memory_allocated_gb"] == 1.5  # what gpu_smoke.sh compares with the preflight
    assert 0 < logged["objective/abs_pi_minus_nu"] < 1


def test_follower_reads_complete_lines_and_restarts_after_truncation(tmp_path):
    path = tmp_path / "metrics.jsonl"
    follower = MetricsFollower(path)
    assert list(follower.poll()) == []
    with path.open("w") as fh:
        fh.write(json.dumps({"step": 1, "data": {"a": 1}}) + "\n" + '{"step": 2, "da')
    assert list(follower.poll()) == [(1, {"a": 1})]
    with path.open("a") as fh:
        fh.write('ta": {"a": 2}}\nnot json\n')
    assert list(follower.poll()) == [(2, {"a": 2})]
    path.write_text(json.dumps({"step": 7, "data": {"a": 7}}) + "\n")  # verl restarted: file truncated
    assert list(follower.poll()) == [(7, {"a": 7})]
