"""The report registry and the shared palette."""
from __future__ import annotations

import pytest

from harness.reports.rendering.palette import OBJECTIVE_COLOURS, colour, shades
from harness.reports.rendering.registry import CLAIM_KINDS, KINDS, default_kinds, get_kind, list_kinds


def test_every_kind_is_one_module_registering_its_own_name():
    assert list_kinds() == [*KINDS, *CLAIM_KINDS] and default_kinds() == list(KINDS)
    for name in list_kinds():
        report = get_kind(name)
        assert report.name == name and report.title and callable(report.needs) and callable(report.build)


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown report kind 'nope'; known: overview, sensitivity"):
        get_kind("nope")


def test_every_objective_has_its_own_colour_and_unknown_names_a_stable_one():
    from harness.algorithms import list_objectives

    assert set(list_objectives()) <= set(OBJECTIVE_COLOURS)
    assert len(set(OBJECTIVE_COLOURS.values())) == len(OBJECTIVE_COLOURS)
    assert colour("my_new_objective") == colour("my_new_objective")
    light_to_dark = shades("drpo", 4)
    assert len(set(light_to_dark)) == 4 and shades("drpo", 1) == [colour("drpo")]
