"""conf/algo: exactly one file per objective, its values equal default_params, and a usable header."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.algorithms import default_params, list_objectives

ALGO_DIR = Path(__file__).resolve().parents[2] / "conf" / "algo"


def test_one_config_per_objective():
    assert sorted(p.stem for p in ALGO_DIR.glob("*.yaml")) == list_objectives()


@pytest.mark.parametrize("name", list_objectives())
def test_config_values_equal_defaults(name):
    text = (ALGO_DIR / f"{name}.yaml").read_text()
    data = yaml.safe_load(text)
    assert data.pop("name") == name
    assert data == default_params(name)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert len(header) >= 3 and any(f"python -m harness algo={name}" in line for line in header)
    assert any("Source:" in line for line in header)
