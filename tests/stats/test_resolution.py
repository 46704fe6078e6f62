"""Contrasts within a measure's resolution are ties, no evidence either way (issue 35): an intervention that
never fires must not read as equivalence, nor rounding-level contrasts as an effect."""
from __future__ import annotations

import numpy as np
import pytest

from harness.reports.results.data import Run
from harness.reports.evidence.outcomes import resolution
from harness.stats import robust
from harness.stats.inference import INCONCLUSIVE, METHODS, decide, estimate
from harness.stats.resolution import ACCURACY_RESOLUTION, CONTINUOUS_FLOOR, measure_resolution, ties
from harness.stats.words import HYPOTHESES

SEEDS = range(16)
ONE_PROBLEM = 1 / 192  # 64 eval problems, mean of the last 3 evaluations


def _paired(contrasts, resolution=0.0, base=0.5):
    """The estimate of arm A − arm B where A = B + contrast per seed (B varies between seeds)."""
    b = {s: base + 0.01 * (s % 5) for s in SEEDS}
    a = {s: b[s] + c for s, c in zip(SEEDS, contrasts)}
    return estimate([a, b], [1.0, -1.0], resolution=resolution)


def _every_decision(est):
    return [(h, m, decide(est, h, 0.02, 0.05, bounds=(-1.0, 1.0), method=m, exchangeable=True))
            for h in HYPOTHESES for m in METHODS]


@pytest.mark.parametrize("resolution", [0.0, ONE_PROBLEM])
def test_fifteen_zero_contrasts_and_one_of_0_01_decide_nothing(resolution):
    """Was 'not reproduced' (sign test: equivalence, p = 2^-16 = 1.5e-5; t: TOST p ~ 1e-15)."""
    est = _paired([0.0] * 15 + [0.01], resolution)
    for hypothesis, method, d in _every_decision(est):
        assert d.word == INCONCLUSIVE, (hypothesis, method, d.reason)
        assert "15 of 16 per-seed contrasts" in d.reason and "no evidence either way" in d.reason
        assert d.p_effect is None and d.p_against is None
        assert d.low <= d.centre <= d.high and d.median == (method == "sign")  # the figure's error bar


def test_sixteen_contrasts_of_1e_9_decide_nothing():
    """Was 'reproduced' (sign test p = 2^-16; the t-test too) whenever rounding left them a spread."""
    near = [1e-9 + 1e-11 * k for k in SEEDS]
    est = _paired(near, ACCURACY_RESOLUTION)
    for hypothesis, method, d in _every_decision(est):
        assert d.word == INCONCLUSIVE, (hypothesis, method, d.reason)
        assert "16 of 16 per-seed contrasts lie within the measure's resolution" in d.reason
    # without a resolution these are 16 positive contrasts with a spread: the tests do decide
    assert decide(_paired(near), "greater", 0.02, 0.05, method="sign").word == "reproduced"


def test_sixteen_equal_contrasts_of_1e_9_have_no_spread_even_without_a_resolution():
    est = _paired([1e-9] * 16)
    assert est.se == 0
    for hypothesis, method, d in _every_decision(est):
        assert d.word == INCONCLUSIVE and d.reason.startswith("no spread"), (hypothesis, method)


def test_a_contrast_of_one_full_step_is_not_a_tie():
    one_step = (0.5 + 0.5 + 33 / 64) / 3 - (0.5 + 0.5 + 0.5) / 3  # one problem more, mean of 3 evaluations
    assert ties([one_step, -one_step, 0.0, ONE_PROBLEM / 2, 1e-13], ONE_PROBLEM).tolist() == [
        False, False, True, True, True]
    assert ties([1e-9, 0.0], 0.0).tolist() == [False, True]


def test_sign_tests_drop_ties_and_count_the_contrasts_beyond_the_resolution():
    contrasts = [1e-9 * (k + 1) for k in range(8)] + [0.05] * 8
    est = _paired(contrasts, ACCURACY_RESOLUTION)
    median = robust.MedianTests(est)
    assert median.p_above(0.0) == pytest.approx(0.5 ** 8)  # 8 of 8 beyond the resolution are above 0
    assert median.p_below(0.0) == 1.0
    flips = robust.ExactTests(est, (-1.0, 1.0), exchangeable=True)
    assert flips.p_above(0.0) == pytest.approx(0.5 ** 8)  # the ties' signs are no evidence
    assert robust.ExactTests(_paired(contrasts), (-1.0, 1.0), True).p_above(0.0) == pytest.approx(0.5 ** 16)
    low, high = median.interval(0.05)
    assert low < 1e-6 < high  # the interval keeps every contrast


def test_enough_contrasts_beyond_the_resolution_still_decide():
    est = _paired([0.0] * 10 + [0.05] * 6, ONE_PROBLEM)
    assert est.untestable(0.05) is None  # 6 left: 2^-6 < 0.05
    assert decide(est, "greater", 0.02, 0.05, method="sign").word == "reproduced"
    assert "12 of 16" in _paired([0.0] * 12 + [0.05] * 4, ONE_PROBLEM).untestable(0.05)


def _run(seed, trainer="builtin", eval_size=64):
    return Run(f"r{seed}", "name", "FINISHED", params={"trainer.name": trainer, "dataset.eval_size": str(eval_size),
                                                       "seed": str(seed)})


def test_the_resolution_of_a_claims_contrast_comes_from_the_runs_eval_set():
    builtin = [_run(s) for s in range(4)]
    assert resolution(builtin, "final_accuracy", [1.0, -1.0], 3) == pytest.approx(ONE_PROBLEM)
    assert resolution(builtin, "gain", [0.5, 0.5, -1.0], 3) == pytest.approx(ONE_PROBLEM / 2)
    assert resolution(builtin + [_run(9, "builtin", 128)], "final_accuracy", [1.0, -1.0], 1) == 1 / 128
    assert resolution(builtin + [_run(9, "verl", 30)], "final_accuracy", [1.0, -1.0], 3) == ACCURACY_RESOLUTION
    assert resolution(builtin, "train_accuracy", [1.0, -1.0], 3) == ACCURACY_RESOLUTION
    assert resolution(builtin, "entropy", [1.0, -1.0], 3) == CONTINUOUS_FLOOR  # a continuous measure: its noise floor
    assert measure_resolution("final_accuracy") == ACCURACY_RESOLUTION
