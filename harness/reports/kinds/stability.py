"""stability: per objective × precision, mismatch growth, entropy, gradient norm and accuracy over time,
and automatic collapse detection (`collapse.py`) with the step each run collapsed at."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from harness.reports import plots
from harness.reports.collapse import DROP, TRAIN_WINDOW
from harness.reports.data import Run, SweepData
from harness.reports.page import Page
from harness.reports.palette import PRECISION_STYLES, colour, line_style
from harness.reports.registry import ReportKind
from harness.reports.stats import t_interval
from harness.reports.summary import EVAL, summarize, window_mean

METRICS = [("train/mismatch", "mismatch |μ − π'|"), ("train/entropy", "entropy"),
           ("train/grad_norm", "gradient norm"), (EVAL, "eval accuracy")]
RULE = (f"Collapse rule: eval accuracy, or train accuracy averaged over {TRAIN_WINDOW} steps, falls more than "
        f"{DROP:g} (accuracy points) below its running best and does not come back within {DROP:g} of it by the "
        "end of the run; or the loss becomes non-finite; or the run FAILED with a non-finite error. The step "
        "is the first step of that final fall.")


def needs(data: SweepData) -> Optional[str]:
    if any(data.has_metrics(r) for r in data.runs):
        return None
    return "needs runs with logged metrics"


def _groups(data: SweepData) -> Dict[Tuple[str, str], List[Run]]:
    out: Dict[Tuple[str, str], List[Run]] = {}
    for r in data.runs:
        out.setdefault((r.objective, r.precision), []).append(r)
    return dict(sorted(out.items()))


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    page.uses(data.runs)
    page.text(RULE, "method")
    running = [r for r in data.runs if r.status in ("RUNNING", "SCHEDULED")]
    if running:
        page.missing(f"{len(running)} run{'s are' if len(running) > 1 else ' is'} still running: a collapse after "
                     "their last logged step cannot be seen yet.")
    rows = []
    for (objective, precision), runs in groups.items():
        first, last, ent0, ent1, gmax = [], [], [], [], []
        for r in runs:
            mm, ent, gn = (data.curve(r, k)[1] for k in ("train/mismatch", "train/entropy", "train/grad_norm"))
            first.append(window_mean(mm, True)), last.append(window_mean(mm, False))
            ent0.append(window_mean(ent, True)), ent1.append(window_mean(ent, False))
            finite = gn[np.isfinite(gn)]
            gmax.append(float(finite.max()) if len(finite) else None)
        m0, m1 = _mean(first), _mean(last)
        final = t_interval([summarize(data, r).final_acc for r in runs if r.status == "FINISHED"])
        collapsed = sum(1 for r in runs if summarize(data, r).collapse)
        rows.append([objective, precision, len(runs), m0, m1, (m1 / m0) if m0 and m1 is not None else None,
                     _mean(ent0), _mean(ent1), _mean(gmax), final.mean, f"{collapsed}/{len(runs)}"])
    page.heading("Objective × precision")
    page.table(["objective", "precision", "runs", "mismatch first 10%", "mismatch last 10%", "mismatch growth ×",
                "entropy first 10%", "entropy last 10%", "max grad norm (mean over runs)", "final acc (mean)",
                "collapsed"], rows, caption="First/last 10% = mean over the first/last tenth of the logged steps.")
    page.heading("Collapsed runs")
    collapsed = [(r, summarize(data, r).collapse) for r in data.runs if summarize(data, r).collapse]
    if collapsed:
        page.table(["run", "objective", "precision", "seed", "status", "collapse step", "reason"],
                   [[r.label, r.objective, r.precision, r.seed, r.status, c.step, c.reason] for r, c in collapsed])
    else:
        page.text(f"No run collapsed ({len(data.runs)} runs checked).")
    _curves(data, page, groups)


def _mean(values) -> Optional[float]:
    v = [x for x in values if x is not None and np.isfinite(x)]
    return float(np.mean(v)) if v else None


def _curves(data: SweepData, page: Page, groups: Dict) -> None:
    fig, axes = plots.grid(len(METRICS), ncols=2, width=5.6, height=3.6)
    precisions = sorted({p for _, p in groups})
    for ax, (key, title) in zip(axes, METRICS):
        for (objective, precision), runs in groups.items():
            style = line_style(precision, PRECISION_STYLES, precisions.index(precision))
            plots.band(ax, [data.curve(r, key) for r in runs], colour(objective), f"{objective} · {precision}",
                       style, marker="o" if key == EVAL else None)
        log = key == "train/grad_norm" and any((np.asarray(ln.get_ydata()) > 0).any() for ln in ax.lines)
        if log:
            from matplotlib.ticker import FormatStrFormatter, NullFormatter

            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        plots.finish(ax, f"{title} by objective × precision", plots.STEP_LABEL,
                     plots.label(key) + (", log scale" if log else ""))
    page.figure(fig, "stability_curves", "Mean over the runs of each objective (colour) × precision (line style) "
                "with a 95% t-band.")
    _collapse_figure(data, page)


def _collapse_figure(data: SweepData, page: Page) -> None:
    collapsed = [(r, summarize(data, r).collapse) for r in data.runs if summarize(data, r).collapse]
    if not collapsed:
        return
    shown = collapsed[:8]
    fig, axes = plots.grid(len(shown), ncols=min(4, len(shown)), width=3.8, height=2.9)
    for ax, (run, c) in zip(axes, shown):
        for key, style in ((EVAL, "-o"), ("train/accuracy", "-")):
            steps, values = data.curve(run, key)
            if len(steps):
                ax.plot(steps, values, style, color=colour(run.objective), markersize=3,
                        alpha=1.0 if key == EVAL else 0.45, label=key)
        ax.axvline(c.step, color="#c00", linestyle="--", linewidth=1, label=f"collapse @ {c.step}")
        plots.finish(ax, f"{run.label[:40]}", plots.STEP_LABEL, "accuracy (fraction correct)")
    page.figure(fig, "collapsed_runs", "Collapsed runs (up to 8): eval (dots) and train accuracy with the detected "
                "collapse step (red dashed line).")


REPORT = ReportKind("stability", "Stability across precisions", needs, build)
