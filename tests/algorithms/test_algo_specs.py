"""The torch-free spec registry: names, defaults, shortcuts, the table, and agreement with the classes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.algorithms import SPECS, default_params, list_objectives, objectives_table

NAMES = ["bandpo", "cispo", "dppo", "drpo", "grpo", "grpo_cliphigher", "k3_reg", "kl_reg", "mask_drpo",
         "mask_kl", "mask_spo", "minirl", "minirl_tis", "pg_is", "spo", "tv_reg"]
REPO = Path(__file__).resolve().parents[2]


def test_every_registered_name_builds_its_class():
    from harness.algorithms.base import Objective
    from harness.algorithms.build import build_objective
    from harness.algorithms.registry import objective_class

    assert list_objectives() == NAMES
    for name in NAMES:
        assert issubclass(objective_class(name), Objective), name
        assert type(build_objective(name)) is objective_class(name)


def test_import_does_not_load_torch():
    code = ("import sys, harness.algorithms, harness.algorithms.specs as s; s.validate_params('dppo', {}); "
            "s.objectives_table(); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env={"PYTHONPATH": str(REPO)})


def test_name_specific_defaults():
    assert default_params("grpo")["eps_high"] == 0.2
    assert default_params("grpo_cliphigher")["eps_high"] == 0.28
    assert default_params("minirl")["anchor"] == "recompute" and default_params("minirl")["is_cap"] is None
    assert default_params("minirl_tis")["is_cap"] == 3.0
    assert default_params("cispo")["trunc_c"] == 3.0
    assert default_params("spo")["eps"] == 12.5 and default_params("drpo")["delta"] == 12.5
    assert default_params("bandpo") == {"anchor": "rollout", "is_cap": None, "band": "kl", "delta": 0.05,
                                        "hi_max": 10.0, "relax": False, "eps_low": 0.2, "eps_high": 0.28,
                                        "dual_clip_c": None}
    for name in NAMES:
        assert {"anchor", "is_cap"} <= set(default_params(name)) and "name" not in default_params(name)


def test_shortcuts():
    assert SPECS["dppo"].shortcuts == {"delta": "delta"}
    assert SPECS["spo"].shortcuts == {"delta": "eps"}
    for name in ("drpo", "bandpo", "mask_kl", "tv_reg"):
        assert SPECS[name].shortcuts == {"delta": "delta"}
    for name in ("grpo", "grpo_cliphigher", "minirl", "minirl_tis"):
        assert SPECS[name].shortcuts == {"alpha": "relax_alpha"}
    assert SPECS["pg_is"].shortcuts == {} and SPECS["cispo"].shortcuts == {}
    for spec in SPECS.values():  # every shortcut target is a real parameter
        assert set(spec.shortcuts.values()) <= set(default_params(spec.name))
    from harness.algorithms.specs import shortcut_param
    assert shortcut_param("spo", "delta") == "eps"
    with pytest.raises(ValueError, match="shortcut delta= means nothing for objective 'grpo'"):
        shortcut_param("grpo", "delta")


def test_geometry_and_table():
    assert SPECS["grpo"].geometry == "ratio" and SPECS["dppo"].geometry == "absolute-shift"
    assert SPECS["drpo"].geometry == "absolute-shift" and SPECS["bandpo"].geometry == "probability-aware"
    assert SPECS["pg_is"].geometry == "none"
    table = objectives_table()
    for name in NAMES:
        assert any(line.startswith(name + " ") for line in table.splitlines()), name
    assert "eps_high=0.28" in table and "probability-aware" in table and "DPPO paper" in table


def test_duplicate_registration_raises():
    from harness.algorithms.specs import registry

    with pytest.raises(ValueError, match="already registered"):
        registry([SPECS["grpo"], SPECS["dppo"], SPECS["grpo"]])
