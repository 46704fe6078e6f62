"""alpha_relaxation: the DPPO paper's α relaxation of PPO clipping (tokens with ν < α lose one or both
clip sides): learning curves by α and direction, clipped fraction of low-probability tokens and entropy
over time, and histograms of ν / entropy of clipped tokens when runs saved per-token stats."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from harness.reports.rendering import plots
from harness.reports.results.artifacts import token_stats
from harness.reports.results.data import ENTROPY, LOWPROB_MASKED as LOWPROB, Run, SweepData, fmt
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL, summarize, variants, window_mean
from harness.stats.intervals import t_interval

RELAX_STYLES = {"off": "-", "both": "-.", "high": "--", "low": ":"}
RELAX_MARKERS = {"off": "o", "both": "s", "high": "^", "low": "v"}


def setting(run: Run) -> Tuple[float, str]:
    """(α, direction); α = 0 is 'off' whatever the direction says."""
    alpha = float(run.param("algo.relax_alpha") or 0.0)
    return alpha, ("off" if alpha == 0 else str(run.param("algo.relax") or "both"))


def _runs(data: SweepData) -> List[Run]:
    return [r for r in data.runs if "algo.relax_alpha" in r.params]


def needs(data: SweepData) -> Optional[str]:
    if len({setting(r) for r in _runs(data)}) >= 2:
        return None
    return "needs PPO-clipping runs (grpo, grpo_cliphigher, minirl*) at ≥ 2 α / relax settings, e.g. alpha=0,0.1"


def build(data: SweepData, page: Page) -> None:
    runs = _runs(data)
    page.uses(runs)
    groups = variants(data, runs, ["algo.relax_alpha", "algo.relax"])
    page.text("α relaxation (DPPO paper §6): for tokens whose anchor probability ν < α the chosen side of the "
              "clip is removed (high: no upper clip, low: no lower clip, both). α = 0 is plain clipping.", "method")
    rows = []
    for (objective, name), members in groups.items():
        for key in sorted({setting(r) for r in members}):
            group = [r for r in members if setting(r) == key]
            done = [r for r in group if r.status == "FINISHED"]
            final = t_interval([summarize(data, r).final_acc for r in done], bounds=(0.0, 1.0))
            if len(done) < len(group):
                page.missing(f"{name} α={fmt(key[0])} ({key[1]}): {len(group) - len(done)} of {len(group)} runs "
                             "not finished — left out of the final-accuracy column.")
            low = [window_mean(data.curve(r, LOWPROB)[1], first=False, frac=1.0) for r in group]
            ent = [(window_mean(data.curve(r, ENTROPY)[1], True), window_mean(data.curve(r, ENTROPY)[1], False))
                   for r in group]
            rows.append([name, key[0], key[1], len(group), final.mean,
                         None if final.low is None else f"[{final.low:.3f}, {final.high:.3f}]",
                         _mean(low), _mean([a for a, _ in ent]), _mean([b for _, b in ent]),
                         _mean([window_mean(data.curve(r, "objective/masked_nu_mean")[1], False, 1.0) for r in group]),
                         _mean([window_mean(data.curve(r, "objective/masked_entropy")[1], False, 1.0) for r in group])])
    page.heading("Summary by α and direction")
    page.table(["variant", "α", "relax", "runs", "final acc (mean)", "final 95% CI", "low-prob clipped frac "
                "(mean over steps)", "entropy first 10%", "entropy last 10%", "ν of clipped (mean)",
                "entropy of clipped (mean)"], rows,
               caption="Means over the runs of each setting; 95% Student-t interval over finished seeds.")
    _curves(data, page, groups)
    _histograms(data, page, runs)


def _mean(values) -> Optional[float]:
    v = [x for x in values if x is not None and np.isfinite(x)]
    return float(np.mean(v)) if v else None


def _curves(data: SweepData, page: Page, groups: Dict) -> None:
    metrics = [(EVAL, "eval accuracy"), (LOWPROB, "clipped low-prob tokens"), (ENTROPY, "entropy")]
    fig, axes = plots.grid(len(metrics) * len(groups), ncols=len(metrics), width=4.4, height=3.3, legend_room=1.6)
    for g, ((objective, name), members) in enumerate(groups.items()):
        settings = sorted({setting(r) for r in members})
        alphas = sorted({a for a, _ in settings})
        colours = dict(zip(alphas, shades(objective, len(alphas))))
        for m, (key, title) in enumerate(metrics):
            ax = axes[g * len(metrics) + m]
            for alpha, relax in settings:
                curves = [data.curve(r, key) for r in members if setting(r) == (alpha, relax)]
                plots.band(ax, curves, colours[alpha], f"α={fmt(alpha)} {relax}", RELAX_STYLES.get(relax, "-."),
                           marker=RELAX_MARKERS.get(relax, "s") if key == EVAL else None, metric=key)
            steps = sorted({int(s) for r in members for s in data.curve(r, EVAL)[0]}) if key == EVAL else None
            plots.finish(ax, f"{name}: {title}", plots.STEP_LABEL, plots.label(key),
                         legend="right" if m == len(metrics) - 1 else False, ticks=steps)
    page.figure(fig, "curves_by_alpha", "Per objective (row): eval accuracy, clipped fraction of low-probability "
                "tokens (ν < 0.2) and token entropy over training, by α (darker = larger α) and direction (line "
                "style); mean over seeds with a 95% t-band.")


def _histograms(data: SweepData, page: Page, runs: List[Run]) -> None:
    client = data.client()
    stats = {r.run_id: token_stats(client, r) for r in runs}
    with_stats = [r for r in runs if stats[r.run_id]]
    page.heading("Clipped tokens: ν and entropy")
    if not with_stats:
        page.missing("Per-token histograms need token stats (run artifacts token_stats/step_*.npz with arrays nu, "
                     "masked, entropy); none of these runs has them, so only the scalar summaries are shown.")
        page.text("Without per-token stats: see the table above for the mean ν and mean entropy of clipped tokens "
                  "(objective/masked_nu_mean, objective/masked_entropy) and the clipped low-probability fraction.")
        return
    if len(with_stats) < len(runs):
        page.missing(f"{len(runs) - len(with_stats)} of {len(runs)} runs have no token stats; histograms use the "
                     f"other {len(with_stats)}.")
    fig, (ax_nu, ax_ent) = plots.grid(2)
    by_setting: Dict[Tuple[str, float, str], List[Run]] = {}
    for r in with_stats:
        by_setting.setdefault((r.objective,) + setting(r), []).append(r)
    bins_nu, bins_ent = np.linspace(0, 1, 26), None
    for (objective, alpha, relax), members in sorted(by_setting.items()):
        saved = [s for r in members for _, s in stats[r.run_id]]
        nus = np.concatenate([s["nu"][s["masked"] > 0] for s in saved] or [np.zeros(0)])
        ents = np.concatenate([s["entropy"][s["masked"] > 0] for s in saved] or [np.zeros(0)])
        c = shades(objective, len({a for (o, a, _) in by_setting if o == objective}))[
            sorted({a for (o, a, _) in by_setting if o == objective}).index(alpha)]
        lab = f"{objective} α={fmt(alpha)} {relax} ({len(nus)} tokens)"
        if len(nus):
            ax_nu.hist(nus, bins=bins_nu, histtype="step", color=c, linewidth=1.5, label=lab, density=True,
                       linestyle=RELAX_STYLES.get(relax, "-."))
        if len(ents):
            bins_ent = bins_ent if bins_ent is not None else np.linspace(0, max(1e-6, float(ents.max())) * 1.05, 26)
            ax_ent.hist(ents, bins=bins_ent, histtype="step", color=c, linewidth=1.5, label=lab, density=True,
                        linestyle=RELAX_STYLES.get(relax, "-."))
    plots.finish(ax_nu, "ν of clipped tokens", "anchor probability ν", "density", empty="no clipped tokens")
    plots.finish(ax_ent, "Entropy of clipped tokens", "token entropy (nats)", "density", empty="no clipped tokens")
    page.figure(fig, "clipped_token_histograms", "Distribution of the anchor probability ν and the entropy of "
                "clipped tokens, pooled over the saved steps of each setting's runs.")


REPORT = ReportKind("alpha_relaxation", "α relaxation", needs, build)
