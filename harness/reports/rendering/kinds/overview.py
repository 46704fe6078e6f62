"""overview: every run of the sweep in one sortable table, failed runs with their error."""
from __future__ import annotations

from typing import Optional

import numpy as np

from harness.reports.rendering import plots
from harness.reports.results.data import SweepData, fmt
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import colour
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import short_key, summarize
from harness.reports.results.thresholds import threshold
from harness.stats.collapse import DROP, EVAL_WINDOW, REL_DROP, TRAIN_WINDOW


def needs(data: SweepData) -> Optional[str]:
    return None  # an empty sweep still gets a page saying so


def build(data: SweepData, page: Page) -> None:
    runs = data.runs
    page.uses(runs)
    counts = {s: sum(r.status == s for r in runs) for s in sorted({r.status for r in runs})}
    page.heading("Summary")
    if not runs:
        page.missing(f"No runs found for sweep {data.sweep_id} (tracking store: {data.tracking_uri}).")
        page.text("Nothing to show: the sweep has no runs in the tracking store yet.")
        return
    page.text(f"{len(runs)} runs: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items()) + ".")
    not_done = [r for r in runs if r.status != "FINISHED"]
    if not_done:
        page.missing(f"{len(not_done)} of {len(runs)} runs did not finish ("
                     + ", ".join(f"{n} {s.lower()}" for s, n in counts.items() if s != "FINISHED")
                     + "): their final accuracy is blank; best accuracy is over the steps they logged.")
    no_metrics = [r for r in runs if not data.has_metrics(r)]
    if no_metrics:
        page.missing(f"{len(no_metrics)} runs logged no metrics: " + ", ".join(r.label for r in no_metrics[:10])
                     + (" …" if len(no_metrics) > 10 else ""))
    thresholds = {threshold(r)[0] for r in runs}
    axes = [k for k in data.factors(exclude=["algo.name", "precision.name", *thresholds]) if k.startswith("algo.")]
    columns = ["job", "run", "objective", "threshold", *[short_key(k) for k in axes], "precision", "seed",
               "status", "final eval acc", "best eval acc", "collapse step", "last step", "run id", "code", "error"]
    rows, classes = [], []
    for i, run in enumerate(runs):
        s = summarize(data, run)
        _, symbol, value = threshold(run)
        rows.append([i, run.label, run.objective, f"{symbol}={fmt(value)}" if symbol else None,
                     *[run.param(k) for k in axes], run.precision, run.seed, run.status, s.final_acc,
                     s.best_acc, s.collapse.step if s.collapse else None, s.last_step, run.short_id, code_of(run), run.error])
        classes.append(f"status-{run.status}")
    page.heading("All runs")
    page.table(columns, rows, caption="Click a column header to sort. Final = mean of the last "
               f"{EVAL_WINDOW} eval accuracies of a finished run; collapse step from the stability report's detector.", row_classes=classes)
    page.text(f"Collapse: eval accuracy ({EVAL_WINDOW}-evaluation mean) or train accuracy ({TRAIN_WINDOW}-step mean) "
              f"ends below the run's own start by more than {DROP:g} or more than {REL_DROP:.0%} of that start "
              "(whichever is smaller) and stays there, or a non-finite loss / FAILED with a non-finite error.",
              "method")
    failed = [r for r in runs if r.status in ("FAILED", "KILLED")]
    page.heading("Failed runs")
    if failed:
        page.table(["run", "run id", "status", "error"],
                   [[r.label, r.run_id, r.status, r.error or "(no error.txt)"] for r in failed])
    else:
        page.text("No run failed.")
    _strip_plot(data, page)


def code_of(run) -> str:
    """The code version a run was made with (harness/infra/code_version.py), else its git commit, if recorded."""
    return run.tags.get("harness.code_version") or run.tags.get("git.commit", "")[:12]


def _strip_plot(data: SweepData, page: Page) -> None:
    objectives = sorted({r.objective for r in data.runs})
    fig, (ax,) = plots.grid(1, width=max(5.0, 1.1 * len(objectives) + 2), height=3.6)
    for i, objective in enumerate(objectives):
        members = [r for r in data.runs if r.objective == objective]
        best = [summarize(data, r).best_acc for r in members]
        pts = [(b, r.status) for b, r in zip(best, members) if b is not None]
        if not pts:
            continue
        jitter = np.linspace(-0.18, 0.18, len(pts)) if len(pts) > 1 else [0.0]
        done = [(x, b) for x, (b, st) in zip(jitter, pts) if st == "FINISHED"]
        other = [(x, b) for x, (b, st) in zip(jitter, pts) if st != "FINISHED"]
        if done:
            ax.scatter([i + x for x, _ in done], [b for _, b in done], color=colour(objective), s=22,
                       label=f"{objective} (finished)")
        if other:
            ax.scatter([i + x for x, _ in other], [b for _, b in other], facecolors="none",
                       edgecolors=colour(objective), s=22, label=f"{objective} (not finished)")
    ax.set_xticks(range(len(objectives)), objectives)
    plots.finish(ax, "Best eval accuracy of every run", "objective", plots.label("eval/best_accuracy"))
    page.figure(fig, "best_accuracy", "Best eval accuracy per run, one column per objective (hollow: run "
                "did not finish).")


REPORT = ReportKind("overview", "Sweep overview", needs, build)
