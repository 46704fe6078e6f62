"""α over a claim's serial redesigns (harness/reports/evidence/serial_designs.py): a verdict is also read with its
decisive p multiplied by the number of designs of the claim, and the sweep file declares that number."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.reports.evidence.serial_designs import family_text
from harness.stats import inference
from harness.reports.evidence.design import parse_design


def _outcome(p_effect, p_against, check=False, alpha=0.05):
    decision = SimpleNamespace(p_effect=p_effect, p_against=p_against)
    return SimpleNamespace(test=SimpleNamespace(check=check), decision=decision, alpha=alpha)


def test_a_first_design_has_nothing_to_account():
    assert family_text(0, [_outcome(0.001, 0.9)], inference.REPRODUCED) is None


def test_a_reproduced_verdict_holds_only_if_its_largest_p_times_the_designs_is_below_alpha():
    outcomes = [_outcome(0.004, 0.9), _outcome(0.011, 0.8), _outcome(0.5, 0.5, check=True)]
    held = family_text(3, outcomes, inference.REPRODUCED)
    assert "3 earlier designs of this claim ran before this one" in held and "0.011 × 4 = 0.044" in held
    assert "the verdict holds" in held
    lost = family_text(4, outcomes, inference.REPRODUCED)
    assert "0.011 × 5 = 0.055" in lost and "does not hold" in lost


def test_a_contradiction_is_corrected_over_the_parts_and_the_designs():
    outcomes = [_outcome(0.9, 0.004), _outcome(0.6, 0.3)]
    text = family_text(2, outcomes, inference.NOT_REPRODUCED)
    assert "0.008 × 3 = 0.024" in text and "holds" in text


def test_an_undecided_design_still_counts_in_the_family():
    text = family_text(1, [_outcome(0.2, 0.3)], inference.INCONCLUSIVE)
    assert "decided nothing" in text and "counts in the 2 all the same" in text and "spent nothing" not in text


def test_every_design_in_the_history_counts_whatever_it_showed():
    history = parse_design("claim", {"history": [
        {"commit": "7b43aa0", "showed": "inconclusive (exploratory)"},
        {"commit": "74b7f2d", "showed": "not reproduced"}, {"commit": "727b4a0", "showed": "refused by its pilot"}],
        "earlier_designs": 1}).history
    assert [e.commit for e in history] == ["7b43aa0", "74b7f2d", "727b4a0"]
    text = family_text(1, [_outcome(0.01, 0.9)], inference.REPRODUCED, history)
    assert "3 earlier designs" in text and "7b43aa0: inconclusive (exploratory)" in text and "at most 4·α" in text
    assert "0.01 × 4 = 0.04" in text and "the verdict holds" in text
    assert parse_design("claim", {"history": [{"commit": "a", "showed": "b"}] * 2}).earlier_designs == 2


@pytest.mark.parametrize("value", [{"commit": "abc"}, "abc", [{"commit": "abc", "showed": ""}], [1]])
def test_history_must_list_commits_and_what_they_showed(value):
    with pytest.raises(ValueError, match="'history"):
        parse_design("claim", {"history": value if isinstance(value, list) else [value]} if value != "abc"
                     else {"history": value})


def test_every_claim_file_lists_its_design_history_and_counts_it():
    from harness.reports.evidence.sweep_spec import load_sweep

    for name in ("claim1_sanity", "claim2_trust_region", "claim3_anchor", "claim4_relaxation",
                 "claim5_drpo_vs_dppo", "claim6_bandpo"):
        design = load_sweep(name).design
        assert design.history and design.earlier_designs == len(design.history), name


@pytest.mark.parametrize("value", [-1, "two", True, 1.5])
def test_earlier_designs_must_be_a_count(value):
    with pytest.raises(ValueError, match="'earlier_designs' is"):
        parse_design("claim", {"earlier_designs": value})


def test_the_claim_files_declare_their_earlier_designs():
    assert parse_design("claim", {"earlier_designs": 3}).earlier_designs == 3
    assert parse_design("claim", {}).earlier_designs == 0
