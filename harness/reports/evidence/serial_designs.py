"""α over serial redesigns of one claim: a claim redesigned after an earlier design ran has had several chances
to decide. Each design tests at its own α; across the k designs of a claim the chance that any of them decided
in error is at most k·α (Bonferroni), so the page says whether this design's verdict also holds with its p
multiplied by k. Every design that ran counts in k, whatever it ended with: a union bound is over the chances
to err, and a design that ended inconclusive had its chance as much as one that decided (which of them would
decide was not known before they ran). The sweep file's `history:` lists them with their commits."""
from __future__ import annotations

from typing import Optional, Sequence

from harness.reports.results.data import fmt
from harness.stats import inference


def family_text(earlier_designs: int, outcomes: Sequence, word: str, history: Sequence = ()) -> Optional[str]:
    """The line for a design with `earlier_designs` run before it (None when it is the first); `history`: those
    designs (design_gates.Earlier: commit, showed), listed in the line."""
    k = max(earlier_designs, len(history)) + 1
    if k == 1:
        return None
    n = k - 1
    listed = f" ({'; '.join(f'{e.commit}: {e.showed}' for e in history)})" if history else ""
    head = (f"Serial redesigns: {n} earlier design{'s' if n > 1 else ''} of this claim ran before this one"
            f"{listed}, each at its own α; every one counts, whatever it ended with, so across these {k} designs "
            f"the chance that any decided in error is at most {k}·α (Bonferroni).")
    parts = [o for o in outcomes if not o.test.check]
    level = min((o.alpha for o in parts), default=0.0)
    if word == inference.REPRODUCED:  # every part must hold: the largest of their p-values decides
        p = max((o.decision.p_effect for o in parts if o.decision.p_effect is not None), default=None)
    elif word == inference.NOT_REPRODUCED:  # a contradiction that survives Bonferroni over the parts
        p = min((o.decision.p_against for o in parts if o.decision.p_against is not None), default=None)
        p = None if p is None else min(1.0, p * len(parts))
    else:
        return (f"{head} This design decided nothing in the claim's terms ({word}); it counts in the {k} all the "
                f"same, and a later design of this claim counts {k + 1}.")
    if p is None:
        return head
    holds = p * k <= level
    return (f"{head} Its decisive p {fmt(p, 3)} × {k} = {fmt(min(1.0, p * k), 3)} "
            f"{'≤' if holds else '>'} the look's α {fmt(level, 3)}: the verdict "
            f"{'holds' if holds else 'does not hold'} at a family-wise α over the claim's designs.")
