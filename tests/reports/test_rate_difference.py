"""The exact non-inferiority test on two collapse rates (harness/stats/rate_difference.py) and its use in a
design (method: rate_difference): its restricted rates are the likelihood's maximum, its size holds anywhere
in the null, its power is what simulated studies find, and a design that cannot use it is refused."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.reports.evidence import rate_decisions
from harness.stats import inference, rate_difference as rd
from harness.reports.evidence.design import parse_design
from harness.stats.rates import Count


@pytest.mark.parametrize("runs_a,runs_b,bound", [(20, 20, -0.2), (13, 29, 0.25), (8, 8, -0.5), (30, 10, 0.1)])
def test_the_restricted_rates_maximise_the_likelihood_on_the_bound(runs_a, runs_b, bound):
    ka, kb = np.arange(runs_a + 1)[:, None], np.arange(runs_b + 1)[None, :]
    ra, rb = rd.restricted_rates(ka, runs_a, kb, runs_b, bound)
    assert np.allclose(ra - rb, bound, atol=1e-9)
    grid = np.linspace(max(0.0, -bound), min(1.0, 1.0 - bound), 20001)[None, None, :]
    with np.errstate(divide="ignore"):
        ll = stats.binom.logpmf(ka[..., None], runs_a, grid + bound) + stats.binom.logpmf(kb[..., None], runs_b, grid)
    best = grid[0, 0, np.argmax(ll, axis=2)]
    assert np.abs(rb - best).max() < 1e-4


@pytest.mark.parametrize("runs,bound", [(8, -0.2), (20, 0.0), (40, -0.2), (40, 0.25)])
def test_its_size_is_at_most_alpha_anywhere_in_the_null_not_only_on_its_boundary(runs, bound):
    reject = rd._p_table(runs, runs, bound) <= 0.05
    ks = np.arange(runs + 1)
    worst = 0.0
    for ra in np.linspace(0.0, 1.0, 41):
        for rb in np.linspace(0.0, 1.0, 41):
            if ra - rb <= bound + 1e-12:
                worst = max(worst, float((np.outer(stats.binom.pmf(ks, runs, ra), stats.binom.pmf(ks, runs, rb))
                                          * reject).sum()))
    assert 0.0 < worst <= 0.05, worst


def test_its_exact_power_is_what_simulated_studies_find():
    rng = np.random.default_rng(11)
    sims, runs, bound = 3000, 30, -0.2
    found = np.mean([rd.p_above(Count(int(a), runs), Count(int(b), runs), bound) <= 0.05
                     for a, b in zip(rng.binomial(runs, 0.2, sims), rng.binomial(runs, 0.2, sims))])
    exact = rd.power_above(0.2, 0.2, runs, bound, 0.05)
    assert abs(found - exact) < 3.5 * np.sqrt(exact * (1 - exact) / sims), (found, exact)
    assert 0.3 < exact < 0.9  # a case where the power is neither trivial nor saturated
    assert rd.power_below(0.2, 0.6, runs, bound, 0.05) == pytest.approx(rd.power_above(0.6, 0.2, runs, -bound, 0.05))


def test_the_runs_asked_for_reach_the_power_and_one_fewer_do_not():
    n = rd.runs_for_power(lambda k: rd.power_above(0.2, 0.2, k, -0.25, 0.05), 0.8)
    assert rd.power_above(0.2, 0.2, n, -0.25, 0.05) >= 0.8 > rd.power_above(0.2, 0.2, n - 1, -0.25, 0.05)


def test_it_answers_what_fishers_test_cannot_no_worse_by_more_than_the_margin():
    # equal counts: Fisher's test finds no difference but cannot show its absence; this test shows the rate
    # difference above −0.2 with 80 runs per arm, and not with 10
    assert rd.p_above(Count(16, 80), Count(16, 80), -0.2) < 0.01
    assert rd.p_above(Count(2, 10), Count(2, 10), -0.2) > 0.05
    # 4/20 against 18/20: the difference −0.7 is shown below −0.2
    assert rd.p_below(Count(4, 20), Count(18, 20), -0.2) < 0.01
    assert rd.p_above(Count(0, 0), Count(3, 5), -0.2) == 1.0


def _arms(events_plus, events_minus, runs):
    plus = {s: float(s < events_plus) for s in range(runs)}
    minus = {s: float(s < events_minus) for s in range(runs)}
    return [("algo.name=dppo", plus), ("algo.name=drpo", minus)]


def test_a_claim_decides_on_either_side_of_the_margin_and_says_how():
    same = rate_decisions.noninferior_rates(_arms(16, 16, 80), [1.0, -1.0], 0.2, 0.05)
    assert same.word == inference.REPRODUCED and "16/80 vs 16/80" in same.reason
    worse = rate_decisions.noninferior_rates(_arms(4, 18, 20), [1.0, -1.0], 0.2, 0.05)
    assert worse.word == inference.NOT_REPRODUCED and "c = -0.700" in worse.reason
    few = rate_decisions.noninferior_rates(_arms(1, 2, 6), [1.0, -1.0], 0.2, 0.05)
    assert few.word == inference.INCONCLUSIVE and few.seeds_needed is not None
    assert rd.power_above(0.25, 0.25, few.seeds_needed, -0.2, 0.05) >= 0.8  # at the pooled rate, 3/12
    swapped = rate_decisions.noninferior_rates(_arms(4, 18, 20)[::-1], [-1.0, 1.0], 0.2, 0.05)
    assert swapped.word == worse.word and swapped.p_against == worse.p_against


def _design(**test):
    raw = {"grids": [{"algo": ["dppo", "drpo"]}], "seeds": list(range(40)),
           "tests": [{"name": "t", "measure": "collapsed", "hypothesis": "noninferior", "sesoi": 0.2,
                      "method": "rate_difference", "contrast": {"algo.name=dppo": 1, "algo.name=drpo": -1},
                      **test}]}
    return parse_design("s", raw)


def test_a_design_that_cannot_use_the_test_is_refused_in_one_line():
    assert _design().tests[0].method == "rate_difference"
    for bad, says in (({"hypothesis": "less"}, "method: fisher"), ({"measure": "final_accuracy"}, "collapsed"),
                      ({"contrast": {"algo.name=dppo": 1}}, "exactly two arms")):
        with pytest.raises(ValueError, match=says) as err:
            _design(**bad)
        assert "\n" not in str(err.value)
    # two runs per arm, all of one arm collapsed and none of the other: p = max r²(0.95 − r)² ≈ 0.051 at a 0.05
    # margin, so no outcome could decide
    raw = {"grids": [{"algo": ["dppo", "drpo"]}], "seeds": [0, 1],
           "tests": [{"name": "t", "measure": "collapsed", "hypothesis": "noninferior", "sesoi": 0.05,
                      "method": "rate_difference", "contrast": {"algo.name=dppo": 1, "algo.name=drpo": -1}}]}
    with pytest.raises(ValueError, match="can never succeed: a rate_difference test with 2 runs per arm"):
        parse_design("s", raw)


def test_a_higher_rate_against_a_margin_is_ruled_out_only_when_the_counts_show_it():
    """method: rate_difference with hypothesis: greater (claim 3's runaway rate): more shown by Fisher; "within
    the margin" only by the exact score test, so 0/16 against 0/16 cannot rule out a 10% difference."""
    def arms(a, b, n):
        return [("x", {s: float(s < a) for s in range(n)}), ("y", {s: float(s < b) for s in range(n)})]

    assert _design(hypothesis="greater").tests[0].hypothesis == "greater"
    assert rate_decisions.greater_rates(arms(0, 0, 16), [1, -1], 0.1, 0.05).word == inference.INCONCLUSIVE
    assert rate_decisions.greater_rates(arms(0, 0, 64), [1, -1], 0.1, 0.05).word == inference.NOT_REPRODUCED
    assert rate_decisions.greater_rates(arms(8, 0, 16), [1, -1], 0.1, 0.05).word == inference.REPRODUCED
