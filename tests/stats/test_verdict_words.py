"""Verdicts that say no more than the data (#52 item 5), with the project's own functions and fixed seeds:
a hypothesis that states a size is reproduced only when the size is shown, a shifted sign test counts ties,
and contrasts within a continuous measure's noise floor decide nothing under any method."""
from __future__ import annotations

import numpy as np
import pytest

from harness.stats import inference
from harness.stats.combine import combine
from harness.stats.resolution import measure_resolution
from harness.stats.words import DIRECTION_ONLY, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, VERDICTS

LOG3 = 1.099


def _paired(contrasts, measure="log_entropy_change"):
    """Two arms whose per-seed contrast is `contrasts` (arm b at 0), at the measure's resolution."""
    a = {s: float(v) for s, v in enumerate(contrasts)}
    b = {s: 0.0 for s in range(len(contrasts))}
    return inference.estimate([a, b], [1.0, -1.0], resolution=measure_resolution(measure))


def _decide(est, hypothesis="greater", sesoi=LOG3, method="sign", size=False, alpha=0.05):
    return inference.decide(est, hypothesis, sesoi, alpha, method=method, exchangeable=True, size=size,
                            with_power=False)


def test_the_new_word_is_a_verdict():
    assert DIRECTION_ONLY == "direction reproduced, size not shown" and DIRECTION_ONLY in VERDICTS


@pytest.mark.parametrize("method", ["t", "sign", "exact"])
def test_a_stated_size_is_reproduced_only_when_the_size_is_shown(method):
    rng = np.random.default_rng(52)
    small = rng.normal(0.076, 0.05, 16)  # issue #52: claim 6's median contrast 0.076 against a size of log 3
    assert _decide(_paired(small), method=method).word == REPRODUCED  # c > 0 alone: the old reading
    sized = _decide(_paired(small), method=method, size=True)
    assert sized.word == NOT_REPRODUCED and "equivalence" in sized.reason  # |c| < log 3 shown: size ruled out
    between = rng.normal(1.3, 0.6, 16)  # above 0 for sure, above log 3 not shown, within log 3 not shown
    word = _decide(_paired(between), method=method, size=True)
    assert word.word == DIRECTION_ONLY and not word.decided and "stated size" in word.reason
    large = rng.normal(2.5, 0.3, 16)
    assert _decide(_paired(large), method=method, size=True).word == REPRODUCED


def test_a_stated_size_keeps_its_level_at_the_boundary():
    """Median contrast exactly at the stated size: "reproduced" at most α of the time (sign test, 16 seeds)."""
    rng = np.random.default_rng(7)
    words = [_decide(_paired(LOG3 + rng.standard_t(3, 16) * 0.4), size=True).word for _ in range(600)]
    assert words.count(REPRODUCED) / len(words) <= 0.05
    assert words.count(DIRECTION_ONLY) > 0  # the boundary's direction is shown, its size is not


def test_a_claim_with_a_part_whose_size_is_not_shown_says_so():
    shown = _decide(_paired(np.linspace(2.0, 3.0, 16)), size=True)
    direction = _decide(_paired(np.linspace(0.3, 2.3, 16)), size=True)  # 16 above 0, 9 above log 3
    assert (shown.word, direction.word) == (REPRODUCED, DIRECTION_ONLY)
    assert combine([shown, direction], 0.05)[0] == DIRECTION_ONLY
    assert combine([shown, shown], 0.05)[0] == REPRODUCED


def test_a_shifted_sign_test_counts_ties_against_the_claim():
    """Ten tied seeds and six at −0.3: the median is 0, so "median < −SESOI" is not shown (issue #52)."""
    est = _paired([0.0] * 10 + [-0.3] * 6, measure="final_accuracy")
    decision = _decide(est, hypothesis="noninferior", sesoi=0.1)
    assert decision.word == INCONCLUSIVE and decision.p_against > 0.2
    tests = inference.robust.MedianTests(est)
    assert tests.p_below(-0.1) == pytest.approx(0.8949, abs=1e-4)  # 6 of 16 below: P(Bin(16, ½) ≥ 6)
    assert tests.p_below(0.0) == pytest.approx(0.5 ** 6)  # the unshifted test drops the ties: 6 of 6 below


@pytest.mark.parametrize("method", ["t", "sign", "exact"])
@pytest.mark.parametrize("hypothesis", ["greater", "less", "noninferior", "equivalent"])
def test_contrasts_within_the_noise_floor_decide_nothing(method, hypothesis):
    rng = np.random.default_rng(11)
    tiny = 1e-9 + rng.normal(0.0, 1e-11, 16)  # 16 contrasts of 1e-9 ± 1e-11 on a continuous measure
    decision = _decide(_paired(tiny, measure="mismatch"), hypothesis=hypothesis, sesoi=0.01, method=method)
    assert decision.word == INCONCLUSIVE and "resolution" in decision.reason and decision.p_effect is None


def test_unpaired_arms_within_the_noise_floor_decide_nothing():
    rng = np.random.default_rng(12)
    a = {f"a{i}": 0.05 + 1e-9 + v for i, v in enumerate(rng.normal(0, 1e-11, 8))}
    b = {f"b{i}": 0.05 + v for i, v in enumerate(rng.normal(0, 1e-11, 8))}
    est = inference.estimate([a, b], [1.0, -1.0], resolution=measure_resolution("mismatch"))
    decision = _decide(est, sesoi=0.01, method="t")
    assert not est.paired and decision.word == INCONCLUSIVE and "noise floor" in decision.reason
    far = {k: v + 0.01 for k, v in a.items()}  # a real difference above the floor still decides
    assert _decide(inference.estimate([far, b], [1.0, -1.0], resolution=1e-6), sesoi=0.001, method="t").word \
        == REPRODUCED
