"""claim_bandpo (claim 6): does BandPO clip fewer low-probability tokens than GRPO's ratio clip and keep
entropy higher, at equal or better accuracy?"""
from __future__ import annotations

from typing import Optional

from harness.reports import claims, plots
from harness.reports.data import SweepData
from harness.reports.page import Page
from harness.reports.palette import colour
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import EVAL, summarize

LOW_CLIP = "objective/lowprob_masked_frac"
ENTROPY = "train/entropy"
MARGIN = 0.05
RULE = ("Measures per run: clipped fraction of low-probability tokens (ν < 0.2) averaged over all steps; token "
        "entropy over the last 10% of steps; final eval accuracy. Parts: (a) grpo − bandpo clipped low-prob "
        "fraction, Welch 95% CI > 0; (b) bandpo − grpo entropy CI > 0; (c) bandpo − grpo final accuracy CI above "
        f"−{MARGIN:g} (equal or better). Reproduced if all parts are; not reproduced if any is contradicted; "
        "inconclusive otherwise. " + claims.DIFF_METHOD)


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs}
    return None if {"grpo", "bandpo"} <= names else "needs grpo and bandpo runs"


def _clip(data, run):
    return claims.run_mean(data, run, LOW_CLIP)


def _entropy(data, run):
    return claims.last_window(data, run, ENTROPY)


def _final(data, run):
    return summarize(data, run).final_acc


def build(data: SweepData, page: Page) -> None:
    groups = {o: [r for r in data.runs if r.objective == o] for o in ("grpo", "bandpo")}
    page.uses([r for m in groups.values() for r in m])
    page.text(RULE, "method")
    done = {o: claims.finished(m) for o, m in groups.items()}
    page.heading("GRPO clipping versus BandPO")
    page.table(["objective", "runs", "finished", "clipped low-prob fraction (95% CI)", "entropy, last 10% (95% CI)",
                "final eval acc (95% CI)"],
               [[o, len(groups[o]), len(done[o]), *(claims.fmt_interval(t_interval(claims.values(data, done[o], m)))
                                                    for m in (_clip, _entropy, _final))] for o in groups])

    def diff(a, b, measure):
        return claims.welch_difference(claims.values(data, done[a], measure), claims.values(data, done[b], measure))

    fewer = claims.direction(diff("grpo", "bandpo", _clip), "clipped low-prob fraction, grpo − bandpo",
                             "bandpo clips fewer", "bandpo clips more")
    entropy = claims.direction(diff("bandpo", "grpo", _entropy), "entropy, bandpo − grpo",
                               "bandpo keeps more entropy", "grpo keeps more entropy")
    accuracy = claims.at_least(diff("bandpo", "grpo", _final), MARGIN, "final acc, bandpo − grpo")
    parts = [["(a) fewer clipped low-prob tokens", fewer], ["(b) higher entropy", entropy],
             ["(c) equal or better accuracy", accuracy]]
    page.heading("Tests")
    page.table(["part", "verdict", "evidence"], [[p, v.word, v.reason] for p, v in parts])
    fig, axes = plots.grid(3, ncols=3, width=4.2, height=3.4)
    for ax, key in zip(axes, (LOW_CLIP, ENTROPY, EVAL)):
        for objective, members in groups.items():
            plots.band(ax, [data.curve(r, key) for r in members], colour(objective), objective,
                       marker="o" if key == EVAL else None)
        plots.finish(ax, plots.label(key), plots.STEP_LABEL, plots.label(key))
    page.figure(fig, "claim_bandpo", "Clipped fraction of low-probability tokens, token entropy and eval accuracy "
                "for grpo and bandpo: mean over seeds with a 95% t-band.")
    claims.write_verdict(page, claims.Verdict(claims.combine([v for _, v in parts]),
                                              "; ".join(f"{p}: {v.word}" for p, v in parts)))


REPORT = ReportKind("claim_bandpo", "Claim 6: BandPO versus GRPO clipping", needs, build)
