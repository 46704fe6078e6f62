"""A design with a pilot, run for real: the pilot refuses a design that cannot reach its power, a regime it
shows unable to carry the claim is "not testable here" without main runs; and how a study's parts decide it
(an undecided regime check does not hold it, a contradicted part stops it)."""
from __future__ import annotations

PILOTED = """
hypothesis: δ 0.1 keeps more entropy than δ 0.2
reports: [decisions]
overrides: [debug=quick, algo=dppo]
grids:
  - delta: [0.1, 0.2]
seeds: auto
budget: {runs: 8, per_round: 2, max_seeds: 4}
pilot: {seeds: [1000, 1001]}
tests:
  - name: δ 0.1 above δ 0.2
    measure: entropy
    hypothesis: greater
    sesoi: 0.01
    contrast: {"algo.delta=0.1": 1, "algo.delta=0.2": -1}
"""


def _run_piloted(run_harness, name, extra=""):
    """A piloted sweep of tiny runs (2 pilot seeds per arm, at most 4 seeds): (process, its sweep folder)."""
    sweeps = run_harness.root / "sweeps"
    sweeps.mkdir()
    (sweeps / f"{name}.yaml").write_text(PILOTED + extra)
    proc = run_harness("sweep", name, env={"HARNESS_SWEEPS": str(sweeps)}, timeout=900)
    (sweep,) = (run_harness.root / "multirun" / name).glob("*")
    assert {p.name[:3] for p in sweep.glob("g0*_*")} == {"g0p"}  # only the pilot's jobs ran
    return proc, sweep


def test_a_pilot_refuses_a_design_that_cannot_reach_its_power(run_harness):
    """The pilot (2 seeds per arm) runs first; at most 4 seeds per arm can never reach the final look's α
    (2^−4 ≥ α), so the power at the SESOI is 0% whatever the runs give: refused before any main round, with
    the power printed, and the report shows the pilot."""
    proc, sweep = _run_piloted(run_harness, "piloted")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "pilot: seeds 1000,1001" in proc.stdout and "power 0% at the SESOI 0.01 (target 80%)" in proc.stdout
    assert "underpowered: δ 0.1 above δ 0.2" in proc.stderr and "round 1" not in proc.stdout
    md = (sweep / "reports" / "decisions" / "summary.md").read_text()
    assert "Pilot (sizes the design; its runs are never tested)" in md and "Refused before the main runs" in md
    assert "**Verdict: inconclusive — the pilot refused the main runs, so no declared test ran — underpowered: " \
           "δ 0.1 above δ 0.2" in md and "at the budget's cap of 4 seeds per arm" in md


def test_a_regime_the_pilot_shows_unable_to_carry_the_claim_is_not_testable_without_main_runs(run_harness):
    """A precondition that fails on the pilot's runs (token entropy can never be ≤ 0) ends the study "not
    testable here", naming the check and its measured value, before any main round; the report says the same."""
    proc, sweep = _run_piloted(run_harness, "regime", "preconditions:\n  - name: the policy is deterministic\n"
                                                     "    measure: entropy\n    at_most: 0.0\n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not testable here after the pilot (no main run)" in proc.stdout and "round 1" not in proc.stdout
    assert "the policy is deterministic: entropy measured" in proc.stdout and "needs ≤ 0" in proc.stdout
    md = (sweep / "reports" / "decisions" / "summary.md").read_text()
    assert "not testable here — precondition failed: the policy is deterministic" in md


def test_an_undecided_regime_check_does_not_hold_a_decided_study():
    from harness.stats import inference
    from harness.reports.evidence.decisions import Outcome
    from harness.sweeps.adaptive import decided
    from harness.reports.evidence.design import TestSpec

    def outcome(word, check):
        test = TestSpec("check" if check else "claim", "gain", "greater", 0.1, ((((("algo.name", "a"),), 1.0)),),
                        check=check)
        return Outcome(test, inference.Decision(word, "", None, None, None, None, None, 0.01, None), [], 0.01, None)

    yes, no = inference.REPRODUCED, inference.INCONCLUSIVE
    assert decided([outcome(yes, False), outcome(no, True)])  # the check is undecided: the study stops
    assert not decided([outcome(no, False), outcome(yes, True)])
    assert decided([outcome(yes, True)]) and not decided([outcome(no, True)])  # checks alone: they decide
    assert not decided([])


def test_a_contradicted_part_stops_the_study_its_other_parts_cannot_rescue():
    """Intersection–union: one part shown wrong (after Holm at the look's α) decides "not reproduced", so the
    study stops even though another part is still open; an undecided part beside a reproduced one does not."""
    from harness.reports.evidence.decisions import Outcome
    from harness.stats import inference
    from harness.reports.evidence.design import TestSpec
    from harness.sweeps.adaptive import decided

    def outcome(word, p_against):
        test = TestSpec("part", "gain", "noninferior", 0.05, ((((("algo.name", "a"),), 1.0)),))
        decision = inference.Decision(word, "", None, None, None, 0.5, p_against, 0.01, None)
        return Outcome(test, decision, [], 0.01, None)

    against = outcome(inference.NOT_REPRODUCED, 1e-6)
    assert decided([against, outcome(inference.INCONCLUSIVE, 0.5)])
    assert not decided([outcome(inference.REPRODUCED, 0.9), outcome(inference.INCONCLUSIVE, 0.5)])

