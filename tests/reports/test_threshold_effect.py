"""The sensitivity report's decision (does the threshold matter?) on synthetic outcomes with known effects."""
from __future__ import annotations

import numpy as np
import pytest

from harness.reports.evidence import threshold_effect as te
from harness.reports.evidence import threshold_plan as plan

VALUES = (0.1, 0.2, 0.5)


def _study(rng, effects, seeds, sd, shared_seed_sd=0.0):
    """{value: {seed: outcome}}: a per-seed shift shared by every value (what pairing removes) plus noise."""
    base = {s: rng.normal(0.0, shared_seed_sd) for s in range(seeds)}
    return {v: {s: float(0.5 + effects.get(v, 0.0) + base[s] + rng.normal(0.0, sd)) for s in range(seeds)}
            for v in VALUES}


def test_no_effect_and_enough_seeds_is_insensitive():
    """Enough seeds: 40 without a failure bound each value's failure rate below the margin (15%)."""
    result = te.decide(_study(np.random.default_rng(1), {}, seeds=40, sd=0.01))
    assert result.word == te.INSENSITIVE and result.decided, result.reason
    assert len(result.pairs) == 3 and all(abs(p.estimate.value) < 0.05 for p in result.pairs)
    assert result.collapse_bound == te.FAILURE_MARGIN
    assert result.seeds_for_insensitive is None and result.seeds_for_sensitive is None  # nothing is open
    assert result.failure_upper[0.1] == pytest.approx(1 - 0.05 ** (1 / 40))


def test_eight_tight_seeds_cannot_rule_out_a_rare_failure():
    """The same study with 8 seeds: every pair is within the SESOI, but 8 runs without a failure cannot show a
    failure rate below the margin 0.15; the verdict is split (insensitive for the typical seed, the failures that
    are not excluded printed: 0/8 leaves 31% open) and asks for the seeds that can (19: 0.85^19 < 0.05)."""
    result = te.decide(_study(np.random.default_rng(1), {}, seeds=8, sd=0.01))
    assert all(p.p_equivalent < 0.05 for p in result.pairs)
    assert result.word == te.TYPICAL and not result.decided, result.reason
    assert "not every value's rate shown below the margin 15%" in result.failure, result.failure
    assert "failures up to 31% not excluded (0/8" in result.failure, result.failure
    assert result.typical.startswith("typical seed: insensitive, every pair within ±0.05")
    assert result.seeds_for_insensitive == 19 and result.seeds_for_sensitive is None


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
    assert result.word == te.DIFFERS and not result.decided, result.reason
    assert result.size.estimate.value == pytest.approx(-0.04) and "-0.040 [" in result.reason
    # what is open is the size: |c| = 0.04 must be told from 0.05, which takes many more seeds than 6
    assert result.seeds_for_sensitive > 6 and result.seeds_for_insensitive is None


def test_a_small_difference_shown_within_the_sesoi_is_decided_with_its_size():
    """A real difference of 0.01 measured tightly on 40 seeds: c ≠ 0 is shown and so is |c| < 0.05, and no
    value fails: 'sensitive, within the SESOI' is decided (sign and size), with c and its interval."""
    rng = np.random.default_rng(5)
    result = te.decide({0.1: {s: 0.5 + rng.normal(0, 0.005) for s in range(40)},
                        0.2: {s: 0.51 + rng.normal(0, 0.005) for s in range(40)}})
    assert result.word == te.SMALL and result.decided, result.reason
    assert "by less than the SESOI" in result.reason and abs(result.size.estimate.value) < 0.02


def test_noise_with_three_seeds_is_undecided_and_prints_what_would_decide():
    result = te.decide(_study(np.random.default_rng(3), {}, seeds=3, sd=0.1))
    assert result.word == te.UNDECIDED and not result.decided
    assert result.seeds_for_insensitive > 3 and result.seeds_for_sensitive > 3


def test_pairing_removes_the_seed_effect():
    # seeds differ a lot from each other (sd 0.2), values not at all beyond small noise: paired, it decides
    result = te.decide(_study(np.random.default_rng(4), {}, seeds=30, sd=0.005, shared_seed_sd=0.2))
    assert result.word == te.INSENSITIVE, result.reason
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
    n = plan.OpenSeeds(pilot.pairs, pilot.collapses, 0.05, 0.05, 0.8, te.FAILURE_MARGIN).sensitive()
    assert 3 < n < 40
    sims = 200
    found = sum(te.decide(_study(rng, {0.5: 0.05}, seeds=n, sd=0.04)).word in (te.SENSITIVE, te.DIFFERS)
                for _ in range(sims))
    assert found / sims >= 0.72, (n, found / sims)


def _collapsing_study(rng, seeds, rate, depth=0.4, sd=0.015, seed_sd=0.03):
    """Final accuracy ~0.66 at every value; the last value's runs collapse (lose `depth`) at `rate`."""
    base = rng.normal(0.0, seed_sd, seeds)
    outcomes, collapsed = {}, {}
    for v in VALUES:
        flags = rng.random(seeds) < rate if v == VALUES[-1] else np.zeros(seeds, bool)
        x = np.clip(0.66 + base + rng.normal(0.0, sd, seeds) - depth * flags, 0.0, 1.0)
        outcomes[v] = {s: float(x[s]) for s in range(seeds)}
        collapsed[v] = {s: bool(flags[s]) for s in range(seeds)}
    return outcomes, collapsed


@pytest.mark.parametrize("seeds", [8, 16, 40])
def test_a_threshold_that_collapses_in_15_percent_of_seeds_is_not_called_insensitive(seeds):
    """One δ collapses in 15% of its seeds (the failure margin): 'insensitive' at most α of the time. A t-TOST on
    the means alone said it in 34% of 8-seed studies: most of them happened to show no collapse (0.85^8 = 27%)."""
    rng = np.random.default_rng(40 + seeds)
    sims = 300
    said = sum(te.decide(*_split(_collapsing_study(rng, seeds, 0.15))).word == te.INSENSITIVE for _ in range(sims))
    assert said / sims <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / sims), said / sims


def _split(study):
    outcomes, collapsed = study
    return outcomes, te.DEFAULT_SESOI, 0.05, 0.8, (0.0, 1.0), collapsed


def test_insensitive_is_reached_at_the_seeds_the_verdict_asks_for():
    """No effect and no collapse: an 8-seed pilot is undecided and names n; at n seeds 'insensitive' comes
    at least ~80% of the time (the power the page promises)."""
    rng = np.random.default_rng(50)
    pilot = te.decide(*_split(_collapsing_study(rng, 8, 0.0, sd=0.02)))
    n = pilot.seeds_for_insensitive
    assert pilot.word in (te.UNDECIDED, te.TYPICAL) and 8 < n < 80, (pilot.word, n)
    sims = 100
    said = sum(te.decide(*_split(_collapsing_study(rng, n, 0.0, sd=0.02))).word == te.INSENSITIVE
               for _ in range(sims))
    assert said / sims >= 0.72, (n, said / sims)


def test_a_threshold_that_collapses_often_is_sensitive_and_says_so():
    outcomes, collapsed = _collapsing_study(np.random.default_rng(60), 12, 1.0, depth=0.01)
    result = te.decide(outcomes, collapsed=collapsed)  # outcomes barely move; 12/12 collapses against 0/12
    assert result.word == te.SENSITIVE and "fail at different rates" in result.reason, result.reason
    assert str(result.collapses[VALUES[-1]]) == "12/12" and str(result.collapses[VALUES[0]]) == "0/12"


def test_a_run_that_failed_on_a_non_finite_loss_counts_as_a_collapse_without_an_outcome():
    outcomes = {v: {s: 0.6 + 0.01 * s for s in range(4)} for v in VALUES}
    result = te.decide(outcomes, collapsed={VALUES[0]: {99: True}})
    assert str(result.collapses[VALUES[0]]) == "1/5" and str(result.collapses[VALUES[1]]) == "0/4"
