"""claim_trust_region (claim 2, DPPO Takeaway 1): under low-precision rollout, do the unconstrained
objectives (pg_is, cispo) grow mismatch and collapse more often than dppo, unlike at full precision?"""
from __future__ import annotations

import math
from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData
from harness.reports.page import Page
from harness.reports.palette import PRECISION_STYLES, colour, line_style
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import EVAL, summarize

UNCONSTRAINED = ("pg_is", "cispo")
TRUST_REGION = "dppo"
MISMATCH = "train/mismatch"
RULE = ("Measures per run: collapse (the stability report's rule), drop from the best eval accuracy to the final "
        "one, mismatch growth = mean |μ − π'| over the last 10% of steps ÷ over the first 10%, final eval accuracy. "
        "Rule, at the low precision: (a) stability — pg_is+cispo less stable than dppo (more collapses, Fisher "
        "p < 0.05, or a larger drop, Welch 95% CI > 0); (b) mismatch growth — the log growth of pg_is+cispo minus "
        "dppo's has a 95% CI above 0. Reproduced if (a) and (b) are; not reproduced if either is contradicted; "
        "inconclusive otherwise. The full-precision (fp32) runs are the control: there the same objectives "
        "have no mismatch to amplify. " + claims.DIFF_METHOD)


def _low(data: SweepData) -> Optional[str]:
    precisions = sorted({r.precision for r in data.runs if r.precision != "fp32"})
    return precisions[0] if precisions else None


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs if r.precision == _low(data)}
    if _low(data) and names & set(UNCONSTRAINED) and TRUST_REGION in names:
        return None
    return "needs pg_is or cispo and dppo runs at a precision below fp32"


def _growth(data, run):
    first, last = claims.first_window(data, run, MISMATCH), claims.last_window(data, run, MISMATCH)
    return None if not first or last is None or last <= 0 else float(last / first)


def build(data: SweepData, page: Page) -> None:
    low = _low(data)
    runs = [r for r in data.runs if r.objective in (*UNCONSTRAINED, TRUST_REGION)]
    page.uses(runs)
    page.text(RULE, "method")
    rows = []
    for (objective, precision), members in claims.group_by(runs, lambda r: (r.objective, r.precision)).items():
        done = claims.finished(members)
        rows.append([objective, precision, len(members),
                     f"{sum(claims.collapsed(data, r) for r in members)}/{len(members)}",
                     claims.fmt_interval(t_interval(claims.values(data, done, claims.drop_from_best))),
                     claims.fmt_interval(t_interval(claims.values(data, members, _growth))),
                     claims.fmt_interval(t_interval(claims.values(data, members, lambda d, r: claims.last_window(d, r, MISMATCH)))),
                     claims.fmt_interval(t_interval([summarize(data, r).final_acc for r in done]))])
    page.heading("Objective × precision")
    page.table(["objective", "precision", "runs", "collapsed", "drop from best eval acc (95% CI)",
                "mismatch growth × (95% CI)", "mismatch, last 10%", "final eval acc (95% CI)"], rows)
    free = [r for r in runs if r.precision == low and r.objective in UNCONSTRAINED]
    trust = [r for r in runs if r.precision == low and r.objective == TRUST_REGION]
    stable = claims.stability(data, free, trust, "pg_is+cispo", "dppo")
    log_growth = claims.welch_difference([math.log(v) for v in claims.values(data, free, _growth)],
                                         [math.log(v) for v in claims.values(data, trust, _growth)])
    grows = claims.direction(log_growth, "log mismatch growth, pg_is+cispo − dppo",
                             "mismatch grows more without a trust region", "mismatch grows more under dppo")
    control_free = [r for r in runs if r.precision == "fp32" and r.objective in UNCONSTRAINED]
    page.heading(f"Tests at precision {low}")
    page.table(["part", "verdict", "evidence"], [["(a) stability", stable.word, stable.reason],
                                                 ["(b) mismatch growth", grows.word, grows.reason]])
    if control_free:
        control = claims.stability(data, free, control_free, f"pg_is+cispo at {low}", "pg_is+cispo at fp32")
        page.text(f"Control (same objectives, fp32 vs {low}): {control.word} — {control.reason}.")
    _figure(data, page, runs)
    word = claims.combine([stable, grows])
    claims.write_verdict(page, claims.Verdict(word, f"(a) {stable.word}, (b) {grows.word}; {stable.reason}"))


def _figure(data, page, runs) -> None:
    groups = claims.group_by(runs, lambda r: (r.objective, r.precision))
    precisions = sorted({p for _, p in groups})
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for ax, key in zip(axes, (EVAL, MISMATCH)):
        for (objective, precision), members in groups.items():
            style = line_style(precision, PRECISION_STYLES, precisions.index(precision))
            plots.band(ax, [data.curve(r, key) for r in members], colour(objective), f"{objective} · {precision}",
                       style, marker="o" if key == EVAL else None)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key))
    page.figure(fig, "claim_trust_region", "Eval accuracy and mismatch per objective (colour) × precision (line "
                "style): mean over seeds with a 95% t-band.")


REPORT = ReportKind("claim_trust_region", "Claim 2: is a trust region needed under low-precision rollout?", needs, build)
