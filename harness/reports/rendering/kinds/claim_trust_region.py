"""claim_trust_region (claim 2, DPPO Takeaway 1): where the unconstrained objectives (pg_is, cispo) train
stably without a mismatch, does the mismatch cost them more accuracy than DPPO? The mismatch factor is the
one precision setting the sweep varies: `precision.mismatch_scale` (how strong the rollout's rounding is),
`precision.weight_sync` (full: a fresh copy each step; delta: rounding errors accumulate) or `precision` itself
(e.g. fp32 against fp8_rollout). The test is the objective × mismatch interaction, declared in
sweeps/claim2_trust_region.yaml."""
from __future__ import annotations

from typing import List, Optional

from harness.reports.rendering import claims, plots
from harness.reports.results.data import SweepData, fmt
from harness.reports.evidence.outcomes import per_seed
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, colour
from harness.reports.rendering.registry import ReportKind
from harness.stats.intervals import t_interval

OBJECTIVES = ("pg_is", "cispo", "dppo")
FACTORS = ("precision.mismatch_scale", "precision.weight_sync", "precision.name")
SWEEP = "claim2_trust_region"


def _level(run, factor: str) -> str:
    value = run.precision if factor == "precision.name" else run.param(factor)
    if value is None:
        return ""
    try:
        return fmt(float(value))
    except (TypeError, ValueError):
        return str(value)


def _factor(data: SweepData) -> Optional[str]:
    """The precision setting that takes ≥ 2 values among the objectives' runs (the first of FACTORS)."""
    runs = [r for r in data.runs if r.objective in OBJECTIVES]
    for factor in FACTORS:
        if len({_level(r, factor) for r in runs} - {""}) >= 2:
            return factor
    return None


def _runs(data: SweepData, factor: str):
    return [r for r in data.runs if r.objective in OBJECTIVES and _level(r, factor)]


def needs(data: SweepData) -> Optional[str]:
    factor = _factor(data)
    if factor and {"dppo"} < {r.objective for r in _runs(data, factor)}:
        return None
    return f"needs pg_is or cispo and dppo runs at ≥ 2 values of one of {', '.join(FACTORS)}"


def _levels(runs, factor: str) -> List[str]:
    levels = {_level(r, factor) for r in runs}
    try:
        return sorted(levels, key=float)
    except ValueError:
        return sorted(levels)


def build(data: SweepData, page: Page) -> None:
    factor = _factor(data)
    runs = _runs(data, factor)
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    k = claims.design_k(spec)
    short = factor.rsplit(".", 1)[-1]
    groups = claims.group_by(runs, lambda r: f"{r.objective} · {short}={_level(r, factor)}")
    claims.describe(data, page, groups, ["final_accuracy", "gain", "mismatch", "log_mismatch_growth"], k,
                    f"Objective × {factor}", f"objective · {short}")
    levels = _levels(runs, factor)
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for i, objective in enumerate(o for o in OBJECTIVES if any(r.objective == o for r in runs)):
        for ax, name in zip(axes, ("final_accuracy", "mismatch")):
            cis = [t_interval(list(per_seed(data, [r for r in runs if r.objective == objective
                                                   and _level(r, factor) == level], name, k).values()),
                              bounds=claims.measure(name).bounds) for level in levels]
            xs = [x for x, c in enumerate(cis) if c.mean is not None]
            cis = [c for c in cis if c.mean is not None]
            ax.errorbar(xs, [c.mean for c in cis],
                        yerr=[[c.mean - (c.low if c.low is not None else c.mean) for c in cis],
                              [(c.high if c.high is not None else c.mean) - c.mean for c in cis]],
                        color=colour(objective), linestyle=OTHER_STYLES[i % len(OTHER_STYLES)], marker="osD"[i % 3],
                        capsize=3, label=objective)
    for ax in axes:
        ax.set_xticks(range(len(levels)), levels)
    plots.finish(axes[0], f"Final accuracy (last k evaluations) versus {short}", factor, plots.label("eval/accuracy"))
    plots.finish(axes[1], "Mismatch over the last 10% of steps", factor, plots.label("train/mismatch"))
    page.figure(fig, "claim_trust_region", "Per objective (colour, line style and marker): mean over seeds with "
                f"95% t-intervals inside the measure's range, at each value of {factor}.")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_trust_region", "Claim 2: is a trust region needed under mismatch?", needs, build)
