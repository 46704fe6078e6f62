"""claim_drpo_vs_dppo (claim 5), as the DRPO paper compares them: DRPO at its paper default δ = 12.5 and at
its best δ against DPPO at its best δ (each best chosen on pilot seeds that are never tested, the runs here on
fresh seeds). Does DRPO end no worse? At δ = 12.5 DRPO's weight 1 ∓ |π − ν|/δ stays in [0.92, 1.08]
(|π − ν| ≤ 1), so it is close to pg_is; the page says so."""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots, threshold_action, threshold_effect
from harness.reports.data import SweepData, fmt
from harness.reports.kinds.sensitivity import design_of
from harness.reports.kinds.sensitivity import verdict as sensitivity_verdict
from harness.reports.outcomes import per_seed, resolution
from harness.reports.page import Page
from harness.reports.palette import OTHER_STYLES, colour
from harness.reports.registry import ReportKind
from harness.stats.intervals import t_interval

SWEEP = "claim5_drpo_vs_dppo"
BY_CONSTRUCTION = ("DRPO at its paper default δ = 12.5 is close to pg_is by construction: |π − ν| ≤ 1, so its "
                   "weight 1 ∓ |π − ν|/12.5 stays in [0.92, 1.08]. Each objective's best δ was chosen on pilot "
                   "seeds by the rule of sweeps/claim5_delta_pilot.yaml (highest mean final accuracy); the runs "
                   "below are on fresh seeds.")


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs}
    return None if {"dppo", "drpo"} <= names else "needs dppo and drpo runs"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if r.objective in ("dppo", "drpo") and r.param("algo.delta") is not None]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    k = claims.design_k(spec)
    page.text(BY_CONSTRUCTION, "method")
    groups = claims.group_by(runs, lambda r: f"{r.objective} δ={fmt(float(r.param('algo.delta')))}")
    claims.describe(data, page, groups, ["final_accuracy", "gain"], k, "Final eval accuracy by objective and δ",
                    "variant")
    lines = []
    sesoi, alpha, power, _ = design_of(data)
    for objective in ("dppo", "drpo"):
        by_delta = claims.group_by([r for r in runs if r.objective == objective], lambda r: float(r.param("algo.delta")))
        if len(by_delta) < 2:
            continue
        outcomes = {d: per_seed(data, m, "final_accuracy", k) for d, m in by_delta.items()}
        result = threshold_effect.decide(outcomes, sesoi, alpha, power,
                                         collapsed=threshold_action.collapses(data, by_delta),
                                         resolution=resolution(runs, "final_accuracy", (1.0, -1.0), k))
        lines.append(f"{objective}: " + sensitivity_verdict(result, "δ", power))
    if lines:
        page.heading(f"Sensitivity to δ (the sensitivity report's rule, SESOI ±{sesoi:g}; not part of the claim's "
                     "verdict)")
        page.bullets(lines)
    fig, axes = plots.grid(1, ncols=1, width=6.4, height=3.8)
    ax = axes[0]
    deltas = sorted({float(r.param("algo.delta")) for r in runs})
    for i, objective in enumerate(("dppo", "drpo")):
        cis = [t_interval(list(per_seed(data, [r for r in runs if r.objective == objective
                                               and float(r.param("algo.delta")) == d], "final_accuracy", k).values()),
                          bounds=(0.0, 1.0)) for d in deltas]
        xs = [d * (0.97 if i == 0 else 1.03) for d, c in zip(deltas, cis) if c.mean is not None]  # side by side
        cis = [c for c in cis if c.mean is not None]
        ax.errorbar(xs, [c.mean for c in cis], yerr=[[c.mean - (c.low if c.low is not None else c.mean) for c in cis],
                                                     [(c.high if c.high is not None else c.mean) - c.mean for c in cis]],
                    marker="os"[i], capsize=3, color=colour(objective), linestyle=OTHER_STYLES[i], label=objective)
    ax.set_xscale("log")
    ax.set_xticks(deltas)
    ax.set_xticklabels([fmt(d) for d in deltas])
    plots.finish(ax, "Final eval accuracy versus δ", "δ (log scale)", plots.label("eval/accuracy"))
    page.figure(fig, "claim_drpo_vs_dppo", "Final eval accuracy (mean of the last k evaluations) versus δ per "
                "objective (colour, marker, line style): mean over seeds with 95% t-intervals inside [0, 1].")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_drpo_vs_dppo", "Claim 5: DRPO (default and best δ) versus DPPO (best δ)", needs, build)
