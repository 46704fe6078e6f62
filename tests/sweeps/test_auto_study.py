"""`multirun ... seed=auto budget.*=`: the budget read and refused in one line before anything runs; rounds sized by
the seeds the undecided sensitivity verdicts need, within the minutes left; α spent over the looks (never twice
after a resume); the same command finds its stopped study; `--plan` shows the first round and the limits."""
from __future__ import annotations

import numpy as np
import pytest

from harness.cli import run_cli
from harness.reports.evidence import threshold_effect
from harness.stats.look_plan import looks
from harness.stats.sequential import spent
from harness.sweeps import auto_study, report_looks
from harness.sweeps.study_state import save_state, saved_state

MAIN = ["algo=dppo,drpo", "delta=0.1,0.15,0.2"]


def test_the_budget_is_read_with_its_defaults():
    budget, rest = auto_study.read([*MAIN, "seed=auto", "budget.minutes=14", "budget.runs=120"], multirun=True)
    assert budget == {"minutes": 14.0, "runs": 120, "max_seeds": 40, "per_round": 4} and rest == MAIN


@pytest.mark.parametrize("given, words", [
    (["seed=auto"], "seed=auto needs a budget: budget.minutes=<minutes> and/or budget.runs=<runs>"),
    (["budget.minutes=3"], "budget.minutes=3 goes with seed=auto"),
    (["seed=auto", "budget.minutes=0"], "budget.minutes=0: allowed: a number of minutes > 0"),
    (["seed=auto", "budget.minutes=soon"], "budget.minutes=soon: allowed: a number of minutes > 0"),
    (["seed=auto", "budget.runs=2.5"], "budget.runs=2.5: allowed: a whole number of runs ≥ 1"),
    (["seed=auto", "budget.runs=10", "budget.max_seeds=1"], "budget.max_seeds=1: allowed: a whole number of seeds"),
    (["seed=auto", "budget.time=3"], "budget.time is not a budget key; allowed: budget.runs, budget.minutes"),
    (["seed=auto", "budget.runs=9", "seed=3"], "seed= is given twice"),
    (["seed=auto", "budget.runs=11"], "budget.runs=11 allows 1 seed per value of this sweep's 6 runs per seed"),
    (["algo=dppo", "seed=auto", "budget.runs=20"], "this sweep has none to decide"),
])
def test_bad_budgets_are_refused_in_one_line_before_anything_runs(tmp_path, monkeypatch, capsys, given, words):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    argv = given if given[0] == "algo=dppo" else [*MAIN, *given]
    assert run_cli(["multirun", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("harness: error: ") and words in err, err
    assert not any(tmp_path.iterdir())  # nothing created


def test_seed_auto_is_for_a_sweep(capsys):
    assert run_cli(["algo=dppo", "seed=auto", "budget.runs=4"]) == 2
    assert "it is for a sweep (python -m harness multirun ... seed=auto)" in capsys.readouterr().err


def _judged(spread: float, seeds: int, shift: float = 0.0, alpha: float = 1e-5):
    rng = np.random.default_rng(7)
    base = rng.normal(0.5, spread, seeds)
    outcomes = {0.1: dict(enumerate(base)), 0.2: dict(enumerate(base + shift + rng.normal(0, spread, seeds)))}
    verdict = threshold_effect.decide(outcomes, 0.05, alpha, 0.8, resolution=0.0)
    return [report_looks.Judged("dppo", "δ", outcomes, {}, 0.0, verdict)]


def test_a_round_is_sized_by_the_seeds_the_undecided_verdicts_need_at_that_looks_alpha():
    plan = looks(4, 40)
    judged = _judged(0.03, 4)
    assert not judged[0].verdict.decided
    n = report_looks.next_look(judged, plan, 4, 40, 0.05, 0.05, 0.8, most=40)
    assert n in plan and 4 < n < 40
    again = threshold_effect.decide(judged[0].outcomes, 0.05, report_looks.look_alpha(n, 4, 40, 0.05), 0.8)
    assert report_looks.needed(again) <= n  # the look it chose has, on the spread seen, the seeds it needs
    earlier = [m for m in plan if 4 < m < n]
    for m in earlier:  # and no earlier planned look does
        at = threshold_effect.decide(judged[0].outcomes, 0.05, report_looks.look_alpha(m, 4, 40, 0.05), 0.8)
        assert report_looks.needed(at) > m
    noisy = report_looks.next_look(_judged(0.4, 4), plan, 4, 40, 0.05, 0.05, 0.8, most=40)
    assert noisy > n  # more spread: a larger round (up to the last planned look)
    assert report_looks.next_look(_judged(0.4, 4), plan, 4, 40, 0.05, 0.05, 0.8, most=8) == 12  # a round's cap
    lines = report_looks.missing(judged, 0.05, 0.8, report_looks.look_alpha(n, 4, 40, 0.05), "the next look's")
    assert len(lines) == 1 and lines[0].startswith("    missing: dppo: neither a difference nor equivalence"), lines
    assert f"for 80% power at the next look's α ({report_looks.look_alpha(n, 4, 40, 0.05):.2g}): " in lines[0]
    assert f"{again.seeds_for_insensitive} seeds per value to show insensitivity" in lines[0], lines


def test_a_round_shrinks_to_the_minutes_left_or_is_not_started():
    plan = looks(4, 40)
    assert report_looks.fitting(plan, 8, 24, None, 0.5) == 24
    assert report_looks.fitting(plan, 8, 24, 5.0, 0.5) == 16  # 8 seeds of 0.5 min fit in 5 min, 16 do not
    assert report_looks.fitting(plan, 8, 24, 1.0, 0.5) is None


def test_alpha_over_any_path_of_looks_is_at_most_alpha():
    plan = looks(4, 40)
    for path in ([4, 8, 12, 40], [4, 24, 40], plan, [40]):
        levels = [report_looks.look_alpha(n, path[i - 1] if i else 0, 40, 0.05) for i, n in enumerate(path)]
        assert all(a > 0 for a in levels) and sum(levels) == pytest.approx(0.05)


def test_the_same_command_finds_its_stopped_study_and_its_next_look_spends_only_its_own_alpha(tmp_path):
    spec = auto_study.study_spec(MAIN, {"minutes": 14.0, "max_seeds": 40, "per_round": 4})
    design = auto_study.sealed(spec, [*MAIN, "launcher=local_parallel"])
    assert design == auto_study.sealed(spec, MAIN)  # where runs run is not another study
    first = report_looks.look_alpha(8, 0, 40, 0.05)
    stopped = tmp_path / "2026-12-08_01-00-00"
    save_state(stopped, {"sweep": "auto", "user": MAIN, "flags": [], "done": 8, "design": design,
                         "looks": [{"round": 2, "seeds": 8, "alpha": first}], "stopped": "minutes budget",
                         "final": False})
    other = tmp_path / "2026-12-08_02-00-00"  # a later study of another command
    save_state(other, {"sweep": "auto", "user": ["algo=drpo"], "flags": [], "done": 4,
                       "design": auto_study.sealed(spec, ["algo=drpo", "delta=0.1,0.2"])})
    folder, state = auto_study.latest_study(tmp_path, design)
    assert folder == stopped and state["done"] == 8 and not state["final"]
    assert saved_state(folder)["looks"][0]["alpha"] == first
    after = report_looks.look_alpha(16, state["looks"][-1]["seeds"], 40, 0.05)
    assert first + after == pytest.approx(spent(16 / 40, 0.05))  # the first look's α is not spent again
    assert auto_study.latest_study(tmp_path, auto_study.sealed(spec, ["algo=dppo", "delta=0.1,0.3"])) is None


def test_plan_shows_the_first_round_and_the_limits(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["multirun", "algo=dppo", "delta=0.1,0.2", "seed=auto", "budget.runs=12", "budget.per_round=2",
                    "budget.minutes=5", "tracking=none", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "plan: multirun algo=dppo delta=0.1,0.2 tracking=none seed=auto, its first round" in out, out
    assert "jobs: 4 (launcher=local)" in out, out
    assert "seed=auto: the first round runs seeds 0..1 (4 runs)" in out and "at most 6 seeds per value (12" in out
    assert "budget: 12 runs, 5 minutes" in out and "looks at 2, 4, 6 seeds per value" in out, out
    levels = [report_looks.look_alpha(n, p, 6, 0.05) for n, p in ((2, 0), (4, 2), (6, 4))]
    assert "per look if each is taken: " + ", ".join(f"{a:.2g}" for a in levels) in out, out
    assert not (tmp_path / "multirun").exists()  # nothing written


def test_a_size_at_the_sesoi_stops_the_study_for_futility_and_nothing_else_does():
    at_sesoi = _judged(0.05, 28, shift=0.05, alpha=0.014)  # a real difference, right at the SESOI (-0.047)
    assert at_sesoi[0].verdict.word == threshold_effect.DIFFERS
    lines = report_looks.futile(at_sesoi, 28, 40, 0.05, 0.05, 0.8)
    assert len(lines) == 1 and "stopped for futility" in lines[0] and "at the SESOI ±0.05" in lines[0], lines
    near = _judged(0.04, 28, shift=0.045, alpha=0.014)  # its size open too, but 40 seeds would tell it 23% of the time
    assert near[0].verdict.word == threshold_effect.DIFFERS
    assert report_looks.futile(near, 28, 40, 0.05, 0.05, 0.8) == []
    open_sign = _judged(0.03, 4)  # neither shown yet: more seeds may decide it, never futile
    assert open_sign[0].verdict.word == threshold_effect.UNDECIDED
    assert report_looks.futile(open_sign, 4, 40, 0.05, 0.05, 0.8) == []
    assert report_looks.futile(at_sesoi + open_sign, 28, 40, 0.05, 0.05, 0.8) == []  # one open sign keeps it going
    assert report_looks.size_power(None, 40, 0.05, 0.8) == 1.0
    assert abs(report_looks.size_power(40, 40, 0.05, 0.8) - 0.8) < 1e-9  # the needed seeds give the power target
