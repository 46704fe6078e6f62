"""Collapse detection is a pure function: pinned cases. A run collapses when its smoothed accuracy ends
more than DROP below its own start and stays there."""
from __future__ import annotations

import math

import numpy as np

from harness.stats.collapse import detect_collapse, fall_below_start, moving_average

S = np.arange(8)


def test_no_collapse_when_accuracy_rises_or_ends_above_its_start():
    assert fall_below_start(S, [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.6]) is None
    # fell far from its best (0.6) but ends above where it started: not a collapse any more
    assert detect_collapse(eval_acc=(S, [0.3, 0.5, 0.6, 0.5, 0.4, 0.35, 0.32, 0.3])) is None


def test_final_fall_below_the_start_is_found_at_its_first_step():
    values = [0.4, 0.5, 0.6, 0.1, 0.5, 0.1, 0.05, 0.05]
    assert fall_below_start(S, values) == 5
    collapse = detect_collapse(eval_acc=(S * 10, values), eval_window=1)
    assert collapse.step == 50 and collapse.metric == "eval/accuracy" and "0.400" in collapse.reason


def test_smoothing_ignores_one_bad_evaluation():
    one_bad = [0.4, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.1]
    assert detect_collapse(eval_acc=(S, one_bad)) is None  # 3-evaluation mean: 0.43
    assert detect_collapse(eval_acc=(S, one_bad), eval_window=1) is not None


def test_drop_threshold_is_strict_and_configurable():
    values = [0.5, 0.6, 0.36, 0.36]  # 0.14 below the start: not a collapse at the default 0.15
    assert fall_below_start(np.arange(4), values) is None
    assert fall_below_start(np.arange(4), values, drop=0.1) == 2


def test_non_finite_values_are_skipped_in_accuracy_but_collapse_the_loss():
    assert fall_below_start(S[:4], [0.5, math.nan, 0.5, 0.5]) is None
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
    c = detect_collapse(eval_acc=(S, [0.6, 0.6, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1]),
                        loss=(S, [0, 0, 0, 0, 0, 0, math.nan, 0]), eval_window=1)
    assert c.step == 4
    assert detect_collapse(eval_acc=(np.array([0]), np.array([0.5]))) is None
    assert detect_collapse() is None


def test_moving_average_is_trailing():
    assert moving_average([1, 2, 3, 4, 5, 6], 3).tolist() == [1.0, 1.5, 2.0, 3.0, 4.0, 5.0]
