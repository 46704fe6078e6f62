"""The statistics core on synthetic data with known effects: scipy cross-checks, bounds, power, Holm,
the Fisher design check, and many simulated adaptive studies (no training)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.stats import inference
from harness.stats.sequential import level, looks, spent, study
from harness.stats.intervals import bootstrap_interval, mean_curve, t_interval

ALPHA = 0.05


def _arms(a, b):
    return [dict(enumerate(a)), dict(enumerate(b))]


def test_paired_and_welch_p_values_match_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.6, 0.1, 7), rng.normal(0.5, 0.1, 7)
    paired = inference.estimate(_arms(a, b), [1, -1])
    assert paired.paired and paired.n == 7
    assert paired.p_above(0) == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue, rel=1e-9)
    welch = inference.estimate([dict(enumerate(a)), {i + 100: v for i, v in enumerate(b[:5])}], [1, -1])
    assert not welch.paired
    expected = stats.ttest_ind(a, b[:5], equal_var=False, alternative="greater").pvalue
    assert welch.p_above(0) == pytest.approx(expected, rel=1e-9)
    shifted = stats.ttest_rel(a - 0.05, b, alternative="less").pvalue  # H0: c >= 0.05
    assert paired.p_below(0.05) == pytest.approx(shifted, rel=1e-9)


def test_interval_stays_in_the_measures_range():
    ci = t_interval([0.97, 0.99, 1.0], bounds=(0.0, 1.0))
    assert ci.high == 1.0 and ci.low < 0.97
    unbounded = t_interval([0.97, 0.99, 1.0])
    assert unbounded.high > 1.0
    steps, mean, low, high, _ = mean_curve([(np.arange(3), np.array([1e-8, 0.0, 2e-8])),
                                            (np.arange(3), np.array([3e-8, 1e-9, 0.0]))], bounds=(0.0, None))
    assert (low >= 0).all()
    _, gmean, glow, ghigh, _ = mean_curve([(np.arange(2), np.array([1.0, 10.0])), (np.arange(2), np.array([4.0, 1000.0]))],
                                          log=True)
    assert gmean[0] == pytest.approx(2.0) and (glow > 0).all() and (ghigh > gmean).all()
    boot = bootstrap_interval([0.9, 1.0, 1.0, 0.95, 1.0, 0.98, 1.0, 0.99], method="BCa")
    assert 0.9 <= boot.low <= boot.high <= 1.0


def test_decisions_on_known_effects():
    big = inference.estimate(_arms([0.8, 0.82, 0.79, 0.81, 0.8], [0.5, 0.5, 0.49, 0.52, 0.51]), [1, -1])
    assert inference.decide(big, "greater", 0.05, ALPHA).word == inference.REPRODUCED
    assert inference.decide(big, "less", 0.05, ALPHA).word == inference.NOT_REPRODUCED
    same = inference.estimate(_arms([0.5, 0.51, 0.49, 0.5, 0.52], [0.51, 0.5, 0.5, 0.51, 0.51]), [1, -1])
    d = inference.decide(same, "greater", 0.05, ALPHA)
    assert d.word == inference.NOT_REPRODUCED and "equivalence" in d.reason
    assert inference.decide(same, "equivalent", 0.05, ALPHA).word == inference.REPRODUCED
    # one seed's contrast is 0: a tie, no evidence either way, and 4 contrasts cannot reach p < 0.05
    tied = inference.estimate(_arms([0.5, 0.51, 0.49, 0.5, 0.52], [0.5, 0.5, 0.5, 0.51, 0.51]), [1, -1])
    d = inference.decide(tied, "equivalent", 0.05, ALPHA)
    assert d.word == inference.INCONCLUSIVE and d.reason.startswith("1 of 5 per-seed contrasts equal 0")
    noisy = inference.estimate(_arms([0.2, 0.9, 0.5], [0.6, 0.1, 0.4]), [1, -1])
    d = inference.decide(noisy, "greater", 0.05, ALPHA)
    assert d.word == inference.INCONCLUSIVE and d.seeds_needed > 3
    target = inference.estimate([dict(enumerate([0.97, 0.98, 0.96, 0.99, 0.97]))], [1], offset=0.95)
    assert inference.decide(target, "noninferior", 0.05, ALPHA).word == inference.REPRODUCED
    low = inference.estimate([dict(enumerate([0.6, 0.62, 0.58, 0.61, 0.6]))], [1], offset=0.95)
    assert inference.decide(low, "noninferior", 0.05, ALPHA).word == inference.NOT_REPRODUCED


def test_power_figure_is_the_noncentral_t_answer():
    # paired, d = 0.5, one-sided α = 0.05, 80% power: 27 pairs (the textbook figure)
    assert inference.seeds_needed(0.1, 0.05, 0.05, 0.8, paired=True) == 27
    n = inference.seeds_needed(0.2, 0.1, 0.05, 0.8, paired=False)
    power = lambda m: stats.nct.sf(stats.t.ppf(0.95, 2 * m - 2), 2 * m - 2, 0.1 / (0.2 / np.sqrt(m)))
    assert power(n) >= 0.8 > power(n - 1)


def test_power_figure_for_a_nearly_noiseless_contrast_is_the_fewest_seeds_that_can_decide():
    # 2^−8 < 0.005 ≤ 2^−7: with fewer than 8 seeds no test decides at α 0.005, however small the noise
    assert inference.seeds_needed(1e-17, 0.1, 0.005, 0.8, paired=True) == 8 == inference.min_seeds(0.005)
    assert inference.seeds_needed(0.0, 0.1, 0.05, 0.8, paired=True) == 5


def test_holm_and_combination():
    assert inference.holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert inference.holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]


def _contradicted(p_against):
    return inference.Decision(inference.NOT_REPRODUCED, "", None, None, None, 0.9, p_against, 0.01, None)


def test_holm_runs_at_the_looks_alpha_not_the_designs():
    """Two parts contradicted at p 0.004 and 0.012 at a look whose α is 0.01: Holm at 0.01 keeps the first
    (0.004 < 0.01/2), not the second; at the design's 0.05 both would hold. The verdict uses the look's α."""
    from harness.reports.evidence.decisions import Outcome, overall
    from harness.reports.evidence.design import TestSpec

    spec = TestSpec("t", "final_accuracy", "greater", 0.05, ((((("algo.name", "a"),), 1.0)),))
    look = [Outcome(spec, _contradicted(p), [], 0.01, None) for p in (0.004, 0.012)]
    assert inference.holm([0.004, 0.012], 0.05) == [True, True]
    assert inference.holm([0.004, 0.012], 0.01) == [True, False]
    word, why = overall(look)
    assert word == inference.NOT_REPRODUCED and "at α 0.01 over 2 parts" in why
    weak = [Outcome(spec, _contradicted(p), [], 0.01, None) for p in (0.02, 0.03)]  # held at 0.05, not at 0.01
    assert overall(weak)[0] == inference.INCONCLUSIVE
    alone = overall([Outcome(spec, _contradicted(0.004), [], 0.01, None)])
    assert alone == (inference.NOT_REPRODUCED, "t: not reproduced (its one part contradicted at α 0.01)")


def test_a_contrast_without_spread_decides_nothing():
    """Discrete outcomes tie: two seeds whose paired differences are equal (the issue's "c 0.026 [0.026,
    0.026], p = 0 → reproduced") and eight seeds with all differences equal stay undecided, and say why."""
    for n, alpha in ((2, 0.0007), (8, 0.05)):
        arms = [{s: 0.6 + 0.01 * s for s in range(n)}, {s: 0.574 + 0.01 * s for s in range(n)}]
        est = inference.estimate(arms, [1, -1])
        for method in ("t", "exact"):
            for hypothesis in inference.HYPOTHESES:
                d = inference.decide(est, hypothesis, 0.001, alpha, method=method, exchangeable=True,
                                     bounds=(-1.0, 1.0))
                assert d.word == inference.INCONCLUSIVE and d.reason.startswith("no spread"), (n, method, d)


def test_too_few_seeds_for_the_looks_alpha_decide_nothing():
    """A huge, clean effect on 4 seeds at α 0.016 (2^−4 ≥ α: no test without a normal model can get there):
    undecided, naming the seeds needed; at α 0.07 the same data decide."""
    est = inference.estimate(_arms([0.9, 0.91, 0.93, 0.9], [0.1, 0.12, 0.1, 0.11]), [1, -1])
    d = inference.decide(est, "greater", 0.05, 0.016)
    assert d.word == inference.INCONCLUSIVE and "too few seeds for α 0.016" in d.reason and "at least 6" in d.reason
    assert inference.decide(est, "greater", 0.05, 0.07).word == inference.REPRODUCED


def test_the_why_of_a_less_test_speaks_of_c_itself():
    """hypothesis less with c = +0.078: the text says the opposite direction c > 0 (the issue saw
    "c < 0 (p = 0.067)" printed for a positive c)."""
    est = inference.estimate(_arms([0.6, 0.7, 0.65, 0.72, 0.68], [0.55, 0.6, 0.58, 0.62, 0.6]), [1, -1])
    assert est.value == pytest.approx(0.08)
    shown = inference.decide(est, "less", 0.01, 0.05)
    assert shown.word == inference.NOT_REPRODUCED and shown.reason.startswith("c > 0 shown: the opposite")
    noisy = inference.estimate(_arms([0.6, 0.9, 0.5, 0.8, 0.7, 0.6], [0.55, 0.7, 0.6, 0.6, 0.7, 0.5]), [1, -1])
    assert noisy.value == pytest.approx(0.075)
    undecided = inference.decide(noisy, "less", 0.01, 0.05)
    assert undecided.reason.startswith("neither c < 0 (p = 0.911), c > 0 (p = 0.089) nor |c| < 0.01")
    reproduced = inference.decide(inference.estimate(_arms([0.5, 0.52, 0.5, 0.49, 0.5], [0.6] * 5), [1, -1]),
                                  "less", 0.01, 0.05)
    assert reproduced.word == inference.REPRODUCED and reproduced.reason.startswith("c < 0 shown (p =")


def test_fisher_with_three_seeds_cannot_succeed():
    assert inference.min_fisher_p(3, 3) == pytest.approx(0.05)
    assert inference.min_fisher_p(5, 5) < 0.05


def test_spending_adds_up_to_alpha_and_spends_little_early():
    plan = looks(2, 12)
    assert plan == [2, 4, 6, 8, 10, 12]
    levels = [level(n, 2, 12, ALPHA) for n in plan]
    assert sum(levels) == pytest.approx(ALPHA) and levels[0] < 1e-4 and levels == sorted(levels)
    assert spent(1.0, ALPHA) == pytest.approx(ALPHA)
    assert level(0, 2, 12, ALPHA) == 0.0 and looks(3, 10) == [3, 6, 9, 10]
    # a round in which a run failed ends below its planned look: it spends that look's increment, never
    # the previous look's again
    assert level(5, 2, 12, ALPHA) == level(6, 2, 12, ALPHA) != level(4, 2, 12, ALPHA)
    assert level(1, 2, 12, ALPHA) == level(2, 2, 12, ALPHA)


def _simulate(effect, studies, seed, sd=0.1, sesoi=0.05, per_round=2, max_seeds=12, naive=False):
    rng = np.random.default_rng(seed)
    counts = {inference.REPRODUCED: 0, inference.NOT_REPRODUCED: 0, inference.INCONCLUSIVE: 0}
    for _ in range(studies):
        shared = rng.normal(0.5, sd, max_seeds)  # the seed's warm start moves both arms (pairing helps)
        a = shared + rng.normal(effect, sd, max_seeds)
        b = shared + rng.normal(0.0, sd, max_seeds)
        draw = lambda n: _arms(a[:n], b[:n])  # noqa: E731
        if naive:  # testing at the full α at every look: what the spending prevents
            word = inference.INCONCLUSIVE
            for n in looks(per_round, max_seeds):
                d = inference.decide(inference.estimate(draw(n), [1, -1]), "greater", sesoi, ALPHA, with_power=False)
                if d.decided:
                    word = d.word
                    break
        else:
            word, _ = study(draw, [1, -1], "greater", sesoi, ALPHA, per_round, max_seeds)
        counts[word] += 1
    return {k: v / studies for k, v in counts.items()}


def test_adaptive_seeding_keeps_the_false_positive_rate_at_or_under_alpha():
    rates = _simulate(0.0, 2000, seed=1)
    print(f"adaptive seeding, null effect, 2000 studies: false-positive rate {rates[inference.REPRODUCED]:.4f}")
    assert rates[inference.REPRODUCED] <= ALPHA
    # the spending matters: peeking at the full α at every look inflates it
    naive = _simulate(0.0, 2000, seed=1, naive=True)
    print(f"naive repeated testing at α: false-positive rate {naive[inference.REPRODUCED]:.4f}")
    assert naive[inference.REPRODUCED] > rates[inference.REPRODUCED]


def test_adaptive_seeding_detects_a_large_effect_and_stops_early():
    rates = _simulate(0.2, 300, seed=2)
    assert rates[inference.REPRODUCED] >= 0.95


def test_null_effect_is_equivalent_or_undecided_at_the_nominal_rate():
    rates = _simulate(0.0, 1000, seed=3, sd=0.02, sesoi=0.05)
    assert rates[inference.REPRODUCED] <= ALPHA
    assert rates[inference.NOT_REPRODUCED] >= 0.9  # equivalence is shown when the noise allows it
