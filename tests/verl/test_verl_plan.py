"""Spec -> verl, pure python: the overrides, the dry-run command and the batch script (golden files in
tests/verl/golden; HARNESS_UPDATE_GOLDEN=1 rewrites them), and the mapping rules one by one."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.objective import NO_CAP, anchor_overrides, objective_spec
from harness.trainers.verl.overrides import RunPaths, value, verl_overrides
from harness.trainers.verl.plan import build_plan

GOLDEN = Path(__file__).resolve().parent / "golden"
FIXED = ["trainer.verl.python=/opt/verl-env/bin/python"]  # independent of $HARNESS_VERL_PYTHON
ROOT, RUN = Path("/HARNESS"), Path("/RUN/outputs/run0")


def plan_for(*overrides: str):
    return build_plan(validate(compose([*overrides, *FIXED])), RUN, root=ROOT)


def overrides_for(*overrides: str) -> dict:
    cfg = validate(compose([*overrides, *FIXED]))
    items = verl_overrides(cfg, RunPaths(RUN), root=ROOT)
    return dict(item.split("=", 1) for item in items)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("HARNESS_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.is_file(), f"missing golden file {path} (HARNESS_UPDATE_GOLDEN=1 writes it)"
    assert text == path.read_text()


@pytest.mark.parametrize("name,overrides", [
    ("dry_run_default.txt", ["trainer=verl"]),
    ("dry_run_drpo_fp8_e2e_slurm.txt", ["experiment=drpo_qwen3_30b_a3b_fp8_e2e", "launcher=slurm",
                                        "launcher.profile=gpu_node8", "launcher.hub_access=true", "launcher.nodes=2"]),
    ("dry_run_bandpo_recompute.txt", ["experiment=bandpo_qwen2_5_3b", "trainer.verl.local_gpus=4"]),
])
def test_dry_run_command_and_batch_script_are_golden(name, overrides):
    check_golden(name, plan_for(*overrides).describe())


def test_rollout_anchor_is_verls_bypass_mode():
    o = overrides_for("trainer=verl", "algo=dppo")
    assert o["algorithm.rollout_correction.bypass_mode"] == "true"
    assert o["algorithm.rollout_correction.rollout_is"] == "null"
    assert o["actor_rollout_ref.rollout.calculate_log_probs"] == "true"
    assert o["actor_rollout_ref.actor.policy_loss.loss_mode"] == "harness_dppo"


def test_the_v1_trainer_is_pinned_and_entropy_is_computed_in_the_update_when_bypass_mode_skips_it():
    rollout, recompute = overrides_for("trainer=verl", "algo=dppo"), overrides_for("trainer=verl", "algo=minirl_tis")
    assert rollout["trainer.use_v1"] == "true" and recompute["trainer.use_v1"] == "true"
    assert rollout["actor_rollout_ref.actor.calculate_entropy"] == "true"
    assert recompute["actor_rollout_ref.actor.calculate_entropy"] == "false"  # the old-log-prob forward has it


@pytest.mark.parametrize("experiment,tokens", [("dppo_dense_qwen3_8b", 16384), ("dppo_moe_qwen3_30b", 16384),
                                               ("drpo_qwen3_30b_a3b", 10240)])
def test_the_large_presets_pack_micro_batches_to_a_token_budget(experiment, tokens):
    o = overrides_for(f"experiment={experiment}", "delta=0.2")
    assert o["actor_rollout_ref.actor.use_dynamic_bsz"] == "true"
    assert o["actor_rollout_ref.rollout.log_prob_use_dynamic_bsz"] == "true"
    assert o["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"] == str(tokens)
    assert o["actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"] == str(tokens)
    assert o["actor_rollout_ref.rollout.max_model_len"] == str(tokens)  # one full sequence per micro-batch
    assert overrides_for("trainer=verl")["actor_rollout_ref.actor.use_dynamic_bsz"] == "false"


def test_recompute_anchor_is_decoupled_mode_with_token_is_weights():
    o = overrides_for("trainer=verl", "algo=minirl_tis")
    assert o["algorithm.rollout_correction.bypass_mode"] == "false"
    assert o["algorithm.rollout_correction.rollout_is"] == "token"
    assert o["algorithm.rollout_correction.rollout_is_threshold"] == "3.0"
    uncapped = dict(anchor_overrides({"anchor": "recompute", "is_cap": None}))
    assert uncapped["algorithm.rollout_correction.rollout_is_threshold"] == NO_CAP > 2.0 ** 28.9  # > e^20


def test_batch_sizes_lengths_and_optimizer():
    o = overrides_for("trainer=verl", "trainer.prompts_per_step=64", "trainer.mini_batches=2",
                      "trainer.group_size=16", "trainer.lr=2e-6", "trainer.max_new_tokens=8192",
                      "trainer.temperature=0.9", "trainer.verl.eval_samples=32", "seed=3")
    assert (o["data.train_batch_size"], o["actor_rollout_ref.actor.ppo_mini_batch_size"]) == ("64", "32")
    assert o["actor_rollout_ref.rollout.n"] == "16" and o["actor_rollout_ref.actor.optim.lr"] == "2e-06"
    assert o["data.max_response_length"] == "8192" and o["data.max_prompt_length"] == "2048"
    assert o["actor_rollout_ref.rollout.temperature"] == "0.9"
    assert o["actor_rollout_ref.rollout.val_kwargs.temperature"] == "0.9"
    assert o["actor_rollout_ref.rollout.val_kwargs.n"] == "32" and o["data.seed"] == "3"
    greedy = overrides_for("trainer=verl", "trainer.verl.eval_temperature=0")
    assert greedy["actor_rollout_ref.rollout.val_kwargs.do_sample"] == "false"


@pytest.mark.parametrize("precision,rollout_dtype,train_dtype,quant", [
    ("bf16", "bfloat16", "bf16", "null"), ("fp16", "float16", "fp16", "null"), ("fp8_rollout", "bfloat16", "bf16", "fp8")])
def test_precision_maps_to_rollout_dtype_and_fsdp_mixed_precision(precision, rollout_dtype, train_dtype, quant):
    o = overrides_for("trainer=verl", f"precision={precision}")
    assert o["actor_rollout_ref.rollout.dtype"] == rollout_dtype
    assert o["+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype"] == train_dtype
    assert o["actor_rollout_ref.rollout.quantization"] == quant


def test_fp8_e2e_router_replay_and_lora_on_megatron():
    o = overrides_for("experiment=dppo_moe_qwen3_30b", "precision=fp8_e2e", "trainer.verl.router_replay=R3",
                      "trainer.verl.lora_rank=32")
    assert o["+actor_rollout_ref.actor.megatron.override_transformer_config.fp8"] == "e4m3"
    assert o["actor_rollout_ref.rollout.quantization"] == "fp8"
    assert o["actor_rollout_ref.actor.megatron.router_replay.mode"] == "R3"
    assert o["actor_rollout_ref.rollout.enable_rollout_routing_replay"] == "true"
    assert o["actor_rollout_ref.model.lora.rank"] == "32"
    assert o["actor_rollout_ref.actor.megatron.expert_model_parallel_size"] == "8"


@pytest.mark.parametrize("advantage,estimator,norm", [("grpo", "grpo", "true"), ("drgrpo", "grpo", "false"),
                                                      ("rloo", "rloo", "true")])
def test_advantage_estimators(advantage, estimator, norm):
    o = overrides_for("trainer=verl", f"trainer.advantage={advantage}")
    assert (o["algorithm.adv_estimator"], o["algorithm.norm_adv_by_std_in_grpo"]) == (estimator, norm)


def test_norm_aggregation_uses_the_max_response_length_as_constant():
    o = overrides_for("trainer=verl", "trainer.loss_agg=seq-mean-token-sum-norm", "trainer.max_new_tokens=8192")
    assert o["actor_rollout_ref.actor.loss_scale_factor"] == "8192"
    assert overrides_for("trainer=verl")["actor_rollout_ref.actor.loss_scale_factor"] == "null"


def test_objective_spec_carries_every_parameter():
    cfg = validate(compose(["trainer=verl", "algo=bandpo", "delta=0.1", "algo.band=tv", *FIXED]))
    spec = objective_spec(dict(cfg.algo))
    assert spec["loss_mode"] == "harness_bandpo" and spec["params"]["delta"] == 0.1
    assert spec["params"]["band"] == "tv" and spec["anchor"] == "rollout"
    assert plan_for("trainer=verl", "algo=bandpo", "delta=0.1", "algo.band=tv").objective == spec


def test_override_values_are_quoted_for_hydra():
    assert value(True) == "true" and value(None) == "null" and value(1e-6) == "1e-06"
    assert value(["/a/b.parquet", "/c.parquet"]) == "[/a/b.parquet,/c.parquet]"
    assert value("has space") == "'has space'" and value("it's") == "'it\\'s'"
    assert value("a,b") == "'a,b'"


def test_slurm_shape_comes_from_the_launcher_profile():
    o = overrides_for("trainer=verl", "launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true", "launcher.gpus_per_node=4")
    assert (o["trainer.nnodes"], o["trainer.n_gpus_per_node"]) == ("1", "4")
    local = overrides_for("trainer=verl", "trainer.verl.local_gpus=2")
    assert (local["trainer.nnodes"], local["trainer.n_gpus_per_node"]) == ("1", "2")


def test_verl_keeps_the_newest_checkpoints_only():
    key = "trainer.max_actor_ckpt_to_keep"
    assert overrides_for("trainer=verl")[key] == "2"
    assert overrides_for("trainer=verl", "trainer.verl.keep_checkpoints=5")[key] == "5"
    assert overrides_for("trainer=verl", "trainer.verl.keep_checkpoints=null")[key] == "null"  # every one
    assert not any("critic_ckpt" in k for k in overrides_for("trainer=verl"))  # no critic in these objectives
