"""Run in the verl environment: every harness objective through verl's own loss entry point against
harness.algorithms, on random tensors.  python check_losses.py out.json  (read by tests/verl/test_verl_losses.py)

verl side: the loss is looked up with verl's `get_policy_loss_fn(loss_mode)` after the plugin was loaded
the way verl's workers load it (`import_external_libs`, from actor_rollout_ref.model.external_lib), with a
real FSDPActorConfig (global_batch_info filled as workers/utils/losses.py:ppo_loss fills it), and
  anchor=rollout:   old_log_prob = μ (verl's bypass mode), rollout_is_weights = None
  anchor=recompute: old_log_prob = π', rollout_is_weights from verl's own
                    compute_rollout_correction_and_rejection_mask with the settings objective.py generates.
harness side: Objective.compute(logp, μ, A, mask, recomputed_logp=π') and `aggregate`, loss = -J_agg.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile

import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_rejection_mask
from omegaconf import open_dict
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.import_utils import import_external_libs
from verl_config import compose_verl

from harness.algorithms import aggregate, build_objective
from harness.algorithms.aggregation import LOSS_AGG_MODES
from harness.trainers.verl.objective import ENV_VAR, anchor_overrides, loss_mode, write_spec

import_external_libs("harness.trainers.verl.plugin")  # what verl does with model.external_lib

VARIANTS = [(name, {}) for name in (
    "pg_is", "cispo", "grpo", "grpo_cliphigher", "minirl", "minirl_tis", "dppo", "spo", "drpo", "mask_drpo",
    "mask_spo", "mask_kl", "kl_reg", "k3_reg", "tv_reg", "bandpo")] + [
    ("cispo", {"trunc_c": 2.0}), ("grpo", {"dual_clip_c": 3.0}), ("grpo", {"relax_alpha": 0.3}),
    ("grpo_cliphigher", {"relax_alpha": 0.3, "relax": "high"}), ("grpo", {"relax_alpha": 0.3, "relax": "low"}),
    ("dppo", {"divergence": "binary_kl"}), ("dppo", {"delta_low": 0.05, "delta_high": 0.3}),
    ("spo", {"eps": 0.2}), ("drpo", {"delta": 0.1}), ("kl_reg", {"adv_weighted": False, "delta": 0.5}),
    ("k3_reg", {"delta": 0.2}), ("tv_reg", {"adv_weighted": False, "delta": 0.2}),
    ("bandpo", {"band": "tv", "delta": 0.1}), ("bandpo", {"band": "chi2"}), ("bandpo", {"relax": True}),
    ("bandpo", {"dual_clip_c": 3.0}),
]


def batch(seed: int, dtype: torch.dtype, empty_row: bool):
    """Random [B, T] inputs: probabilities spread over (0, 1), stale and mismatched policies, ragged masks."""
    g = torch.Generator().manual_seed(seed)
    B, T = 8, 16
    log_mu = torch.nn.functional.logsigmoid(2.5 * torch.randn(B, T, generator=g, dtype=torch.float64))
    log_old = (log_mu + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)).clamp(max=-1e-4)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    if empty_row:
        lengths[2] = 0
    mask = torch.arange(T)[None, :] < lengths[:, None]
    adv = torch.randn(B, 1, generator=g, dtype=torch.float64).expand(B, T).clone()
    adv[1] = 0.0
    noise = 0.5 * torch.randn(B, T, generator=g, dtype=torch.float64)
    return log_mu.to(dtype), log_old.to(dtype), noise.to(dtype), adv.to(dtype), mask


BASE = compose_verl("ppo_trainer", ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1"])


def actor_config(mode: str, T: int, mask, global_info: bool):
    """The actor config verl's workers build (FSDPActorConfig from the composed trainer config)."""
    node = BASE.actor_rollout_ref.actor.copy()
    with open_dict(node):
        node.loss_agg_mode = mode
        node.loss_scale_factor = T if mode == "seq-mean-token-sum-norm" else None
        node.rollout_n = 1
    cfg = omega_conf_to_dataclass(node)
    info = {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": None, "loss_scale_factor": cfg.loss_scale_factor}
    if global_info:  # as ppo_loss fills it from the trainer's mini-batch
        info.update(batch_num_tokens=int(mask.sum()), global_batch_size=int((mask.sum(-1) > 0).sum()))
    cfg.global_batch_info.update(info)
    return cfg


def threshold(algo: dict) -> float:
    return dict(anchor_overrides(algo))["algorithm.rollout_correction.rollout_is_threshold"]


def one_case(name, params, anchor, cap, mode, dtype, seed, global_info, spec_dir):
    algo = {"name": name, **build_objective(name, **{**params, "anchor": anchor, "is_cap": cap}).params}
    path = write_spec(algo, os.path.join(spec_dir, f"spec{seed}_{name}_{anchor}_{cap}.json"))
    os.environ[ENV_VAR] = str(path)
    log_mu, log_old, noise, adv, mask = batch(seed, dtype, empty_row=not global_info)
    T = mask.shape[1]
    log_nu = log_mu if anchor == "rollout" else log_old
    start = (log_nu + noise).clamp(max=-1e-4)

    logp_h = start.clone().requires_grad_(True)
    obj = build_objective(name, **algo_params(algo))
    J, _ = obj.compute(logp_h, log_mu, adv, response_mask=mask, recomputed_logp=log_old)
    loss_h = -aggregate(J, mask, mode, norm_len=T)
    loss_h.backward()

    logp_v = start.clone().requires_grad_(True)
    weights = None
    if anchor == "recompute":
        proto, _, _ = compute_rollout_correction_and_rejection_mask(
            old_log_prob=log_old, rollout_log_prob=log_mu, response_mask=mask, rollout_is="token",
            rollout_is_threshold=threshold(algo), rollout_is_batch_normalize=False, rollout_rs=None,
            rollout_rs_threshold=None)
        weights = proto.batch["rollout_is_weights"]
    fn = get_policy_loss_fn(loss_mode(name))
    loss_v, metrics = fn(old_log_prob=log_nu, log_prob=logp_v, advantages=adv, response_mask=mask,
                         loss_agg_mode=mode, config=actor_config(mode, T, mask, global_info),
                         rollout_is_weights=weights)
    loss_v.backward()
    grad_diff = (logp_v.grad - logp_h.grad).abs().max().item()
    scale = max(logp_h.grad.abs().max().item(), 1e-12)
    return {"objective": name, "params": params, "anchor": anchor, "is_cap": cap, "agg": mode,
            "dtype": str(dtype).replace("torch.", ""), "global_batch_info": global_info,
            "loss_harness": loss_h.item(), "loss_verl": loss_v.item(),
            "loss_abs_diff": abs(loss_v.item() - loss_h.item()), "grad_max_abs_diff": grad_diff,
            "grad_max_rel_diff": grad_diff / scale, "grad_nonzero": int((logp_h.grad != 0).sum()),
            "metrics_ok": all(math.isfinite(v) for v in metrics.values()) and "objective/masked_frac" in metrics}


def algo_params(algo: dict) -> dict:
    return {k: v for k, v in algo.items() if k != "name"}


def main() -> None:
    cases = []
    with tempfile.TemporaryDirectory() as spec_dir:
        seed = 0
        for name, params in VARIANTS:
            for anchor, cap in (("rollout", None), ("recompute", None), ("recompute", 3.0)):
                for mode in LOSS_AGG_MODES:
                    for dtype, global_info in ((torch.float64, False), (torch.float32, True)):
                        seed += 1
                        cases.append(one_case(name, params, anchor, cap, mode, dtype, seed, global_info, spec_dir))
    from builtin_equivalence import builtin_checks

    with open(sys.argv[1], "w") as fh:
        json.dump({"cases": cases, "builtin": builtin_checks()}, fh)


if __name__ == "__main__":
    main()
