"""Pre-registered designs in sweep files: what loading accepts and refuses (one line naming the key), and
an adaptive-seed sweep run for real (`seeds: auto`, rounds until the declared tests are decided)."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from harness.reports.evidence.sweep_spec import load_sweep

BASE = """
hypothesis: h
reports: [overview]
grids:
  - algo: [dppo, drpo]
"""


def _load(tmp_path, monkeypatch, body: str, name: str = "mine"):
    (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(BASE) + textwrap.dedent(body))
    monkeypatch.setenv("HARNESS_SWEEPS", str(tmp_path))
    return load_sweep(name)


def test_a_design_loads_with_its_tests(tmp_path, monkeypatch):
    spec = _load(tmp_path, monkeypatch, """
        seeds: auto
        budget: {runs: 12, per_round: 2, max_seeds: 10}
        tests:
          - name: drpo no worse
            measure: final_accuracy
            hypothesis: noninferior
            sesoi: 0.05
            contrast: {"algo.name=drpo": 1, "algo.name=dppo": -1}
    """)
    test = spec.design.tests[0]
    assert spec.design.adaptive and spec.design.max_seeds(2) == 6  # 12 runs / 2 runs per seed
    assert test.contrast == (((("algo.name", "drpo"),), 1.0), ((("algo.name", "dppo"),), -1.0))
    assert spec.grid_overrides(["seed=range(0,2)"]) == [["algo=dppo,drpo"]]


def test_preconditions_load_with_their_arm_and_threshold(tmp_path, monkeypatch):
    spec = _load(tmp_path, monkeypatch, """
        preconditions:
          - name: the mismatch is LLM-like
            measure: mismatch
            arm: "algo.name=drpo"
            at_least: 0.01
          - {name: dppo does not collapse, measure: collapsed, at_most: 0.1}
    """)
    first, second = spec.design.preconditions
    assert first.arm == (("algo.name", "drpo"),) and first.at_least == 0.01 and first.rule == "≥ 0.01"
    assert second.arm == () and second.at_most == 0.1 and second.rule == "≤ 0.1"


@pytest.mark.parametrize("body, message", [
    ("seeds: auto\n", "'seeds: auto' needs a 'budget'"),
    ("alpha: 0.7\n", "'alpha' is 0.7; allowed: 0 < alpha < 0.5"),
    ("tests:\n  - {measure: nope, hypothesis: greater, sesoi: 0.1, contrast: {'algo.name=dppo': 1}}\n",
     "tests[0].measure is 'nope'; allowed: final_accuracy"),
    ("tests:\n  - {measure: gain, hypothesis: bigger, sesoi: 0.1, contrast: {'algo.name=dppo': 1}}\n",
     "tests[0].hypothesis is 'bigger'"),
    ("tests:\n  - {measure: gain, hypothesis: greater, sesoi: 0, contrast: {'algo.name=dppo': 1}}\n",
     "tests[0].sesoi is 0"),
    ("alpha: [0.05]\n", "'alpha' is [0.05]; allowed: a number"),
    ("seeds: auto\nbudget: {runs: many}\n", "'budget.runs' is 'many'; allowed: an integer"),
    # 2 runs per seed (dppo, drpo): 3 runs cannot give any arm 2 seeds
    ("seeds: auto\nbudget: {runs: 3}\n", "'budget.runs' is 3; allowed: ≥ 4"),
    ("sesoi: -1\n", "'sesoi' is -1"),
    ("preconditions:\n  - {name: x, measure: nope, at_least: 1}\n", "preconditions[0].measure is 'nope'"),
    ("preconditions:\n  - {name: x, measure: gain}\n", "needs exactly one of at_least, at_most"),
    ("preconditions:\n  - {name: x, measure: gain, at_most: high}\n", "preconditions[0].at_most is 'high'"),
    ("tests:\n  - {measure: gain, hypothesis: greater, sesoi: 0.1, method: bayes, contrast: {'algo.name=dppo': 1}}\n",
     "tests[0].method is 'bayes'; allowed: t, fisher, exact"),
    # three seeds per arm: the smallest one-sided Fisher p is 0.05, so p < 0.05 can never be reached
    ("seeds: [0, 1, 2]\ntests:\n  - {measure: collapsed, hypothesis: greater, sesoi: 0.5, method: fisher,\n"
     "     contrast: {'algo.name=dppo': 1, 'algo.name=drpo': -1}}\n", "can never succeed"),
])
def test_a_design_that_cannot_work_is_refused_at_load(tmp_path, monkeypatch, body, message):
    with pytest.raises(ValueError, match="sweep 'mine'") as err:
        _load(tmp_path, monkeypatch, body)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_refused_design_exits_2_before_anything_runs(run_harness):
    (run_harness.root / "sweeps").mkdir()
    (run_harness.root / "sweeps" / "bad.yaml").write_text(textwrap.dedent(BASE) + "seeds: auto\n")
    proc = run_harness("sweep", "bad", env={"HARNESS_SWEEPS": str(run_harness.root / "sweeps")})
    assert proc.returncode == 2 and "'seeds: auto' needs a 'budget'" in proc.stderr
    assert not (run_harness.root / "multirun").exists()


def test_seeds_auto_runs_rounds_until_its_tests_are_decided(run_harness):
    """A real adaptive sweep on debug=quick runs, with an outcome no install can change: the token entropy
    (a continuous measure, different for every seed) is far below 1000 nats. The first look (2 seeds) can
    never decide at its share of α (2^−2 ≥ α); the second (4 seeds, α 0.09 > 2^−4) decides, and the sweep
    stops there and says so."""
    (run_harness.root / "sweeps").mkdir()
    (run_harness.root / "sweeps" / "auto.yaml").write_text(textwrap.dedent("""
        hypothesis: the mean token entropy of δ 0.1 and 0.2 is below 1000 nats
        reports: [decisions]
        overrides: [debug=quick, algo=dppo]
        grids:
          - delta: [0.1, 0.2]
        seeds: auto
        first_seed: 50
        budget: {runs: 12, per_round: 2, max_seeds: 6}
        alpha: 0.2
        tests:
          - name: entropy below 1000 nats
            measure: entropy
            hypothesis: less
            sesoi: 1
            contrast: {"algo.delta=0.1": 0.5, "algo.delta=0.2": 0.5}
            offset: 1000
    """))
    proc = run_harness("sweep", "auto", env={"HARNESS_SWEEPS": str(run_harness.root / "sweeps")}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "seeds: auto — looks at 2, 4, 6 seeds per arm" in out
    assert "round 1: seeds 50..51" in out and "round 2: seeds 52..53" in out  # first_seed: a fresh range
    assert "stopped — every declared test decided at 4 seeds" in out
    assert "round 3" not in out  # decided before the budget was spent
    (sweep,) = (run_harness.root / "multirun" / "auto").glob("*")
    md = (sweep / "reports" / "decisions" / "summary.md").read_text()
    assert "**Verdict: reproduced — " in md and "seeds: auto" in md
    used = {int(seed) for seed in re.findall(r" s(\d+) quick @", md)}
    assert used == {50, 51, 52, 53}  # the runs used (named "<objective> δ=… s<seed> quick @ …")
    jobs = sorted(job.name for job in sweep.glob("g0r*_*"))
    assert jobs and all(name.startswith(("g0r1_", "g0r2_")) for name in jobs)  # one folder per round's job


CONTINUED = """
    hypothesis: δ 0.1 ends above δ 0.2
    reports: [decisions]
    overrides: [debug=quick, algo=dppo]
    grids:
      - delta: [0.1, 0.2]
    seeds: auto
    budget: {runs: 12, minutes: 0.01, per_round: 2, max_seeds: 6}
    tests:
      - name: entropy below 1000 nats
        measure: entropy
        hypothesis: less
        sesoi: 1
        contrast: {"algo.delta=0.1": 0.5, "algo.delta=0.2": 0.5}
        offset: 1000
"""


def test_a_study_stopped_by_its_minutes_budget_continues_in_its_own_folder(run_harness):
    """The first look (2 seeds) spends almost no α, which 2 seeds can never reach (2^−2 ≥ α 0.0007), so the
    study is undecided whatever its runs give when its tiny minutes budget stops it (the outcome itself,
    entropy ≪ 1000 nats, is fixed too); the report's command continues it in the same folder from the next
    look (not from look 1 in a new folder, which would test the same seeds again at a fresh α). The
    continued round (4 seeds, α 0.016 ≤ 2^−4) cannot decide either, and the minutes stop it again."""
    sweeps = run_harness.root / "sweeps"
    sweeps.mkdir()
    (sweeps / "slow.yaml").write_text(textwrap.dedent(CONTINUED))
    env = {"HARNESS_SWEEPS": str(sweeps)}
    first = run_harness("sweep", "slow", env=env, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "round 1: seeds 0..1" in first.stdout and "stopped — minutes budget" in first.stdout
    (sweep,) = (run_harness.root / "multirun" / "slow").glob("*")
    md = (sweep / "reports" / "decisions" / "summary.md").read_text()
    command = f"python -m harness sweep slow --continue={sweep}"
    assert command in md and "too few seeds for α" in md
    refused = run_harness("sweep", "slow", "--continue=/no/such/folder", env=env)
    assert refused.returncode == 2 and "not the folder of an adaptive study" in refused.stderr
    again = run_harness("sweep", "slow", f"--continue={sweep}", env=env, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "continuing after 2 seeds per arm" in again.stdout and "round 2: seeds 2..3" in again.stdout
    assert "round 1:" not in again.stdout
    assert list((run_harness.root / "multirun" / "slow").glob("*")) == [sweep]  # no new folder
    assert {p.name[:4] for p in sweep.glob("g0r*_*")} == {"g0r1", "g0r2"}
    assert "done: 4" in (sweep / "adaptive.yaml").read_text()


def test_the_command_for_missing_seeds_continues_a_study_or_starts_a_new_design():
    """Undecided with budget left: continue the same sequential study in its folder. Budget spent: a new
    fixed-seed design on fresh seeds only (testing the seeds already tested again, at a fresh α, would
    raise the false "reproduced" rate well above α)."""
    from harness.stats import inference
    from harness.reports.evidence.decisions import _command, jobs_per_seed

    spec = load_sweep("claim3_anchor")  # seeds: auto, at most `cap` seeds per arm
    cap = spec.design.max_seeds(jobs_per_seed(spec))
    undecided = inference.Decision(inference.INCONCLUSIVE, "", None, None, None, 0.3, 0.3, 0.05, 40)
    arms = lambda n: [("a", {s: 0.5 for s in range(n)}), ("b", {s: 0.5 for s in range(n)})]  # noqa: E731
    assert _command(spec, undecided, arms(4), "/runs/claim3") == "python -m harness sweep claim3_anchor --continue=/runs/claim3"
    assert _command(spec, undecided, arms(cap), "/runs/claim3") == \
        f"python -m harness sweep claim3_anchor 'seed=range({cap},{cap + 40})'"
    decided = inference.Decision(inference.REPRODUCED, "", None, None, None, 0.01, 0.9, 0.05, 40)
    assert _command(spec, decided, arms(4), "/runs/claim3") is None
    fixed = load_sweep("claim1_sanity")
    gappy = [("a", {0: 0.5, 3: 0.5, 7: 0.5}), ("b", {0: 0.5, 9: 0.4})]
    assert _command(fixed, undecided, gappy) == "python -m harness sweep claim1_sanity 'seed=range(10,50)'"


def test_a_follow_up_on_fresh_seeds_keeps_the_false_reproduced_rate_at_alpha():
    """Under no effect: a fixed design of 6 seeds, and when undecided a follow-up of 6 more tested at the full
    α. On fresh seeds the follow-up's data are independent of the decision to run it, so its false
    "reproduced" rate stays ≤ α. Re-testing the first seeds with the new ones (what `seed=range(0,N)` did)
    tests data selected by being undecided: no level is guaranteed (printed for comparison)."""
    from harness.stats import inference

    rng = np.random.default_rng(7)
    alpha, studies, undecided, fresh, reused = 0.05, 1500, 0, 0, 0

    def reproduced(values):
        d = inference.decide(inference.estimate([dict(enumerate(values))], [1]), "greater", 0.05, alpha,
                             with_power=False)
        return d.word == inference.REPRODUCED, d.decided

    for _ in range(studies):
        d = rng.normal(0.0, 0.1, 12)
        if reproduced(d[:6])[1]:
            continue
        undecided += 1
        fresh += reproduced(d[6:])[0]
        reused += reproduced(d)[0]
    print(f"follow-ups of {undecided} undecided designs: false reproduced {fresh / undecided:.3f} on fresh "
          f"seeds, {reused / undecided:.3f} re-testing the first seeds with them")
    assert fresh / undecided <= alpha + 0.02  # 3 Monte Carlo standard errors
