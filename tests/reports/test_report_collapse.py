"""Collapse detection is a pure function: pinned cases."""
from __future__ import annotations

import math

import numpy as np

from harness.reports.collapse import detect_collapse, fall_from_best, moving_average

S = np.arange(8)


def test_no_collapse_when_accuracy_keeps_rising_or_dips_and_recovers():
    assert fall_from_best(S, [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.6]) is None
    assert fall_from_best(S, [0.1, 0.5, 0.6, 0.2, 0.1, 0.5, 0.6, 0.55]) is None  # recovered
    assert detect_collapse(eval_acc=(S, [0.1, 0.5, 0.6, 0.2, 0.1, 0.5, 0.6, 0.55])) is None


def test_final_fall_is_found_at_its_first_step():
    values = [0.1, 0.5, 0.6, 0.2, 0.5, 0.3, 0.1, 0.05]  # back within 0.2 at step 4, then down for good
    assert fall_from_best(S, values) == 5
    collapse = detect_collapse(eval_acc=(S * 10, values))
    assert collapse.step == 50 and collapse.metric == "eval/accuracy" and "0.600" in collapse.reason


def test_drop_threshold_is_strict_and_configurable():
    values = [0.0, 0.6, 0.41, 0.41]  # 0.19 below the best: not a collapse at the default 0.2
    assert fall_from_best(np.arange(4), values) is None
    assert fall_from_best(np.arange(4), values, drop=0.1) == 2


def test_non_finite_values_are_skipped_in_accuracy_but_collapse_the_loss():
    assert fall_from_best(S[:4], [0.5, math.nan, 0.5, 0.5]) is None
    c = detect_collapse(eval_acc=(S, np.full(8, 0.5)), loss=(S, [0.1, 0.1, 0.2, math.inf, 0.1, 0.1, 0.1, 0.1]))
    assert (c.step, c.metric) == (3, "train/loss")


def test_train_accuracy_is_smoothed_so_one_bad_batch_is_not_a_collapse():
    noisy = np.array([0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.1])  # one bad last batch
    assert detect_collapse(train_acc=(S, noisy)) is None
    fallen = np.r_[np.full(10, 0.7), np.full(10, 0.05)]
    c = detect_collapse(train_acc=(np.arange(20), fallen))
    assert c.metric == "train/accuracy" and 10 <= c.step <= 13


def test_failed_run_with_non_finite_error_collapses_at_the_named_step():
    error = "FloatingPointError: non-finite loss nan at step 7"
    c = detect_collapse(eval_acc=(S[:3], [0.1, 0.2, 0.3]), status="FAILED", error=error)
    assert (c.step, c.metric) == (7, "error")
    c = detect_collapse(eval_acc=(S[:3], [0.1, 0.2, 0.3]), status="FAILED", error="loss became NaN")
    assert c.step == 3  # no step named: right after the last logged step
    assert detect_collapse(status="FAILED", error="OSError: disk full") is None
    assert detect_collapse(status="FINISHED", error="non-finite") is None


def test_earliest_cause_wins_and_short_histories_are_safe():
    c = detect_collapse(eval_acc=(S, [0.1, 0.6, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1]),
                        loss=(S, [0, 0, 0, 0, 0, 0, math.nan, 0]))
    assert c.step == 4
    assert detect_collapse(eval_acc=(np.array([0]), np.array([0.5]))) is None
    assert detect_collapse() is None


def test_moving_average_is_trailing():
    assert moving_average([1, 2, 3, 4, 5, 6], 3).tolist() == [1.0, 1.5, 2.0, 3.0, 4.0, 5.0]
