"""threshold_contrast: is DPPO less sensitive to its threshold than GRPO is to ε_high (DPPO paper App. F.4)? The
verdict of the interaction test (harness/reports/evidence/threshold_contrast.py, harness/stats/interaction.py)
with its measured spreads, and the curves as F.4's Figure 19 draws them: eval accuracy over training per
threshold value, one panel per objective."""
from __future__ import annotations

from typing import Optional

from harness.reports.evidence import threshold_binds as binds
from harness.reports.evidence import threshold_contrast as evidence
from harness.reports.rendering import plots
from harness.reports.rendering.kinds.sensitivity import MARKERS, design_of, sesoi_source
from harness.reports.rendering.page import Page
from harness.reports.rendering.palette import OTHER_STYLES, shades
from harness.reports.rendering.registry import ReportKind
from harness.reports.results.data import SweepData, fmt
from harness.reports.results.summary import EVAL
from harness.reports.results.thresholds import threshold
from harness.stats import interaction
from harness.stats.words import INCONCLUSIVE, NOT_TESTABLE

RULE = ("Test (declared before the runs, sweeps/dppo_f4.yaml): the spread of an objective is the standard deviation of "
        "its threshold values' true mean final accuracies, the seeds' noise subtracted (max(0, B − W): B the variance "
        "of the values' means, W the mean of s²/n), so a noisier objective does not look more sensitive. The "
        "interaction is D = GRPO's spread − a DPPO variant's, tested one-sided by a bootstrap over seeds "
        f"({interaction.BOOTSTRAP} resamples of each value's seeds, percentile bounds). Reproduced: D > 0 shown for every "
        "DPPO variant (each at α: an intersection–union test). Not reproduced: for some DPPO variant D is shown below "
        "the margin SESOI / √k (the spread of k values one of which is off by the SESOI), at α / m (Bonferroni over "
        "the m variants). Not testable here: GRPO or a DPPO variant lacks 2 values with ≥ "
        f"{interaction.MIN_SEEDS} finished seeds, or its threshold does not bind (the precondition below). Power: "
        "the share of simulated studies with these seeds and the pooled seed SD that reproduce when one GRPO ε_high "
        "value is off by twice the SESOI and DPPO is flat.")


def needs(data: SweepData) -> Optional[str]:
    found = {objective for objective, _ in evidence.groups(data)}
    if {evidence.LESS, evidence.MORE} <= found:
        return None
    return "needs DPPO and GRPO each run at ≥ 2 values of its threshold (python -m harness sweep dppo_f4)"


def build(data: SweepData, page: Page) -> None:
    sesoi, alpha, power, last_k = design_of(data)
    ev = evidence.gather(data, sesoi, alpha, last_k)
    page.uses([r for v in ev.variants for r in v.runs])
    page.text(RULE, "method")
    page.text(binds.RULE, "method")
    page.text(f"Declared: SESOI ±{sesoi:g} accuracy ({sesoi_source(data)}), α {alpha:g}, power target {power:g}; final "
              f"accuracy = mean of the last {last_k} evaluations.", "method")
    page.heading("Verdict")
    text = f"DPPO less sensitive to its threshold than GRPO to ε_high: {ev.word} — {ev.reason}."
    if ev.power is not None:
        text += f" Power of this test at these seeds: {ev.power:.0%} (target {power:.0%})."
    short = f"DPPO vs GRPO threshold sensitivity: {ev.word}"
    if not ev.tests:
        short += f" ({ev.reason})"
    else:
        short += " (" + "; ".join(f"{n} {t.difference:+.3f} [{t.low:+.3f}, {t.high:+.3f}]" for n, t in ev.tests.items()) + ")"
    measures = {f"spread_{v.name.replace(' ', '_').replace('=', '_')}": v.spread for v in ev.variants
                if v.spread is not None}
    page.verdict("dppo_vs_grpo", ev.word, text, ev.word not in (INCONCLUSIVE, NOT_TESTABLE), short, measures)
    page.heading("Does each threshold bind? (the precondition)")
    page.table(["variant", "metric", "tokens masked per value (mean over training, mean over runs)",
                f"tightest: one-sided {1 - alpha:.0%} lower bound (needs ≥ {binds.BINDS:.0%})",
                f"tightest − loosest, paired over seeds [{1 - alpha:.0%}]", "binds"],
               [_binding_row(v) for v in ev.variants])
    page.heading("Spread across threshold values")
    rows = []
    for v in ev.variants:
        means = {value: (sum(s.values()) / len(s) if s else None) for value, s in v.outcomes.items()}
        shown = ", ".join(f"{v.symbol}={fmt(value)}: {m:.3f} (n={len(v.outcomes[value])})"
                          for value, m in means.items() if m is not None)
        known = [m for m in means.values() if m is not None]
        rows.append([v.name, shown, None if not known else max(known) - min(known), v.spread])
    page.table(["variant", "mean final accuracy per value", "range of means", "spread (noise-corrected SD)"], rows)
    _figure(data, page, ev)


def _binding_row(v) -> list:
    b = v.binding
    shares = ", ".join(f"{v.symbol}={fmt(value)}: {m:.2%} (n={len(s)})" for value, s in b.shares.items()
                       if (m := binds.mean_share(s)) is not None)
    low = None if b.tightest.low is None else f"{v.symbol}={fmt(b.tight_value)}: {b.tightest.low:.2%}"
    change = (None if b.change.low is None else
              f"{b.change.mean:+.2%} [{b.change.low:+.2%}, {b.change.high:+.2%}] (n={b.change.n})")
    return [v.name, b.measure, shares, low, change, "yes" if b.binds else "no"]


def _figure(data: SweepData, page: Page, ev) -> None:
    if not ev.variants:
        return
    fig, axes = plots.grid(len(ev.variants), ncols=min(3, len(ev.variants)), width=4.6, height=3.3)
    for ax, v in zip(axes, ev.variants):
        values = sorted({threshold(r)[2] for r in v.runs})
        for i, (value, c) in enumerate(zip(values, shades(v.objective, len(values)))):
            curves = [data.curve(r, EVAL) for r in v.runs if threshold(r)[2] == value]
            plots.band(ax, curves, c, f"{v.symbol}={fmt(value)}", OTHER_STYLES[i % len(OTHER_STYLES)],
                       marker=MARKERS[i % len(MARKERS)], metric=EVAL)
        plots.finish(ax, f"{v.name}: eval accuracy per {v.symbol}", plots.STEP_LABEL, plots.label(EVAL))
    page.figure(fig, "curves_per_threshold", "As DPPO paper App. F.4, Figure 19: eval accuracy over training, mean "
                "over seeds with a 95% t-band inside [0, 1], one line per threshold value, one panel per objective "
                "(variant); darker = larger threshold.")


REPORT = ReportKind("threshold_contrast", "Threshold contrast: DPPO vs GRPO (DPPO paper F.4)", needs, build)
