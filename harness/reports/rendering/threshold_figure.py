"""The sensitivity report's accuracy-versus-threshold figure: per objective, mean final (and best) eval accuracy
at each threshold value with 95% t error bars, on a y axis fitted to the bars, and the SESOI drawn as a band."""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from harness.reports.rendering import plots
from harness.reports.results.data import SweepData
from harness.reports.rendering.palette import OTHER_STYLES, colour
from harness.reports.results.summary import summarize
from harness.reports.results.thresholds import threshold
from harness.stats.intervals import t_interval

MARKERS = "osD^v<>"
PAD = 0.12  # of the data's span, above and below
MIN_SPAN = 0.02  # accuracy: an axis never narrower than two eval problems in a hundred
CAPTION = ("Mean over finished seeds with 95% Student-t error bars inside [0, 1]; hollow markers: one seed (no "
           "interval). Colour, marker and line style = objective/variant. The y axis spans the error bars and "
           "bands, not [0, 1]. Shaded, per objective: a band one SESOI ({sesoi:g}) tall centred between its lowest "
           "and highest mean: the means fit inside it exactly when no two threshold values' means differ by more "
           "than the SESOI (the verdict also weighs the intervals: see the pairwise table).")


def points(data: SweepData, members, which: str) -> Tuple[List[float], List[float], List[Tuple[float, float]], List[bool]]:
    """(threshold values, means, (below, above) error-bar lengths, one-seed flags) of `which`
    (final_acc | best_acc) over the FINISHED runs of one objective, per threshold value."""
    xs, means, errs, hollow = [], [], [], []
    for v in sorted({threshold(r)[2] for r in members}):
        done = [r for r in members if threshold(r)[2] == v and r.status == "FINISHED"]
        ci = t_interval([getattr(summarize(data, r), which) for r in done], bounds=(0.0, 1.0))
        if ci.mean is None:
            continue
        xs.append(v), means.append(ci.mean), hollow.append(ci.n < 2)
        errs.append((ci.mean - ci.low, ci.high - ci.mean) if ci.low is not None else (0.0, 0.0))
    return xs, means, errs, hollow


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
