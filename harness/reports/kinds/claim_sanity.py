"""claim_sanity (claim 1, DPPO §5): on a fixed problem pool the base model partly solves, with the mismatch the
paper names as the cause, does DPPO drive training accuracy to ≥ 95%, and further than pg_is (the paper's
failing comparison group)? The mismatch and its growth are shown beside accuracy."""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData
from harness.reports.page import Page
from harness.reports.palette import OTHER_STYLES, colour
from harness.reports.registry import ReportKind

TARGET = 0.95
TRAIN = "train/accuracy"
SWEEP = "claim1_sanity"


def _on_a_pool(run) -> bool:
    return run.param("dataset.train_size") is not None


def needs(data: SweepData) -> Optional[str]:
    if any(_on_a_pool(r) for r in data.runs):
        return None
    return "needs runs on a fixed problem pool (dataset.train_size set, e.g. experiment=toy_sanity)"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if _on_a_pool(r)]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    groups = claims.group_by(runs, lambda r: r.objective)
    claims.describe(data, page, groups, ["train_accuracy", "final_accuracy", "gain", "mismatch", "log_mismatch_growth"], claims.design_k(spec),
                    "Training accuracy on the pool", "objective")
    fig, axes = plots.grid(1, ncols=1, width=6.4, height=3.8)
    for i, (objective, members) in enumerate(groups.items()):
        plots.band(axes[0], [data.curve(r, TRAIN) for r in members], colour(objective), objective,
                   OTHER_STYLES[i % len(OTHER_STYLES)], metric=TRAIN)
    axes[0].axhline(TARGET, color="#555", linestyle=":", linewidth=1, label=f"target {TARGET:g}")
    plots.finish(axes[0], "Training accuracy on the fixed pool", plots.STEP_LABEL, plots.label(TRAIN))
    page.figure(fig, "claim_sanity", "Training accuracy per objective (colour and line style): mean over seeds "
                "with a 95% t-band inside [0, 1].")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_sanity", "Claim 1: sanity test on a fixed problem pool", needs, build)
