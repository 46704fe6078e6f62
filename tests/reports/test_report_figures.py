"""Figures a reader can trust, checked on the matplotlib objects the reports draw: bands stay inside each
measure's range (also on log axes), accuracy axes hold every marker, step ticks sit on the evaluations."""
from __future__ import annotations

import numpy as np

from harness.reports import plots


def _band_vertices(ax):
    return np.concatenate([p.vertices for c in ax.collections for p in c.get_paths()])


def test_accuracy_bands_and_markers_stay_inside_zero_to_one():
    fig, (ax,) = plots.grid(1)
    steps = np.array([0, 10, 20, 30])
    curves = [(steps, np.array([0.9, 0.99, 1.0, 1.0])), (steps, np.array([0.6, 0.98, 1.0, 0.97])),
              (steps, np.array([0.95, 1.0, 1.0, 1.0]))]
    plots.band(ax, curves, "#000", "x", marker="o", metric="eval/accuracy")
    plots.finish(ax, "t", plots.STEP_LABEL, plots.label("eval/accuracy"), ticks=steps)
    y = _band_vertices(ax)[:, 1]
    assert y.max() <= 1.0 and y.min() >= 0.0
    low, high = ax.get_ylim()
    assert low < 0.0 and high > 1.0  # a marker at 0 or 1 is drawn whole
    assert list(ax.get_xticks()) == [0, 10, 20, 30]
    plots.close(fig)


def test_non_negative_and_log_bands_never_go_below_zero():
    fig, (ax, ax_log) = plots.grid(2)
    steps = np.arange(5)
    tiny = [(steps, np.array([1e-8, 0.0, 3e-8, 1e-9, 2e-8])), (steps, np.array([3e-8, 2e-8, 0.0, 4e-8, 1e-9]))]
    plots.band(ax, tiny, "#000", "mismatch", metric="train/mismatch")
    assert _band_vertices(ax)[:, 1].min() >= 0.0
    spread = [(steps, np.array([0.5, 1, 10, 100, 50.0])), (steps, np.array([5, 20, 1, 1000, 3.0]))]
    plots.band(ax_log, spread, "#000", "grad", metric="train/grad_norm", log=True)
    assert _band_vertices(ax_log)[:, 1].min() > 0.0  # drawable on a log axis: no stripes off the axis
    plots.close(fig)


def test_many_evaluations_get_evaluation_ticks_that_include_the_last():
    fig, (ax,) = plots.grid(1)
    evals = list(range(0, 410, 10))
    ax.plot(evals, np.zeros(len(evals)))
    plots.finish(ax, "t", plots.STEP_LABEL, "y", ticks=evals)
    ticks = [int(t) for t in ax.get_xticks()]
    assert set(ticks) <= set(evals) and ticks[-1] == 400 and len(ticks) <= 13
    plots.close(fig)
