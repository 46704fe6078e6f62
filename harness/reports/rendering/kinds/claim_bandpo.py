"""claim_bandpo (claim 6): in a regime with room for it (≥ 15% of sampled tokens with ν < 0.2) where GRPO's
entropy collapses, does BandPO keep entropy higher (end/start ratio, log scale) than GRPO's ratio clip at
equal or better accuracy? Both anchored on the
recomputed old policy, as the BandPO paper does. Its part (a), fewer clipped low-probability tokens, is an
implementation check: the KL band at δ = 0.05 contains [0.8, 1.2] for every ν ≤ 0.5, so it holds by
construction."""
from __future__ import annotations

from typing import Optional

from harness.reports.rendering import claims, plots
from harness.reports.results.data import ENTROPY, LOWPROB_MASKED as LOW_CLIP, SweepData
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, colour
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL

SWEEP = "claim6_bandpo"


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs}
    return None if {"grpo", "bandpo"} <= names else "needs grpo and bandpo runs"


def build(data: SweepData, page: Page) -> None:
    groups = {o: [r for r in data.runs if r.objective == o] for o in ("grpo", "bandpo")}
    runs = [r for m in groups.values() for r in m]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    refused = claims.admission(data, runs, page)
    claims.describe(data, page, groups, ["lowprob_clipped", "log_entropy_change", "entropy", "final_accuracy", "lowprob_share"],
                    claims.design_k(spec), "GRPO clipping versus BandPO", "objective")
    eval_steps = sorted({int(s) for r in runs for s in data.curve(r, EVAL)[0]})
    fig, axes = plots.grid(3, ncols=3, width=4.2, height=3.4)
    for ax, key in zip(axes, (LOW_CLIP, ENTROPY, EVAL)):
        for i, (objective, members) in enumerate(groups.items()):
            plots.band(ax, [data.curve(r, key) for r in members], colour(objective), objective,
                       OTHER_STYLES[i], marker="os"[i] if key == EVAL else None, metric=key)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key), ticks=eval_steps if key == EVAL else None)
    page.figure(fig, "claim_bandpo", "Clipped fraction of low-probability tokens, token entropy and eval accuracy "
                "for grpo (solid, circles) and bandpo (dashed, squares): mean over seeds with a 95% t-band inside "
                "the range.")
    claims.verdict(page, data, SWEEP, refused)


REPORT = ReportKind("claim_bandpo", "Claim 6: BandPO versus GRPO clipping", needs, build)
