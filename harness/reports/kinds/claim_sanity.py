"""claim_sanity (claim 1, DPPO §5): on a fixed problem pool the base model partly solves, does each stable
objective drive training accuracy to ≥ 95%?"""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData
from harness.reports.page import Page
from harness.reports.palette import colour
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval

TARGET = 0.95
TRAIN = "train/accuracy"
RULE = (f"Measure: training accuracy (sampled at T=1 on the pool) averaged over the last 10% of steps, per run. "
        f"Rule: reproduced if every objective's mean over seeds is ≥ {TARGET:g}; not reproduced if every "
        f"objective's 95% t-interval lies below {TARGET:g}; inconclusive otherwise.")


def _on_a_pool(run) -> bool:
    return run.param("dataset.train_size") is not None


def needs(data: SweepData) -> Optional[str]:
    if any(_on_a_pool(r) for r in data.runs):
        return None
    return "needs runs on a fixed problem pool (dataset.train_size set, e.g. experiment=toy_sanity)"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if _on_a_pool(r)]
    page.uses(runs)
    page.text(RULE, "method")
    groups = claims.group_by(runs, lambda r: r.objective)
    rows, reached, below = [], [], []
    for objective, members in groups.items():
        done = claims.finished(members)
        final = t_interval(claims.values(data, done, lambda d, r: claims.last_window(d, r, TRAIN)))
        start = t_interval(claims.values(data, done, lambda d, r: claims.first_window(d, r, TRAIN)))
        rows.append([objective, len(members), len(done), start.mean, final.mean,
                     None if final.low is None else f"[{final.low:.3f}, {final.high:.3f}]",
                     "yes" if final.mean is not None and final.mean >= TARGET else "no"])
        (reached if final.mean is not None and final.mean >= TARGET else below).append((objective, final))
        if len(done) < len(members):
            page.missing(f"{objective}: {len(members) - len(done)} of {len(members)} runs did not finish.")
    page.heading("Training accuracy on the pool")
    page.table(["objective", "runs", "finished", "train acc, first 10% of steps", "train acc, last 10% (mean)",
                "95% CI", f"≥ {TARGET:g}"], rows)
    fig, axes = plots.grid(1, ncols=1, width=6.4, height=3.8)
    for objective, members in groups.items():
        plots.band(axes[0], [data.curve(r, TRAIN) for r in members], colour(objective), objective)
    axes[0].axhline(TARGET, color="#555", linestyle=":", linewidth=1, label=f"target {TARGET:g}")
    plots.finish(axes[0], "Training accuracy on the fixed pool", plots.STEP_LABEL, plots.label(TRAIN))
    page.figure(fig, "claim_sanity", "Training accuracy per objective: mean over seeds with a 95% t-band.")
    summary = "; ".join(f"{o} {claims.fmt_interval(i)}" for o, i in [*reached, *below])
    if groups and not below:
        verdict = claims.Verdict(claims.REPRODUCED, f"every objective reaches ≥ {TARGET:g}: {summary}")
    elif groups and not reached and all(i.high is not None and i.high < TARGET for _, i in below):
        verdict = claims.Verdict(claims.NOT_REPRODUCED, f"no objective reaches {TARGET:g}: {summary}")
    else:
        verdict = claims.Verdict(claims.INCONCLUSIVE, f"final training accuracy {summary}")
    claims.write_verdict(page, verdict)


REPORT = ReportKind("claim_sanity", "Claim 1: sanity test on a fixed problem pool", needs, build)
