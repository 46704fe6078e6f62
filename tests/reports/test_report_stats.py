"""Golden numbers for the statistics module, on plain lists and through a synthetic MLflow store."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.intervals import bootstrap_interval, mean_curve, t_interval, t_quantile

# Student-t 97.5% quantiles (two-sided 95%), as printed in every t table / scipy.stats.t.ppf.
T975 = {1: 12.706204736174698, 2: 4.302652729911275, 3: 3.182446305284263, 4: 2.7764451051977934,
        9: 2.2621571628540993, 29: 2.045229642132703, 1000: 1.9623390808264078}


@pytest.mark.parametrize("df,expected", sorted(T975.items()))
def test_t_quantile_golden(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-9)
    assert t_quantile(0.025, df) == pytest.approx(-expected, rel=1e-9)


def test_t_quantile_refuses_bad_input():
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_t_interval_golden():
    ci = t_interval([0.5, 0.6, 0.7])
    assert (ci.mean, ci.n) == (pytest.approx(0.6), 3)
    assert ci.std == pytest.approx(0.1)
    half = 4.302652729911275 * 0.1 / math.sqrt(3)  # 0.248414...
    assert ci.low == pytest.approx(0.6 - half, abs=1e-9) and ci.high == pytest.approx(0.6 + half, abs=1e-9)
    assert ci.half_width == pytest.approx(0.24841377118, abs=1e-9)


def test_t_interval_one_seed_has_no_interval_and_drops_non_finite():
    ci = t_interval([0.4, float("nan"), None])
    assert (ci.mean, ci.low, ci.high, ci.n) == (0.4, None, None, 1)
    assert t_interval([]).n == 0


def test_bootstrap_is_scipys_and_reproducible():
    ci = bootstrap_interval([0.5, 0.6, 0.7, 0.9], n_boot=10000, seed=0)
    assert ci.mean == pytest.approx(0.675)
    assert 0.5 <= ci.low < 0.675 < ci.high <= 0.9  # percentile ends are resampled means: inside the data
    assert bootstrap_interval([0.5, 0.6, 0.7, 0.9], n_boot=10000, seed=0) == ci
    assert bootstrap_interval([0.3]).low is None


def test_mean_curve_aligns_steps_and_bands_only_with_two_runs():
    steps, mean, low, high, n = mean_curve([(np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0])),
                                            (np.array([0, 2]), np.array([3.0, 5.0]))])
    assert steps.tolist() == [0, 1, 2] and n.tolist() == [2, 1, 2]
    assert mean.tolist() == [2.0, 2.0, 4.0]
    assert np.isnan(low[1]) and high[0] == pytest.approx(2.0 + 12.706204736174698 * math.sqrt(2) / math.sqrt(2))


def test_sensitivity_numbers_from_a_synthetic_mlflow_store(shared_store):
    """Final accuracies written through MlflowClient come back as the golden mean and t-interval."""
    from harness.reports.results.collect import collect
    from harness.reports.results.locate import Target
    from harness.reports.results.summary import summarize
    from harness.reports.results.synthetic import FakeRun, write_sweep
    from harness.reports.results.thresholds import threshold

    uri, _ = shared_store
    finals = {0.1: [0.5, 0.6, 0.7], 0.2: [0.8, 0.9]}
    # final accuracy = mean of the last 3 evaluations
    runs = [FakeRun("drpo", {"delta": d}, seed=s, metrics={"eval/accuracy": ([0, 10, 20, 30], [0.0, acc, acc, acc])})
            for d, accs in finals.items() for s, acc in enumerate(accs)]
    write_sweep(uri, runs, "2026-03-03/00-00-00-000000")
    data = collect(Target("2026-03-03/00-00-00-000000", uri, [], []))
    by_delta = {}
    for run in data.runs:
        by_delta.setdefault(threshold(run)[2], []).append(summarize(data, run).final_acc)
    ci = t_interval(by_delta[0.1])
    assert (ci.mean, ci.low, ci.high) == (pytest.approx(0.6), pytest.approx(0.351586228825, abs=1e-9),
                                          pytest.approx(0.848413771175, abs=1e-9))
    ci = t_interval(by_delta[0.2])  # n = 2: t = 12.706, s = 0.0707
    assert ci.half_width == pytest.approx(12.706204736174698 * 0.05, abs=1e-9)
