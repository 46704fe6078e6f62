"""sensitivity: per objective, final and best eval accuracy versus its threshold (δ, or ε for SPO) with
t-intervals over seeds, learning curves per threshold, and a verdict on how much δ matters."""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from harness.reports import plots
from harness.reports.data import Run, SweepData, fmt
from harness.reports.page import Page
from harness.reports.palette import OTHER_STYLES, colour, shades

MARKERS = "osD^v<>"
from harness.reports.registry import ReportKind
from harness.reports.stats import T_METHOD, pooled_std, t_interval
from harness.reports.summary import EVAL, LAST_K, summarize, variants
from harness.reports.thresholds import threshold, threshold_param

VERDICT_RULE = ("Verdict rule: spread = largest minus smallest mean final accuracy across thresholds; noise = "
                "seed standard deviation pooled over thresholds with ≥ 2 finished seeds. spread/noise < 1: "
                "insensitive (the threshold matters less than the seed); 1–3: moderately sensitive; > 3: "
                "strongly sensitive.")


def _groups(data: SweepData) -> Dict:
    runs = [r for r in data.runs if threshold(r)[0] is not None]
    compare = sorted({f"algo.{threshold_param(r.objective)}" for r in runs})
    return variants(data, runs, compare)


def needs(data: SweepData) -> Optional[str]:
    for members in _groups(data).values():
        if len({threshold(r)[2] for r in members}) >= 2:
            return None
    return "needs an objective run at ≥ 2 values of its threshold (δ, or ε for SPO), e.g. delta=0.1,0.2"


def verdict(by_value: Dict[float, List[float]], symbol: str) -> str:
    """One sentence: how sensitive final accuracy is to the threshold, relative to seed noise."""
    means = {v: float(np.mean(x)) for v, x in by_value.items() if len(x)}
    if len(means) < 2:
        return f"Not enough thresholds with finished runs to judge sensitivity to {symbol}."
    spread = max(means.values()) - min(means.values())
    best = max(means, key=means.get)
    noise, _ = pooled_std(by_value)
    head = f"Spread of mean final accuracy across {symbol}: {spread:.3f} (best {symbol}={fmt(best)}, {means[best]:.3f})"
    if noise is None:
        return head + "; one seed per value, so it cannot be compared with seed noise — run ≥ 2 seeds."
    if noise == 0 and spread == 0:
        return head + f"; every run reached the same accuracy — {symbol} made no difference here."
    ratio = spread / noise if noise > 0 else np.inf
    word = "insensitive" if ratio < 1 else ("moderately sensitive" if ratio <= 3 else "strongly sensitive")
    return head + f"; seed noise σ = {noise:.3f}; spread/σ = {fmt(float(ratio), 2)} → {word} to {symbol}."


def build(data: SweepData, page: Page) -> None:
    groups = {k: v for k, v in _groups(data).items() if len({threshold(r)[2] for r in v}) >= 2}
    used = [r for members in groups.values() for r in members]
    page.uses(used)
    page.text(T_METHOD + f". Final accuracy = mean of the last {LAST_K} evaluations of a run. With one finished "
              "seed there is no interval (shown as —, hollow marker).", "method")
    page.text(VERDICT_RULE, "method")
    rows, verdicts = [], []
    for (objective, name), members in groups.items():
        symbol = threshold(members[0])[1]
        by_value: Dict[float, List[Run]] = {}
        for run in members:
            by_value.setdefault(threshold(run)[2], []).append(run)
        finals: Dict[float, List[float]] = {}
        for value in sorted(by_value, key=lambda v: (v is None, v)):
            group = by_value[value]
            done = [r for r in group if r.status == "FINISHED" and summarize(data, r).final_acc is not None]
            final = t_interval([summarize(data, r).final_acc for r in done], bounds=(0.0, 1.0))
            best = t_interval([summarize(data, r).best_acc for r in done], bounds=(0.0, 1.0))
            finals[value] = [summarize(data, r).final_acc for r in done]
            not_done = len(group) - len(done)
            if not_done:
                statuses = ", ".join(sorted({r.status for r in group if r not in done}))
                page.missing(f"{name} {symbol}={fmt(value)}: {not_done} of {len(group)} runs not finished "
                             f"({statuses}) — left out of the statistics.")
            if final.n == 1:
                page.missing(f"{name} {symbol}={fmt(value)}: one finished seed — no confidence interval.")
            rows.append([name, symbol, value, final.n, final.mean, _ci(final), best.mean, _ci(best)])
        verdicts.append(f"{name}: " + verdict(finals, symbol))
    page.heading("Verdict")
    for line in verdicts:
        page.text(line, "verdict")
    page.heading("Accuracy versus threshold")
    page.table(["variant", "threshold", "value", "finished seeds", "final acc (mean)", "final 95% CI",
                "best acc (mean)", "best 95% CI"], rows)
    _accuracy_vs_threshold(data, page, groups)
    _curves(data, page, groups)


def _ci(interval) -> Optional[str]:
    return None if interval.low is None else f"[{interval.low:.3f}, {interval.high:.3f}]"


def _accuracy_vs_threshold(data: SweepData, page: Page, groups: Dict) -> None:
    fig, axes = plots.grid(2)
    values_seen: List[float] = []
    for which, ax in zip(("final_acc", "best_acc"), axes):
        for g, ((objective, name), members) in enumerate(groups.items()):
            values = sorted({threshold(r)[2] for r in members})
            values_seen += values
            xs, means, errs, hollow = [], [], [], []
            for v in values:
                done = [r for r in members if threshold(r)[2] == v and r.status == "FINISHED"]
                ci = t_interval([getattr(summarize(data, r), which) for r in done], bounds=(0.0, 1.0))
                if ci.mean is None:
                    continue
                xs.append(v), means.append(ci.mean), hollow.append(ci.n < 2)
                errs.append((ci.mean - ci.low, ci.high - ci.mean) if ci.low is not None else (0.0, 0.0))
            if not xs:
                continue
            ax.errorbar(xs, means, yerr=np.array(errs).T, color=colour(objective), marker=MARKERS[g % len(MARKERS)],
                        linestyle=OTHER_STYLES[g % len(OTHER_STYLES)], capsize=3, linewidth=1.5,
                        label=f"{name} ({threshold(members[0])[1]})")
            single = [(x, m) for x, m, h in zip(xs, means, hollow) if h]
            if single:
                ax.scatter(*zip(*single), facecolors="white", edgecolors=colour(objective), zorder=3, s=30)
        log = plots.log_x_if_wide(ax, values_seen)
        what = "final" if which == "final_acc" else "best"
        plots.finish(ax, f"{what.capitalize()} eval accuracy vs threshold",
                     _axis_label(groups) + (", log scale" if log else ""),
                     f"{what} eval accuracy (fraction correct)")
    page.figure(fig, "accuracy_vs_threshold", "Mean over finished seeds with 95% Student-t error bars inside "
                "[0, 1]; hollow markers: one seed (no interval). Colour, marker and line style = objective/variant.")


def _axis_label(groups: Dict) -> str:
    """'threshold δ', or e.g. 'threshold: δ (dppo, drpo), ε (spo)' when objectives name it differently."""
    by_symbol: Dict[str, List[str]] = {}
    for (objective, _), members in groups.items():
        names = by_symbol.setdefault(threshold(members[0])[1], [])
        if objective not in names:
            names.append(objective)
    if len(by_symbol) == 1:
        return f"threshold {next(iter(by_symbol))}"
    return "threshold: " + ", ".join(f"{sym} ({', '.join(objs)})" for sym, objs in by_symbol.items())


def _curves(data: SweepData, page: Page, groups: Dict) -> None:
    fig, axes = plots.grid(len(groups), ncols=min(3, len(groups)), width=4.6, height=3.3)
    for ax, ((objective, name), members) in zip(axes, groups.items()):
        values = sorted({threshold(r)[2] for r in members})
        symbol = threshold(members[0])[1]
        for i, (v, c) in enumerate(zip(values, shades(objective, len(values)))):
            curves = [data.curve(r, EVAL) for r in members if threshold(r)[2] == v]
            plots.band(ax, curves, c, f"{symbol}={fmt(v)}", OTHER_STYLES[i % len(OTHER_STYLES)],
                       marker=MARKERS[i % len(MARKERS)], metric=EVAL)
        steps = sorted({int(s) for r in members for s in data.curve(r, EVAL)[0]})
        plots.finish(ax, f"{name}: eval accuracy per {symbol}", plots.STEP_LABEL, plots.label(EVAL), ticks=steps)
    page.figure(fig, "learning_curves", "Eval accuracy over training, mean over seeds with a 95% t-band "
                "(where ≥ 2 seeds) inside [0, 1]; darker = larger threshold, and each threshold has its own line style "
                "and marker. x ticks: the evaluation steps. n = runs per line (all statuses).")


REPORT = ReportKind("sensitivity", "Threshold sensitivity", needs, build)
