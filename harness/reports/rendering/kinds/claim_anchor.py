"""claim_anchor (claim 3, DPPO Takeaway 2): for each DPPO divergence, does anchor=recompute (ν = π') let the
mismatch grow, and runs collapse, more than anchor=rollout (ν = μ)? Tested per divergence, never pooled."""
from __future__ import annotations

from typing import Optional

from harness.reports.rendering import claims, plots
from harness.reports.results.data import SweepData
from harness.reports.rendering.kinds.anchor_ablation import MISMATCH, anchor
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import ANCHOR_STYLES, line_style, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL

SWEEP = "claim3_anchor"


def _runs(data: SweepData):
    return [r for r in data.runs if "algo.anchor" in r.params]


def _variant(run) -> str:
    div = run.param("algo.divergence")
    return f"{run.objective}{f' · {div}' if div else ''}"


def _groups(data: SweepData):
    groups = claims.group_by(_runs(data), _variant)
    return {v: m for v, m in groups.items() if {anchor(r) for r in m} >= {"rollout", "recompute"}}


def needs(data: SweepData) -> Optional[str]:
    return None if _groups(data) else "needs an objective run with anchor=rollout and anchor=recompute"


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    runs = [r for members in groups.values() for r in members]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    cells = claims.group_by(runs, lambda r: f"{_variant(r)} · anchor={anchor(r)}")
    claims.describe(data, page, cells, ["log_mismatch_growth", "mismatch", "final_accuracy", "gain"], claims.design_k(spec),
                    "Variant × anchor", "variant · anchor")
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    colours = dict(zip(groups, shades("dppo", len(groups))))
    eval_steps = sorted({int(s) for r in runs for s in data.curve(r, EVAL)[0]})
    for ax, key in zip(axes, (EVAL, MISMATCH)):
        for variant, members in groups.items():
            for i, a in enumerate(("rollout", "recompute")):
                plots.band(ax, [data.curve(r, key) for r in members if anchor(r) == a], colours[variant],
                           f"{variant} · {a}", line_style(a, ANCHOR_STYLES, i), marker="os"[i] if key == EVAL else None,
                           metric=key)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key),
                     ticks=eval_steps if key == EVAL else None)
    page.figure(fig, "claim_anchor", "Eval accuracy and mismatch per variant (shade) × anchor (solid/circle: "
                "rollout, dashed/square: recompute): mean over seeds with a 95% t-band inside the range.")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_anchor", "Claim 3: rollout anchor versus recompute anchor, per divergence", needs, build)
