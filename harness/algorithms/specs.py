"""The objective registry as data (torch-free): names, families, parameters, defaults and sources.

`SPECS` is the one registry of objectives: what `algo=<name>` accepts, its defaults (the `algo=<name>` choice
is made from them: harness/config/schema.py stores it in Hydra's ConfigStore), and (by name, imported only
when an objective is built: `registry.objective_class`) the class that computes it. A new objective is one
file (its class) and one `ObjectiveSpec`: a line in `_ALL` here, or `register_objective(spec)` from its own
package.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from harness.algorithms.params import (
    AnchorParams, BandPOParams, CISPOParams, ClipParams, DeltaParams, DPPOParams, PenaltyParams, PGParams,
    SPOParams, rules,
)
from harness.algorithms.table import render_table

GEOMETRIES = ("ratio", "absolute-shift", "probability-aware", "none")
SHORTCUTS = ("delta", "alpha")  # run-level names for an objective's thresholds (`delta=0.1`)
RUN_SHORTCUTS = (*SHORTCUTS, "anchor")  # every top-level key that maps onto `algo.*`


@dataclass(frozen=True)
class ObjectiveSpec:
    """What one objective name means.

    defaults: overrides of `params_cls` defaults for this name. geometry: the shape of its trust region
    (ratio | absolute-shift | probability-aware | none). source: paper and section. shortcuts: run-level
    shortcut (`delta`, `alpha`) -> the parameter it sets; an absent key means the shortcut is refused.
    implementation: the class computing it, "module:Class": ".module" relative to harness.algorithms, or an
    absolute module (one class may serve several names, e.g. the four PPO-clipping objectives).
    """

    name: str
    implementation: str  # "module:Class" (".module": under harness.algorithms), imported (with torch) when built
    family: str
    params_cls: type
    defaults: Mapping[str, Any] = field(default_factory=dict)
    geometry: str = "none"
    source: str = ""
    shortcuts: Mapping[str, str] = field(default_factory=dict)


_DELTA = {"delta": "delta"}
_ALPHA = {"alpha": "relax_alpha"}
_CLIP_HIGHER = {"eps_high": 0.28}
_REG_SRC = "DRPO paper Appendix D.1-D.2 (alternative divergence penalties; adv_weighted=false: 'w/o |A|')"

_ALL = [
    ObjectiveSpec("pg_is", ".baselines:PGIS", "baseline", PGParams, {}, "none",
                  "DPPO paper §5 (PG-IS baseline), Appendix C.1", {}),
    ObjectiveSpec("cispo", ".baselines:CISPO", "baseline", CISPOParams, {}, "none",
                  "DPPO paper §5 (PG-TIS = CISPO, Chen et al. 2025), Appendix C.1", {}),
    ObjectiveSpec("grpo", ".clipping:RatioClip", "clipping", ClipParams, {}, "ratio",
                  "PPO clip (DRPO paper Eq. 4); alpha relaxation: DPPO paper §6", _ALPHA),
    ObjectiveSpec("grpo_cliphigher", ".clipping:RatioClip", "clipping", ClipParams, _CLIP_HIGHER, "ratio",
                  "DAPO Clip-Higher (Yu et al. 2025); DPPO paper §5, §7", _ALPHA),
    ObjectiveSpec("minirl", ".clipping:RatioClip", "clipping", ClipParams,
                  {**_CLIP_HIGHER, "anchor": "recompute"}, "ratio",
                  "MiniRL (Zheng et al. 2025): DPPO paper §5.2, Appendix C.1", _ALPHA),
    ObjectiveSpec("minirl_tis", ".clipping:RatioClip", "clipping", ClipParams,
                  {**_CLIP_HIGHER, "anchor": "recompute", "is_cap": 3.0}, "ratio",
                  "MiniRL-TIS: DPPO paper §5.4, Appendix C.1", _ALPHA),
    ObjectiveSpec("dppo", ".dppo:DPPO", "divergence-mask", DPPOParams, {}, "absolute-shift",
                  "DPPO paper §4.3-4.4 (binary / Top-K TV and KL), Appendix B", _DELTA),
    ObjectiveSpec("spo", ".regularizers:SPO", "regularizer", SPOParams, {}, "ratio",
                  "SPO (Xie et al. 2025) as in DRPO paper §2, Eq. 5", {"delta": "eps"}),
    ObjectiveSpec("drpo", ".regularizers:DRPO", "regularizer", DeltaParams, {}, "absolute-shift",
                  "DRPO paper §3, Eq. 8-9", _DELTA),
    ObjectiveSpec("mask_drpo", ".regularizers:MaskDRPO", "regularizer", DeltaParams, {}, "absolute-shift",
                  "DRPO paper §4.2 ablation: DRPO penalty only outside the DPPO region", _DELTA),
    ObjectiveSpec("mask_spo", ".regularizers:MaskSPO", "regularizer", DeltaParams, {}, "ratio",
                  "DRPO paper §4.2 ablation: SPO penalty only outside the DPPO region", _DELTA),
    ObjectiveSpec("mask_kl", ".regularizers:MaskKL", "regularizer", DeltaParams, {}, "ratio",
                  "DRPO paper §4.2 ablation: (log r)^2 penalty only outside the DPPO region", _DELTA),
    ObjectiveSpec("kl_reg", ".penalties:KLReg", "penalty", PenaltyParams, {}, "ratio",
                  _REG_SRC + "; K1 KL, PPO-KL", _DELTA),
    ObjectiveSpec("k3_reg", ".penalties:K3Reg", "penalty", PenaltyParams, {}, "ratio",
                  _REG_SRC + "; K3 KL", _DELTA),
    ObjectiveSpec("tv_reg", ".penalties:TVReg", "penalty", PenaltyParams, {}, "ratio",
                  _REG_SRC + "; sampled TV", _DELTA),
    ObjectiveSpec("bandpo", ".bandpo:BandPO", "band", BandPOParams, {}, "probability-aware",
                  "BandPO paper §5.5-5.6 (bounds), §6.3 (Relaxed-Band), §9.6 (solver)", _DELTA),
]


# What `algo=<name>` can select (a Hydra choice, an MLflow param, part of run names and folders): a name of
# another shape would be registered and listed but could never be selected
NAME_RULE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
NAME_RULE_TEXT = "a letter, then letters, digits or underscores"


def _add(out: Dict[str, ObjectiveSpec], spec: ObjectiveSpec) -> None:
    """The spec checked and added; ValueError (one line) for a name registered twice or a malformed spec."""
    problem = (f"is not an allowed name: {NAME_RULE_TEXT} (algo=<name> selects it)"
               if not isinstance(spec.name, str) or not NAME_RULE.fullmatch(spec.name) else
               "is already registered" if spec.name in out else
               f"has an unknown geometry {spec.geometry!r} (one of {', '.join(GEOMETRIES)})"
               if spec.geometry not in GEOMETRIES else
               "has params that do not extend AnchorParams" if not issubclass(spec.params_cls, AnchorParams) else
               "has a default for an unknown parameter" if not set(spec.defaults) <= set(rules(spec.params_cls)) else
               f"has an unknown shortcut (one of {', '.join(SHORTCUTS)})" if not set(spec.shortcuts) <= set(SHORTCUTS)
               else "" if ":" in spec.implementation else "names no class as 'module:Class'")
    if problem:
        raise ValueError(f"objective {spec.name!r} {problem}")
    out[spec.name] = spec


def registry(entries: List[ObjectiveSpec]) -> Dict[str, ObjectiveSpec]:
    """Name -> spec, each entry checked; ValueError for a name registered twice."""
    out: Dict[str, ObjectiveSpec] = {}
    for spec in entries:
        _add(out, spec)
    return out


SPECS: Dict[str, ObjectiveSpec] = registry(_ALL)


def register_objective(spec: ObjectiveSpec) -> ObjectiveSpec:
    """Add an objective from outside this module (its class in its own package: an absolute implementation
    path); `algo=<name>` selects it once the configs are next stored with Hydra (every composition does)."""
    _add(SPECS, spec)
    return spec

# dppo's delta depends on the divergence when left null (DPPO paper: TV 0.15, KL 0.05).
DPPO_DEFAULT_DELTA = {"binary_tv": 0.15, "topk_tv": 0.15, "binary_kl": 0.05, "topk_kl": 0.05}


def list_objectives() -> List[str]:
    """Sorted objective names."""
    return sorted(SPECS)


def get_spec(name: str) -> ObjectiveSpec:
    """The spec of `name`; ValueError listing the known names if there is none."""
    if not isinstance(name, str) or name not in SPECS:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(list_objectives())}")
    return SPECS[name]


def default_params(name: str) -> Dict[str, Any]:
    """Every parameter of `name` with its default (without 'name'). dppo's delta is None = per divergence."""
    spec = get_spec(name)
    out = asdict(spec.params_cls())
    out.update(spec.defaults)
    return out


def validate_params(name: str, params: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The complete checked parameter dict of `name`: defaults filled in, values normalised.

    Raises ValueError (one line: key, bad value, what is allowed) for an unknown objective or parameter,
    a value of the wrong type or out of range. A 'name' key is accepted if it equals `name`.
    """
    spec = get_spec(name)
    given = dict(params or {})
    if "name" in given:
        if given.pop("name") != name:
            raise ValueError(f"algo.name does not match the objective {name!r}")
    allowed = rules(spec.params_cls)
    unknown = sorted(k for k in given if k not in allowed)
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} for objective {name!r}; "
                         f"allowed: {', '.join(sorted(allowed))}")
    out = default_params(name)
    out.update(given)
    for key, rule in allowed.items():
        out[key] = rule.check(key, out[key])
    if name == "dppo" and out["delta"] is None:
        out["delta"] = DPPO_DEFAULT_DELTA[out["divergence"]]
    return out


def shortcut_param(name: str, shortcut: str) -> str:
    """The parameter the run-level shortcut (`delta`, `alpha`) sets for `name`; ValueError if none."""
    spec = get_spec(name)
    if shortcut not in spec.shortcuts:
        users = sorted(n for n, s in SPECS.items() if shortcut in s.shortcuts)
        raise ValueError(f"shortcut {shortcut}= means nothing for objective {name!r}; "
                         f"it applies to: {', '.join(users)}")
    return spec.shortcuts[shortcut]


def objectives_table() -> str:
    """Text table of every objective (printed by `python -m harness algos`)."""
    return render_table(SPECS, default_params)
