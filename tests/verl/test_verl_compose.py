"""The generated main_ppo overrides compose against verl's own trainer config (in the verl environment):
Hydra accepts every key and value, verl's validate_config passes, verl's typed configs build, the loss
and reward named in the overrides load, and the anchor/precision/MoE/LoRA settings land where verl reads them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.objective import NO_CAP
from harness.trainers.verl.overrides import config_name
from harness.trainers.verl.plan import build_plan
from harness.trainers.verl.ray_resources import TQ_STORAGE_UNITS

pytestmark = pytest.mark.verl
CONF = Path(__file__).resolve().parents[2] / "conf"

CASES = {
    "default": ["trainer=verl"],
    "minirl_norm": ["trainer=verl", "algo=minirl", "trainer.loss_agg=seq-mean-token-sum-norm", "trainer.advantage=drgrpo"],
    "bandpo_fp16_cap": ["trainer=verl", "algo=bandpo", "anchor=recompute", "algo.is_cap=3", "precision=fp16",
                        "trainer.advantage=rloo"],
    "fp8_rollout_lora": ["trainer=verl", "precision=fp8_rollout", "trainer.verl.lora_rank=16"],
    "moe_r3": ["experiment=dppo_moe_qwen3_30b", "trainer.verl.router_replay=R3", "delta=0.2"],
    "moe_r2_recompute": ["experiment=dppo_moe_qwen3_30b", "trainer.verl.router_replay=R2", "anchor=recompute"],
    "moe_lora": ["experiment=dppo_moe_qwen3_30b", "trainer.verl.lora_rank=32"],
    "extra_env": ["trainer=verl", "trainer.verl.extra=['actor_rollout_ref.rollout.enforce_eager=true']",
                  "+trainer.verl.env.HF_HOME=/shared/hf"],
    **{f"experiment_{p.stem}": [f"experiment={p.stem}"] for p in sorted((CONF / "experiment").glob("*.yaml"))
       if "override /trainer: verl" in p.read_text()},  # the paper presets (toy_* run the built-in trainer)
}


@pytest.fixture(scope="module")
def composed(run_verl_side, tmp_path_factory):
    folder = tmp_path_factory.mktemp("compose")
    cases = {}
    for label, overrides in CASES.items():
        cfg = validate(compose(overrides))
        plan = build_plan(cfg, folder / label)
        cases[label] = {"config_name": config_name(cfg), "overrides": plan.command[4:]}
    path = folder / "cases.json"
    path.write_text(json.dumps(cases))
    return run_verl_side("check_compose.py", str(path))


def test_every_case_composes_against_verls_config(composed):
    failed = {k: v["error"] for k, v in composed.items() if not v["ok"]}
    assert not failed
    assert set(composed) == set(CASES)
    skipped = {k for k, v in composed.items() if v["validate_config_skipped"]}
    assert skipped == {"fp8_rollout_lora", "moe_lora"}  # only the vLLM-side LoRA rank check needs vLLM


def test_anchor_maps_to_bypass_or_decoupled_mode(composed):
    rollout = composed["default"]
    assert rollout["bypass_mode"] is True and rollout["rollout_is"] is None
    assert composed["minirl_norm"]["bypass_mode"] is False
    assert composed["minirl_norm"]["rollout_is"] == "token"
    assert composed["minirl_norm"]["rollout_is_threshold"] == NO_CAP
    assert composed["bandpo_fp16_cap"]["rollout_is_threshold"] == 3.0
    assert composed["experiment_bandpo_r1d"]["bypass_mode"] is False


def test_spec_fields_land_where_verl_reads_them(composed):
    d = composed["default"]
    assert d["loss_mode"] == "harness_dppo" and d["rollout_n"] == 8 and d["ppo_mini_batch_size"] == 32
    assert d["lr"] == 1e-6 and d["rollout_dtype"] == "bfloat16" and d["mixed_precision"]["param_dtype"] == "bf16"
    assert d["env_vars"]["HARNESS_VERL_OBJECTIVE"].endswith("verl/objective.json")
    assert "PYTHONPATH" not in d["env_vars"]  # inherited from the Ray processes the script starts
    assert d["reward_path"].endswith("harness/trainers/verl/reward.py")
    m = composed["minirl_norm"]
    assert m["loss_agg_mode"] == "seq-mean-token-sum-norm" and m["loss_scale_factor"] == 4096
    assert m["adv_estimator"] == "grpo" and m["norm_adv_by_std_in_grpo"] is False
    assert composed["bandpo_fp16_cap"]["rollout_dtype"] == "float16"
    assert composed["bandpo_fp16_cap"]["adv_estimator"] == "rloo"
    assert composed["fp8_rollout_lora"]["quantization"] == "fp8" and composed["fp8_rollout_lora"]["lora_rank"] == 16
    assert composed["moe_r3"]["router_replay"] == "R3" and composed["moe_r3"]["routing_replay"] is True
    assert composed["moe_r2_recompute"]["router_replay"] == "R2"
    assert composed["moe_r2_recompute"]["routing_replay"] is False
    assert composed["moe_lora"]["megatron_lora_rank"] == 32
    e2e = composed["experiment_drpo_qwen3_30b_a3b_fp8_e2e"]
    assert e2e["quantization"] == "fp8" and e2e["transformer_overrides"]["fp8"] == "e4m3"
    assert composed["extra_env"]["env_vars"]["HF_HOME"] == "/shared/hf"
    assert composed["extra_env"]["enforce_eager"] is True and d["enforce_eager"] is False


def test_vllm_length_and_transfer_queue_land_in_verls_config(composed):
    assert composed["default"]["max_model_len"] == 2048 + 4096  # vLLM's context: prompt + response
    assert composed["experiment_dppo_dense_qwen3_8b"]["max_model_len"] == 2048 + 14336
    assert {c["tq_storage_units"] for c in composed.values()} == {TQ_STORAGE_UNITS}
    assert all(c["use_v1"] is True for c in composed.values())
    assert {c["max_actor_ckpt_to_keep"] for c in composed.values()} == {2}  # verl's default keeps every one
    assert composed["default"]["calculate_entropy"] is True  # bypass mode: entropy from the update's forward
    assert composed["minirl_norm"]["calculate_entropy"] is False


def test_dynamic_batch_size_lands_in_verls_config(composed):
    dense = composed["experiment_dppo_dense_qwen3_8b"]
    assert dense["use_dynamic_bsz"] is True and dense["ppo_max_token_len_per_gpu"] == 16384
    assert dense["log_prob_max_token_len_per_gpu"] == 16384
    assert composed["experiment_dppo_moe_qwen3_30b"]["use_dynamic_bsz"] is True  # megatron
    assert composed["default"]["use_dynamic_bsz"] is False
