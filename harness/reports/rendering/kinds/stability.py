"""stability: per variant (objective × precision × the sweep's other axes; replicates are seeds only),
mismatch growth, entropy, gradient norm and accuracy over time, and automatic collapse detection
(harness/stats/collapse.py) with the step each run collapsed at and the detector's false-alarm rate on fp32 runs of
objectives with a trust region, every objective of the sweep accounted for. With one precision it says so and compares the other axes instead."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy import stats

from harness.algorithms.specs import SPECS
from harness.reports.rendering import plots
from harness.reports.results.data import Run, SweepData
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, PRECISION_STYLES, colour, line_style, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL, summarize, variants, window_mean
from harness.stats.collapse import DROP, EVAL_WINDOW, REL_DROP, TRAIN_WINDOW
from harness.stats.intervals import t_interval

METRICS = [("train/mismatch", "mismatch |μ − π'|"), ("train/entropy", "entropy"),
           ("train/grad_norm", "gradient norm"), (EVAL, "eval accuracy")]
RULE = (f"Collapse rule: eval accuracy averaged over {EVAL_WINDOW} evaluations, or train accuracy averaged over "
        f"{TRAIN_WINDOW} steps, ends below the run's own start (the mean of its first window) by more than "
        f"{DROP:g} (accuracy points) or more than {REL_DROP:.0%} of that start, whichever is smaller, and stays "
        "there (so a run that starts low can collapse too; for eval accuracy the fall must also be at least one "
        "eval problem's worth where the run records its eval set's size); or the loss becomes non-finite; or the "
        "run FAILED with a non-finite error. The step is the first step of that final stretch.")
# Objectives expected not to collapse without mismatch: those the objective library gives a trust region (a clip,
# a mask, a band or a penalty: any geometry but "none"). Baselines (pg_is, cispo) have none: a collapse there may
# be real, so it is no false alarm.
def has_trust_region(objective: str) -> bool:
    spec = SPECS.get(objective)
    return spec is not None and spec.geometry != "none"


def needs(data: SweepData) -> Optional[str]:
    if any(data.has_metrics(r) for r in data.runs):
        return None
    return "needs runs with logged metrics"


def _groups(data: SweepData) -> Dict[Tuple[str, str], List[Run]]:
    """{(objective, variant label): runs}: every sweep axis except the seed splits groups, so the runs of a
    group differ only in their seed (replication counts seeds, never δ values or other settings)."""
    return variants(data, data.runs, compare=[])


def calm(run: Run) -> bool:
    """Without mismatch: fp32, or mismatch_scale 0."""
    return run.precision == "fp32" or run.param("precision.mismatch_scale") in (0, 0.0)


def false_alarms(data: SweepData) -> Tuple[int, int]:
    """(collapses flagged, runs) among FINISHED runs without mismatch (fp32, or mismatch_scale 0) of objectives
    with a trust region: such runs are expected not to collapse, so a flag there is a false alarm."""
    counted = [r for r in data.runs if r.status == "FINISHED" and has_trust_region(r.objective) and calm(r)]
    return sum(summarize(data, r).collapse is not None for r in counted), len(counted)


def accounting(data: SweepData) -> List[list]:
    """Per objective of the sweep: [objective, runs, counted, flagged, left out and why] for the false-alarm rate."""
    rows = []
    for objective in sorted({r.objective for r in data.runs}):
        runs = [r for r in data.runs if r.objective == objective]
        if not has_trust_region(objective):
            rows.append([objective, len(runs), 0, None, f"all {len(runs)}: no trust region (geometry none in the "
                         "objective library), so a collapse may be real"])
            continue
        unfinished = [r for r in runs if r.status != "FINISHED"]
        noisy = [r for r in runs if r.status == "FINISHED" and not calm(r)]
        counted = [r for r in runs if r.status == "FINISHED" and calm(r)]
        why = [f"{len(unfinished)} not finished"] * bool(unfinished) + [
            f"{len(noisy)} with mismatch ({', '.join(sorted({r.precision for r in noisy}))})"] * bool(noisy)
        rows.append([objective, len(runs), len(counted), sum(summarize(data, r).collapse is not None for r in counted),
                     "; ".join(why) or "none"])
    return rows


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    page.uses(data.runs)
    page.text(RULE, "method")
    precisions = sorted({r.precision for r in data.runs})
    if len(precisions) < 2:
        page.text(f"This sweep runs one precision ({precisions[0]}): nothing here compares precisions; the report "
                  "compares its variants (objective and the sweep's other axes) at that precision instead.")
    flagged, counted = false_alarms(data)
    rows = accounting(data)
    objectives = ", ".join(row[0] for row in rows if row[2])
    if counted:
        ci = stats.binomtest(flagged, counted).proportion_ci(0.95, method="exact")
        page.text(f"Collapse detector false-alarm rate: {flagged}/{counted} finished runs without mismatch (fp32 or "
                  f"mismatch_scale 0) of this sweep's objectives with a trust region ({objectives}) flagged = "
                  f"{flagged / counted:.1%} [{ci.low:.1%}, {ci.high:.1%}] (Clopper–Pearson 95%). Method: such runs "
                  "are expected stable, so every flag among them is counted as a false alarm; the table below "
                  "accounts for every run of the sweep.", "method")
    else:
        page.text("Collapse detector false-alarm rate: not measurable in this sweep (no finished fp32 / "
                  "mismatch_scale 0 run of an objective with a trust region). Method: the share of such runs the "
                  "detector flags; the table below says why each objective's runs are left out.", "method")
    page.table(["objective", "runs", "counted", "flagged", "left out (why)"], rows, sortable=False,
               caption="Runs behind the false-alarm rate, per objective of this sweep.")
    running = [r for r in data.runs if r.status in ("RUNNING", "SCHEDULED")]
    if running:
        page.missing(f"{len(running)} run{'s are' if len(running) > 1 else ' is'} still running: a collapse after "
                     "their last logged step cannot be seen yet.")
    rows = []
    for (objective, name), runs in groups.items():
        precision = runs[0].precision
        first, last, ent0, ent1, gmax = [], [], [], [], []
        for r in runs:
            mm, ent, gn = (data.curve(r, k)[1] for k in ("train/mismatch", "train/entropy", "train/grad_norm"))
            first.append(window_mean(mm, True)), last.append(window_mean(mm, False))
            ent0.append(window_mean(ent, True)), ent1.append(window_mean(ent, False))
            finite = gn[np.isfinite(gn)]
            gmax.append(float(finite.max()) if len(finite) else None)
        m0, m1 = _mean(first), _mean(last)
        final = t_interval([summarize(data, r).final_acc for r in runs if r.status == "FINISHED"], bounds=(0.0, 1.0))
        collapsed = sum(1 for r in runs if summarize(data, r).collapse)
        rows.append([name, precision, len({r.seed for r in runs}), m0, m1, (m1 / m0) if m0 and m1 is not None else None,
                     _mean(ent0), _mean(ent1), _mean(gmax), final.mean, f"{collapsed}/{len(runs)}"])
    page.heading("Variants (objective × precision × other axes)")
    page.table(["variant", "precision", "seeds", "mismatch first 10%", "mismatch last 10%", "mismatch growth ×",
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
    precisions = sorted({runs[0].precision for runs in groups.values()})
    single = len(precisions) < 2
    eval_steps = sorted({int(s) for runs in groups.values() for r in runs for s in data.curve(r, EVAL)[0]})
    for ax, (key, title) in zip(axes, METRICS):
        log = key == "train/grad_norm"
        for i, ((objective, name), runs) in enumerate(groups.items()):
            precision = runs[0].precision
            style = OTHER_STYLES[i % len(OTHER_STYLES)] if single else line_style(precision, PRECISION_STYLES,
                                                                                   precisions.index(precision))
            plots.band(ax, [data.curve(r, key) for r in runs], _colour(objective, name, groups), name, style,
                       marker="osD^v<>"[i % 7] if key == EVAL else None, metric=key, log=log)
        log = log and any((np.asarray(ln.get_ydata()) > 0).any() for ln in ax.lines)
        if log:
            ax.set_yscale("log")
            plots.log_ticks(ax)
        plots.finish(ax, f"{title} by variant", plots.STEP_LABEL,
                     "grad norm (L2, log scale)" if log else plots.label(key),
                     ticks=eval_steps if key == EVAL else None)
    page.figure(fig, "stability_curves", "Mean over the seeds of each variant (colour: objective, shade: variant; "
                + ("line style: variant" if single else "line style: precision") + ") with a 95% t-band inside the "
                "measure's range; the log-scale panel shows the geometric mean with a band of log values.")
    _collapse_figure(data, page)


def _colour(objective: str, name: str, groups) -> str:
    names = [n for (o, n) in groups if o == objective]
    return shades(objective, len(names))[names.index(name)] if len(names) > 1 else colour(objective)


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


REPORT = ReportKind("stability", "Stability: mismatch, entropy and collapse per variant", needs, build)
