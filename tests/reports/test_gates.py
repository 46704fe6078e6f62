"""Gates that cannot take the claim's side (#52 item 4): a precondition passes on a one-sided 95% bound, not on
its mean; a 0/1 measure is bounded over runs (Clopper–Pearson), any other over seeds by the order statistic
of the median; and claim 4's gate measures the paper's quantity (the share of clipped tokens that are
low-probability)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.reports.evidence.design_gates import Precondition
from harness.reports.evidence.outcomes import measure
from harness.reports.evidence.preconditions import Checked, bound, check
from harness.reports.evidence.sweep_spec import load_sweep
from harness.reports.results.data import Run, SweepData


def test_a_rate_is_bounded_by_clopper_pearson():
    values = [1.0] + [0.0] * 23  # claim 2's control arm: 1 collapse in 24 runs
    upper = bound(values, "collapsed", lower=False)
    ci = stats.binomtest(1, 24).proportion_ci(confidence_level=0.90, method="exact")  # one-sided 95% = two-sided 90%
    assert upper == pytest.approx(ci.high) and upper > 0.125  # its gate "≤ 0.125" is not shown by 1/24
    assert bound([0.0] * 24, "collapsed", lower=False) < 0.125 < bound([0.0] * 8, "collapsed", lower=False)
    assert bound([0.0] * 8, "collapsed", lower=True) == 0.0


def test_a_continuous_measure_is_bounded_by_the_median_order_statistic():
    x = [0.30, 0.02, 0.11, 0.09, 0.12, 0.08, 0.10, 0.13]
    assert bound(x, "lowprob_clipped", lower=True) == sorted(x)[1]  # P(Bin(8, ½) ≤ 1) = 0.035 ≤ 0.05 < P(≤ 2)
    assert bound(x, "lowprob_clipped", lower=False) == sorted(x)[-2]
    assert bound(x[:4], "lowprob_clipped", lower=True) == -np.inf  # 4 seeds bound no median at 95%


def test_a_gate_passes_on_its_bound_not_its_mean():
    gate = Precondition("the clip binds", "lowprob_clipped", (), at_least=0.1)
    x = [0.30, 0.02, 0.11, 0.09, 0.12, 0.08, 0.10, 0.13]  # mean 0.119 ≥ 0.1, lower bound 0.08
    checked = Checked(gate, float(np.mean(x)), len(x), bound(x, gate.measure, True))
    assert checked.value >= 0.1 and not checked.passed
    assert "measured 0.1188 (mean over 8 seeds), one-sided 95% lower bound of the median seed" in checked.text
    entropy = Precondition("GRPO's entropy collapses", "log_entropy_change", (), at_most=-0.693)
    y = [-1.69, -1.2, -0.9, -0.6, -1.5, 0.013, -1.1, -1.0]  # mean −1.0 ≤ −0.693, upper bound −0.6 above it
    assert not Checked(entropy, float(np.mean(y)), 8, bound(y, entropy.measure, False)).passed
    assert Checked(entropy, -1.5, 8, bound([v - 0.5 for v in y], entropy.measure, False)).passed


def _step_curves(run_id, lowprob_masked, lowprob, masked):
    steps = np.arange(1, len(masked) + 1)
    return {(run_id, f"objective/{k}"): (steps, np.asarray(v, dtype=float)) for k, v in
            (("lowprob_masked_frac", lowprob_masked), ("lowprob_frac", lowprob), ("masked_frac", masked))}


def test_claim_4s_gate_measures_the_share_of_clipped_tokens_that_are_low_probability():
    """Per step over V tokens: L low-probability, M clipped, ML both. The logged fractions are ML/L, L/V, M/V;
    the gate's quantity is ML/M, pooled over steps as Σ ML / Σ M (steps of equal size)."""
    V, L, M, ML = 1000, np.array([300, 200]), np.array([50, 100]), np.array([40, 20])
    series = _step_curves("r0", ML / L, L / V, M / V)
    data = SweepData("s", [Run("r0", "r0", "FINISHED", {"seed": "0"})], series)
    share = measure("clipped_lowprob_share").compute(data, data.runs[0], 3)
    assert share == pytest.approx(ML.sum() / M.sum())  # 60 / 150 = 0.4, not the share of L clipped (0.12)
    assert measure("lowprob_clipped").compute(data, data.runs[0], 3) == pytest.approx(np.mean(ML / L))
    gate = Precondition("the clip falls mainly on low-probability tokens", "clipped_lowprob_share", (), at_least=0.5)
    (checked,) = check(data, [gate], 3)
    assert checked.value == pytest.approx(0.4) and not checked.passed


def test_no_claim_is_gated_on_its_own_outcome():
    """A precondition on the measure a claim's verdict tests would turn a failed effect into "not testable"."""
    for name in ("claim1_sanity", "claim2_trust_region", "claim3_anchor", "claim4_relaxation", "claim6_bandpo"):
        design = load_sweep(name).design
        tested = {(t.measure, t.contrast[0][0]) for t in design.tests if not t.check}
        for gate in design.preconditions:
            assert (gate.measure, gate.arm) not in tested, (name, gate.name)
        assert all(g.measure != "collapsed" or g.at_most is not None for g in design.preconditions), name
    claim4 = load_sweep("claim4_relaxation").design
    assert "clipped_lowprob_share" in [g.measure for g in claim4.preconditions]
    assert "lowprob_clipped" not in [g.measure for g in claim4.preconditions]
