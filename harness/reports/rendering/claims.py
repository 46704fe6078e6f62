"""What the claim reports (`kinds/claim_*.py`) share on their pages: descriptive tables with intervals inside
each measure's range, the ν < 0.2 admission check of the low-probability regimes (measured by
`evidence/preconditions.lowprob_share`), and the verdict, which
always comes from the sweep's declared tests (`evidence/decisions.py`, the rules in sweeps/claim*.yaml).

Verdict words: reproduced (the claimed effect is shown at the declared α), not reproduced (the opposite
direction or equivalence within the SESOI is shown), inconclusive (neither; the page prints the power
figure and the command that runs the missing seeds), not testable here (a precondition of the regime
failed: the check and its measured value are named, the tests are not read)."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence

from harness.reports.evidence import decisions, preconditions
from harness.reports.evidence.preconditions import LOWPROB_ADMISSION
from harness.reports.results.data import Run, SweepData, fmt
from harness.reports.evidence.outcomes import LAST_K, measure, per_seed
from harness.reports.rendering import decisions_section
from harness.reports.rendering.page import Page
from harness.reports.results.summary import summarize
from harness.stats import robust
from harness.stats.intervals import Interval, t_interval
from harness.stats.words import NOT_TESTABLE, VERDICT_PREFIX

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


def finished(runs: Iterable[Run]) -> List[Run]:
    return [r for r in runs if r.status == "FINISHED"]


def group_by(runs: Iterable[Run], key) -> Dict[str, List[Run]]:
    out: Dict[str, List[Run]] = {}
    for run in runs:
        out.setdefault(key(run), []).append(run)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def interval(data: SweepData, runs: Sequence[Run], name: str, k: int = LAST_K) -> Interval:
    """Mean over seeds of measure `name` with its 95% t-interval inside the measure's range."""
    return t_interval(list(per_seed(data, runs, name, k).values()), bounds=measure(name).bounds)


def fmt_interval(ci: Interval, digits: int = 3) -> str:
    if ci.mean is None:
        return "—"
    if ci.low is None:
        return f"{fmt(ci.mean, digits)} (no CI)"
    return f"{fmt(ci.mean, digits)} [{fmt(ci.low, digits)}, {fmt(ci.high, digits)}]"


def describe(data: SweepData, page: Page, groups: Dict[str, List[Run]], measures: Sequence[str], k: int,
             heading: str, label: str = "group") -> None:
    """One row per group: runs, finished, collapsed, and each measure's mean [95% CI] over seeds."""
    rows = []
    for name, members in groups.items():
        collapsed = sum(summarize(data, r).collapse is not None for r in members)
        low, high = robust.collapse_bounds(collapsed, len(members))
        rows.append([name, len(members), len(finished(members)),
                     f"{collapsed}/{len(members)} [{low:.0%}, {high:.0%}]",
                     *(fmt_interval(interval(data, members, m, k)) for m in measures)])
    page.heading(heading)
    page.table([label, "runs", "finished", "collapsed (below own start) [95% exact CI of the rate]",
                *(f"{m} (95% CI)" for m in measures)], rows,
               caption="Means over seeds; intervals: Student-t, intersected with the measure's range; collapse "
                       "rates: Clopper–Pearson (exact binomial), which says how rare an unseen collapse may be. "
                       + "; ".join(f"{m}: {measure(m).description}" for m in measures) + f"; k = {k}.")


def design_k(spec) -> int:
    return spec.design.last_k if spec is not None else LAST_K


def admission(data: SweepData, runs: Sequence[Run], page: Page) -> Optional[str]:
    """Is this a low-probability regime? None if admitted, else why not. Printed on the page either way."""
    share, seeds = preconditions.lowprob_share(data, runs)
    if share is None:
        reason = ("no run logged objective/lowprob_frac (the share of sampled tokens with ν < 0.2), so the "
                  f"regime's admission (≥ {LOWPROB_ADMISSION:.0%} at its start) cannot be checked")
        page.text(f"Regime check: {reason}.")
        return reason
    ok = share >= LOWPROB_ADMISSION
    page.text(f"Regime check: {share:.1%} of sampled tokens have ν < 0.2 over the first 10% of steps (mean over "
              f"{seeds} seeds); admitted if ≥ {LOWPROB_ADMISSION:.0%}: {'yes' if ok else 'no'}.")
    return None if ok else (f"the regime is not admitted: only {share:.1%} of sampled tokens have ν < 0.2 at its "
                            f"start (needs ≥ {LOWPROB_ADMISSION:.0%}), so the claim has no room to show")


def verdict(page: Page, data: SweepData, default_sweep: str, refused: Optional[str] = None) -> Optional[str]:
    """The declared tests and the verdict line (`refused`: a precondition failed: not testable here, with
    why, and the tests are not read)."""
    spec = decisions.spec_for(data, default_sweep)
    if refused:
        subject = spec.name if spec is not None else default_sweep
        page.verdict(subject, NOT_TESTABLE, f"{VERDICT_PREFIX}{NOT_TESTABLE} — {refused}; the declared tests are not "
                     "read", False, f"{subject}: {NOT_TESTABLE} ({refused})")
        return NOT_TESTABLE
    return decisions_section.write(page, data, spec)
