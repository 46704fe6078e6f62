"""The run's objective as verl sees it (torch-free): the loss name, the anchor mode and the spec file.

verl's structured config rejects unknown keys, so the objective's parameters travel in a JSON file
whose path is in $HARNESS_VERL_OBJECTIVE; `plugin.py` (loaded in every verl worker) reads it.

Anchor mapping (verified against verl 0.9.1, trainer/ppo/v1/trainer_base.py and rollout_corr_helper.py):
  anchor=rollout    algorithm.rollout_correction.bypass_mode=true: the trainer skips the old-log-prob
                    forward and sets old_log_probs := rollout_log_probs, so the loss gets ν = μ and no
                    IS weights (the v1 trainer keeps our loss_mode; the legacy trainer would replace it).
  anchor=recompute  bypass_mode=false, rollout_is=token, rollout_is_threshold=C_is: old_log_probs := π'
                    (recomputed), and the loss gets rollout_is_weights = sg(min(exp(clamp(log π'/μ, ±20)), C_is)).
                    C_is = null (no cap) becomes 1e9, above verl's e^20 safety clamp.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

ENV_VAR = "HARNESS_VERL_OBJECTIVE"
LOSS_PREFIX = "harness_"
NO_CAP = 1.0e9  # > e^20, verl's clamp of the log IS ratio: the cap never binds


def loss_mode(algo_name: str) -> str:
    """The name the harness objective is registered under in verl's policy-loss registry."""
    return LOSS_PREFIX + algo_name


def objective_spec(algo: Dict[str, Any]) -> Dict[str, Any]:
    """The serialised objective: name, anchor and the parameters `build_objective` takes."""
    params = {k: v for k, v in algo.items() if k != "name"}
    return {"name": algo["name"], "loss_mode": loss_mode(algo["name"]), "anchor": params["anchor"],
            "params": params}


def write_spec(algo: Dict[str, Any], path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(objective_spec(algo), indent=2, sort_keys=True) + "\n")
    return path


def read_spec(path: str) -> Dict[str, Any]:
    return json.loads(Path(path).read_text())


def unsupported_reason(algo: Dict[str, Any]) -> str | None:
    """Why verl cannot run this objective, or None. verl 0.9.1's rollout returns only the sampled token's
    log-prob and its policy-loss interface gets no logits, so the Top-K divergences are out of reach."""
    if algo.get("name") == "dppo" and str(algo.get("divergence", "")).startswith("topk"):
        return (f"algo.divergence={algo['divergence']!r} is not allowed with trainer=verl: verl passes neither "
                f"rollout top-K log-probs nor logits to the policy loss; use binary_tv or binary_kl")
    return None


def anchor_overrides(algo: Dict[str, Any]) -> List[Tuple[str, Any]]:
    """verl's rollout-correction settings for the objective's anchor (see the module docstring)."""
    rc = "algorithm.rollout_correction"
    if algo["anchor"] == "rollout":
        return [(f"{rc}.bypass_mode", True), (f"{rc}.rollout_is", None), (f"{rc}.rollout_rs", None)]
    cap = algo.get("is_cap")
    return [(f"{rc}.bypass_mode", False), (f"{rc}.rollout_is", "token"),
            (f"{rc}.rollout_is_threshold", float(cap) if cap is not None else NO_CAP),
            (f"{rc}.rollout_is_batch_normalize", False), (f"{rc}.rollout_rs", None)]
