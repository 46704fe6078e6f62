"""geometry: the gradient weight G/(r·A) of each objective of the sweep over (ν, π), for both advantage
signs (the DRPO paper's Figure 1), at the thresholds the sweep used and at the library default — so
δ = 0.1 versus δ = 12.5 for DRPO is visible at a glance. Computed by `gradient_weight_grid`, i.e. by
autograd through the library's own objectives (kept in a disk cache keyed on the library's code:
harness/reports/rendering/geometry_cache.py)."""
from __future__ import annotations

from functools import partial
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from harness.algorithms import SPECS
from harness.reports.results.data import Run, SweepData, fmt
from harness.reports.rendering.geometry_cache import cached_grid
from harness.reports.rendering.page import Page
from harness.reports.rendering.plots import plt
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.thresholds import SYMBOLS, default_threshold, objective_params, threshold_param

GRID = np.linspace(0.005, 1.0, 160)  # probabilities, both axes
VMIN, VCENTER, VMAX = -1.0, 1.0, 3.0  # colour range of the weight (clipped beyond; 1 = plain policy gradient)
ZERO_LEVEL = 1e-9
GAP = 0.12  # between heatmap panels, in units of a panel
MAX_SETTINGS = 5  # parameter settings (rows) drawn per objective
NOT_GEOMETRY = ("anchor", "is_cap")  # the grid is drawn with ν given: anchor/IS weight do not change its shape


def _settings(runs: List[Run]) -> Dict[str, List[Tuple[Dict[str, Any], str]]]:
    """objective -> [(params, label)]: distinct parameter sets in the sweep, then the default threshold."""
    out: Dict[str, List[Tuple[Dict[str, Any], str]]] = {}
    for run in runs:
        if run.objective not in SPECS:
            continue
        params = {k: v for k, v in objective_params(run).items() if k not in NOT_GEOMETRY and v is not None}
        entries = out.setdefault(run.objective, [])
        if all(p != params for p, _ in entries):
            entries.append((params, _label(run.objective, params)))
    for objective, entries in out.items():
        name = threshold_param(objective)
        default = default_threshold(objective)
        entries.sort(key=lambda e: (repr(sorted((k, v) for k, v in e[0].items() if k != name)), e[0].get(name) or 0))
        if name and default is not None and all(p.get(name) != default for p, _ in entries):
            base = dict(entries[0][0]) if entries else {}
            base[name] = default
            entries.append((base, _label(objective, base) + " (library default)"))
    return out


def _label(objective: str, params: Dict[str, Any]) -> str:
    name = threshold_param(objective)
    return f"{objective} {SYMBOLS.get(name, name)}={fmt(params[name])}" if name and name in params else objective


def needs(data: SweepData) -> Optional[str]:
    if any(r.objective in SPECS for r in data.runs):
        return None
    return "needs runs of objectives from the library (harness.algorithms)"


def build(data: SweepData, page: Page) -> None:
    used = [r for r in data.runs if r.objective in SPECS]
    page.uses(used)
    page.text("Gradient weight G/(r·A) of one token as a function of its anchor probability ν (x) and current "
              "probability π (y): 1 = the plain policy gradient, 0 = masked/clipped (no gradient), < 0 = the "
              "update is pulled back towards ν, > 1 = amplified. Colours are clipped to "
              f"[{VMIN:g}, {VMAX:g}]; the black line is weight 0. Drawn with anchor=rollout (ν given); Top-K "
              "divergences are drawn as their binary counterparts.", "method")
    rows = []
    for objective, entries in _settings(used).items():
        if len(entries) > MAX_SETTINGS:  # keep the sweep's extremes and the default
            entries = entries[:MAX_SETTINGS - 2] + entries[-2:]
        fig, ax = _mosaic(len(entries))
        image = None
        for i, (params, label) in enumerate(entries):
            for j, sign in enumerate((1.0, -1.0)):
                x0, y0 = j * (1 + GAP), (len(entries) - 1 - i) * (1 + GAP)
                try:
                    weight = cached_grid(objective, sign, params, GRID, partial(_grid, objective, sign, params))
                except ValueError as err:  # a parameter set the library refuses: say so on the panel
                    page.missing(f"{label}: weight grid not computable ({err}).")
                    ax.text(x0 + 0.5, y0 + 0.5, "not computable", ha="center", va="center")
                    continue
                image = _heatmap(ax, weight, x0, y0)
                finite = weight[np.isfinite(weight)]
                rows.append([label, "A>0" if sign > 0 else "A<0", float(np.mean(np.abs(weight) < 1e-12)),
                             float(np.mean(weight < -1e-12)), float(finite.min()) if len(finite) else None,
                             float(finite.max()) if len(finite) else None])
            ax.annotate(label.replace(" (library default)", "\n(library default)") + "\ncurrent probability π",
                        xy=(0, (len(entries) - 1 - i) * (1 + GAP) + 0.5), xycoords=("axes fraction", "data"),
                        xytext=(-46, 0), textcoords="offset points", rotation=90, ha="center", va="center")
        top = len(entries) + (len(entries) - 1) * GAP
        for j, title in enumerate(("advantage A > 0", "advantage A < 0")):
            ax.text(j * (1 + GAP) + 0.5, top + 0.04, title, ha="center", va="bottom", fontsize=10)
            ax.annotate("anchor probability ν", xy=(j * (1 + GAP) + 0.5, 0), xycoords=("data", "axes fraction"),
                        xytext=(0, -16), textcoords="offset points", ha="center", va="top")
        if image is not None:
            box = ax.get_position()
            cax = fig.add_axes((0.86, box.y0 + 0.1 * box.height, 0.025, 0.8 * box.height))
            fig.colorbar(image, cax=cax, extend="both", label="gradient weight G/(r·A) (dimensionless)")
        fig.suptitle(f"{objective}: gradient weight over (ν, π)", x=0.5, y=1 - 0.12 / fig.get_figheight())
        page.figure(fig, f"weight_{objective}", f"{objective}: gradient weight over (ν, π), A > 0 (left) and A < 0 "
                    "(right), one row per threshold (the sweep's values, then the library default).")
    page.heading("Key numbers")
    page.table(["objective and threshold", "advantage", "masked fraction of the (ν, π) square",
                "negative-weight fraction", "min weight", "max weight"], rows,
               caption=f"Over a {len(GRID)}×{len(GRID)} grid of ν, π in [{GRID[0]:g}, 1].")


def _grid(objective: str, sign: float, params: Dict[str, Any]) -> np.ndarray:
    """The weight grid on one torch thread: a small autograd problem, where thread start-up and a busy
    machine's contention cost more than they save; the caller's thread count is restored."""
    import torch

    from harness.algorithms import gradient_weight_grid  # torch: only to draw (the index imports every kind)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return gradient_weight_grid(objective, GRID, GRID, sign, **params).numpy()
    finally:
        torch.set_num_threads(threads)


def _mosaic(n_rows: int):
    """One axes holding n_rows × 2 heatmap panels side by side (panel = unit square, GAP between them):
    a figure of 2n separate axes spends most of its time building ticks, this one a handful."""
    height = 2.5 * n_rows + 1.1
    fig = plt.figure(figsize=(7.0, height))
    ax = fig.add_axes((0.18, 0.7 / height, 0.64, 1 - 1.45 / height))
    ax.set_xlim(-0.02, 2 + GAP + 0.02)
    ax.set_ylim(-0.02, n_rows + (n_rows - 1) * GAP + 0.02)
    ticks = [0.0, 0.5, 1.0]
    ax.set_xticks([k * (1 + GAP) + t for k in range(2) for t in ticks], [f"{t:g}" for _ in range(2) for t in ticks])
    ax.set_yticks([k * (1 + GAP) + t for k in range(n_rows) for t in ticks],
                  [f"{t:g}" for _ in range(n_rows) for t in ticks])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig, ax


def _heatmap(ax, weight: np.ndarray, x0: float, y0: float):
    """The weight on the unit square at (x0, y0): x = ν, y = π; the black line is weight 0."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    field = np.where(np.isfinite(weight), weight, VMAX).T  # rows = π, columns = ν
    image = ax.imshow(np.clip(field, VMIN, VMAX), origin="lower", extent=(x0 + GRID[0], x0 + 1, y0 + GRID[0], y0 + 1),
                      aspect="auto", cmap="RdBu_r", norm=TwoSlopeNorm(vmin=VMIN, vcenter=VCENTER, vmax=VMAX),
                      interpolation="nearest")
    if field.min() < ZERO_LEVEL < field.max():  # just above 0: a mask's edge, or a smooth weight's zero crossing
        ax.contour(GRID + x0, GRID + y0, field, levels=[ZERO_LEVEL], colors="black", linewidths=0.8)
    ax.plot([x0, x0 + 1], [y0, y0 + 1], color="#444", linewidth=0.6, linestyle=":")
    ax.add_patch(Rectangle((x0, y0), 1, 1, fill=False, linewidth=0.8, edgecolor="black"))
    return image


REPORT = ReportKind("geometry", "Trust-region geometry: gradient weight over (ν, π)", needs, build)
