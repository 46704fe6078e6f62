"""The sensitivity report's accuracy-versus-threshold figure: per objective, mean final (and best) eval accuracy
at each threshold value with 95% t error bars, on a y axis fitted to the bars, and the SESOI drawn as a band."""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from harness.reports.rendering import plots
from harness.reports.results.data import SweepData, fmt
from harness.reports.rendering.palette import OTHER_STYLES, colour
from harness.reports.results.thresholds import threshold
from harness.reports.evidence.threshold_study import points

MARKERS = "osD^v<>"
PAD = 0.12  # of the data's span, above and below
MIN_SPAN = 0.02  # accuracy: an axis never narrower than two eval problems in a hundred
CAPTION = ("Mean over finished seeds with 95% Student-t error bars inside [0, 1]; hollow markers: one seed (no "
           "interval). Colour, marker and line style = objective/variant. The y axis spans the error bars and "
           "bands, not [0, 1]. Shaded, per objective: a band one SESOI ({sesoi:g}) tall centred between its lowest "
           "and highest mean: the means fit inside it exactly when no two threshold values' means differ by more "
           "than the SESOI (the verdict also weighs the intervals: see the pairwise table).")


def sesoi_band(ax, means: List[float], sesoi: float, shade: str) -> Tuple[float, float]:
    """A horizontal band one SESOI tall centred on the midrange of `means`; returns its (low, high)."""
    middle = (min(means) + max(means)) / 2.0
    low, high = middle - sesoi / 2.0, middle + sesoi / 2.0
    ax.axhspan(low, high, color=shade, alpha=0.13, linewidth=0, zorder=0)
    return low, high


def fit_y(ax, spans: List[Tuple[float, float]]) -> Tuple[float, float]:
    """Set the y limits to the union of `spans` (error bars, bands) padded by PAD, at least MIN_SPAN tall and
    inside [−0.04, 1.04] (an accuracy axis holds a marker at 0 or 1 whole); returns them."""
    low, high = min(s[0] for s in spans), max(s[1] for s in spans)
    if high - low < MIN_SPAN:
        middle = (low + high) / 2.0
        low, high = middle - MIN_SPAN / 2.0, middle + MIN_SPAN / 2.0
    pad = PAD * (high - low)
    limits = (max(-0.04, low - pad), min(1.04, high + pad))
    ax.set_ylim(*limits)
    return limits


def axis_label(groups: Dict) -> str:
    """'threshold δ', or e.g. 'threshold: δ (dppo, drpo), ε (spo)' when objectives name it differently."""
    by_symbol: Dict[str, List[str]] = {}
    for (objective, _), members in groups.items():
        names = by_symbol.setdefault(threshold(members[0])[1], [])
        if objective not in names:
            names.append(objective)
    if len(by_symbol) == 1:
        return f"threshold {next(iter(by_symbol))}"
    return "threshold: " + ", ".join(f"{sym} ({', '.join(objs)})" for sym, objs in by_symbol.items())


def draw(data: SweepData, groups: Dict, sesoi: float):
    """The figure (final and best accuracy panels); returns (fig, axes). Each panel's band: `sesoi_band`."""
    fig, axes = plots.grid(2)
    values_seen: List[float] = []
    for which, ax in zip(("final_acc", "best_acc"), axes):
        spans: List[Tuple[float, float]] = []
        for g, ((objective, name), members) in enumerate(groups.items()):
            xs, means, errs, hollow = points(data, members, which)
            values_seen += xs
            if not xs:
                continue
            shade = colour(objective)
            ax.errorbar(xs, means, yerr=np.array(errs).T, color=shade, marker=MARKERS[g % len(MARKERS)],
                        linestyle=OTHER_STYLES[g % len(OTHER_STYLES)], capsize=3, linewidth=1.5, zorder=3,
                        label=f"{name} ({threshold(members[0])[1]})")
            single = [(x, m) for x, m, h in zip(xs, means, hollow) if h]
            if single:
                ax.scatter(*zip(*single), facecolors="white", edgecolors=shade, zorder=4, s=30)
            spans += [(m - e[0], m + e[1]) for m, e in zip(means, errs)]
            spans.append(sesoi_band(ax, means, sesoi, shade))
        log = plots.log_x_if_wide(ax, values_seen)
        what = "final" if which == "final_acc" else "best"
        plots.finish(ax, f"{what.capitalize()} eval accuracy vs threshold (band: SESOI {sesoi:g})",
                     axis_label(groups) + (", log scale" if log else ""), f"{what} eval accuracy (fraction correct)")
        if spans:
            fit_y(ax, spans)  # after finish: its accuracy axis is the whole [0, 1]
    return fig, axes


def differences(page, decided, sesoi: float, alpha: float) -> None:
    """The headline figure: each pair's difference with its (1 − 2α) interval against the ±SESOI band."""
    rows = [(objective, name, symbol, pair) for objective, name, symbol, result in decided for pair in result.pairs]
    if not rows:
        return
    fig, axes = plots.grid(1, ncols=1, width=8.5, height=1.3 + 0.42 * len(rows), left=2.6)
    ax = axes[0]
    ax.axvspan(-sesoi, sesoi, color="#cfe3f3", zorder=0, label=f"±SESOI ({sesoi:g})")
    ax.axvline(0, color="#000", linewidth=0.8)
    for i, (objective, name, symbol, pair) in enumerate(rows):
        y = len(rows) - 1 - i
        value = pair.estimate.value
        ax.errorbar([value], [y], xerr=[[value - pair.low], [pair.high - value]], fmt=MARKERS[i % len(MARKERS)],
                    color=colour(objective), capsize=4, markersize=6, linewidth=1.6, zorder=3)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{name}: {symbol}={fmt(p.a)} − {symbol}={fmt(p.b)}"
                        for _, name, symbol, p in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    plots.finish(ax, "Paired differences in final accuracy between threshold values",
                 "difference in final eval accuracy", "", legend=True)
    page.figure(fig, "pairwise_differences", f"Headline: each pair of threshold values' difference in mean final "
                f"accuracy (paired over shared seeds) with its {1 - 2 * alpha:.0%} interval (the one whose ends are "
                f"the one-sided tests at α {alpha:g}); shaded: the ±SESOI equivalence region. An interval inside "
                "the band shows equivalence (TOST at α). The tests for a difference are two-sided and Holm-corrected "
                "over the pairs, so they need more than an interval outside the band or away from 0: read them in "
                "the table.")
