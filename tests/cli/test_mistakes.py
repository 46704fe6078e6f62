"""A mistyped command line gets one line with the nearest valid spelling, as a mistyped key does, on the
terminal (a pty at 80 columns) and before anything is composed or started: a misspelt command, an override
written as an option, a choice cut short, a list where a sweep was meant."""
from __future__ import annotations

import sys

import pytest

from harness.config.names import nearest_names
from pty_screen import screen

CASES = [
    (("multirn", "algo=dppo"), "harness: error: unknown command 'multirn', did you mean 'multirun'?"),
    (("--algo=dppo",), "harness: error: options are written key=value, without dashes: did you mean algo=dppo?"),
    (("multirun", "--delta=0.1"), "did you mean delta=0.1?"),
    (("--plna", "algo=dppo"), "unknown option '--plna': did you mean --plan?"),
    (("dataset=sort",), "did you mean dataset=sorting?"),
    (("multirun", "algo=[dppo,drpo]"), "a sweep over them is written algo=dppo,drpo"),
    (("algo=[dppo,drpo]",), "a sweep over them is written multirun algo=dppo,drpo"),
]


@pytest.mark.parametrize("args, expected", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_mistake_gets_one_line_with_the_nearest_spelling(run_harness, args, expected):
    code, shown, _ = screen([sys.executable, "-m", "harness", *args], run_harness.root, run_harness.env(),
                            timeout=120)
    errors = [line for line in shown if not line.startswith("harness: composing")]
    assert code == 2 and len(errors) == 1, shown
    assert expected in errors[0], errors[0]
    assert "usage:" not in errors[0] and "__main__.py" not in errors[0] and "delta_high" not in errors[0]
    assert not (run_harness.root / "multirun").exists() and not (run_harness.root / "mlruns.db").exists()


def test_a_word_cut_short_offers_the_names_it_begins_when_none_is_close():
    assert nearest_names("sort", ["arithmetic", "sorting"]) == ["sorting"]
    assert nearest_names("arith", ["arithmetic", "sorting"]) == ["arithmetic"]
    assert nearest_names("so", ["arithmetic", "sorting"]) == [], "two letters are too few to go on"
    assert nearest_names("dpo", ["dppo", "drpo", "dppo_x"]) == ["dppo", "drpo"], "a close name comes first"
