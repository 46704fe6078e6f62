"""claim_anchor (claim 3, DPPO Takeaway 2): is anchor=recompute (ν = π') less stable than anchor=rollout
(ν = μ), for every objective run with both?"""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData
from harness.reports.kinds.anchor_ablation import MISMATCH, anchor
from harness.reports.page import Page
from harness.reports.palette import ANCHOR_STYLES, colour, line_style
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import EVAL, summarize

RULE = ("Measures per run: collapse (the stability report's rule), drop from the best eval accuracy to the final "
        "one, mismatch |μ − π'| over the last 10% of steps, final eval accuracy. Rule: pooling every objective run "
        "with both anchors, recompute is less stable than rollout if it collapses more often (Fisher p < 0.05) or "
        "drops more from its best (Welch 95% CI > 0), and neither shows the opposite: reproduced; the opposite "
        "shown and not the claim: not reproduced; otherwise inconclusive. " + claims.DIFF_METHOD)


def _objectives(data: SweepData):
    groups = claims.group_by([r for r in data.runs if "algo.anchor" in r.params], lambda r: r.objective)
    return {o: m for o, m in groups.items() if {anchor(r) for r in m} >= {"rollout", "recompute"}}


def needs(data: SweepData) -> Optional[str]:
    return None if _objectives(data) else "needs an objective run with anchor=rollout and anchor=recompute"


def build(data: SweepData, page: Page) -> None:
    groups = _objectives(data)
    runs = [r for members in groups.values() for r in members]
    page.uses(runs)
    page.text(RULE, "method")
    rows = []
    for objective, members in groups.items():
        for a in ("rollout", "recompute"):
            chosen = [r for r in members if anchor(r) == a]
            done = claims.finished(chosen)
            rows.append([objective, a, len(chosen), f"{sum(claims.collapsed(data, r) for r in chosen)}/{len(chosen)}",
                         claims.fmt_interval(t_interval(claims.values(data, done, claims.drop_from_best))),
                         claims.fmt_interval(t_interval(claims.values(data, chosen, lambda d, r: claims.last_window(d, r, MISMATCH)))),
                         claims.fmt_interval(t_interval([summarize(data, r).final_acc for r in done]))])
    page.heading("Objective × anchor")
    page.table(["objective", "anchor", "runs", "collapsed", "drop from best eval acc (95% CI)",
                "mismatch, last 10% (95% CI)", "final eval acc (95% CI)"], rows)
    per_objective = []
    for objective, members in groups.items():
        v = claims.stability(data, [r for r in members if anchor(r) == "recompute"],
                             [r for r in members if anchor(r) == "rollout"], "recompute", "rollout")
        per_objective.append([objective, v.word, v.reason])
    page.heading("Stability test per objective")
    page.table(["objective", "verdict", "evidence"], per_objective)
    overall = claims.stability(data, [r for r in runs if anchor(r) == "recompute"],
                               [r for r in runs if anchor(r) == "rollout"], "recompute", "rollout")
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for ax, key in zip(axes, (EVAL, MISMATCH)):
        for objective, members in groups.items():
            for a in ("rollout", "recompute"):
                plots.band(ax, [data.curve(r, key) for r in members if anchor(r) == a], colour(objective),
                           f"{objective} · anchor={a}", line_style(a, ANCHOR_STYLES), marker="o" if key == EVAL else None)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key))
    page.figure(fig, "claim_anchor", "Eval accuracy and mismatch per objective (colour) × anchor (solid: rollout, "
                "dashed: recompute): mean over seeds with a 95% t-band.")
    claims.write_verdict(page, claims.Verdict(overall.word, f"all objectives pooled: {overall.reason}"))


REPORT = ReportKind("claim_anchor", "Claim 3: rollout anchor versus recompute anchor", needs, build)
