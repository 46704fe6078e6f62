"""claim_drpo_vs_dppo (claim 5): does DRPO's smooth correction match or beat DPPO's hard mask at their
default thresholds, and how much does each depend on δ?"""
from __future__ import annotations

from typing import Optional

from harness.algorithms.specs import validate_params
from harness.reports import claims, plots
from harness.reports.data import SweepData, fmt
from harness.reports.kinds.sensitivity import verdict as sensitivity_verdict
from harness.reports.page import Page
from harness.reports.palette import colour
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import summarize

MARGIN = 0.05  # accuracy points: "matches" = no worse than this, at 95%
RULE = (f"Main test: final eval accuracy of DRPO at its default δ minus DPPO at its default δ (Welch 95% CI). "
        f"Reproduced (matches or beats) if the CI lies above −{MARGIN:g}; not reproduced if it lies below 0; "
        "inconclusive otherwise. δ sensitivity (descriptive, no direction claimed): spread of mean final accuracy "
        "across δ divided by the pooled seed standard deviation, as in the sensitivity report.")


def _default_delta(objective: str) -> float:
    return float(validate_params(objective)["delta"])


def _by_delta(runs):
    return claims.group_by(runs, lambda r: float(r.param("algo.delta")))


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs}
    if {"dppo", "drpo"} <= names:
        return None
    return "needs dppo and drpo runs"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if r.objective in ("dppo", "drpo") and r.param("algo.delta") is not None]
    page.uses(runs)
    page.text(RULE, "method")
    rows, sensitivity, finals = [], [], {}
    for objective in ("dppo", "drpo"):
        by_delta = _by_delta([r for r in runs if r.objective == objective])
        per_value = {}
        for delta, members in by_delta.items():
            done = claims.finished(members)
            values = [summarize(data, r).final_acc for r in done]
            per_value[delta] = values
            default = " (default)" if delta == _default_delta(objective) else ""
            rows.append([objective, f"{fmt(delta)}{default}", len(members), len(done),
                         claims.fmt_interval(t_interval(values)),
                         f"{sum(claims.collapsed(data, r) for r in members)}/{len(members)}"])
        finals[objective] = per_value.get(_default_delta(objective), [])
        sensitivity.append([objective, sensitivity_verdict(per_value, "δ")])
    page.heading("Final eval accuracy by objective and δ")
    page.table(["objective", "δ", "runs", "finished", "final eval acc (95% CI)", "collapsed"], rows)
    page.heading("Sensitivity to δ")
    page.table(["objective", "measured"], sensitivity)
    main = claims.at_least(claims.welch_difference(finals["drpo"], finals["dppo"]), MARGIN,
                           f"final acc, drpo (δ={fmt(_default_delta('drpo'))}) − dppo (δ={fmt(_default_delta('dppo'))})")
    fig, axes = plots.grid(1, ncols=1, width=6.4, height=3.8)
    ax = axes[0]
    for objective in ("dppo", "drpo"):
        by_delta = _by_delta([r for r in runs if r.objective == objective])
        xs = sorted(by_delta)
        intervals = [t_interval([summarize(data, r).final_acc for r in claims.finished(by_delta[x])]) for x in xs]
        means = [i.mean if i.mean is not None else float("nan") for i in intervals]
        err = [[(i.mean - i.low) if i.low is not None else 0 for i in intervals],
               [(i.high - i.mean) if i.high is not None else 0 for i in intervals]]
        ax.errorbar(xs, means, yerr=err, marker="o", capsize=3, color=colour(objective), label=objective)
    ax.set_xscale("log")
    plots.finish(ax, "Final eval accuracy versus δ", "δ (log scale)", plots.label("eval/accuracy"))
    page.figure(fig, "claim_drpo_vs_dppo", "Final eval accuracy versus δ (log scale) per objective: mean over "
                "seeds with 95% t-intervals.")
    claims.write_verdict(page, main)


REPORT = ReportKind("claim_drpo_vs_dppo", "Claim 5: DRPO versus DPPO", needs, build)
