"""The declared tests on a report page (the `decisions` kind and every claim kind): the preconditions'
table, the pilot's section, the tests table with the method, the commands that run an undecided test's
missing seeds, the headline figure of the contrasts with their intervals, and the verdict line. What is
decided comes from harness/reports/evidence/decisions.py; this module only draws it."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.reports.evidence import decisions, preconditions, serial_designs
from harness.reports.evidence.arms import selector_text
from harness.reports.rendering import pilot_section, plots
from harness.reports.rendering.page import Page
from harness.reports.results.data import SweepData, fmt
from harness.stats import inference
from harness.stats.words import VERDICT_PREFIX

METHOD = ("Each test is a contrast c = Σ w·mean(arm) − offset of a per-run outcome. Arms that share seeds are "
          "paired (a one-sample t-test on the per-seed contrasts; `method: exact`: the sign-flip permutation test "
          "for no-difference questions and Anderson's distribution-free bound on the contrast's range for shifted "
          "ones, valid when some runs collapse); otherwise Welch's t. No test decides when the per-seed "
          "contrasts have no spread (ties), when too few seeds could reach the look's α without assuming "
          "normal outcomes (2^−n ≥ α), or when too few per-seed contrasts lie beyond the measure's resolution "
          "(one eval problem over the last k evaluations for accuracy; contrasts within it are ties, no evidence "
          "either way, and sign tests drop them). Reproduced: the claimed "
          "direction is shown at the look's one-sided α. Not reproduced: the opposite direction, or equivalence "
          "within ±SESOI (two one-sided tests), is shown at that α. Inconclusive: neither; then the power figure "
          "(seeds per arm for the target power at the SESOI, given the observed spread) and the command that "
          "runs the missing seeds (fresh seeds only) are printed. Intervals: the (1 − 2α) t-interval (method "
          "exact: Anderson's), intersected with the range the contrast can take. Tests on collapse counts: "
          "Fisher's exact test (method fisher: a higher rate) or an exact unconditional score test of the rate "
          "difference against −SESOI (method rate_difference: non-inferiority), sized by the exact power at "
          "stated rates. Several tests: reproduced if every test is (intersection–union, no "
          "correction needed); not reproduced if a contradiction survives Holm's correction over the tests at the "
          "look's α.")


def write(page: Page, data: SweepData, spec, heading: str = "Declared tests") -> Optional[str]:
    """The tests table, the headline figure and the verdict line; returns the verdict word (None: no tests)."""
    if spec is None or not spec.design.tests:
        page.missing("No declared tests found for this sweep (a `tests:` list in its sweep file): no verdict.")
        return None
    design = spec.design
    if design.preconditions:
        checked = preconditions.check(data, design.preconditions, design.last_k)
        page.heading("Preconditions (regime checks that gate the verdict)")
        page.table(["precondition", "measure", "arm", "measured (mean over seeds)", "seeds",
                    "one-sided 95% bound (read by the gate)", "needs", "met"],
                   [[c.condition.name, c.condition.measure, selector_text(c.condition.arm) or "every run",
                     None if c.value is None else fmt(c.value, 4), c.seeds,
                     None if c.limit is None else f"{fmt(c.limit, 4)} ({c.bound_name})", c.condition.rule,
                     "yes" if c.passed else "no"] for c in checked])
        refused = preconditions.failed(checked)
        if refused:
            page.verdict(spec.name, inference.NOT_TESTABLE, f"{VERDICT_PREFIX}{inference.NOT_TESTABLE} — {refused}; "
                         "the declared tests are not read", False, f"{spec.name}: {inference.NOT_TESTABLE} ({refused})")
            return inference.NOT_TESTABLE
    refused = pilot_section.write_section(page, data, spec) if design.pilot else None
    if design.sizing and not design.pilot:
        page.heading("Sizing (stated in the design before its main runs)")
        page.text(design.sizing)
    outcomes = decisions.evaluate(data, spec)
    page.heading(heading)
    page.text(METHOD + f" Declared α = {design.alpha:g} (one-sided, per question), power target "
              f"{design.power:g}, outcome window last_k = {design.last_k} evaluations"
              + (f"; seeds: auto, budget {_budget(design)}, α spent per look by an O'Brien–Fleming-type "
                 "Lan–DeMets function (harness/stats/sequential.py)." if design.adaptive else "."), "method")
    rows = []
    for o in outcomes:
        d, t = o.decision, o.test
        contrast = " ".join(f"{'+' if w > 0 else '−'}{fmt(abs(w))}·[{s}]" for (s, _), (_, w) in zip(o.arms, t.contrast))
        contrast += f" − {fmt(t.offset)}" if t.offset else ""
        kind = ("paired median" if d.median else "paired") if d.estimate and d.estimate.paired else "Welch"
        est = "—" if d.estimate is None else f"{fmt(d.centre)} [{fmt(d.low)}, {fmt(d.high)}] ({kind}, n={d.estimate.n})"
        rows.append([t.name, t.measure, t.hypothesis, contrast, fmt(t.sesoi), est, fmt(o.alpha, 4),
                     None if d.p_effect is None else fmt(d.p_effect, 3),
                     None if d.p_against is None else fmt(d.p_against, 3), d.word,
                     d.seeds_needed, d.reason])
    page.table(["test", "measure", "hypothesis", "contrast c", "SESOI", "c [interval at α]", "α (this look)",
                "p (claim)", "p (against)", "verdict", f"seeds/arm for {design.power:.0%} power", "why"], rows)
    commands = [o for o in outcomes if not o.decision.decided]
    at = f" at α {decisions.power_alpha(spec):.3g}" + (" (the final look's share)" if design.adaptive else "")
    for o in commands:
        need = f"the SESOI {fmt(o.test.sesoi)} needs {o.decision.seeds_needed or '?'} seeds per arm for " \
               f"{design.power:.0%} power{at}"
        if o.command and "--continue=" in o.command:
            page.text(f"Undecided: {o.test.name} — {need}; continue this study in its folder with: {o.command}",
                      "action")
        elif o.command and design.adaptive:
            page.text(f"Undecided: {o.test.name} — the declared seed budget is spent; {need}. Running them is a new "
                      f"design on fresh seeds, to be reported separately (its test runs at the full α, so it "
                      f"must not see the seeds tested here): {o.command}", "action")
        elif o.command:
            page.text(f"Undecided: {o.test.name} — {need}; run them as a new design on fresh seeds (the seeds "
                      f"tested here are not tested again), reported separately: {o.command}", "action")
    _figure(page, outcomes)
    word, reason = decisions.overall(outcomes)
    if refused and not any(len(arm) for o in outcomes for _, arm in o.arms):  # no main run: nothing was tested
        reason = f"the pilot refused the main runs, so no declared test ran — {refused}"
    family = serial_designs.family_text(design.earlier_designs, outcomes, word, design.history)
    if family:
        page.text(family)
    record_verdict(page, spec.name, word, reason, outcomes)
    return word


def record_verdict(page: Page, subject: str, word: str, reason: str, outcomes: Sequence[decisions.Outcome]) -> None:
    """The claim's verdict line, with its short line (the seeds an undecided test needs) and each test's
    contrast and seeds needed as the numbers behind it."""
    needed = [o.decision.seeds_needed for o in outcomes if not o.decision.decided and o.decision.seeds_needed]
    short = f"{subject}: {word}" + (f" ({max(needed)} seeds per arm needed to decide)" if needed else "")
    measures = {f"{o.test.name}_c": o.decision.centre for o in outcomes if o.decision.centre is not None}
    measures.update({f"{o.test.name}_seeds_needed": o.decision.seeds_needed for o in outcomes
                     if o.decision.seeds_needed})
    page.verdict(subject, word, f"{VERDICT_PREFIX}{word} — {reason}", word in (inference.REPRODUCED,
                 inference.NOT_REPRODUCED), short, measures)


def _budget(design) -> str:
    b = design.budget
    parts = [f"{b.runs} runs" if b.runs else "", f"{fmt(b.minutes)} min" if b.minutes else "",
             f"{b.per_round} seeds per round", f"≤ {b.max_seeds} seeds"]
    return ", ".join(p for p in parts if p)


MARKERS = {inference.REPRODUCED: ("o", "#1b7837"), inference.DIRECTION_ONLY: ("^", "#7fbf7b"),
           inference.NOT_REPRODUCED: ("s", "#b2182b"),
           inference.INCONCLUSIVE: ("D", "#555555")}


def _figure(page: Page, outcomes: Sequence[decisions.Outcome]) -> None:
    shown = [o for o in outcomes if o.decision.estimate is not None]
    if not shown:
        return
    fig, axes = plots.grid(1, ncols=1, width=9.0, height=1.4 + 0.55 * len(shown), left=2.7)
    ax = axes[0]
    finite = [v for o in shown for v in (o.decision.low, o.decision.high, o.decision.centre, o.test.sesoi,
                                         -o.test.sesoi) if v is not None and np.isfinite(v)]
    edge = (min(finite), max(finite))  # an interval with no finite end (too few seeds) is drawn to the edge
    span = []
    for i, o in enumerate(shown):
        y = len(shown) - 1 - i
        d = o.decision
        marker, col = MARKERS[d.word]
        ax.axhspan(y - 0.4, y + 0.4, xmin=0, xmax=1, color="#f0f0f0", zorder=0) if i % 2 else None
        if o.test.hypothesis == "noninferior":
            ax.plot([-o.test.sesoi] * 2, [y - 0.4, y + 0.4], color="#777", linestyle=":", linewidth=1.2)
        else:
            ax.fill_betweenx([y - 0.4, y + 0.4], -o.test.sesoi, o.test.sesoi, color="#cfe3f3", zorder=1)
        low = d.low if np.isfinite(d.low) else edge[0]
        high = d.high if np.isfinite(d.high) else edge[1]
        ax.errorbar([d.centre], [y], xerr=[[d.centre - low], [high - d.centre]],
                    fmt=marker, color=col, capsize=4, markersize=6, linewidth=1.6, zorder=3)
        span += [low, high, o.test.sesoi, -o.test.sesoi]
    ax.axvline(0, color="#000", linewidth=0.8)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([plots.wrap(o.test.name, 34) for o in reversed(shown)])
    ax.set_ylim(-0.6, len(shown) - 0.4)
    lo, hi = min(span), max(span)
    pad = 0.08 * (hi - lo or 1.0)
    ax.set_xlim(lo - pad, hi + pad)
    for word, (marker, col) in MARKERS.items():
        ax.plot([], [], marker, color=col, label=word)
    ax.fill_between([], [], color="#cfe3f3", label="±SESOI (equivalence region)")
    plots.finish(ax, "Declared contrasts with their intervals at each look's α", "contrast c (measure units)", "",
                 legend=True)
    page.figure(fig, "decisions", "Headline: each declared test's contrast (paired over seeds where the arms share "
                "them) with its (1 − 2α) interval; shaded band: ±SESOI (dotted line: −SESOI of a non-inferiority "
                "test); marker shape and colour: verdict (circle reproduced, square not reproduced, diamond "
                "inconclusive).")
