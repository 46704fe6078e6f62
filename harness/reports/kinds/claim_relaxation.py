"""claim_relaxation (claim 4, DPPO §6): does removing the clip for low-probability tokens speed learning,
does relaxing only the low side collapse entropy, and is relaxing both sides best?"""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import Run, SweepData
from harness.reports.page import Page
from harness.reports.palette import shades
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import EVAL, summarize

ENTROPY = "train/entropy"
RULE = ("Groups: baseline = α = 0 (plain clipping); relax-high / relax-low / relax-both at the sweep's α > 0. "
        "Measures per run: learning speed = mean eval accuracy over the evaluations in the first half of training; "
        "entropy = token entropy over the last 10% of steps; final eval accuracy. Parts: (a) relaxing speeds "
        "learning: speed(relax-both) − speed(baseline), Welch 95% CI > 0; (b) relax-low collapses entropy: "
        "entropy(baseline) − entropy(relax-low) CI > 0; (c) relax-both is best: final(relax-both) − final(best of "
        "the other three groups by mean) CI > 0. Reproduced if all parts are; not reproduced if any is "
        "contradicted; inconclusive otherwise. " + claims.DIFF_METHOD)


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
    return "needs α = 0 runs and relax=both runs at some α > 0 (e.g. alpha=0 and alpha=0.2 algo.relax=both)"


def _speed(data, run):
    return claims.early_accuracy(data, run)


def _entropy(data, run):
    return claims.last_window(data, run, ENTROPY)


def _final(data, run):
    return summarize(data, run).final_acc


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    runs = [r for m in groups.values() for r in m]
    page.uses(runs)
    page.text(RULE, "method")
    done = {g: claims.finished(m) for g, m in groups.items()}
    rows = [[g, len(groups[g]), len(done[g]), claims.fmt_interval(t_interval(claims.values(data, done[g], _speed))),
             claims.fmt_interval(t_interval(claims.values(data, done[g], _entropy))),
             claims.fmt_interval(t_interval(claims.values(data, done[g], _final))),
             f"{sum(claims.collapsed(data, r) for r in groups[g])}/{len(groups[g])}"] for g in groups]
    page.heading("Groups")
    page.table(["group", "runs", "finished", "learning speed (95% CI)", "entropy, last 10% (95% CI)",
                "final eval acc (95% CI)", "collapsed"], rows)

    def diff(a, b, measure):
        return claims.welch_difference(claims.values(data, done.get(a, []), measure),
                                       claims.values(data, done.get(b, []), measure))

    speed = claims.direction(diff("relax-both", "baseline", _speed), "speed, relax-both − baseline",
                             "relaxing speeds learning", "relaxing slows learning")
    parts = [["(a) relaxing speeds learning", speed.word, speed.reason]]
    verdicts = [speed]
    if "relax-low" in groups:
        entropy = claims.direction(diff("baseline", "relax-low", _entropy), "entropy, baseline − relax-low",
                                   "relax-low collapses entropy", "relax-low keeps more entropy")
        parts.append(["(b) relax-low collapses entropy", entropy.word, entropy.reason])
        verdicts.append(entropy)
    others = [g for g in groups if g != "relax-both" and done[g]]
    if others:
        rival = max(others, key=lambda g: t_interval(claims.values(data, done[g], _final)).mean or -1.0)
        best = claims.direction(diff("relax-both", rival, _final), f"final acc, relax-both − {rival}",
                                "relax-both is best", f"{rival} beats relax-both")
        parts.append(["(c) relax-both is best", best.word, best.reason])
        verdicts.append(best)
    page.heading("Tests")
    page.table(["part", "verdict", "evidence"], parts)
    names = list(groups)
    colours = dict(zip(names, shades("grpo", len(names))))
    fig, axes = plots.grid(2, ncols=2, width=5.4, height=3.6)
    for ax, key in zip(axes, (EVAL, ENTROPY)):
        for g, members in groups.items():
            plots.band(ax, [data.curve(r, key) for r in members], colours[g], g, marker="o" if key == EVAL else None)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key))
    page.figure(fig, "claim_relaxation", "Eval accuracy and token entropy per relaxation group: mean over seeds "
                "with a 95% t-band.")
    claims.write_verdict(page, claims.Verdict(claims.combine(verdicts),
                                              "; ".join(f"{p[0]}: {p[1]}" for p in parts)))


REPORT = ReportKind("claim_relaxation", "Claim 4: relaxing the clip for low-probability tokens", needs, build)
