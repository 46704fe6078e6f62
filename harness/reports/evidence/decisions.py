"""The declared tests of a named sweep (`tests:` in sweeps/<name>.yaml, see design.py),
evaluated on its runs. Every report that decides something (the claim kinds, `decisions`) goes through here,
so they share one statistics core (`harness/stats/inference.py`) and one set of words; the page they get is drawn by
harness/reports/rendering/decisions_section.py.

Per test: the contrast's estimate with its interval at the look's α, the p-values for the claim and
against it, the seeds per arm its SESOI needs at the target power given the observed spread, and, when
undecided, the exact command that runs the missing seeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.reports.evidence import pilot, rate_decisions
from harness.reports.evidence.arms import contrast_bounds, exchangeable, matches, selector_text
from harness.reports.evidence.outcomes import measure, per_seed, resolution
from harness.reports.evidence.sweep_spec import load_sweep
from harness.reports.results.data import SweepData
from harness.stats import inference
from harness.stats.grid_seeds import runs_per_seed
from harness.stats.sequential import level


@dataclass
class Outcome:
    test: Any  # design.TestSpec
    decision: inference.Decision
    arms: List[Tuple[str, Dict[object, float]]]  # (selector text, {seed: value})
    alpha: float
    command: Optional[str]
    parts: str = "all"  # the design's rule for combining its tests (harness/stats/combine.py)


def spec_for(data: SweepData, default: Optional[str] = None):
    """The named sweep's spec: from the sweep folder (<root>/multirun/<name>/<stamp>), else `default`."""
    names = []
    if data.sweep_dir is not None and data.sweep_dir.parent.parent.name == "multirun":
        names.append(data.sweep_dir.parent.name)
    if default:
        names.append(default)
    for name in names:
        try:
            return pilot.planned(load_sweep(name), data.sweep_dir)
        except ValueError:
            continue
    return None


def jobs_per_seed(spec) -> int:
    return runs_per_seed(spec.grids)


def look_alpha(spec, n: int) -> float:
    design = spec.design
    if not design.adaptive:
        return design.alpha
    max_seeds = design.max_seeds(jobs_per_seed(spec))
    return level(n, design.budget.per_round, max_seeds, design.alpha)


def power_alpha(spec) -> float:
    """The α the power figure assumes: the design's α, or for `seeds: auto` the final look's share of it
    (the level the last, decisive test runs at), so the seeds it prints are not too few."""
    return look_alpha(spec, spec.design.max_seeds(jobs_per_seed(spec)) or 0)


def evaluate(data: SweepData, spec) -> List[Outcome]:
    """The declared tests on the study's runs (a pilot's runs are never tested: they sized the design)."""
    design = spec.design
    piloted = {id(r) for r in pilot.pilot_runs(data, design.pilot.seeds)} if design.pilot else set()
    tested = [r for r in data.runs if id(r) not in piloted]
    out = []
    for test in design.tests:
        m = measure(test.measure)
        arms = [(selector_text(sel), per_seed(data, [r for r in tested if matches(r, sel)], test.measure,
                                              design.last_k)) for sel, _ in test.contrast]
        weights = [w for _, w in test.contrast]
        n = min((len(a) for _, a in arms), default=0)
        alpha = look_alpha(spec, n)
        bounds = contrast_bounds(m.bounds, weights, test.offset)
        if test.method == "fisher":
            decision = rate_decisions.fisher(arms, weights, alpha)
        elif test.method == "rate_difference" and test.hypothesis == "greater":
            decision = rate_decisions.greater_rates(arms, weights, test.sesoi, alpha)
        elif test.method == "rate_difference":
            decision = rate_decisions.noninferior_rates(arms, weights, test.sesoi, alpha, design.power)
        else:
            used = [r for r in tested if any(matches(r, sel) for sel, _ in test.contrast)]
            est = inference.estimate([a for _, a in arms], weights, test.offset,
                                     resolution(used, test.measure, weights, design.last_k))
            decision = inference.decide(est, test.hypothesis, test.sesoi, alpha, design.power, bounds,
                                        arms=len(arms), alpha_power=power_alpha(spec), method=test.method,
                                        exchangeable=exchangeable(test), size=test.size)
        out.append(Outcome(test, decision, arms, alpha, _command(spec, decision, arms, data.sweep_dir), design.parts))
    return out


def _command(spec, decision, arms, sweep_dir=None) -> Optional[str]:
    """What runs the seeds an undecided test is missing. With budget left in an adaptive study: its next
    looks, in its folder. Otherwise a new design on fresh seeds only: testing the seeds already tested
    again (at a fresh α) would raise the false-decision rate well above α."""
    if decision.decided:
        return None
    have = max((len(a) for _, a in arms), default=0)
    want = max(2, decision.seeds_needed or have + 1)
    if spec.design.adaptive:
        cap = spec.design.max_seeds(jobs_per_seed(spec))
        if have < cap and sweep_dir:
            # the same sequential study, continued in its folder: a new folder would test these seeds again
            return f"python -m harness sweep {spec.name} --continue={sweep_dir}"
    first = fresh_seed(arms)
    return f"python -m harness sweep {spec.name} 'seed=range({first},{first + want})'"


def fresh_seed(arms) -> int:
    """The first seed after every seed the arms have used (integer seeds; others count as used up)."""
    used = [s for _, a in arms for s in a]
    numbers = [int(s) for s in used if isinstance(s, (int, np.integer)) or str(s).lstrip("-").isdigit()]
    return max(numbers, default=-1) + 1


def overall(outcomes: Sequence[Outcome]) -> Tuple[str, str]:
    """The claim's verdict from its tests; checks (`check: true`) are reported beside it, not combined.
    Holm's correction runs at the looks' α (the smallest of the parts' levels), not the design's α: an
    adaptive study's look may spend only its own increment."""
    parts = [o for o in outcomes if not o.test.check]
    checks = [o for o in outcomes if o.test.check]
    rule = outcomes[0].parts if outcomes else "all"
    word, why = inference.combine([o.decision for o in parts], min((o.alpha for o in parts), default=0.0), rule)
    text = "; ".join(f"{o.test.name}: {o.decision.word}" for o in parts) + f" ({why})"
    if checks:
        text += "; checks, not in the verdict: " + "; ".join(f"{o.test.name}: {o.decision.word}" for o in checks)
    return word, text
