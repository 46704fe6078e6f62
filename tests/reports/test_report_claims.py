"""The claim reports: their statistics against scipy, and verdicts that follow the data (synthetic sweeps in
a real MLflow store, built through `python -m harness report`)."""
from __future__ import annotations

import numpy as np
import pytest
from report_pages import check_page

from harness.reports import claims
from harness.reports.cli import main
from harness.reports.synthetic import FakeRun, write_sweep

STEPS = list(range(1, 21))
EVAL_STEPS = [0, 5, 10, 15, 20]


def test_welch_interval_matches_scipy():
    from scipy import stats

    rng = np.random.default_rng(3)
    for _ in range(5):
        a, b = rng.normal(0.6, 0.1, 3), rng.normal(0.5, 0.2, 4)
        ours = claims.welch_difference(a, b)
        ref = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
        assert ours.mean == pytest.approx(a.mean() - b.mean())
        assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), rel=1e-6)
    assert claims.welch_difference([0.5], [0.1, 0.2]).low is None


def test_fisher_matches_scipy():
    from scipy import stats

    for k1, n1, k2, n2 in [(6, 6, 0, 3), (3, 3, 0, 3), (2, 6, 1, 6), (0, 3, 3, 3), (4, 9, 4, 9)]:
        ref = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="greater").pvalue
        assert claims.fisher_greater(k1, n1, k2, n2) == pytest.approx(ref)


def test_direction_and_margin_rules():
    from harness.reports.stats import Interval

    up, down, across = Interval(0.2, 0.1, 0.3, 3, 0.1), Interval(-0.2, -0.3, -0.1, 3, 0.1), Interval(0, -0.1, 0.1, 3, 0.1)
    assert [claims.direction(i, "d", "yes", "no").word for i in (up, down, across)] == \
        [claims.REPRODUCED, claims.NOT_REPRODUCED, claims.INCONCLUSIVE]
    assert claims.at_least(Interval(-0.01, -0.04, 0.02, 3, 0.1), 0.05, "d").word == claims.REPRODUCED
    assert claims.at_least(Interval(-0.01, -0.09, 0.02, 3, 0.1), 0.05, "d").word == claims.INCONCLUSIVE
    assert claims.combine([claims.Verdict(claims.REPRODUCED, ""), claims.Verdict(claims.INCONCLUSIVE, "")]) == \
        claims.INCONCLUSIVE


def _bandpo_runs(grpo_clip: float, bandpo_clip: float, grpo_entropy: float, bandpo_entropy: float):
    runs = []
    for objective, clip, entropy in (("grpo", grpo_clip, grpo_entropy), ("bandpo", bandpo_clip, bandpo_entropy)):
        for seed in range(3):
            jitter = 0.01 * (seed - 1)
            runs.append(FakeRun(objective, seed=seed, metrics={
                "objective/lowprob_masked_frac": (STEPS, [clip + jitter] * len(STEPS)),
                "train/entropy": (STEPS, [entropy + jitter] * len(STEPS)),
                "train/accuracy": (STEPS, np.linspace(0.3, 0.6, len(STEPS))),
                "eval/accuracy": (EVAL_STEPS, [0.3, 0.4, 0.5, 0.55, 0.6 + jitter])}))
    return runs


def _verdict(md: str) -> str:
    line = next(line for line in md.splitlines() if line.startswith("**Verdict: "))
    return line[len("**Verdict: "):].split(" — ")[0]


@pytest.mark.parametrize("swap, expected", [(False, "reproduced"), (True, "not reproduced")])
def test_bandpo_claim_follows_the_data(shared_store, tmp_path, swap, expected):
    uri, _ = shared_store
    sweep = f"2026-07-0{2 if swap else 1}/00-00-00-000000"
    clips, entropies = ((0.05, 0.30), (0.4, 0.2)) if swap else ((0.30, 0.05), (0.2, 0.4))
    write_sweep(uri, _bandpo_runs(*clips, *entropies), sweep, steps=20, eval_every=5)
    assert main([sweep, "--tracking-uri", uri, "--out", str(tmp_path), "--kind", "claim_bandpo"]) == 0
    md = (tmp_path / "claim_bandpo" / "summary.md").read_text()
    assert _verdict(md) == expected
    assert "| (a) fewer clipped low-prob tokens | " + expected in md
    assert "claim_bandpo.png" in check_page(tmp_path / "claim_bandpo" / "index.html")


def test_trust_region_claim_sees_collapse_and_mismatch_growth(shared_store, tmp_path):
    uri, _ = shared_store
    runs = []
    for objective in ("pg_is", "cispo", "dppo"):
        for seed in range(3):
            unstable = objective != "dppo"
            acc = [0.3, 0.5, 0.6, 0.1, 0.05] if unstable else [0.3, 0.5, 0.6, 0.62, 0.65 + 0.01 * seed]
            growth = np.linspace(0.02, 0.08 if unstable else 0.02, len(STEPS)) * (1 + 0.05 * seed)
            runs.append(FakeRun(objective, seed=seed, precision="fp8_rollout", metrics={
                "eval/accuracy": (EVAL_STEPS, acc), "train/mismatch": (STEPS, growth),
                "train/accuracy": (STEPS, np.interp(STEPS, EVAL_STEPS, acc))}))
    write_sweep(uri, runs, "2026-07-03/00-00-00-000000", steps=20, eval_every=5)
    assert main(["2026-07-03/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--kind", "claim_trust_region"]) == 0
    md = (tmp_path / "claim_trust_region" / "summary.md").read_text()
    assert _verdict(md) == "reproduced"
    assert "collapsed 6/6 (pg_is+cispo) vs 0/3 (dppo), one-sided Fisher p = 0.012" in md


def test_claim_pages_say_what_is_missing_when_asked_by_name(shared_store, tmp_path):
    uri, _ = shared_store
    write_sweep(uri, [FakeRun("grpo", seed=0), FakeRun("grpo", seed=1)], "2026-07-04/00-00-00-000000")
    kinds = ["claim_sanity", "claim_trust_region", "claim_anchor", "claim_relaxation", "claim_drpo_vs_dppo",
             "claim_bandpo"]
    argv = ["2026-07-04/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path)]
    for kind in kinds:
        argv += ["--kind", kind]
    assert main(argv) == 0
    for kind in kinds:
        assert f"cannot show a {kind} report" in (tmp_path / kind / "summary.md").read_text()
