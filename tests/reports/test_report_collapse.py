"""Collapse detection is a pure function: pinned cases. A run collapses when its smoothed accuracy ends
below its own start by more than min(DROP, REL_DROP × start) and stays there (for eval accuracy, by at
least one problem's worth where the eval set's size is known)."""
from __future__ import annotations

import math

import numpy as np

from harness.reports.results.data import Run
from harness.reports.results.summary import eval_problem
from harness.stats.collapse import DROP, REL_DROP, detect_collapse, fall_below_start, fall_threshold, moving_average

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


def test_a_run_that_starts_low_collapses_when_it_loses_half_of_its_start():
    """Issue 35: a fresh seed fell from 0.078 eval accuracy to 0; a fixed drop of 0.15 could never flag it."""
    steps = np.arange(0, 12, 2)
    c = detect_collapse(eval_acc=(steps, [0.078, 0.078, 0.078, 0.0, 0.0, 0.0]))
    assert c is not None and c.metric == "eval/accuracy" and c.step == 8  # the 3-evaluation mean: 0.026
    assert "0.078" in c.reason and "50% of its start" in c.reason
    fixed_drop_alone = detect_collapse(eval_acc=(steps, [0.078, 0.078, 0.078, 0.0, 0.0, 0.0]), rel_drop=math.inf)
    assert fixed_drop_alone is None
    # lost less than half of its start: not a collapse
    assert detect_collapse(eval_acc=(steps, [0.078, 0.078, 0.078, 0.05, 0.05, 0.05])) is None


def test_a_run_that_starts_high_still_needs_the_fixed_drop():
    steps = np.arange(6)
    assert fall_threshold(0.45) == DROP and fall_threshold(0.078) == REL_DROP * 0.078 and fall_threshold(0.0) == 0
    assert detect_collapse(eval_acc=(steps, [0.45, 0.45, 0.45, 0.36, 0.36, 0.36])) is None  # 0.09 < 0.15
    c = detect_collapse(eval_acc=(steps, [0.45, 0.45, 0.45, 0.29, 0.29, 0.29]))
    assert c is not None and "0.15 points" in c.reason


def test_a_run_at_zero_cannot_collapse_by_accuracy():
    assert fall_below_start(np.arange(6), np.zeros(6), window=3) is None


def test_a_run_near_zero_that_wobbles_by_one_eval_problem_is_not_a_collapse():
    """64 eval problems: 1, 1, 1, 0, 2, 1, 0, 1, 0 solved. The 3-evaluation mean ends at 1/192, 2/192 below
    the start 1/64: more than half of it, but less than one problem's worth, so only noise."""
    one = 1 / 64
    solved = np.array([1, 1, 1, 0, 2, 1, 0, 1, 0]) * one
    steps = np.arange(len(solved))
    assert detect_collapse(eval_acc=(steps, solved), eval_resolution=one) is None
    assert detect_collapse(eval_acc=(steps, solved)) is not None  # eval size unknown: the relative rule alone
    # the one problem it solved is lost for good: a fall of one problem's worth is a collapse
    lost = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0]) * one
    assert detect_collapse(eval_acc=(steps, lost), eval_resolution=one).step == 6  # the mean is 0 from step 6


def test_eval_problem_is_known_for_the_builtin_trainer_only():
    def run(**params):
        return Run("id", "name", "FINISHED", params={k: str(v) for k, v in params.items()})
    assert eval_problem(run(**{"trainer.name": "builtin", "dataset.eval_size": 64})) == 1 / 64
    assert eval_problem(run(**{"trainer.name": "verl", "dataset.eval_size": 30})) is None  # avg@k over sets
    assert eval_problem(run(**{"trainer.name": "builtin"})) is None
