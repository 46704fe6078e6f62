"""Trust-region objectives for LLM RL (docs/algorithms.md is the contract).

Importing this package does not import torch: `specs` (names, parameters, defaults, validation) is
torch-free so configs compose fast; the torch parts load on first use.

  build_objective(name, **params) -> Objective     objective.compute(logp, rollout_logp, advantages, ...)
  aggregate(J, response_mask, mode, norm_len)      compute_advantages(rewards, estimator, eps)
  gradient_weight_grid(name, nu, pi, adv_sign, **params)
  list_objectives(), default_params(name), validate_params(name, params), objectives_table(), SPECS
"""
from __future__ import annotations

import importlib
from typing import Any

from harness.algorithms.specs import (
    SPECS, default_params, list_objectives, objectives_table, validate_params,
)

_LAZY = {
    "build_objective": "harness.algorithms.build",
    "Objective": "harness.algorithms.base",
    "aggregate": "harness.algorithms.aggregation",
    "compute_advantages": "harness.algorithms.advantages",
    "gradient_weight_grid": "harness.algorithms.geometry",
}

__all__ = ["SPECS", "default_params", "list_objectives", "objectives_table", "validate_params", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.algorithms' has no attribute {name!r}")
