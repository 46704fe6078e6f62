"""Run in the verl environment: compose generated main_ppo overrides against verl's own trainer config.

  python check_compose.py cases.json out.json     cases: {label: {"config_name": ..., "overrides": [...]}}

For each case: Hydra composition (unknown keys and bad override syntax fail here), verl's validate_config
(batch arithmetic, micro-batch settings), the typed dataclasses verl builds from the config (actor,
rollout, algorithm, rollout correction; the model config merged onto HFModelConfig without loading
weights), the plugin loaded through model.external_lib and the loss found by its loss_mode, and the
reward function loaded by path and called. Writes {label: {"ok": ..., ...}} as JSON to out.json.
"""
from __future__ import annotations

import json
import sys
import traceback

from omegaconf import OmegaConf
from verl.trainer.config import RolloutCorrectionConfig
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.import_utils import import_external_libs, load_extern_object
from verl.workers.config import HFModelConfig

from verl_config import compose_verl


def need_reference_policy(cfg) -> bool:
    """verl.trainer.ppo.utils.need_reference_policy (that module needs `datasets`, absent here)."""
    return bool(cfg.algorithm.get("use_kl_in_reward", False) or cfg.actor_rollout_ref.actor.use_kl_loss)


def need_critic(cfg) -> bool:
    """verl.trainer.ppo.utils.need_critic, as above."""
    return bool(cfg.critic.enable) if cfg.critic.enable is not None else cfg.algorithm.adv_estimator == "gae"


def check(config_name: str, overrides: list) -> dict:
    cfg = compose_verl(config_name, overrides)
    skipped = None
    try:
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    except ValueError as err:  # its last check (the LoRA rank vLLM accepts) imports vLLM, absent on CPU
        if "vllm version None" not in str(err):
            raise
        skipped = "vLLM LoRA-rank check (vLLM not installed)"
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    algorithm = omega_conf_to_dataclass(cfg.algorithm)
    OmegaConf.merge(OmegaConf.structured(HFModelConfig), cfg.actor_rollout_ref.model)
    correction = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(RolloutCorrectionConfig),
                                                     cfg.algorithm.rollout_correction))
    import_external_libs(cfg.actor_rollout_ref.model.external_lib)
    get_policy_loss_fn(actor.policy_loss.loss_mode)
    score = load_extern_object(cfg.reward.custom_reward_function.path, cfg.reward.custom_reward_function.name)
    assert score(data_source="x", solution_str="so \\boxed{42}", ground_truth="42")["score"] == 1.0
    engine = actor.engine
    return {
        "validate_config_skipped": skipped, "loss_mode": actor.policy_loss.loss_mode, "loss_agg_mode": actor.loss_agg_mode,
        "loss_scale_factor": actor.loss_scale_factor, "ppo_mini_batch_size": actor.ppo_mini_batch_size,
        "lr": actor.optim.lr, "rollout_n": rollout.n, "rollout_dtype": rollout.dtype,
        "quantization": rollout.quantization, "temperature": rollout.temperature,
        "enforce_eager": rollout.enforce_eager, "max_model_len": rollout.max_model_len,
        "tq_storage_units": cfg.transfer_queue.backend.SimpleStorage.num_data_storage_units,
        "use_v1": cfg.trainer.use_v1, "calculate_entropy": actor.calculate_entropy,
        "max_actor_ckpt_to_keep": cfg.trainer.max_actor_ckpt_to_keep,
        "use_dynamic_bsz": actor.use_dynamic_bsz, "ppo_max_token_len_per_gpu": actor.ppo_max_token_len_per_gpu,
        "log_prob_max_token_len_per_gpu": rollout.log_prob_max_token_len_per_gpu,
        "routing_replay": rollout.enable_rollout_routing_replay,
        "bypass_mode": correction.bypass_mode, "rollout_is": correction.rollout_is,
        "rollout_is_threshold": correction.rollout_is_threshold, "adv_estimator": algorithm.adv_estimator,
        "norm_adv_by_std_in_grpo": algorithm.norm_adv_by_std_in_grpo,
        "mixed_precision": OmegaConf.to_container(OmegaConf.create(getattr(engine, "mixed_precision", None) or {})),
        "engine_dtype": getattr(engine, "dtype", None),
        "router_replay": getattr(getattr(engine, "router_replay", None), "mode", None),
        "transformer_overrides": dict(getattr(engine, "override_transformer_config", {}) or {}),
        "lora_rank": cfg.actor_rollout_ref.model.get("lora_rank"),
        "megatron_lora_rank": cfg.actor_rollout_ref.model.get("lora", {}).get("rank"),
        "env_vars": OmegaConf.to_container(cfg.ray_kwargs.ray_init.runtime_env.env_vars),
        "reward_path": cfg.reward.custom_reward_function.path,
    }


def main(path: str, out_path: str) -> None:
    cases = json.loads(open(path).read())
    out = {}
    for label, case in cases.items():
        try:
            out[label] = {"ok": True, **check(case["config_name"], case["overrides"])}
        except Exception as err:  # report every case, not just the first failure
            last = traceback.format_exception_only(type(err), err)[-1].strip()
            out[label] = {"ok": False, "error": last}
    with open(out_path, "w") as fh:
        json.dump(out, fh, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
