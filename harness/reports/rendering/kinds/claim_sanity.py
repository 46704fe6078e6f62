"""claim_sanity (claim 1, DPPO §5): where the mismatch the paper names as the cause is present (and, in the
current design, accumulates), does the unconstrained pg_is collapse more often than DPPO, and does DPPO end
above it? Collapses, accuracy and the mismatch with its growth are shown per objective."""
from __future__ import annotations

from typing import Optional

from harness.reports.rendering import claims, plots
from harness.reports.results.data import SweepData
from harness.reports.rendering.kinds.anchor_ablation import MISMATCH
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, colour
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL

OBJECTIVES = ("pg_is", "dppo")
SWEEP = "claim1_sanity"


def needs(data: SweepData) -> Optional[str]:
    if set(OBJECTIVES) <= {r.objective for r in data.runs}:
        return None
    return "needs pg_is and dppo runs"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if r.objective in OBJECTIVES]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    groups = claims.group_by(runs, lambda r: r.objective)
    claims.describe(data, page, groups, ["final_accuracy", "train_accuracy", "gain", "mismatch_start", "mismatch",
                                         "log_mismatch_growth"], claims.design_k(spec),
                    "Accuracy, collapses and mismatch per objective", "objective")
    accuracy_and_mismatch(data, page, runs, groups, "claim_sanity", "objective")
    claims.verdict(page, data, SWEEP)


def accuracy_and_mismatch(data: SweepData, page: Page, runs, groups, name: str, per: str) -> None:
    """Eval accuracy and the mismatch |μ − π'| over training, one band per group (claims 1 and 5)."""
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    eval_steps = sorted({int(s) for r in runs for s in data.curve(r, EVAL)[0]})
    for ax, key in zip(axes, (EVAL, MISMATCH)):
        for i, (label, members) in enumerate(groups.items()):
            plots.band(ax, [data.curve(r, key) for r in members], colour(members[0].objective), label,
                       OTHER_STYLES[i % len(OTHER_STYLES)], marker="os"[i % 2] if key == EVAL else None, metric=key)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key),
                     ticks=eval_steps if key == EVAL else None)
    page.figure(fig, name, f"Eval accuracy and mismatch per {per} (colour and line style): mean over seeds with a "
                "95% t-band inside the measure's range.")


REPORT = ReportKind("claim_sanity", "Claim 1: pg_is against DPPO where the mismatch accumulates", needs, build)
