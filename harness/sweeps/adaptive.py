"""`seeds: auto`: run a named sweep's seeds in rounds until every declared test is decided (the regime
checks, `check: true`, are reported but do not hold the study), a precondition fails (the verdict is then
"not testable here"), or the budget (runs and/or minutes) is spent. A design with a `pilot:` runs its
pilot seeds first: a precondition that fails on them ends the study "not testable here" before any main run;
otherwise the pilot's spread plans the seeds per arm for the power target at the SESOI, up to the budget's
cap, and the main rounds are refused when even the cap falls short (harness/reports/evidence/pilot.py), unless
the design says `underpowered: accepted`.

Round j runs seeds [n_{j−1}, n_j) of every grid (n_j = the j-th planned look, `sequential.looks`) into the
same sweep folder, then evaluates the declared tests on everything so far at that look's share of α
(`sequential.level`: O'Brien–Fleming-type alpha spending; the error rates hold however early it stops).
The run budget fixes the planned maximum seeds before the first run; a minutes budget only stops early
(a round is not started when the last round's duration would overrun it).

A study stopped by its minutes budget can be continued in its own folder (`sweep <name> --continue=<folder>`):
the rounds go on from the next planned look with the same overrides (kept in the folder's `adaptive.yaml`)
and the pilot's plan (its `pilot_plan.yaml`),
so every look still spends only its own increment of α; testing the same seeds afresh in a new folder
would spend α twice on them. The study is sealed: `adaptive.yaml` records its design as it started and why it
stopped, and `--continue` refuses an ended study, a changed design and a second driver
(harness/sweeps/study_state.py).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

import yaml

from harness.infra.atomic_file import write_text_atomically
from harness.reports.evidence import pilot, preconditions
from harness.reports.results.collect import collect
from harness.reports.evidence.decisions import evaluate, jobs_per_seed, overall
from harness.reports.results.locate import from_sweep_dir
from harness.reports.evidence.sweep_spec import SweepSpec, sweep_path
from harness.stats.sequential import level, looks
from harness.stats.words import NOT_REPRODUCED, NOT_TESTABLE
from harness.sweeps import grid_runs, report_looks
from harness.sweeps.study_pins import PINS_KEY, pins_of, recorded_pins
from harness.sweeps.study_state import STATE_FILE, design_of, hold_study, save_state, saved_state  # noqa: F401


def save_plan(sweep_dir, max_seeds: int, declared: int) -> None:
    """The pilot's plan in the sweep folder (evidence/pilot.py PLAN_FILE), which the later rounds, a continued
    study and the reports read back (`pilot.planned`)."""
    Path(sweep_dir).mkdir(parents=True, exist_ok=True)
    write_text_atomically(Path(sweep_dir) / pilot.PLAN_FILE, yaml.safe_dump(pilot.plan_record(max_seeds, declared)))


def decided(outcomes) -> bool:
    """May the study stop? When every declared test is decided, or when a part's contradiction survives
    Holm's correction at the look's α: the claim is then not reproduced whatever its other parts would show.
    The checks (`check: true`) guard how the tests are read, they are not what the study decides: an
    undecided check does not keep it running."""
    claims = [o for o in outcomes if not o.test.check] or list(outcomes)
    if bool(claims) and all(o.decision.decided for o in claims):
        return True
    parts = [o for o in outcomes if not o.test.check]
    return bool(parts) and overall(parts)[0] == NOT_REPRODUCED


def _pilot(spec: SweepSpec, sweep_dir, user: List[str], flags: List[str]):
    """Run the design's pilot seeds (job folders g<grid>p_*). A regime the pilot shows unable to carry the
    claim (a failed precondition) ends the study "not testable here" before any main run; otherwise the pilot
    plans the seeds per arm. (store, exit code, why the main runs are refused or None, the planned spec,
    the failed preconditions or None)."""
    design = spec.design
    seeds = ",".join(map(str, design.pilot.seeds))
    _, grids, jobs = grid_runs.prepare_jobs(spec, [*user, f"seed={seeds}"], flags, tag="p",
                                            into=sweep_dir)
    store = grid_runs.store_of(jobs)
    print(f"sweep {spec.name}: pilot: seeds {seeds} (they size the design and are never tested)", flush=True)
    worst = grid_runs.run_grids(sweep_dir, grids, flags)
    data = collect(from_sweep_dir(sweep_dir, store))
    untestable = preconditions.failed(preconditions.check(data, design.preconditions, design.last_k))
    if untestable:
        return store, worst, None, spec, untestable
    cap = design.max_seeds(jobs_per_seed(spec))
    sized, seeds = pilot.plan(data, spec)
    for s in sized:
        print(f"  pilot: {s.text(design.power)}")
    refused = pilot.refusal(sized, design, seeds)
    if not refused and any(s.power is None or s.power < design.power for s in sized):
        print(f"sweep {spec.name}: underpowered, run anyway (underpowered: accepted)")
    if not refused:
        print(f"sweep {spec.name}: the pilot plans {seeds} seeds per arm (cap {cap})")
        save_plan(sweep_dir, seeds, cap)
    return store, worst, refused, pilot.with_max_seeds(spec, seeds), None


def _report_look(data, spec, plan: List[int], taken: List[dict], n: int, j: int):
    """A look of a study without declared tests: its reports' verdicts at this look's α (appended to `taken`,
    the looks recorded in the study's state, which the pages read back). (the next look's seeds per value,
    why the study ends or None)."""
    design = spec.design
    level = report_looks.look_alpha(n, taken[-1]["seeds"] if taken else 0, plan[-1], design.alpha)
    judged = report_looks.judge(data, level)
    taken.append({"round": j + 1, "seeds": n, "alpha": level})
    print("\n".join(report_looks.lines(judged, len(taken), n, level)), flush=True)
    if not judged:
        return 0, f"nothing to decide at {n} seeds per value: no objective has finished runs at 2 threshold values"
    if report_looks.all_decided(judged):
        return 0, f"every verdict decided at {n} seeds per value"
    sesoi, power, _ = report_looks.design(data)
    hopeless = report_looks.futile(judged, n, plan[-1], design.alpha, sesoi, power) if n < plan[-1] else []
    if hopeless:
        print("\n".join(hopeless), flush=True)
        return 0, f"every open part is a size at the SESOI that the last look would decide with probability under " \
                  f"{report_looks.FUTILE:.0%} (futility), at {n} seeds per value"
    target = report_looks.next_look(judged, plan, n, plan[-1], design.alpha, sesoi, power,
                                    most=2 * design.budget.per_round)
    ahead = (report_looks.look_alpha(target, n, plan[-1], design.alpha), "the next look's") if target > n else \
        (level, "this look's")  # no look left: what this one would have needed
    print("\n".join(report_looks.missing(judged, sesoi, power, *ahead)), flush=True)
    return target, None


def run_adaptive(spec: SweepSpec, sweep_dir, user: List[str], flags: List[str],
                 clock: Callable[[], float] = time.monotonic, done: int = 0,
                 sweep_file: Optional[Path] = None, sealed: Optional[dict] = None) -> int:
    """Run the rounds after `done` seeds per arm (0: a new study; else a continued one, see the module).
    `sweep_file`: the spec's file (default: the named sweep's), whose design the study records as it starts;
    `sealed`: that design, for a study without a file (a `seed=auto` multirun, harness/sweeps/auto_study.py).
    A spec without declared tests runs until every verdict of its reports is decided (sweeps/report_looks.py),
    each round sized by the seeds those verdicts still need; the α of each look is recorded (`looks`)."""
    sealed = sealed if sealed is not None else design_of(sweep_file or sweep_path(spec.name))
    before = (saved_state(sweep_dir) or {}) if done else {}
    taken, target = list(before.get("looks") or []), int(before.get("next") or 0)  # a stopped round's look
    hold_study(sweep_dir)  # one driver at a time (a continued study's was taken before it got here)
    pins = recorded_pins(saved_state(sweep_dir)) if done else {}  # its store, experiment, values (study_pins.py)

    def record(stopped: Optional[str] = None, final: bool = False, pending: int = 0) -> None:
        save_state(sweep_dir, {"sweep": spec.name, "user": list(user), "flags": list(flags), "done": int(done),
                               "design": sealed, **({"looks": taken} if taken else {}),
                               **({"next": pending} if pending else {}),
                               **({PINS_KEY: pins} if pins else {}),
                               **({"stopped": stopped, "final": final} if stopped else {})})

    record()
    spec = pilot.planned(spec, sweep_dir) if done else spec
    design, budget = spec.design, spec.design.budget
    per_seed = jobs_per_seed(spec)
    plan = looks(budget.per_round, design.max_seeds(per_seed))
    print(f"sweep {spec.name}: {spec.hypothesis.strip()}\n  folder: {sweep_dir}\n  seeds: auto — looks at "
          f"{', '.join(map(str, plan))} seeds per arm{' at most (the pilot plans them)' if design.pilot and not done else ''}"
          f" ({per_seed} runs per seed; budget {budget.runs or '∞'} runs"
          f"{f', {budget.minutes:g} min' if budget.minutes else ''}); α {design.alpha:g} spent over the looks"
          + ("; each round sized by the seeds the undecided verdicts need" if not design.tests else ""))
    if done:
        print(f"sweep {spec.name}: continuing after {done} seeds per arm (the looks before it are spent)")
    started, worst, last_round, first = clock(), 0, 0.0, True
    store = None  # the store's full URI, from the first round's composed jobs
    if design.pilot and not done:
        store, worst, refused, spec, untestable = _pilot(spec, sweep_dir, user, flags)
        if untestable:
            print(f"sweep {spec.name}: stopped — {NOT_TESTABLE} after the pilot (no main run) — {untestable}")
            record(f"{NOT_TESTABLE} after the pilot (no main run) — {untestable}", final=True)
            grid_runs.finish(spec, sweep_dir, store)
            return worst
        if refused:
            print(f"harness: error: sweep {spec.name}: {refused}", file=sys.stderr)
            record(f"refused by its pilot: {refused}", final=True)
            grid_runs.finish(spec, sweep_dir, store)
            return 2
        design = spec.design
        plan = looks(budget.per_round, design.max_seeds(per_seed))
        print(f"sweep {spec.name}: looks at {', '.join(map(str, plan))} seeds per arm")
    stop, final, by_reports, last_seeds = "budget spent (every planned look taken)", True, not design.tests, 0
    while True:
        n = next((m for m in plan if m > done and m >= min(target, plan[-1])), None)
        if n is None:
            break
        elapsed = (clock() - started) / 60.0
        if budget.minutes is not None and not first:
            seed_minutes = last_round / max(1, last_seeds)
            fits = report_looks.fitting(plan, done, n, budget.minutes - elapsed, seed_minutes)
            if fits is None:
                stop = (f"minutes budget: {elapsed:.1f} of {budget.minutes:g} min used, the next round takes "
                        f"~{seed_minutes * (min(m for m in plan if m > done) - done):.1f}")
                final = False
                break
            n = fits
        j = plan.index(n)
        began = clock()
        seeds = design.main_seeds(done, n)
        _, grids, jobs = grid_runs.prepare_jobs(spec, [*user, f"seed=range({seeds.start},{seeds.stop})"], flags,
                                                tag=f"r{j + 1}", into=sweep_dir)
        store = grid_runs.store_of(jobs)
        pins.update(pins_of(jobs))  # recorded with the round (a continued study's were checked: the same)
        record(pending=n)
        print(f"sweep {spec.name}: round {len(taken) + 1 if by_reports else j + 1}: seeds {seeds.start}.."
              f"{seeds.stop - 1}", flush=True)
        worst = max(worst, grid_runs.run_grids(sweep_dir, grids, flags))
        last_round, last_seeds, done, first, target = (clock() - began) / 60.0, n - done, n, False, 0
        record()
        try:
            data = collect(from_sweep_dir(sweep_dir, store))
            if by_reports:  # no declared tests: the reports' verdicts decide (sweeps/report_looks.py)
                target, ended = _report_look(data, spec, plan, taken, n, j)
                record()
                if ended:
                    stop = ended
                    break
                continue
            refused = preconditions.failed(preconditions.check(data, design.preconditions, design.last_k))
            outcomes = [] if refused else evaluate(data, spec)
        except Exception as err:  # the study's driver loop: no data yet (every run failed) must not end it
            print(f"harness: warning: sweep {spec.name}: tests not evaluated after round {j + 1}: {err}")
            continue
        if refused:  # the regime cannot show the claim: more seeds of it would be spent on nothing
            stop = f"{NOT_TESTABLE} at {n} seeds per arm — {refused}"
            break
        for o in outcomes:
            print(f"  look {j + 1} (n={n}, α={o.alpha:.4f}): {o.test.name}: {o.decision.word}"
                  + (" (a check: does not hold the study)" if o.test.check else ""))
        if decided(outcomes):
            stop = f"every declared test decided at {n} seeds per arm"
            break
    print(f"sweep {spec.name}: stopped — {stop}")
    record(stop, final)
    grid_runs.finish(spec, sweep_dir, store)
    return worst
