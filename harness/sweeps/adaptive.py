"""`seeds: auto`: run a named sweep's seeds in rounds until every declared test is decided or the
budget (runs and/or minutes) is spent.

Round j runs seeds [n_{j−1}, n_j) of every grid (n_j = the j-th planned look, `sequential.looks`) into the
same sweep folder, then evaluates the declared tests on everything so far at that look's share of α
(`sequential.level`: O'Brien–Fleming-type alpha spending; the error rates hold however early it stops).
The run budget fixes the planned maximum seeds before the first run; a minutes budget only stops early
(a round is not started when the last round's duration would overrun it).
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Sequence, Tuple

from harness.reports import inference
from harness.reports.sequential import level, looks
from harness.sweeps.spec import SweepSpec


def study(draw: Callable[[int], Sequence[Dict[int, float]]], weights: Sequence[float], hypothesis: str,
          sesoi: float, alpha: float, per_round: int, max_seeds: int, offset: float = 0.0) -> Tuple[str, int]:
    """One adaptive study on any data source: draw(n) returns each arm's {seed: value} for seeds < n.
    Returns (verdict word, seeds per arm used). The sweep runner applies the same looks and levels."""
    n = 0
    for n in looks(per_round, max_seeds):
        est = inference.estimate(draw(n), weights, offset)
        decision = inference.decide(est, hypothesis, sesoi, level(n, per_round, max_seeds, alpha), with_power=False)
        if decision.decided:
            return decision.word, n
    return inference.INCONCLUSIVE, n


def run_adaptive(spec: SweepSpec, sweep_dir, user: List[str], flags: List[str],
                 clock: Callable[[], float] = time.monotonic) -> int:
    from harness.reports.collect import collect
    from harness.reports.decisions import evaluate, jobs_per_seed
    from harness.reports.locate import from_sweep_dir
    from harness.sweeps import grid_runs

    design, budget = spec.design, spec.design.budget
    per_seed = jobs_per_seed(spec)
    cap = design.max_seeds(per_seed)
    plan = looks(budget.per_round, cap)
    print(f"sweep {spec.name}: {spec.hypothesis.strip()}\n  folder: {sweep_dir}\n  seeds: auto — looks at "
          f"{', '.join(map(str, plan))} seeds per arm ({per_seed} runs per seed; budget {budget.runs or '∞'} runs"
          f"{f', {budget.minutes:g} min' if budget.minutes else ''}); α {design.alpha:g} spent over the looks")
    started, worst, done, last_round = clock(), 0, 0, 0.0
    stop = "budget spent"
    for j, n in enumerate(plan):
        elapsed = (clock() - started) / 60.0
        if budget.minutes is not None and j and elapsed + last_round > budget.minutes:
            stop = f"minutes budget: {elapsed:.1f} of {budget.minutes:g} min used, a round takes ~{last_round:.1f}"
            break
        began = clock()
        _, grids = grid_runs.prepare(spec, [*user, f"seed=range({done},{n})"])
        print(f"sweep {spec.name}: round {j + 1}: seeds {done}..{n - 1}", flush=True)
        worst = max(worst, grid_runs.run_grids(sweep_dir, grids, flags, tag=f"r{j + 1}"))
        last_round, done = (clock() - began) / 60.0, n
        try:
            outcomes = evaluate(collect(from_sweep_dir(sweep_dir)), spec)
        except Exception as err:  # no data yet (every run failed): keep going while budget remains
            print(f"harness: warning: sweep {spec.name}: tests not evaluated after round {j + 1}: {err}")
            continue
        for o in outcomes:
            print(f"  look {j + 1} (n={n}, α={o.alpha:.4f}): {o.test.name}: {o.decision.word}")
        if outcomes and all(o.decision.decided for o in outcomes):
            stop = f"every declared test decided at {n} seeds per arm"
            break
    print(f"sweep {spec.name}: stopped — {stop}")
    grid_runs.finish(spec, sweep_dir)
    return worst
