"""anchor_ablation: rollout anchor (ν = μ) versus recompute anchor (ν = π'): training–inference mismatch
|μ − π'| over time, accuracy, and which runs collapsed (DPPO paper, Takeaway 2)."""
from __future__ import annotations

from typing import Dict, List, Optional

from harness.reports.rendering import plots
from harness.reports.results.data import Run, SweepData
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import ANCHOR_STYLES, line_style, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL, summarize, variants, window_mean
from harness.stats.intervals import t_interval

MISMATCH = "train/mismatch"


def anchor(run: Run) -> str:
    return str(run.param("algo.anchor") or "rollout")


def _groups(data: SweepData) -> Dict:
    runs = [r for r in data.runs if "algo.anchor" in r.params]
    by_objective: Dict[str, List[Run]] = {}
    for r in runs:
        by_objective.setdefault(r.objective, []).append(r)
    return {o: members for o, members in sorted(by_objective.items()) if len({anchor(r) for r in members}) >= 2}


def needs(data: SweepData) -> Optional[str]:
    if _groups(data):
        return None
    return "needs an objective run with both anchors, e.g. anchor=rollout,recompute"


def build(data: SweepData, page: Page) -> None:
    groups = _groups(data)
    used = [r for members in groups.values() for r in members]
    page.uses(used)
    page.text("anchor=rollout: the trust region is centred on the rollout engine's probability μ; "
              "anchor=recompute: on the trainer's recomputed π' (times the importance weight sg(min(π'/μ, C))). "
              "Mismatch = mean |μ − π'| over response tokens.", "method")
    rows = []
    for objective, members in groups.items():
        for (_, name), runs in variants(data, members, ["algo.anchor", "algo.is_cap"]).items():
            for a in sorted({anchor(r) for r in runs}):
                rows.append(_row(data, page, name, a, [r for r in runs if anchor(r) == a]))
    page.heading("Summary by anchor")
    page.table(["variant", "anchor", "runs", "finished", "final acc (mean)", "final 95% CI",
                "mismatch, last 10% of steps", "collapsed"], rows)
    _curves(data, page, groups)
    page.heading("Collapsed runs")
    collapsed = [(r, summarize(data, r).collapse) for r in used if summarize(data, r).collapse]
    if collapsed:
        page.table(["run", "objective", "anchor", "seed", "collapse step", "reason"],
                   [[r.label, r.objective, anchor(r), r.seed, c.step, c.reason] for r, c in collapsed])
    else:
        page.text("No run collapsed (see the stability report for the detection rule).")


def _row(data: SweepData, page: Page, name: str, a: str, group: List[Run]) -> list:
    done = [r for r in group if r.status == "FINISHED"]
    final = t_interval([summarize(data, r).final_acc for r in done], bounds=(0.0, 1.0))
    collapsed = [r for r in group if summarize(data, r).collapse]
    ends = [e for e in (window_mean(data.curve(r, MISMATCH)[1], first=False) for r in group) if e is not None]
    if len(done) < len(group):
        page.missing(f"{name} ({a}): {len(group) - len(done)} of {len(group)} runs not finished.")
    return [name, a, len(group), len(done), final.mean,
            None if final.low is None else f"[{final.low:.3f}, {final.high:.3f}]",
            sum(ends) / len(ends) if ends else None, f"{len(collapsed)}/{len(group)}"]


def _curves(data: SweepData, page: Page, groups: Dict) -> None:
    metrics = [(MISMATCH, "mismatch |μ − π'|"), (EVAL, "eval accuracy"), ("train/accuracy", "train accuracy")]
    fig, axes = plots.grid(len(metrics) * len(groups), ncols=len(metrics), width=4.4, height=3.3, legend_room=3.2)
    for g, (objective, members) in enumerate(groups.items()):
        sub = variants(data, members, ["algo.anchor", "algo.is_cap"])
        colours = dict(zip(sub, shades(objective, len(sub))))
        anchors = sorted({anchor(r) for r in members})
        for m, (key, title) in enumerate(metrics):
            ax = axes[g * len(metrics) + m]
            for vkey, runs in sub.items():
                for i, a in enumerate(anchors):
                    curves = [data.curve(r, key) for r in runs if anchor(r) == a]
                    label = vkey[1][len(objective):].strip() + " · " if vkey[1] != objective else ""
                    plots.band(ax, curves, colours[vkey], f"{label}{a}", line_style(a, ANCHOR_STYLES, i),
                               marker="os"[i % 2] if key == EVAL else None, metric=key)
            steps = sorted({int(s) for r in members for s in data.curve(r, EVAL)[0]}) if key == EVAL else None
            plots.finish(ax, f"{objective}: {title}", plots.STEP_LABEL, plots.label(key),
                         legend="right" if m == len(metrics) - 1 else False, ticks=steps)
    page.figure(fig, "anchor_curves", "Per objective (row): mismatch, eval accuracy and train accuracy over "
                "training; solid = rollout anchor, dashed = recompute anchor; mean over seeds with a 95% t-band.")


REPORT = ReportKind("anchor_ablation", "Anchor ablation: rollout vs recompute", needs, build)
