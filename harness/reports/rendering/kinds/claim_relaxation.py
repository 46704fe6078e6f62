"""claim_relaxation (claim 4, DPPO §6): in a regime with room for it (≥ 15% of sampled tokens with
ν < 0.2), does removing the clip for low-probability tokens speed learning? Any relaxation groups the sweep
ran (relax-low, relax-high) are shown; the tests are the sweep file's. The base clipping is Clip-Higher
(ε_low 0.2, ε_high 0.28) and α = 0.1, as in the paper."""
from __future__ import annotations

from typing import Optional

from harness.reports.rendering import claims, plots
from harness.reports.results.data import ENTROPY, Run, SweepData
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL

SWEEP = "claim4_relaxation"


def group(run: Run) -> Optional[str]:
    alpha = run.param("algo.relax_alpha")
    if alpha is None:
        return None
    return "baseline" if float(alpha) == 0 else f"relax-{run.param('algo.relax') or 'both'}"


def _groups(data: SweepData):
    return claims.group_by([r for r in data.runs if group(r)], group)


def needs(data: SweepData) -> Optional[str]:
    groups = _groups(data)
    if "baseline" in groups and "relax-both" in groups:
        return None
    return "needs α = 0 runs and relax=both runs at some α > 0 (e.g. alpha=0 and alpha=0.1 algo.relax=both)"


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    runs = [r for m in groups.values() for r in m]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    refused = claims.admission(data, runs, page)
    claims.describe(data, page, groups, ["learning_speed", "entropy", "final_accuracy", "lowprob_share"],
                    claims.design_k(spec), "Groups")
    colours = dict(zip(groups, shades("grpo_cliphigher", len(groups))))
    eval_steps = sorted({int(s) for r in runs for s in data.curve(r, EVAL)[0]})
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for ax, key in zip(axes, (EVAL, ENTROPY)):
        for i, (g, members) in enumerate(groups.items()):
            plots.band(ax, [data.curve(r, key) for r in members], colours[g], g, OTHER_STYLES[i % len(OTHER_STYLES)],
                       marker="osD^v"[i % 5] if key == EVAL else None, metric=key)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key), ticks=eval_steps if key == EVAL else None)
    page.figure(fig, "claim_relaxation", "Eval accuracy and token entropy per relaxation group (shade, line style, "
                "marker): mean over seeds with a 95% t-band inside the range.")
    claims.verdict(page, data, SWEEP, refused)


REPORT = ReportKind("claim_relaxation", "Claim 4: relaxing the clip for low-probability tokens", needs, build)
