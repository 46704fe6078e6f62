"""Every registered objective is documented: a row of docs/algorithms.md's table says what it computes, with
an example command (what its conf/algo YAML's header said before its choice was made from its spec)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.algorithms import list_objectives

DOC = Path(__file__).resolve().parents[2] / "docs" / "algorithms.md"


@pytest.mark.parametrize("name", list_objectives())
def test_the_algorithm_reference_has_a_row_with_an_example(name):
    rows = [line for line in DOC.read_text().splitlines()
            if line.startswith(f"| `{name}` |") and f"`python -m harness algo={name}" in line]
    assert len(rows) == 1, f"docs/algorithms.md: one row of the objectives' table for algo={name}, with an example"
