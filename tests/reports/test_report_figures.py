"""Figures a reader can trust, checked on the matplotlib objects the reports draw: bands stay inside each
measure's range (also on log axes), accuracy axes hold every marker, step ticks sit on the evaluations."""
from __future__ import annotations

import numpy as np

from harness.reports.rendering import plots


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


def _labelled_ticks(ax) -> list:
    ax.figure.canvas.draw()
    low, high = ax.get_ylim()
    return [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if t.get_text() and low <= v <= high]


def test_a_log_panel_within_one_decade_or_less_has_several_tick_labels():
    for values in ([0.6, 0.9, 1.4, 1.8], [0.9, 1.0, 1.2, 1.1], [0.3, 2.0, 8.0, 40.0], [1e-3, 1.0, 50.0, 2e3]):
        fig, (ax,) = plots.grid(1)
        ax.plot(np.arange(4), values)
        ax.set_yscale("log")
        plots.log_ticks(ax)
        labels = _labelled_ticks(ax)
        assert len(labels) >= 3, (values, labels)
        assert all("10^" not in t and "$" not in t for t in labels), labels  # plain numbers
        plots.close(fig)


def test_every_mean_line_is_drawn_above_every_band_with_a_halo_and_two_seed_bands_are_pale():
    fig, (ax,) = plots.grid(1)
    steps = np.arange(6)
    for shade, shift in (("#9ecae1", 0.0), ("#08519c", 0.2), ("#3182bd", 0.4)):
        two_seeds = [(steps, 0.1 + shift + 0.05 * steps), (steps, 0.5 + shift - 0.02 * steps)]
        plots.band(ax, two_seeds, shade, f"variant {shade}", metric="eval/accuracy")
    many = [(steps, 0.3 + 0.01 * k + 0.05 * steps) for k in range(5)]
    plots.band(ax, many, "#000000", "five seeds", metric="eval/accuracy")
    assert min(line.get_zorder() for line in ax.lines) > max(c.get_zorder() for c in ax.collections)
    assert all(line.get_path_effects() for line in ax.lines), "a pale line needs its halo over darker bands"
    alphas = [c.get_alpha() for c in ax.collections]
    assert alphas[:3] == [plots.BAND_ALPHA_FEW] * 3 and alphas[3] == plots.BAND_ALPHA > plots.BAND_ALPHA_FEW
    plots.close(fig)


def test_the_palest_shade_of_an_objective_is_not_washed_out():
    from harness.reports.rendering.palette import shades

    for objective in ("dppo", "drpo", "grpo"):
        palest = shades(objective, 3)[0]
        r, g, b = (int(palest[i:i + 2], 16) / 255 for i in (1, 3, 5))
        assert 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.72, (objective, palest)  # visible on white


def test_variant_labels_write_thresholds_as_run_names_do():
    from harness.reports.results.summary import axis_name

    assert [axis_name(k) for k in ("algo.delta", "algo.eps", "algo.relax_alpha", "algo.anchor", "precision.name",
                                   "trainer.lr")] == ["δ", "ε", "α", "anchor", "precision", "trainer.lr"]
