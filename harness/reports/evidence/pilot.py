"""Pilots size the designs (`pilot:` in a sweep file, see design.py).

A pilot is a few seeds per arm run before the main rounds, on seeds the study never uses. Per declared test,
its per-seed contrasts give the spread (SD) the design's power is computed from: the chance that the
whole adaptive study — its looks, each at its share of α, with the test's own method (t or exact) —
ends **reproduced** when the true contrast is the smallest effect of interest (greater: c = SESOI; less:
c = −SESOI; noninferior and equivalent: c = 0). It is simulated (fixed RNG seed) from normal per-seed
contrasts with the pilot's SD, clipped to the contrast's range. With `pilot: {size_for: both}` the design is
also sized for the other outcome: the chance that the study ends **not reproduced** when there is no effect
(greater and less: c = 0; noninferior: c = −2·SESOI; equivalent: c = 2·SESOI, as far beyond the margin as
the effect above lies inside it), each look at its α divided by the claim's number of parts (a contradiction
carries a claim of m parts only below Holm's first level, α/m). A claim whose truth may be "no effect" needs
this power too, or its study ends undecided.

The pilot sets the seed budget: the main study plans the fewest seeds per arm (whole rounds, at most the
declared `budget.max_seeds` and run budget, which become a cap) at which every test reaches the power target,
and its looks and α spending follow that plan (`plan_record`, which the study saves in its sweep folder as
PLAN_FILE, so the reports and a continued study use the same looks). Where even the cap is below the target
the main runs are refused, unless
the design says `underpowered: accepted` (it then plans the cap; the power is printed either way).
The pilot's runs are reported, never tested: `decisions.evaluate` leaves their seeds out.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np
import yaml
from scipy import stats

from harness.reports.evidence.arms import contrast_bounds, exchangeable, matches
from harness.reports.results.data import SweepData
from harness.reports.evidence.outcomes import measure, per_seed
from harness.stats import inference
from harness.reports.evidence.design import RATE_METHODS
from harness.stats.grid_seeds import runs_per_seed
from harness.stats.sequential import looks, study

SIMULATED_STUDIES = 300
SD_CONFIDENCE = 0.8  # designs are sized at this one-sided upper confidence bound of the pilot's SD
PLAN_FILE = "pilot_plan.yaml"
ALTERNATIVE = {"greater": 1.0, "less": -1.0, "noninferior": 0.0, "equivalent": 0.0}  # × SESOI
NO_EFFECT = {"greater": 0.0, "less": 0.0, "noninferior": -2.0, "equivalent": 2.0}  # × SESOI (size_for: both)


@dataclass(frozen=True)
class Sized:
    test: object  # design.TestSpec
    sd: Optional[float]  # SD of one seed's contrast in the pilot; None: not measurable (< 2 shared seeds)
    seeds: int  # pilot seeds with every arm
    power: Optional[float]  # of the declared design at the SESOI, at `sized_sd`
    power_against: Optional[float] = None  # size_for: both — to end "not reproduced" when there is no effect
    sized_sd: Optional[float] = None  # the SD the powers assume: the pilot SD's upper SD_CONFIDENCE bound

    def short(self, target: float) -> bool:
        """Below the power target (either figure the design is sized for)."""
        return self.power is None or self.power < target or (
            self.power_against is not None and self.power_against < target)

    def text(self, target: float) -> str:
        if self.power is None:
            return f"{self.test.name}: no power figure (the pilot has {self.seeds} seeds with every arm)"
        against = ("" if self.power_against is None else
                   f", {self.power_against:.0%} to show \"not reproduced\" without an effect")
        return (f"{self.test.name}: pilot SD {self.sd:.3g} over {self.seeds} seeds (sized at its upper "
                f"{SD_CONFIDENCE:.0%} bound, {self.sized_sd:.3g}), power {self.power:.0%} at "
                f"{'twice the stated size' if getattr(self.test, 'size', False) else 'the SESOI'} "
                f"{self.test.sesoi:g}{against} (target {target:.0%})")


def pilot_runs(data: SweepData, seeds) -> list:
    wanted = {str(s) for s in seeds}
    return [r for r in data.runs if str(r.seed) in wanted]


def size(data: SweepData, spec, max_seeds: Optional[int] = None) -> List[Sized]:
    """Per non-check test: the pilot's SD and the simulated power of the design planned to reach max_seeds
    seeds per arm (default: the declared cap), see the module."""
    design = spec.design
    look_levels = looks(design.budget.per_round, max_seeds or design.max_seeds(runs_per_seed(spec.grids)))
    runs = pilot_runs(data, design.pilot.seeds)
    parts = sum(1 for t in design.tests if not t.check)
    out = []
    for test in design.tests:
        if test.check or test.method in RATE_METHODS:
            continue
        arms = [per_seed(data, [r for r in runs if matches(r, sel)], test.measure, design.last_k)
                for sel, _ in test.contrast]
        weights = [w for _, w in test.contrast]
        est = inference.estimate(arms, weights, test.offset)
        shared = len(set.intersection(*(set(a) for a in arms))) if arms else 0
        if est is None or not est.paired:
            out.append(Sized(test, None, shared, None))
            continue
        bounds = contrast_bounds(measure(test.measure).bounds, weights, test.offset)
        sd = sd_upper_bound(est.sd_unit, shared)
        power = simulated_power(sd, test, design, bounds, exchangeable(test), look_levels)
        against = (simulated_power(sd, test, design, bounds, exchangeable(test), look_levels,
                                   no_effect=True, parts=parts) if design.pilot.both else None)
        out.append(Sized(test, est.sd_unit, shared, power, against, sd))
    return out


def sd_upper_bound(sd: float, seeds: int, confidence: float = SD_CONFIDENCE) -> float:
    """One-sided upper confidence bound of an SD estimated from `seeds` values (chi-square, normal data):
    a short pilot's SD is often below the truth (4-seed pilots came in 1.3-3x low), so a design sized at the
    bare estimate misses its power."""
    df = max(1, seeds - 1)
    return float(sd * np.sqrt(df / stats.chi2.ppf(1.0 - confidence, df)))


def simulated_power(sd: float, test, design, bounds, exchangeable: bool, look_levels: List[int],
                    no_effect: bool = False, parts: int = 1) -> float:
    """The share of simulated studies that end reproduced at the SESOI (no_effect: not reproduced without an
    effect, each look at α/parts, see the module)."""
    rng = np.random.default_rng(0)
    per_round, max_seeds = design.budget.per_round, look_levels[-1]
    sized = bool(getattr(test, "size", False))  # a stated size: shown only above it, so planned at twice it
    centre = (NO_EFFECT if no_effect else ALTERNATIVE)[test.hypothesis] * test.sesoi * (2.0 if sized and not
                                                                                        no_effect else 1.0)
    wanted = inference.NOT_REPRODUCED if no_effect else inference.REPRODUCED
    low = -np.inf if bounds[0] is None else bounds[0]
    high = np.inf if bounds[1] is None else bounds[1]
    hits = 0
    for _ in range(SIMULATED_STUDIES):
        d = np.clip(rng.normal(centre, sd, max_seeds), low, high)
        # the contrast as one arm (offset 0, range as declared); `exchangeable` as the real test has it
        draw = (lambda n: [dict(enumerate(d[:n])), dict.fromkeys(range(n), 0.0)]) if exchangeable else \
            (lambda n: [dict(enumerate(d[:n]))])
        word, _ = study(draw, [1.0, -1.0] if exchangeable else [1.0], test.hypothesis, test.sesoi, design.alpha,
                        per_round, max_seeds, method=test.method, bounds=bounds,
                        level_scale=1.0 / max(1, parts), size=sized)
        hits += word == wanted
    return hits / SIMULATED_STUDIES


def _enough(sized: List[Sized], target: float) -> bool:
    return not any(s.short(target) for s in sized)


def plan(data: SweepData, spec) -> Tuple[List[Sized], int]:
    """(the sizing, seeds per arm to plan): the fewest whole rounds up to the declared cap at which every test
    reaches the power target; the cap (sized at the cap) when none does."""
    design = spec.design
    cap = design.max_seeds(runs_per_seed(spec.grids))
    per_round = design.budget.per_round
    candidates = sorted({n for n in range(per_round, cap, per_round) if n >= 2} | {cap})
    for n in candidates[:-1]:
        sized = size(data, spec, n)
        if _enough(sized, design.power):
            return sized, n
    return size(data, spec, cap), cap


def with_max_seeds(spec, max_seeds: int):
    """The spec whose study plans max_seeds seeds per arm (its looks and α spending follow)."""
    budget = dataclasses.replace(spec.design.budget, max_seeds=int(max_seeds))
    return dataclasses.replace(spec, design=dataclasses.replace(spec.design, budget=budget))


def plan_record(max_seeds: int, declared: int) -> dict:
    """What the sweep folder's PLAN_FILE holds (the sweeps layer writes it: harness/sweeps/adaptive.py)."""
    return {"max_seeds": int(max_seeds), "cap": int(declared)}


def saved_plan(sweep_dir) -> Optional[dict]:
    """{"max_seeds", "cap"} the pilot saved in `sweep_dir`; None without one."""
    if sweep_dir is None:
        return None
    try:
        saved = yaml.safe_load((Path(sweep_dir) / PLAN_FILE).read_text())
        return {"max_seeds": int(saved["max_seeds"]), "cap": int(saved["cap"])}
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        return None


def planned(spec, sweep_dir):
    """The spec as its pilot planned it in `sweep_dir` (unchanged without a saved plan)."""
    saved = saved_plan(sweep_dir) if spec is not None and spec.design.pilot else None
    return with_max_seeds(spec, saved["max_seeds"]) if saved else spec


def refusal(sized: List[Sized], design, seeds: Optional[int] = None) -> Optional[str]:
    """Why the main runs must not start (a power below target at the cap, not accepted), or None."""
    low = [s for s in sized if s.short(design.power)]
    if not low or design.underpowered_accepted:
        return None
    at = f" at the budget's cap of {seeds} seeds per arm" if seeds else ""
    return ("underpowered: " + "; ".join(s.text(design.power) for s in low) + at
            + " — raise the cap (max_seeds, runs) or the SESOI, or declare `underpowered: accepted`")
