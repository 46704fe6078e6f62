"""geometry: the gradient weight G/(r·A) of each objective of the sweep over (ν, π), for both advantage
signs (the DRPO paper's Figure 1), at the thresholds the sweep used and at the library default — so
δ = 0.1 versus δ = 12.5 for DRPO is visible at a glance. Computed by `gradient_weight_grid`, i.e. by
autograd through the library's own objectives."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from harness.reports.data import Run, SweepData, fmt
from harness.reports.page import Page
from harness.reports.registry import ReportKind
from harness.reports.thresholds import SYMBOLS, default_threshold, objective_params, threshold_param

GRID = np.linspace(0.005, 1.0, 160)  # probabilities, both axes
VMIN, VCENTER, VMAX = -1.0, 1.0, 3.0  # colour range of the weight (clipped beyond; 1 = plain policy gradient)
ZERO_LEVEL = 1e-9
MAX_SETTINGS = 5  # parameter settings (rows) drawn per objective
NOT_GEOMETRY = ("anchor", "is_cap")  # the grid is drawn with ν given: anchor/IS weight do not change its shape


def _settings(runs: List[Run]) -> Dict[str, List[Tuple[Dict[str, Any], str]]]:
    """objective -> [(params, label)]: distinct parameter sets in the sweep, then the default threshold."""
    from harness.algorithms import SPECS

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
    from harness.algorithms import SPECS

    if any(r.objective in SPECS for r in data.runs):
        return None
    return "needs runs of objectives from the library (harness.algorithms)"


def build(data: SweepData, page: Page) -> None:
    from harness.algorithms import SPECS, gradient_weight_grid

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
        fig, axes = _panels(len(entries))
        image = None
        for i, (params, label) in enumerate(entries):
            for j, sign in enumerate((1.0, -1.0)):
                ax = axes[i][j]
                try:
                    weight = _grid(gradient_weight_grid, objective, sign, params)
                except Exception as err:  # a parameter set the library refuses: say so on the panel
                    page.missing(f"{label}: weight grid not computable ({err}).")
                    ax.text(0.5, 0.5, "not computable", ha="center", va="center", transform=ax.transAxes)
                    continue
                image = _heatmap(ax, weight)
                finite = weight[np.isfinite(weight)]
                rows.append([label, "A>0" if sign > 0 else "A<0", float(np.mean(np.abs(weight) < 1e-12)),
                             float(np.mean(weight < -1e-12)), float(finite.min()) if len(finite) else None,
                             float(finite.max()) if len(finite) else None])
            axes[i][0].set_ylabel(f"{label.replace(' (library default)', chr(10) + '(library default)')}\n"
                                  "current probability π")
        axes[0][0].set_title("advantage A > 0")
        axes[0][1].set_title("advantage A < 0")
        for ax in axes[-1]:
            ax.set_xlabel("anchor probability ν")
        if image is not None:
            box = fig.subplotpars
            cax = fig.add_axes((0.86, box.bottom + 0.1 * (box.top - box.bottom), 0.025, 0.8 * (box.top - box.bottom)))
            fig.colorbar(image, cax=cax, extend="both", label="gradient weight G/(r·A) (dimensionless)")
        fig.suptitle(f"{objective}: gradient weight over (ν, π)", x=0.5, y=1 - 0.12 / fig.get_figheight())
        page.figure(fig, f"weight_{objective}", f"{objective}: gradient weight over (ν, π), A > 0 (left) and A < 0 "
                    "(right), one row per threshold (the sweep's values, then the library default).")
    page.heading("Key numbers")
    page.table(["objective and threshold", "advantage", "masked fraction of the (ν, π) square",
                "negative-weight fraction", "min weight", "max weight"], rows,
               caption=f"Over a {len(GRID)}×{len(GRID)} grid of ν, π in [{GRID[0]:g}, 1].")


def _grid(function, objective: str, sign: float, params: Dict[str, Any]) -> np.ndarray:
    """The weight grid on one torch thread: a small autograd problem, where thread start-up and a busy
    machine's contention cost more than they save; the caller's thread count is restored."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return function(objective, GRID, GRID, sign, **params).numpy()
    finally:
        torch.set_num_threads(threads)


def _panels(n_rows: int):
    """rows × 2 heatmap panels with shared axes and a fixed layout (no constrained-layout solve: fast)."""
    from harness.reports.plots import plt  # Agg backend

    height = 2.5 * n_rows + 1.1
    fig, axes = plt.subplots(n_rows, 2, figsize=(7.0, height), sharex=True, sharey=True, squeeze=False)
    fig.subplots_adjust(left=0.17, right=0.82, bottom=0.7 / height, top=1 - 0.7 / height, wspace=0.12, hspace=0.1)
    return fig, [list(row) for row in axes]


def _heatmap(ax, weight: np.ndarray):
    from matplotlib.colors import TwoSlopeNorm

    shown = np.clip(np.where(np.isfinite(weight), weight, VMAX), VMIN, VMAX).T  # rows = π, columns = ν
    image = ax.imshow(shown, origin="lower", extent=(GRID[0], 1, GRID[0], 1), aspect="auto", cmap="RdBu_r",
                      norm=TwoSlopeNorm(vmin=VMIN, vcenter=VCENTER, vmax=VMAX), interpolation="nearest")
    field = np.where(np.isfinite(weight), weight, VMAX).T
    if field.min() < ZERO_LEVEL < field.max():  # just above 0: a mask's edge, or a smooth weight's zero crossing
        ax.contour(GRID, GRID, field, levels=[ZERO_LEVEL], colors="black", linewidths=0.8)
    ax.plot([0, 1], [0, 1], color="#444", linewidth=0.6, linestyle=":")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1), ax.grid(False)
    ax.set_xticks([0, 0.5, 1]), ax.set_yticks([0, 0.5, 1])
    return image


REPORT = ReportKind("geometry", "Trust-region geometry: gradient weight over (ν, π)", needs, build)
