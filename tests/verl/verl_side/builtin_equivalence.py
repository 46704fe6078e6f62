"""verl's own losses that resemble harness objectives, compared on random tensors (anchor = rollout).

Backs the table in launchers/verl/README.md: which verl settings reproduce a harness objective exactly
and where the defaults differ. Each check returns the max |grad difference| with and without the
matching settings.
"""
from __future__ import annotations

import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config import FSDPActorConfig

from harness.algorithms import aggregate, build_objective


def _inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    B, T = 16, 32
    log_nu = torch.nn.functional.logsigmoid(2.5 * torch.randn(B, T, generator=g, dtype=torch.float64))
    logp = (log_nu + 1.2 * torch.randn(B, T, generator=g, dtype=torch.float64)).clamp(max=-1e-4)  # some r > 3
    adv = torch.randn(B, 1, generator=g, dtype=torch.float64).expand(B, T).clone()
    mask = torch.ones(B, T, dtype=torch.bool)
    return log_nu, logp, adv, mask


def _grad_verl(loss_name: str, actor: dict, seed: int) -> torch.Tensor:
    log_nu, logp, adv, mask = _inputs(seed)
    logp = logp.clone().requires_grad_(True)
    cfg = FSDPActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, **actor)
    loss, _ = get_policy_loss_fn(loss_name)(old_log_prob=log_nu, log_prob=logp, advantages=adv, response_mask=mask,
                                            loss_agg_mode="token-mean", config=cfg, rollout_is_weights=None)
    loss.backward()
    return logp.grad


def _grad_harness(name: str, params: dict, seed: int) -> torch.Tensor:
    log_nu, logp, adv, mask = _inputs(seed)
    logp = logp.clone().requires_grad_(True)
    J, _ = build_objective(name, **params).compute(logp, log_nu, adv, response_mask=mask)
    (-aggregate(J, mask, "token-mean")).backward()
    return logp.grad


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def builtin_checks() -> list:
    out = []
    for seed, (verl_name, harness_name, matched, verl_default, params) in enumerate([
        ("dppo_tv", "dppo", {"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "clip_ratio_c": 1e10},
         {"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2}, {"delta": 0.2}),
        ("dppo_kl", "dppo", {"clip_ratio": 0.05, "clip_ratio_low": 0.05, "clip_ratio_high": 0.05, "clip_ratio_c": 1e10},
         {"clip_ratio": 0.05, "clip_ratio_low": 0.05, "clip_ratio_high": 0.05},
         {"divergence": "binary_kl", "delta": 0.05}),
        ("cispo", "cispo", {"clip_ratio_low": 1.0, "clip_ratio_high": 2.0}, {}, {"trunc_c": 3.0}),
        ("vanilla", "grpo_cliphigher", {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0},
         {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0}, {"dual_clip_c": 3.0}),
        ("vanilla", "grpo_cliphigher", {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0},
         {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0}, {}),
    ], start=100):
        harness = _grad_harness(harness_name, params, seed)
        out.append({"verl_loss": verl_name, "harness": harness_name, "harness_params": params,
                     "verl_settings": matched, "grad_max_abs_diff_matched": _diff(_grad_verl(verl_name, matched, seed), harness),
                     "grad_max_abs_diff_verl_default": _diff(_grad_verl(verl_name, verl_default, seed), harness),
                     "grad_scale": harness.abs().max().item()})
    return out
