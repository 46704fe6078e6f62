"""verl plugin: every harness objective in verl's policy-loss registry as `harness_<name>`.

Loaded in the verl processes through `actor_rollout_ref.model.external_lib=harness.trainers.verl.plugin`
(verl imports it when it builds the model config, in the driver and in every worker). The run's
parameters come from the JSON file named by $HARNESS_VERL_OBJECTIVE (objective.py); without it a loss
uses its objective's defaults.

verl's policy-loss interface (verl 0.9.1, core_algos.PolicyLossFn, called by workers/utils/losses.py):
  fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config: ActorConfig,
     rollout_is_weights) -> (scalar loss to minimise, metrics dict)
with tensors [B, T]. old_log_prob is the anchor ν (μ in bypass mode, π' in decoupled mode) and
rollout_is_weights is sg(min(π'/μ, C_is)) in decoupled mode (objective.py has the mapping). The loss is
verl's `agg_loss` of −J, with verl's global-batch normalisation, so data-parallel ranks and
micro-batches add up exactly as for verl's own losses.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

import torch
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, agg_loss, register_policy_loss

from harness.algorithms import build_objective, list_objectives
from harness.trainers.verl.objective import ENV_VAR, loss_mode, read_spec


@lru_cache(maxsize=None)
def _spec_from_env(path: Optional[str]) -> Optional[Dict[str, Any]]:
    return read_spec(path) if path else None


@lru_cache(maxsize=None)
def _objective(name: str, frozen_params: Tuple[Tuple[str, Any], ...]):
    # ν is always what verl passes as old_log_prob; the decoupled IS weight comes from verl (rollout_is_weights).
    return build_objective(name, **{**dict(frozen_params), "anchor": "rollout", "is_cap": None})


def run_objective(name: str) -> Tuple[Any, str]:
    """(objective with ν := old_log_prob, the run's anchor) for the loss registered as harness_<name>."""
    spec = _spec_from_env(os.environ.get(ENV_VAR))
    params: Dict[str, Any] = {}
    if spec is not None:
        if spec["name"] != name:
            raise ValueError(f"actor policy_loss.loss_mode={loss_mode(name)!r} but ${ENV_VAR} describes "
                             f"algo={spec['name']!r}; use loss_mode={spec['loss_mode']!r}")
        params = dict(spec["params"])
    anchor = params.get("anchor", "rollout")
    frozen = tuple(sorted((k, v) for k, v in params.items() if k not in ("anchor", "is_cap")))
    return _objective(name, frozen), anchor


def harness_policy_loss(name: str, old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                        response_mask: torch.Tensor, loss_agg_mode: str = "token-mean", config: Any = None,
                        rollout_is_weights: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, Dict[str, float]]:
    """The loss of harness objective `name` in verl's calling convention (see the module docstring)."""
    objective, anchor = run_objective(name)
    J, metrics = objective.compute(log_prob, old_log_prob, advantages, response_mask=response_mask)
    if anchor == "recompute":
        if rollout_is_weights is None:
            raise ValueError(f"algo={name} anchor=recompute needs verl's rollout IS weights: set "
                             f"algorithm.rollout_correction.bypass_mode=false and rollout_is=token")
        J = J * rollout_is_weights
        mask = response_mask.to(rollout_is_weights.dtype)
        metrics["objective/is_weight_mean"] = float((rollout_is_weights * mask).sum() / mask.sum().clamp(min=1))
    elif rollout_is_weights is not None:
        raise ValueError(f"algo={name} anchor=rollout but verl passed rollout IS weights: set "
                         f"algorithm.rollout_correction.bypass_mode=true")
    batch_info = dict(getattr(config, "global_batch_info", None) or {})
    loss = agg_loss(loss_mat=-J, loss_mask=response_mask, loss_agg_mode=loss_agg_mode, **batch_info)
    return loss, metrics


def _make_loss(name: str):
    def loss_fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None,
                rollout_is_weights=None):
        return harness_policy_loss(name, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                                   config, rollout_is_weights)

    loss_fn.__name__ = loss_fn.__qualname__ = f"harness_{name}_policy_loss"
    loss_fn.__doc__ = f"harness objective {name!r} (harness.algorithms) as a verl policy loss."
    return loss_fn


def register_all() -> list:
    """Register every harness objective (idempotent: a second import registers nothing twice)."""
    names = []
    for name in list_objectives():
        key = loss_mode(name)
        existing = POLICY_LOSS_REGISTRY.get(key)
        if existing is not None and not existing.__name__.startswith("harness_"):
            raise ValueError(f"verl already has a policy loss named {key!r} ({existing.__name__})")
        if existing is None:
            register_policy_loss(key)(_make_loss(name))
        names.append(key)
    return names


REGISTERED = register_all()
