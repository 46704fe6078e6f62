"""Parameter schemas of the objective families (torch-free).

One dataclass per family; each field carries its help text and its value rule (`checks.py`) in the
field metadata, so validation, the `python -m harness algos` table and the config files all read the
same source. Per-objective default overrides live in `specs.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, Optional

from harness.algorithms.checks import Choice, Flag, Integer, Real

ANCHORS = ("rollout", "recompute")
CLIP_RELAX = ("both", "high", "low")
DIVERGENCES = ("binary_tv", "binary_kl", "topk_tv", "topk_kl")
BANDS = ("tv", "chi2", "kl")

POSITIVE = Real(low=0.0)
EPS = Real(low=0.0, high=1.0, low_open=False)  # a clip width: 0 <= eps < 1


def param(default: Any, rule: Any, help: str) -> Any:
    """A dataclass field with its rule and help text attached."""
    return field(default=default, metadata={"rule": rule, "help": help})


def rules(params_cls: type) -> Dict[str, Any]:
    """Field name -> value rule of a params dataclass."""
    return {f.name: f.metadata["rule"] for f in fields(params_cls)}


def helps(params_cls: type) -> Dict[str, str]:
    """Field name -> help text of a params dataclass."""
    return {f.name: f.metadata["help"] for f in fields(params_cls)}


@dataclass
class AnchorParams:
    """Shared by every objective: where the trust region is anchored, and the decoupled IS cap."""

    anchor: str = param("rollout", Choice(ANCHORS),
                        "trust-region anchor: rollout (nu = mu) or recompute (nu = pi', times sg(min(pi'/mu, is_cap)))")
    is_cap: Optional[float] = param(None, Real(low=0.0, nullable=True, null_means="no cap"),
                                    "C_is, cap of the importance weight pi'/mu under anchor=recompute")


@dataclass
class PGParams(AnchorParams):
    """pg_is: the unconstrained importance-sampled policy gradient."""


@dataclass
class CISPOParams(AnchorParams):
    """cispo: truncated importance sampling on log pi."""

    trunc_c: float = param(3.0, POSITIVE, "C, truncation of the ratio weight sg(min(r, C))")


@dataclass
class ClipParams(AnchorParams):
    """PPO ratio clipping (grpo, grpo_cliphigher, minirl, minirl_tis), with dual clip and α relaxation."""

    eps_low: float = param(0.2, EPS, "clip below at 1 - eps_low (A < 0 side)")
    eps_high: float = param(0.2, EPS, "clip above at 1 + eps_high (A > 0 side)")
    dual_clip_c: Optional[float] = param(None, Real(low=1.0, nullable=True, null_means="off"),
                                         "dual clip: for A < 0 the objective is at least c*A")
    relax_alpha: float = param(0.0, Real(low=0.0, high=1.0, low_open=False, high_open=False),
                               "alpha: tokens with nu < alpha lose the clip side(s) chosen by relax")
    relax: str = param("both", Choice(CLIP_RELAX), "which clip side alpha removes: both, high or low")


@dataclass
class DPPOParams(AnchorParams):
    """DPPO divergence masks."""

    divergence: str = param("binary_tv", Choice(DIVERGENCES), "divergence D that defines the trust region")
    delta: Optional[float] = param(None, Real(low=0.0, nullable=True, null_means="0.15 for TV, 0.05 for KL"),
                                   "delta, mask diverging tokens with D > delta")
    delta_low: Optional[float] = param(None, Real(low=0.0, nullable=True, null_means="= delta"),
                                       "delta for the A < 0 side")
    delta_high: Optional[float] = param(None, Real(low=0.0, nullable=True, null_means="= delta"),
                                        "delta for the A > 0 side")
    topk: int = param(20, Integer(1), "K of the Top-K divergences (rollout top-K log-probs)")


@dataclass
class SPOParams(AnchorParams):
    """SPO: quadratic penalty on the ratio."""

    eps: float = param(12.5, POSITIVE, "epsilon, coefficient |A|/(2 eps) of (r - 1)^2")


@dataclass
class DeltaParams(AnchorParams):
    """drpo and the mask_* ablations."""

    delta: float = param(12.5, POSITIVE, "delta of the penalty coefficient |A|/(2 delta) and of the mask")


@dataclass
class PenaltyParams(AnchorParams):
    """kl_reg, k3_reg, tv_reg: divergence penalties with weight w."""

    delta: float = param(12.5, POSITIVE, "delta, penalty coefficient w/(2 delta)")
    adv_weighted: bool = param(True, Flag(), "w = |A| (true) or w = 1 (false)")


@dataclass
class BandPOParams(AnchorParams):
    """BandPO: PPO clipping with probability-aware bounds lo(nu), hi(nu)."""

    band: str = param("kl", Choice(BANDS), "f-divergence of the band: tv, chi2 or kl")
    delta: float = param(0.05, POSITIVE, "delta, radius of the band")
    hi_max: float = param(10.0, Real(low=1.0, low_open=False), "cap of the upper bound hi")
    relax: bool = param(False, Flag(), "Relaxed-Band: lo <= 1 - eps_low and hi >= 1 + eps_high")
    eps_low: float = param(0.2, EPS, "Relaxed-Band: lower clip width")
    eps_high: float = param(0.28, EPS, "Relaxed-Band: upper clip width (Clip-Higher)")
    dual_clip_c: Optional[float] = param(None, Real(low=1.0, nullable=True, null_means="off"),
                                         "dual clip: for A < 0 the objective is at least c*A")
