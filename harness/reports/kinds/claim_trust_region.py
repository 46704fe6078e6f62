"""claim_trust_region (claim 2, DPPO Takeaway 1): on-policy at a stable lr, does mismatch
(precision.mismatch_scale) cost the unconstrained objectives (pg_is, cispo) more accuracy than DPPO?
The test is the objective × mismatch interaction, declared in sweeps/claim2_trust_region.yaml."""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData, fmt
from harness.reports.outcomes import per_seed
from harness.reports.page import Page
from harness.reports.palette import OTHER_STYLES, colour
from harness.reports.registry import ReportKind
from harness.stats.intervals import t_interval

OBJECTIVES = ("pg_is", "cispo", "dppo")
SCALE = "precision.mismatch_scale"
SWEEP = "claim2_trust_region"


def _runs(data: SweepData):
    return [r for r in data.runs if r.objective in OBJECTIVES and r.param(SCALE) is not None]


def needs(data: SweepData) -> Optional[str]:
    runs = _runs(data)
    if len({float(r.param(SCALE)) for r in runs}) >= 2 and {"dppo"} < {r.objective for r in runs}:
        return None
    return "needs pg_is or cispo and dppo runs at ≥ 2 values of precision.mismatch_scale"


def build(data: SweepData, page: Page) -> None:
    runs = _runs(data)
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    k = claims.design_k(spec)
    groups = claims.group_by(runs, lambda r: f"{r.objective} · ×{fmt(float(r.param(SCALE)))}")
    claims.describe(data, page, groups, ["final_accuracy", "gain", "mismatch"], k, "Objective × mismatch scale",
                    "objective · mismatch scale")
    scales = sorted({float(r.param(SCALE)) for r in runs})
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for i, objective in enumerate(o for o in OBJECTIVES if any(r.objective == o for r in runs)):
        for ax, name in zip(axes, ("final_accuracy", "mismatch")):
            cis = [t_interval(list(per_seed(data, [r for r in runs if r.objective == objective
                                                   and float(r.param(SCALE)) == s], name, k).values()),
                              bounds=claims.measure(name).bounds) for s in scales]
            xs = [s for s, c in zip(scales, cis) if c.mean is not None]
            cis = [c for c in cis if c.mean is not None]
            ax.errorbar(xs, [c.mean for c in cis],
                        yerr=[[c.mean - (c.low if c.low is not None else c.mean) for c in cis],
                              [(c.high if c.high is not None else c.mean) - c.mean for c in cis]],
                        color=colour(objective), linestyle=OTHER_STYLES[i % len(OTHER_STYLES)], marker="osD"[i % 3],
                        capsize=3, label=objective)
    plots.finish(axes[0], "Final accuracy (last k evaluations) versus mismatch scale", "precision.mismatch_scale",
                 plots.label("eval/accuracy"))
    plots.finish(axes[1], "Mismatch over the last 10% of steps", "precision.mismatch_scale",
                 plots.label("train/mismatch"))
    page.figure(fig, "claim_trust_region", "Per objective (colour, line style and marker): mean over seeds with "
                "95% t-intervals inside the measure's range, at each mismatch scale.")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_trust_region", "Claim 2: is a trust region needed under mismatch?", needs, build)
