"""sensitivity: per objective, final and best eval accuracy versus its threshold (δ, or ε for SPO) with
t-intervals over seeds, learning curves per threshold, and a verdict on how much δ matters."""
from __future__ import annotations

import shlex
from typing import Dict, List, Optional, Tuple

import numpy as np

from harness.config.yaml_errors import YAML_READ_ERRORS
from harness.reports.evidence import study_looks, threshold_action, threshold_effect
from harness.reports.rendering import plots, threshold_figure
from harness.reports.results.data import Run, SweepData, fmt
from harness.reports.evidence.decisions import spec_for
from harness.reports.evidence.outcomes import per_seed, resolution
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, colour, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL, LAST_K, summarize, variants
from harness.reports.results.thresholds import threshold, threshold_param
from harness.stats.intervals import T_METHOD, t_interval

MARKERS = "osD^v<>"

VERDICT_RULE = ("Verdict per objective (harness/reports/evidence/threshold_effect.py): every pair of threshold values is a "
                "contrast of mean final accuracy, paired over the seeds both share, and a comparison of their "
                "collapse rates (Fisher's exact test). Sensitive: some pair differs by more than the SESOI (|c| > "
                "SESOI shown) or collapses at a different rate, Holm over both. Insensitive: every pair shown within "
                "±SESOI (two one-sided tests) and every value's collapse rate shown below SESOI / depth (an exact "
                "binomial test; depth = the mean final accuracy of the runs that did not collapse, the most a "
                "collapse can take from a run): a collapse too rare for the seeds to show could otherwise move a "
                "mean by more than the SESOI. All must hold, so no correction. Sensitive (size undecided): a "
                "difference is shown (Holm), its size against the SESOI is not. Undecided: none of these; the page "
                "gives the seeds per value that the power target needs and the command that runs them.")


def _groups(data: SweepData) -> Dict:
    runs = [r for r in data.runs if threshold(r)[0] is not None]
    compare = sorted({f"algo.{threshold_param(r.objective)}" for r in runs})
    return variants(data, runs, compare)


def needs(data: SweepData) -> Optional[str]:
    for members in _groups(data).values():
        if len({threshold(r)[2] for r in members}) >= 2:
            return None
    return "needs an objective run at ≥ 2 values of its threshold (δ, or ε for SPO), e.g. delta=0.1,0.2"


DEFAULT_SOURCE = ("the harness's default (harness/reports/evidence/threshold_effect.py): five problems in a hundred of the "
                  "evaluation set, the smallest change in accuracy a reader of these toy runs would act on; a named "
                  "sweep declares its own in its design")


def design_of(data: SweepData) -> Tuple[float, float, float, int]:
    """(SESOI, α, power, last_k): from the named sweep's file when the sweep is one, else the defaults; in an
    adaptive study (a `seed=auto` multirun) α is its last look's share (evidence/study_looks.py)."""
    spec = spec_for(data)
    look = study_looks.last_look_alpha(data.sweep_dir)
    if spec is None:
        return threshold_effect.DEFAULT_SESOI, look or 0.05, 0.8, LAST_K
    d = spec.design
    return d.sesoi if d.sesoi is not None else threshold_effect.DEFAULT_SESOI, look or d.alpha, d.power, d.last_k


def sesoi_source(data: SweepData) -> str:
    spec = spec_for(data)
    if spec is None or spec.design.sesoi is None:
        return DEFAULT_SOURCE
    return f"the design of the named sweep {spec.name} (sweeps/{spec.name}.yaml)"


def verdict(result: threshold_effect.ThresholdVerdict, symbol: str, power: float = 0.8) -> str:
    """One sentence: the decision on whether the threshold matters, and what it would take to decide."""
    text = f"{result.word} to {symbol} — {result.reason}."
    if not result.pairs:
        return text + " Run at least 2 seeds per value to test it."
    if not result.decided:
        text += (f" Seeds per value for {power:.0%} power: {result.seeds_for_insensitive or '?'} to show insensitivity, "
                 f"{result.seeds_for_sensitive or '?'} to detect a difference of the SESOI (now {result.seeds}).")
    return text


def _verdict(page: Page, name: str, symbol: str, result, outcomes: Dict, param: str, power: float) -> None:
    """The objective's verdict on the page, with its short line (what the terminal shows) and the numbers
    behind it: the mean final accuracy per value and the seeds per value (had, and needed to decide)."""
    short = f"{name}: {result.word} to {symbol} ({result.seeds} seed{'' if result.seeds == 1 else 's'} per value"
    if not result.pairs:
        short += "; at least 2 per value are needed to test it"
    elif not result.decided:
        short += (f"; for {power:.0%} power {result.seeds_for_insensitive or '?'} would show insensitivity, "
                  f"{result.seeds_for_sensitive or '?'} a difference of the SESOI")
    measures = {f"final_accuracy_{param}_{fmt(value)}": float(np.mean(list(seeds.values())))
                for value, seeds in outcomes.items() if seeds and value is not None}
    measures.update({key: float(n) for key, n in (("seeds", result.seeds), ("seeds_for_insensitive",
                     result.seeds_for_insensitive), ("seeds_for_sensitive", result.seeds_for_sensitive)) if n})
    page.verdict(name, result.word, f"{name}: " + verdict(result, symbol, power), result.decided, short + ")",
                 measures)


def missing_seeds_command(data: SweepData, want: int) -> str:
    """The command that runs `want` fresh seeds of this sweep (the named sweep's, else its own overrides), after
    every seed already run: a new design reported on its own, which never tests the seeds tested here again."""
    first = 1 + max((int(r.seed) for r in data.runs if str(r.seed).lstrip("-").isdigit()), default=-1)
    seeds = f"'seed=range({first},{first + want})'"
    spec = spec_for(data)
    if spec is not None:
        return f"python -m harness sweep {spec.name} {seeds}"
    overrides = sweep_overrides(data)
    if overrides is None:
        return f"the sweep's own command with {seeds}"
    kept = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") != "seed"]
    return "python -m harness multirun " + " ".join(shlex.quote(o) for o in kept) + f" {seeds}"


def sweep_overrides(data: SweepData) -> Optional[List[str]]:
    if data.sweep_dir is None or not (data.sweep_dir / "multirun.yaml").is_file():
        return None
    from omegaconf import OmegaConf

    try:
        task = OmegaConf.load(data.sweep_dir / "multirun.yaml").hydra.overrides.task
    except YAML_READ_ERRORS:  # an unreadable or foreign multirun.yaml: no command rather than a wrong one
        return None
    return [str(o) for o in task]


def compared(data: SweepData) -> Dict:
    """{(objective, variant): runs} of the variants run at ≥ 2 values of their threshold: what the page compares."""
    return {k: v for k, v in _groups(data).items() if len({threshold(r)[2] for r in v}) >= 2}


def build(data: SweepData, page: Page) -> None:
    groups = compared(data)
    used = [r for members in groups.values() for r in members]
    page.uses(used)
    for line in _left_out(data, groups, used):
        page.missing(line)
    page.text(T_METHOD + f". Final accuracy = mean of the last {LAST_K} evaluations of a run. With one finished "
              "seed there is no interval (shown as —, hollow marker).", "method")
    page.text(VERDICT_RULE, "method")
    sesoi, alpha, power, last_k = design_of(data)
    page.text(f"Declared: SESOI ±{sesoi:g} accuracy ({sesoi_source(data)}), α {alpha:g}, power target {power:g}; "
              f"final accuracy = mean of the last {last_k} evaluations.", "method")
    rows, verdicts, pair_rows, decided, action_rows, caveats = [], [], [], [], [], []
    for (objective, name), members in groups.items():
        symbol = threshold(members[0])[1]
        by_value: Dict[float, List[Run]] = {}
        for run in members:
            by_value.setdefault(threshold(run)[2], []).append(run)
        for value in sorted(by_value, key=lambda v: (v is None, v)):
            group = by_value[value]
            done = [r for r in group if r.status == "FINISHED" and summarize(data, r).final_acc is not None]
            final = t_interval([summarize(data, r).final_acc for r in done], bounds=(0.0, 1.0))
            best = t_interval([summarize(data, r).best_acc for r in done], bounds=(0.0, 1.0))
            unfinished = [r for r in group if r.status != "FINISHED"]
            if unfinished:
                statuses = ", ".join(sorted({r.status for r in unfinished}))
                page.missing(f"{name} {symbol}={fmt(value)}: {len(unfinished)} of {len(group)} runs not finished "
                             f"({statuses}) — left out of the statistics.")
            no_value = len(group) - len(done) - len(unfinished)
            if no_value:
                page.missing(f"{name} {symbol}={fmt(value)}: {no_value} of {len(group)} runs finished without a "
                             "finite final accuracy — left out of the statistics.")
            if final.n == 1:
                page.missing(f"{name} {symbol}={fmt(value)}: one finished seed — no confidence interval.")
            rows.append([name, symbol, value, final.n, final.mean, _ci(final), best.mean, _ci(best)])
        outcomes = {v: per_seed(data, runs, "final_accuracy", last_k) for v, runs in by_value.items()}
        result = threshold_effect.decide(outcomes, sesoi, alpha, power,
                                         collapsed=threshold_action.collapses(data, by_value),
                                         resolution=resolution(members, "final_accuracy", (1.0, -1.0), last_k))
        acts = threshold_action.actions(data, by_value)
        action_rows += [threshold_action.row(name, symbol, a) for a in acts]
        caveats += threshold_action.caveats(objective, name, symbol, acts)
        verdicts.append((name, symbol, result, outcomes, threshold_param(objective)))
        decided.append((objective, name, symbol, result))
        for pair in result.pairs:
            pair_rows.append([name, f"{symbol}={fmt(pair.a)} − {symbol}={fmt(pair.b)}", pair.estimate.n,
                              f"{pair.estimate.value:+.3f}", f"[{pair.low:+.3f}, {pair.high:+.3f}]",
                              "paired" if pair.estimate.paired else "Welch", fmt(pair.p_differs, 3),
                              fmt(pair.p_beyond, 3), fmt(pair.p_equivalent, 3)])
    page.heading("Verdict")
    for name, symbol, result, outcomes, param in verdicts:
        _verdict(page, name, symbol, result, outcomes, param, power)
    undecided = [r for _, _, _, r in decided if not r.decided]
    if undecided:
        have = min(r.seeds for r in undecided)
        want = max(have + 1, max(min(filter(None, (r.seeds_for_insensitive, r.seeds_for_sensitive)), default=have + 1)
                                 for r in undecided))
        page.text(f"Undecided: run {want} fresh seeds as a new design, reported on its own, with: "
                  f"{missing_seeds_command(data, want)}")
    page.heading("What the threshold did")
    page.text("Per threshold value, over the runs above: the share of tokens the objective stopped pushing in their "
              "advantage's direction (gradient weight ≤ 0: masked or clipped; objective/masked_frac, mean over "
              "training), the gradient weight G/(r·A) (objective/weight_*), the rollout engine's mismatch with the "
              "trainer (train/mismatch, mean |μ − π'| per token) and the runs that collapsed.")
    page.table(threshold_action.HEADER, action_rows)
    for line in caveats:
        page.text(line)
    page.heading("Pairwise differences")
    if not pair_rows:
        page.text("No two threshold values have 2 or more finished seeds each: nothing to compare yet.")
    else:
        page.table(["variant", "contrast c", "seeds", "c", f"{1 - 2 * alpha:.0%} interval", "test", "p (c ≠ 0)",
                    f"p (|c| > {sesoi:g})", f"p (|c| < {sesoi:g}, TOST)"], pair_rows)
    _differences(page, decided, sesoi, alpha)
    page.heading("Accuracy versus threshold")
    page.table(["variant", "threshold", "value", "finished seeds", "final acc (mean)", "final 95% CI",
                "best acc (mean)", "best 95% CI"], rows)
    _accuracy_vs_threshold(data, page, groups, sesoi)
    _curves(data, page, groups)


def _differences(page: Page, decided, sesoi: float, alpha: float) -> None:
    """The headline figure: each pair's difference with its (1 − 2α) interval against the ±SESOI band."""
    rows = [(objective, name, symbol, pair) for objective, name, symbol, result in decided for pair in result.pairs]
    if not rows:
        return
    fig, axes = plots.grid(1, ncols=1, width=8.5, height=1.3 + 0.42 * len(rows), left=2.6)
    ax = axes[0]
    ax.axvspan(-sesoi, sesoi, color="#cfe3f3", zorder=0, label=f"±SESOI ({sesoi:g})")
    ax.axvline(0, color="#000", linewidth=0.8)
    for i, (objective, name, symbol, pair) in enumerate(rows):
        y = len(rows) - 1 - i
        value = pair.estimate.value
        ax.errorbar([value], [y], xerr=[[value - pair.low], [pair.high - value]], fmt=MARKERS[i % len(MARKERS)],
                    color=colour(objective), capsize=4, markersize=6, linewidth=1.6, zorder=3)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{name}: {symbol}={fmt(p.a)} − {symbol}={fmt(p.b)}"
                        for _, name, symbol, p in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    plots.finish(ax, "Paired differences in final accuracy between threshold values",
                 "difference in final eval accuracy", "", legend=True)
    page.figure(fig, "pairwise_differences", f"Headline: each pair of threshold values' difference in mean final "
                f"accuracy (paired over shared seeds) with its {1 - 2 * alpha:.0%} interval (the one whose ends are "
                f"the one-sided tests at α {alpha:g}); shaded: the ±SESOI equivalence region. An interval inside "
                "the band shows equivalence (TOST at α). The tests for a difference are two-sided and Holm-corrected "
                "over the pairs, so they need more than an interval outside the band or away from 0: read them in "
                "the table.")


def _left_out(data: SweepData, groups: Dict, used) -> List[str]:
    """One line per objective (or variant) of the sweep this page leaves out, with its runs and why."""
    kept = {r.run_id for r in used}
    lines = []
    for (objective, name), members in _groups(data).items():
        if (objective, name) not in groups:
            value = fmt(threshold(members[0])[2])
            lines.append(f"{name}: {len(members)} run{'s' if len(members) != 1 else ''} left out — run at one "
                         f"value of its threshold ({threshold(members[0])[1]}={value}): nothing to compare.")
    no_threshold: Dict[str, int] = {}
    for run in data.runs:
        if run.run_id not in kept and threshold(run)[0] is None:
            no_threshold[run.objective] = no_threshold.get(run.objective, 0) + 1
    lines += [f"{objective}: {n} run{'s' if n != 1 else ''} left out — the objective has no threshold (δ or ε) "
              "to vary." for objective, n in sorted(no_threshold.items())]
    return lines


def _ci(interval) -> Optional[str]:
    return None if interval.low is None else f"[{interval.low:.3f}, {interval.high:.3f}]"


def _accuracy_vs_threshold(data: SweepData, page: Page, groups: Dict, sesoi: float):
    """The figure on the page; returns its axes (their limits and bands are what tests read)."""
    fig, axes = threshold_figure.draw(data, groups, sesoi)
    page.figure(fig, "accuracy_vs_threshold", threshold_figure.CAPTION.format(sesoi=sesoi))
    return axes


def _curves(data: SweepData, page: Page, groups: Dict) -> None:
    fig, axes = plots.grid(len(groups), ncols=min(3, len(groups)), width=4.6, height=3.3)
    for ax, ((objective, name), members) in zip(axes, groups.items()):
        values = sorted({threshold(r)[2] for r in members})
        symbol = threshold(members[0])[1]
        for i, (v, c) in enumerate(zip(values, shades(objective, len(values)))):
            curves = [data.curve(r, EVAL) for r in members if threshold(r)[2] == v]
            plots.band(ax, curves, c, f"{symbol}={fmt(v)}", OTHER_STYLES[i % len(OTHER_STYLES)],
                       marker=MARKERS[i % len(MARKERS)], metric=EVAL)
        steps = sorted({int(s) for r in members for s in data.curve(r, EVAL)[0]})
        plots.finish(ax, f"{name}: eval accuracy per {symbol}", plots.STEP_LABEL, plots.label(EVAL), ticks=steps)
    page.figure(fig, "learning_curves", "Eval accuracy over training, mean over seeds with a 95% t-band "
                "(where ≥ 2 seeds) inside [0, 1]; darker = larger threshold, and each threshold has its own line style "
                "and marker. x ticks: the evaluation steps. n = runs per line (all statuses).")


REPORT = ReportKind("sensitivity", "Threshold sensitivity", needs, build)
