"""Matplotlib helpers shared by the report kinds (Agg backend: no display needed).

Every panel gets a title, axis labels with units and a legend when it has labelled lines; curves over
seeds are drawn as a mean line with a shaded Student-t band (see `stats.mean_curve`) kept inside the
measure's range (`BOUNDS`); log-scale panels draw the geometric mean with a band of log values.
"""
from __future__ import annotations

import textwrap
from typing import Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import patheffects  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from harness.stats.intervals import mean_curve  # noqa: E402

STEP_LABEL = "training step"
UNITS = {
    "eval/accuracy": "eval accuracy (fraction correct)",
    "eval/best_accuracy": "best eval accuracy (fraction correct)",
    "train/accuracy": "train accuracy (fraction correct)",
    "train/reward": "train reward (mean per response)",
    "train/entropy": "token entropy (nats)",
    "train/mismatch": "mismatch |μ − π'| (probability)",
    "train/grad_norm": "grad norm (L2, before clipping)",
    "train/loss": "loss (objective units)",
    "objective/lowprob_masked_frac": "clipped fraction of low-prob tokens (ν < 0.2)",
    "objective/masked_frac": "clipped / masked token fraction",
    "objective/masked_entropy": "entropy of clipped tokens (nats)",
    "objective/masked_nu_mean": "mean ν of clipped tokens (probability)",
}
# The range each logged measure can take: bands are intersected with it.
BOUNDS = {key: ((0.0, 1.0) if "fraction" in unit or "(probability)" in unit else (0.0, None))
          for key, unit in UNITS.items() if key not in ("train/loss",)}
BOUNDS["train/reward"] = (0.0, 1.0)
# Bands are drawn under every mean line, lighter when few seeds make them wide; each line has a white halo so
# a pale shade stays visible over its neighbours' bands.
BAND_ALPHA, BAND_ALPHA_FEW = 0.16, 0.07
HALO = [patheffects.withStroke(linewidth=3.2, foreground="white", alpha=0.85)]
plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 200, "pdf.fonttype": 42, "font.size": 9, "axes.titlesize": 10,
                     "legend.fontsize": 7.5, "axes.grid": True, "grid.alpha": 0.3})


def label(metric: str) -> str:
    return UNITS.get(metric, metric)


def wrap(text: str, width: int) -> str:
    return textwrap.fill(text, width, break_on_hyphens=False)


def grid(n_panels: int, ncols: int = 2, width: float = 5.2, height: float = 3.5, nrows: Optional[int] = None,
         legend_room: float = 0.0, left: float = 0.85):
    """A figure with n panels (rows of `ncols`, each width × height inches); returns (fig, list of the n
    axes), spare axes hidden. Margins are fixed in inches (room for labels, titles, tick labels) instead of
    a layout engine: constrained layout and tight bounding boxes cost more than the rest of a report.
    legend_room: inches on the right for legends placed beside a row (`finish(..., legend="right")`)."""
    ncols = max(1, min(ncols, n_panels))
    nrows = nrows or -(-n_panels // ncols)
    W, H = width * ncols + legend_room, height * nrows
    fig, axes = plt.subplots(nrows, ncols, figsize=(W, H), squeeze=False)
    right, bottom, top, gap_w, gap_h = 0.2 + legend_room, 0.55, 0.5, 0.95, 0.9  # inches
    ax_w = (W - left - right - (ncols - 1) * gap_w) / ncols
    ax_h = (H - bottom - top - (nrows - 1) * gap_h) / nrows
    fig.subplots_adjust(left=left / W, right=1 - right / W, bottom=bottom / H, top=1 - top / H,
                        wspace=gap_w / ax_w, hspace=gap_h / ax_h)
    flat = list(axes.ravel())
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, flat[:n_panels]


def band(ax, curves, colour: str, label_text: str, linestyle="-", marker=None, metric: Optional[str] = None,
         log: bool = False) -> bool:
    """Mean over runs of (steps, values) curves with a 95% t-band where n >= 2, inside the range of `metric`
    (`BOUNDS`); log=True: geometric mean and log-space band (for a log axis). False if nothing to draw."""
    steps, mean, low, high, n = mean_curve(curves, bounds=BOUNDS.get(metric, (None, None)), log=log)
    if not len(steps):
        return False
    ax.plot(steps, mean, color=colour, linestyle=linestyle, marker=marker if len(steps) <= 25 else None,
            markersize=3, linewidth=1.5, zorder=3, path_effects=HALO,
            label=f"{label_text} (n={int(n.max())})")
    ok = np.isfinite(low) & np.isfinite(high)
    if ok.any():
        few = int(n[ok].min()) < 3  # two seeds: t(0.975, 1) = 12.7 makes the band span most of the range
        ax.fill_between(steps, np.where(ok, low, mean), np.where(ok, high, mean), color=colour,
                        alpha=BAND_ALPHA_FEW if few else BAND_ALPHA, linewidth=0, zorder=1)
    return True


def log_ticks(ax) -> None:
    """A log y axis with at least three labelled ticks: 1-2-5 or every integer multiple within a decade when
    the data span less than a few decades (matplotlib would label the powers of ten only)."""
    low, high = ax.get_ylim()
    decades = np.log10(high / low) if low > 0 and high > low else 0.0
    subs = (1.0,) if decades >= 3 else (1.0, 2.0, 5.0) if decades >= 1 else tuple(float(k) for k in range(1, 10))
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    if len([t for t in ax.get_yticks() if low <= t <= high]) < 3:  # less than a factor ~2: plain numbers
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))


def finish(ax, title: str, xlabel: str, ylabel: str, legend=True, empty: str = "no data", ticks=None) -> None:
    """Title (wrapped to the panel's width), axis labels, legend (if any labelled artist), whole steps on a
    step axis (ticks: the evaluation steps, when given and few enough); an explanatory text on empty panels."""
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    ax.set_title(textwrap.fill(title, max(20, int(width_in * 12.5)), break_on_hyphens=False))
    if xlabel == STEP_LABEL and ticks is not None and len(ticks) >= 2:
        ticks = sorted({int(t) for t in ticks})
        every = -(-len(ticks) // 11)
        ax.set_xticks(ticks[::every] if ticks[::every][-1] == ticks[-1] or every == 1 else ticks[::every] + [ticks[-1]])
    elif xlabel == STEP_LABEL:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if "fraction correct" in ylabel:
        low, high = ax.get_ylim()
        ax.set_ylim(-0.04, 1.04)  # the whole range: every marker (radius ~0.02 of the axis) stays inside
    if not ax.lines and not ax.collections and not ax.images and not ax.patches:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, color="#777")
    elif legend == "right" and ax.get_legend_handles_labels()[0]:  # beside the panel (grid's legend_room)
        ax.legend(loc="upper left", bbox_to_anchor=(1.03, 1.0), frameon=False, borderaxespad=0.0)
    elif legend is True and ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", frameon=False)


def log_x_if_wide(ax, values: Sequence[float]) -> bool:
    """Log-scale the x axis when positive values span a factor of 10 or more."""
    v = [x for x in values if x is not None and x > 0]
    if len(v) >= 2 and max(v) / min(v) >= 10:
        ax.set_xscale("log")
        return True
    return False


def close(fig) -> None:
    plt.close(fig)
