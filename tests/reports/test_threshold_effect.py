"""The sensitivity report's decision (does the threshold matter?) on synthetic outcomes with known effects."""
from __future__ import annotations

import numpy as np
import pytest

from harness.reports import threshold_effect as te

VALUES = (0.1, 0.2, 0.5)


def _study(rng, effects, seeds, sd, shared_seed_sd=0.0):
    """{value: {seed: outcome}}: a per-seed shift shared by every value (what pairing removes) plus noise."""
    base = {s: rng.normal(0.0, shared_seed_sd) for s in range(seeds)}
    return {v: {s: float(0.5 + effects.get(v, 0.0) + base[s] + rng.normal(0.0, sd)) for s in range(seeds)}
            for v in VALUES}


def test_no_effect_and_enough_seeds_is_insensitive():
    result = te.decide(_study(np.random.default_rng(1), {}, seeds=8, sd=0.01))
    assert result.word == te.INSENSITIVE and result.decided
    assert len(result.pairs) == 3 and all(abs(p.estimate.value) < 0.05 for p in result.pairs)


def test_a_large_effect_is_sensitive_and_names_the_pair():
    result = te.decide(_study(np.random.default_rng(2), {0.5: 0.2}, seeds=6, sd=0.02))
    assert result.word == te.SENSITIVE
    assert "vs 0.5" in result.reason


def test_pairs_without_spread_or_with_too_few_seeds_show_nothing():
    """Ties of a discrete outcome: 0.1 and 0.2 differ by exactly 0.25 on every seed (no spread), which a t-test
    would call p = 0; and 4 seeds cannot reach α 0.05 (2^−4 ≥ α). Neither is called sensitive."""
    tied = te.decide({0.1: {s: 0.5 + 0.01 * s for s in range(6)}, 0.2: {s: 0.75 + 0.01 * s for s in range(6)}})
    assert tied.word == te.UNDECIDED and "no spread" in tied.reason
    few = te.decide(_study(np.random.default_rng(2), {0.5: 0.2}, seeds=4, sd=0.02))
    assert few.word == te.UNDECIDED and "too few seeds" in few.reason


def test_a_small_shown_difference_is_sensitive_with_its_size_undecided():
    # a real difference of 0.04, below the SESOI 0.05, measured precisely enough to show c ≠ 0 but neither
    # |c| > 0.05 nor |c| < 0.05
    differences = [0.01, 0.07, 0.02, 0.06, 0.04, 0.04]  # mean 0.04, SE ≈ 0.009
    result = te.decide({0.1: {s: 0.5 for s in range(6)}, 0.2: {s: 0.5 + d for s, d in enumerate(differences)}},
                       sesoi=0.05)
    assert result.word == te.DIFFERS, result.reason


def test_noise_with_three_seeds_is_undecided_and_prints_what_would_decide():
    result = te.decide(_study(np.random.default_rng(3), {}, seeds=3, sd=0.1))
    assert result.word == te.UNDECIDED and not result.decided
    assert result.seeds_for_insensitive > 3 and result.seeds_for_sensitive > 3


def test_pairing_removes_the_seed_effect():
    # seeds differ a lot from each other (sd 0.2), values not at all beyond small noise: paired, it decides
    result = te.decide(_study(np.random.default_rng(4), {}, seeds=6, sd=0.005, shared_seed_sd=0.2))
    assert result.word == te.INSENSITIVE
    assert all(p.estimate.paired for p in result.pairs)


def test_values_with_one_seed_take_no_part():
    result = te.decide({0.1: {0: 0.5}, 0.2: {0: 0.6}})
    assert result.word == te.UNDECIDED and result.pairs == [] and "no test" in result.reason


def test_intervals_stay_inside_the_range_a_difference_of_accuracies_can_take():
    result = te.decide({0.1: {0: 0.0, 1: 0.0, 2: 0.02}, 0.2: {0: 1.0, 1: 0.96, 2: 1.0}})
    assert all(-1.0 <= p.low <= p.high <= 1.0 for p in result.pairs)


@pytest.mark.parametrize("seeds", [3, 6])
def test_false_alarm_rate_under_no_effect_is_at_most_alpha(seeds):
    """No threshold effect: 'sensitive' in any form at most α of the time (Holm over the pairs)."""
    rng = np.random.default_rng(10 + seeds)
    sims = 400
    alarms = sum(te.decide(_study(rng, {}, seeds=seeds, sd=0.05)).word in (te.SENSITIVE, te.DIFFERS)
                 for _ in range(sims))
    rate = alarms / sims
    assert rate <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / sims), rate


def test_equivalence_is_not_claimed_for_a_true_difference_at_the_sesoi():
    """A true difference exactly at the SESOI: 'insensitive' at most α of the time (TOST's error rate)."""
    rng = np.random.default_rng(20)
    sims = 400
    hits = sum(te.decide(_study(rng, {0.5: 0.05}, seeds=10, sd=0.02), sesoi=0.05).word == te.INSENSITIVE
               for _ in range(sims))
    assert hits / sims <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / sims), hits / sims


def test_a_large_effect_is_detected_at_the_power_the_page_promises():
    """At the seeds the verdict says 80% power needs, a true difference of the SESOI is found ~80% of the time."""
    rng = np.random.default_rng(30)
    pilot = te.decide(_study(rng, {}, seeds=40, sd=0.04))  # a long pilot: its spread is the true one
    n = pilot.seeds_for_sensitive
    assert 3 < n < 40
    sims = 200
    found = sum(te.decide(_study(rng, {0.5: 0.05}, seeds=n, sd=0.04)).word in (te.SENSITIVE, te.DIFFERS)
                for _ in range(sims))
    assert found / sims >= 0.72, (n, found / sims)
