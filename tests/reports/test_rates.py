"""Exact tests on collapse rates (harness/stats/rates.py): their size holds at any rate, and the run counts
they ask for suffice."""
from __future__ import annotations

import numpy as np
import pytest

from harness.stats import rates


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
def test_a_difference_in_rates_is_found_at_most_alpha_of_the_time_when_there_is_none(rate):
    rng = np.random.default_rng(int(rate * 100))
    sims, n = 2000, 20
    hits = sum(rates.p_differ(rates.Count(int(a), n), rates.Count(int(b), n)) < 0.05
               for a, b in rng.binomial(n, rate, size=(sims, 2)))
    assert hits / sims <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / sims)


def test_forty_percent_against_five_is_found_with_about_80_percent_power_at_24_runs_per_arm():
    rng = np.random.default_rng(7)
    sims, n = 2000, 24
    found = sum(rates.p_differ(rates.Count(int(a), n), rates.Count(int(b), n)) < 0.05
                for a, b in zip(rng.binomial(n, 0.4, sims), rng.binomial(n, 0.05, sims)))
    assert 0.72 <= found / sims <= 0.95, found / sims


@pytest.mark.parametrize("bound", [0.05, 0.1, 0.3])
def test_a_rate_at_its_bound_is_shown_below_it_at_most_alpha_of_the_time(bound):
    rng = np.random.default_rng(int(bound * 1000))
    sims = 4000
    for n in (8, 30, 60):
        hits = sum(rates.p_below(rates.Count(int(k), n), bound) < 0.05 for k in rng.binomial(n, bound, sims))
        assert hits / sims <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / sims), (n, hits / sims)


@pytest.mark.parametrize("bound", [0.05, 0.076, 0.1, 0.3])
def test_the_runs_asked_for_show_the_bound_when_none_collapses_and_one_fewer_do_not(bound):
    n = rates.runs_to_show_below(bound, 0.05)
    assert rates.p_below(rates.Count(0, n), bound) < 0.05 <= rates.p_below(rates.Count(0, n - 1), bound)


def test_edges():
    assert rates.p_differ(rates.Count(0, 0), rates.Count(3, 5)) == 1.0
    assert rates.p_below(rates.Count(0, 10), 1.0) == 0.0 and rates.p_below(rates.Count(0, 10), 0.0) == 1.0
    assert rates.runs_to_show_below(1.0, 0.05) == 1
    assert str(rates.Count(2, 8)) == "2/8"


def test_the_exact_fisher_power_matches_simulated_studies():
    rng = np.random.default_rng(11)
    sims, n = 3000, 16
    simulated = np.mean([rates.p_greater(rates.Count(int(a), n), rates.Count(int(b), n)) <= 0.05
                         for a, b in zip(rng.binomial(n, 0.6, sims), rng.binomial(n, 0.2, sims))])
    assert abs(rates.fisher_power(0.6, 0.2, n, 0.05) - simulated) < 3 * np.sqrt(0.25 / sims)


@pytest.mark.parametrize("rate", [0.05, 0.3, 0.7])
def test_the_one_sided_fisher_test_holds_its_size_at_any_common_rate(rate):
    assert rates.fisher_power(rate, rate, 20, 0.05) <= 0.05


def test_the_runs_asked_for_reach_the_power_and_one_fewer_do_not():
    n = rates.runs_for_fisher_power(0.4, 0.05, 0.05, 0.8)
    assert rates.fisher_power(0.4, 0.05, n, 0.05) >= 0.8 > rates.fisher_power(0.4, 0.05, n - 1, 0.05)
    assert 18 <= n <= 30  # the ~24 per arm the planning figure gives
