"""Pilots size the designs (harness/reports/evidence/pilot.py): the pilot's spread sets the declared design's power at
its SESOI; below the target the main runs are refused unless `underpowered: accepted`; pilot runs are
never tested. Sweep data in memory (the structure every report reads), fixed RNG seeds."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from harness.reports.evidence import pilot
from harness.stats import inference
from harness.reports.results.data import Run, SweepData
from harness.reports.evidence.decisions import evaluate
from harness.reports.evidence.sweep_spec import load_sweep

DESIGN = """
hypothesis: drpo ends above dppo
reports: [decisions]
grids:
  - algo: [dppo, drpo]
seeds: auto
budget: {runs: 24, per_round: 2, max_seeds: 12}
pilot: {seeds: [1000, 1001, 1002, 1003]}
tests:
  - name: drpo above dppo
    measure: final_accuracy
    hypothesis: greater
    sesoi: 0.1
    contrast: {"algo.name=drpo": 1, "algo.name=dppo": -1}
"""


def _spec(tmp_path, monkeypatch, extra=""):
    (tmp_path / "piloted.yaml").write_text(textwrap.dedent(DESIGN) + extra)
    monkeypatch.setenv("HARNESS_SWEEPS", str(tmp_path))
    return load_sweep("piloted")


def _data(seeds, contrast_sd, rng, effect=0.0):
    runs, series = [], {}
    for seed in seeds:
        warm = rng.uniform(0.4, 0.6)
        for objective, value in (("dppo", warm), ("drpo", warm + effect + rng.normal(0.0, contrast_sd))):
            run = Run(f"{objective}-{seed}", f"{objective} {seed}", "FINISHED",
                      params={"algo.name": objective, "seed": str(seed)})
            runs.append(run)
            series[(run.run_id, "eval/accuracy")] = (np.array([0, 5, 10]), np.full(3, float(np.clip(value, 0, 1))))
    return SweepData("2026-01-01/00-00-00-000000", runs, series)


@pytest.mark.parametrize("sd, refused", [(0.03, False), (0.4, True)])
def test_the_pilots_spread_sets_the_power_and_refuses_an_underpowered_design(tmp_path, monkeypatch, sd, refused):
    spec = _spec(tmp_path, monkeypatch)
    data = _data(spec.design.pilot.seeds, sd, np.random.default_rng(1))
    (sized,) = pilot.size(data, spec)
    assert sized.seeds == 4 and sized.sd == pytest.approx(sd, rel=0.6)
    why = pilot.refusal([sized], spec.design)
    if refused:
        assert sized.power < 0.3 and why.startswith("underpowered: drpo above dppo: pilot SD")
        assert "underpowered: accepted" in why
    else:
        assert sized.power >= 0.8 and why is None


def test_an_underpowered_design_that_says_so_runs_with_its_power_printed(tmp_path, monkeypatch):
    spec = _spec(tmp_path, monkeypatch, "underpowered: accepted\n")
    data = _data(spec.design.pilot.seeds, 0.4, np.random.default_rng(1))
    (sized,) = pilot.size(data, spec)
    assert sized.power < 0.3 and pilot.refusal([sized], spec.design) is None
    assert f"power {sized.power:.0%} at the SESOI 0.1 (target 80%)" in sized.text(spec.design.power)


def test_the_simulated_power_matches_the_noncentral_t_for_a_fixed_design():
    """One look at 12 seeds, α 0.05, paired SD 0.1, SESOI 0.1: the t-test's power from the noncentral t."""
    from scipy import stats

    from harness.reports.evidence.design import Budget, Design, TestSpec

    test = TestSpec("t", "final_accuracy", "greater", 0.1, ((((("algo.name", "a"),), 1.0)),))
    design = Design(budget=Budget(runs=12, per_round=12, max_seeds=12), seeds="auto", tests=(test,))
    simulated = pilot.simulated_power(0.1, test, design, (-1.0, 1.0), False, [12])
    exact = stats.nct.sf(stats.t.ppf(0.95, 11), 11, 0.1 / (0.1 / np.sqrt(12)))
    assert simulated == pytest.approx(exact, abs=0.07)  # 300 simulated studies


def test_pilot_runs_are_never_tested(tmp_path, monkeypatch):
    spec = _spec(tmp_path, monkeypatch)
    rng = np.random.default_rng(2)
    piloted = _data(spec.design.pilot.seeds, 0.01, rng, effect=0.5)  # a huge "effect" only in the pilot
    main = _data(range(6), 0.05, rng)
    data = SweepData(main.sweep_id, main.runs + piloted.runs, {**main.series, **piloted.series})
    (outcome,) = evaluate(data, spec)
    assert outcome.decision.estimate.n == 6 and outcome.decision.word != inference.REPRODUCED


@pytest.mark.parametrize("extra, message", [
    ("pilot: {seeds: [3, 1000]}\n", "'pilot.seeds' are [3, 1000]; allowed: seeds the study never uses"),
    ("pilot: {seeds: [1000]}\n", "allowed: {seeds: [≥ 2 distinct integer seeds], size_for: reproduced | both"),
    ("underpowered: yes\n", "'underpowered' is True; allowed: accepted"),
    ("pilot: {seeds: [1000, 1001], size_for: either}\n", "'pilot.size_for' is 'either'; allowed: reproduced, both"),
    ("first_seed: 995\npilot: {seeds: [1000, 1001]}\n", "(it uses 995..1006), e.g. 1007 and up"),
    ("first_seed: -1\n", "'first_seed' is -1; allowed: an integer ≥ 0"),
])
def test_a_bad_pilot_is_refused_at_load(tmp_path, monkeypatch, extra, message):
    body = textwrap.dedent(DESIGN).replace("pilot: {seeds: [1000, 1001, 1002, 1003]}\n", "") + extra
    (tmp_path / "bad.yaml").write_text(body)
    monkeypatch.setenv("HARNESS_SWEEPS", str(tmp_path))
    with pytest.raises(ValueError, match="sweep 'bad'") as err:
        load_sweep("bad")
    assert message in str(err.value)


def test_the_pilot_plans_the_fewest_whole_rounds_that_reach_the_power(tmp_path, monkeypatch):
    spec = _spec(tmp_path, monkeypatch)
    data = _data(spec.design.pilot.seeds, 0.05, np.random.default_rng(1))
    sized, seeds = pilot.plan(data, spec)
    assert 2 < seeds < 12 and seeds % 2 == 0
    assert all(s.power >= 0.8 for s in sized)
    (fewer,) = pilot.size(data, spec, seeds - 2)  # one round fewer does not reach the target
    assert fewer.power < 0.8


def test_a_pilot_whose_spread_the_cap_cannot_carry_plans_the_cap_and_is_refused(tmp_path, monkeypatch):
    spec = _spec(tmp_path, monkeypatch)
    data = _data(spec.design.pilot.seeds, 0.4, np.random.default_rng(1))
    sized, seeds = pilot.plan(data, spec)
    assert seeds == 12
    assert "at the budget's cap of 12 seeds per arm" in pilot.refusal(sized, spec.design, seeds)


def test_a_saved_plan_sets_the_looks_the_reports_test_at(tmp_path, monkeypatch):
    """The reports read the sweep folder's plan: a study planned at 6 seeds spends all of α by its 6th seed."""
    from harness.reports.evidence.decisions import look_alpha
    from harness.sweeps.adaptive import save_plan

    spec = _spec(tmp_path, monkeypatch)
    folder = tmp_path / "sweep"
    assert pilot.planned(spec, folder) is spec  # no plan saved: the declared cap
    save_plan(folder, 6, 12)
    assert (folder / pilot.PLAN_FILE).read_text() == "cap: 12\nmax_seeds: 6\n"  # the file as earlier studies have it
    planned = pilot.planned(spec, folder)
    assert planned.design.max_seeds(2) == 6 and spec.design.max_seeds(2) == 12
    assert look_alpha(planned, 6) > look_alpha(spec, 6)
    assert sum(look_alpha(planned, n) for n in (2, 4, 6)) == pytest.approx(0.05)


def test_a_design_sized_for_both_outcomes_needs_the_power_to_show_no_effect_too(tmp_path, monkeypatch):
    """`size_for: both`: at the SD where reproducing at the SESOI is already likely, showing "not reproduced"
    without an effect (equivalence within ±SESOI) needs more seeds; the plan waits for both."""
    plain = _spec(tmp_path, monkeypatch)
    data = _data(plain.design.pilot.seeds, 0.05, np.random.default_rng(1))
    (one,) = pilot.size(data, plain)
    assert one.power_against is None
    (tmp_path / "piloted.yaml").write_text(textwrap.dedent(DESIGN).replace(
        "pilot: {seeds: [1000, 1001, 1002, 1003]}", "pilot: {seeds: [1000, 1001, 1002, 1003], size_for: both}"))
    both = load_sweep("piloted")
    (sized,) = pilot.size(data, both)
    assert sized.power == one.power and sized.power_against is not None
    _, seeds_one = pilot.plan(data, plain)
    sized_both, seeds_both = pilot.plan(data, both)
    assert seeds_both > seeds_one
    assert all(s.power >= 0.8 and s.power_against >= 0.8 for s in sized_both) or seeds_both == 12
    (short,) = pilot.size(data, both, seeds_one)
    assert short.power >= 0.8 > short.power_against
    assert "to show \"not reproduced\" without an effect" in short.text(0.8)
    assert pilot.refusal([short], both.design, seeds_one).startswith("underpowered: drpo above dppo")


def test_the_no_effect_power_is_a_rate_of_not_reproduced_and_holm_lowers_it():
    """Without an effect most simulated studies end "not reproduced"; with two parts each look has only half
    its α for a contradiction, so fewer do (t-tests: continuous p-values)."""
    from harness.reports.evidence.design import Budget, TestSpec
    from harness.stats.sequential import looks

    class Design:
        budget, alpha = Budget(runs=None, minutes=1, per_round=4, max_seeds=16), 0.05

    test = TestSpec("t", "final_accuracy", "greater", 0.1, ((((("algo.name", "a"),), 1.0)),), method="t")
    levels = looks(4, 16)
    one = pilot.simulated_power(0.1, test, Design, (-1, 1), True, levels, no_effect=True)
    two = pilot.simulated_power(0.1, test, Design, (-1, 1), True, levels, no_effect=True, parts=2)
    assert 0.5 < one <= 1.0 and two < one - 0.05


def test_a_design_sized_from_earlier_runs_says_so_on_its_page(tmp_path, monkeypatch):
    """No pilot: the design's `sizing:` text (how its budget was sized before the runs) takes the pilot's place
    on the page, and every seed is tested."""
    from harness.reports.rendering import decisions_section
    from harness.reports.rendering.page import Page

    body = textwrap.dedent(DESIGN).replace("pilot: {seeds: [1000, 1001, 1002, 1003]}\n", "") + (
        "first_seed: 200\nsizing: >-\n  Simulated from the 12 seeds of the\n  earlier design: 93% at 16.\n")
    (tmp_path / "sized.yaml").write_text(body)
    monkeypatch.setenv("HARNESS_SWEEPS", str(tmp_path))
    spec = load_sweep("sized")
    assert spec.design.sizing == "Simulated from the 12 seeds of the earlier design: 93% at 16."
    data = _data(range(200, 206), 0.03, np.random.default_rng(2), effect=0.3)
    page = Page("t", tmp_path / "page")
    decisions_section.write(page, data, spec)
    page.write()
    text = (tmp_path / "page" / "summary.md").read_text()
    assert "## Sizing (stated in the design before its main runs)" in text
    assert "Simulated from the 12 seeds of the earlier design: 93% at 16." in text and "Pilot" not in text
    assert "(paired, n=6)" in text  # every seed is tested


def test_designs_are_sized_at_an_upper_bound_of_the_pilots_sd(tmp_path, monkeypatch):
    """A 4-seed pilot's SD is sized at its upper 80% bound (x1.73 for 3 degrees of freedom); the bound comes
    down to the estimate as the pilot grows; the plan's text says both."""
    assert pilot.sd_upper_bound(0.1, 4) == pytest.approx(0.1 * np.sqrt(3 / 1.0052), rel=1e-3)
    assert 1.0 < pilot.sd_upper_bound(0.1, 200) / 0.1 < 1.07
    spec = _spec(tmp_path, monkeypatch)
    data = _data(spec.design.pilot.seeds, 0.05, np.random.default_rng(1))
    (sized,) = pilot.size(data, spec)
    assert sized.sized_sd == pytest.approx(pilot.sd_upper_bound(sized.sd, sized.seeds))
    assert sized.sized_sd > 1.7 * sized.sd and "sized at its upper 80% bound" in sized.text(0.8)
