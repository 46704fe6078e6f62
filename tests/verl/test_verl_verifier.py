"""The rule-based math verifier and the verl reward function built on it."""
from __future__ import annotations

import pytest

from harness.trainers.verl.reward import compute_score
from harness.trainers.verl.verifier import (
    extract_answer, is_equivalent, last_boxed, normalize, reference_answer, score, to_number,
)


@pytest.mark.parametrize("text,expected", [
    ("so the answer is \\boxed{42}.", "42"),
    ("first \\boxed{1} then \\boxed{\\frac{3}{4}}", "\\frac{3}{4}"),
    ("nested \\boxed{\\sqrt{x^{2}+1}} done", "\\sqrt{x^{2}+1}"),
    ("spaced \\boxed {7}", "7"),
    ("bare \\boxed 5$", "5"),
    ("\\fbox{12}", "12"),
    ("no box here", None),
    ("unbalanced \\boxed{3", None),
])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize("response,expected", [
    ("Reasoning...\nAnswer: 204", "204"),
    ("Answer: 3\nwait, Answer: 5.", "5"),
    ("**Answer:** 17", "17"),
    ("... \\boxed{9}\nAnswer: 8", "9"),  # the box wins
    ("I don't know", None),
])
def test_extract_answer(response, expected):
    assert extract_answer(response) == expected


@pytest.mark.parametrize("a,b", [
    ("42", "42"), ("042", "42"), ("42.0", "42"), ("1,000", "1000"), ("\\frac{1}{2}", "0.5"),
    ("\\dfrac{1}{2}", "1/2"), ("\\frac12", "\\frac{1}{2}"), ("-\\frac{3}{4}", "-0.75"), ("$5$", "5"),
    ("x = 5", "5"), ("90^\\circ", "90"), ("50\\%", "50"), ("\\text{(B)}", "(B)"), ("{7}", "7"),
    ("\\left( 1, 2 \\right)", "(1,2)"), ("3\\sqrt{2}", "3 \\sqrt{2}"), ("10.", "10"),
])
def test_equivalent(a, b):
    assert is_equivalent(a, b)


@pytest.mark.parametrize("a,b", [
    ("41", "42"), ("1/3", "0.33"), ("(1,2)", "(2,1)"), ("", ""), (None, "1"), ("x+1", "1+x"), ("2", "\\frac{1}{2}"),
])
def test_not_equivalent(a, b):
    assert not is_equivalent(a, b)


def test_numbers_are_exact():
    assert to_number("0.1") + to_number("0.2") == to_number("0.3")
    assert to_number("\\frac{2}{0}") is None and to_number("abc") is None
    assert normalize("\\left[ 1 \\right]") == "[1]"


def test_reference_answers_from_solutions():
    assert reference_answer("We get $x=2$, so \\boxed{\\frac{1}{2}}.") == "\\frac{1}{2}"
    assert reference_answer(" 204 ") == "204"


def test_score_and_verl_reward_function():
    assert score("... so \\boxed{204}", "204") == 1.0
    assert score("... so \\boxed{205}", "204") == 0.0
    assert score("no answer", "204") == 0.0
    result = compute_score(data_source="aime2024", solution_str="Thus \\boxed{1/2}.", ground_truth="\\frac{1}{2}",
                           extra_info={"index": 0})
    assert result == {"score": 1.0, "acc": 1.0, "answered": 1.0}
    assert compute_score("x", "nothing", "3") == {"score": 0.0, "acc": 0.0, "answered": 0.0}
