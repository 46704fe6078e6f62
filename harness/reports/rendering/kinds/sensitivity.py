"""sensitivity: per objective, final and best eval accuracy versus its threshold (δ, or ε for SPO) with
t-intervals over seeds, learning curves per threshold, and a verdict on how much δ matters."""
from __future__ import annotations

import shlex
from typing import Dict, List, Optional, Tuple


from harness.config.yaml_errors import YAML_READ_ERRORS
from harness.reports.evidence import study_looks, threshold_action, threshold_effect, threshold_study
from harness.reports.rendering import plots, threshold_figure
from harness.reports.results.data import SweepData, fmt
from harness.reports.evidence.decisions import spec_for
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.summary import EVAL, LAST_K, variants
from harness.reports.results.thresholds import threshold, threshold_param
from harness.stats import failures
from harness.stats.intervals import T_METHOD

MARKERS = "osD^v<>"

VERDICT_RULE = ("Verdict per objective (harness/reports/evidence/threshold_effect.py), in two parts. Typical seed: every "
                "pair of threshold values is a contrast c of mean final accuracy over the runs that did not fail, "
                "paired over the seeds both share. Failures: each value's share of failed runs, exact on the counts. "
                "Sensitive: some pair differs by more than the SESOI (|c| > SESOI shown) or fails at a different rate "
                "(Fisher's exact test), Holm over both; its size is c with its interval. Sensitive, within the SESOI: "
                "a difference is shown (Holm) and every pair is shown within ±SESOI (two one-sided tests). "
                "Insensitive: every pair shown within ±SESOI and every value's failure rate shown below the failure "
                "margin (an exact binomial test; each part at α, all must hold, so no correction). Insensitive for the "
                "typical seed: the pairs are shown within ±SESOI but the failure rates not yet below the margin; the "
                "verdict prints each part and the failure rate its seeds cannot exclude. Sensitive (size undecided): a "
                "difference is shown, its size against the SESOI is not. Undecided: none of these. Only sensitive, "
                "sensitive within the SESOI and insensitive are decided (sign and size); otherwise the page gives the "
                "seeds per value that would decide what is open and the command that runs them.")

MARGIN_SOURCE = (f"the harness's default (threshold_effect.FAILURE_MARGIN): a threshold value whose runs fail in "
                 f"{threshold_effect.FAILURE_MARGIN:.0%} of seeds (about one in seven) matters whatever its typical "
                 "seed does (issue 48's benchmark: false 'insensitive' at most α when one value fails that often)")


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
    """The decision on whether the threshold matters, its two parts, and what it would take to decide."""
    text = f"{result.word} to {symbol} — {result.reason}."
    if not result.pairs:
        return text + " Run at least 2 seeds per value to test it."
    text += "".join(f" {part[0].upper()}{part[1:]}." for part in result.parts)
    if not result.decided:
        text += f" Seeds per value for {power:.0%} power: {_open(result)} (now {result.seeds})."
    return text


def _open(result) -> str:
    """What the open part needs, in words."""
    parts = []
    if result.seeds_for_insensitive:
        parts.append(f"{result.seeds_for_insensitive} to show insensitivity")
    if result.seeds_for_sensitive:
        what = "decide the size" if result.word == threshold_effect.DIFFERS else "detect a difference of the SESOI"
        parts.append(f"{result.seeds_for_sensitive} to {what}")
    return ", ".join(parts) or "? (no planning figure: see the failure part)"


def _short(name: str, symbol: str, result, power: float) -> str:
    """The terminal's line: the word, the size of the reported difference and the failure bound."""
    short = f"{name}: {result.word} to {symbol} ({result.seeds} seed{'' if result.seeds == 1 else 's'} per value"
    if not result.pairs:
        return short + "; at least 2 per value are needed to test it)"
    if result.size is not None:
        short += f"; {symbol}={fmt(result.size.a)} − {fmt(result.size.b)}: {result.size.estimate.value:+.3f} " \
                 f"[{result.size.low:+.3f}, {result.size.high:+.3f}] vs SESOI ±{result.sesoi:g}"
    worst = max(result.failure_upper.values(), default=None)
    if worst is not None:
        short += f"; failures up to {worst:.0%} not excluded"
    if not result.decided:
        short += f"; for {power:.0%} power: {_open(result)}"
    return short + ")"


def _verdict(page: Page, o, power: float) -> None:
    """The objective's verdict on the page, with its short line (what the terminal shows) and the numbers
    behind it: the mean final accuracy per value, the reported difference and the seeds per value."""
    result = o.result
    measures = {f"final_accuracy_{o.param}_{fmt(row.value)}": row.final.mean for row in o.rows
                if row.final.mean is not None and row.value is not None}
    if result.size is not None:
        measures.update(difference=result.size.estimate.value, difference_low=result.size.low,
                        difference_high=result.size.high)
    measures.update({key: float(n) for key, n in (("seeds", result.seeds), ("seeds_for_insensitive",
                     result.seeds_for_insensitive), ("seeds_for_sensitive", result.seeds_for_sensitive)) if n})
    page.verdict(o.name, result.word, f"{o.name}: " + verdict(result, o.symbol, power), result.decided,
                 _short(o.name, o.symbol, result, power), measures)


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
    page.text(f"Declared: SESOI ±{sesoi:g} accuracy ({sesoi_source(data)}), α {alpha:g}, power target {power:g} "
              f"({'the named sweep' if spec_for(data) else 'the harness defaults'}), all before the runs; final "
              f"accuracy = mean of the last {last_k} evaluations; failure margin {threshold_effect.FAILURE_MARGIN:.0%} "
              f"({MARGIN_SOURCE}); failure: {failures.RULE}.", "method")
    study = threshold_study.gather(data, groups, sesoi, alpha, power, last_k)
    rows, pair_rows, action_rows, caveats = [], [], [], []
    for o in study:
        for row in o.rows:
            if row.unfinished:
                statuses = ", ".join(sorted({r.status for r in row.unfinished}))
                page.missing(f"{o.name} {o.symbol}={fmt(row.value)}: {len(row.unfinished)} of {len(row.runs)} runs "
                             f"not finished ({statuses}) — left out of the statistics.")
            if row.no_value:
                page.missing(f"{o.name} {o.symbol}={fmt(row.value)}: {row.no_value} of {len(row.runs)} runs finished "
                             "without a finite final accuracy — left out of the statistics.")
            if row.final.n == 1:
                page.missing(f"{o.name} {o.symbol}={fmt(row.value)}: one finished seed — no confidence interval.")
            rows.append([o.name, o.symbol, row.value, row.final.n, row.final.mean, _ci(row.final), row.best.mean,
                         _ci(row.best), str(o.result.collapses.get(row.value, "")),
                         _share(o.result.failure_upper.get(row.value))])
        action_rows += [threshold_action.row(o.name, o.symbol, a) for a in o.actions]
        caveats += threshold_action.caveats(o.objective, o.name, o.symbol, o.actions)
        for pair in o.result.pairs:
            pair_rows.append([o.name, f"{o.symbol}={fmt(pair.a)} − {o.symbol}={fmt(pair.b)}", pair.estimate.n,
                              f"{pair.estimate.value:+.3f}", f"[{pair.low:+.3f}, {pair.high:+.3f}]",
                              "paired" if pair.estimate.paired else "Welch", fmt(pair.p_differs, 3),
                              fmt(pair.p_beyond, 3), fmt(pair.p_equivalent, 3), fmt(pair.p_collapse_differs, 3)])
    page.heading("Verdict")
    for o in study:
        _verdict(page, o, power)
        bar = "" if o.gain_bar is None else f" (gain below {o.gain_bar:.3f})"
        page.text(f"{o.name}: failed runs{bar}: {', '.join(threshold_study.failed_runs(o)) or 'none'}.")
    undecided = [o.result for o in study if not o.result.decided]
    if undecided:
        have = min(r.seeds for r in undecided)
        want = max(have + 1, max(min(filter(None, (r.seeds_for_insensitive, r.seeds_for_sensitive)), default=have + 1)
                                 for r in undecided))
        page.text(f"Undecided: run {want} fresh seeds as a new design, reported on its own, with: "
                  f"{missing_seeds_command(data, want)}", "action")
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
        page.table(["variant", "contrast c (runs that did not fail)", "seeds", "c", f"{1 - 2 * alpha:.0%} interval",
                    "test", "p (c ≠ 0)", f"p (|c| > {sesoi:g})", f"p (|c| < {sesoi:g}, TOST)",
                    "p (failure rates differ)"], pair_rows)
    threshold_figure.differences(page, [(o.objective, o.name, o.symbol, o.result) for o in study], sesoi, alpha)
    page.heading("Accuracy versus threshold")
    page.table(["variant", "threshold", "value", "finished seeds", "final acc (mean)", "final 95% CI",
                "best acc (mean)", "best 95% CI", "failed", f"failure rate, {1 - alpha:.0%} upper bound"], rows)
    _accuracy_vs_threshold(data, page, groups, sesoi)
    _curves(data, page, groups)


def _share(value) -> Optional[str]:
    return None if value is None else f"{value:.1%}"


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
