"""α over serial redesigns of one claim: a claim redesigned after an earlier design ended (a follow-up on
fresh seeds) has had several chances to decide. Each design tests at its own α; across the k designs of a
claim the chance that any of them decided in error is at most k·α (Bonferroni), so the page says whether
this design's verdict also holds with its p multiplied by k."""
from __future__ import annotations

from typing import Optional, Sequence

from harness.reports.results.data import fmt
from harness.stats import inference


def family_text(earlier_designs: int, outcomes: Sequence, word: str) -> Optional[str]:
    """The line for a design with `earlier_designs` tested before it (None when it is the first)."""
    k = earlier_designs + 1
    if k == 1:
        return None
    parts = [o for o in outcomes if not o.test.check]
    head = (f"Serial redesigns: {earlier_designs} earlier design{'s' if earlier_designs > 1 else ''} of this claim "
            f"{'were' if earlier_designs > 1 else 'was'} tested before this one, each at its own α; across these {k} "
            f"tested designs the chance that any decided in error is at most {k}·α (Bonferroni).")
    level = min((o.alpha for o in parts), default=0.0)
    if word == inference.REPRODUCED:  # every part must hold: the largest of their p-values decides
        p = max((o.decision.p_effect for o in parts if o.decision.p_effect is not None), default=None)
    elif word == inference.NOT_REPRODUCED:  # a contradiction that survives Bonferroni over the parts
        p = min((o.decision.p_against for o in parts if o.decision.p_against is not None), default=None)
        p = None if p is None else min(1.0, p * len(parts))
    else:
        return f"{head} This design decided nothing, so it spent nothing."
    if p is None:
        return head
    holds = p * k <= level
    return (f"{head} Its decisive p {fmt(p, 3)} × {k} = {fmt(min(1.0, p * k), 3)} "
            f"{'≤' if holds else '>'} the look's α {fmt(level, 3)}: the verdict "
            f"{'holds' if holds else 'does not hold'} at a family-wise α over the claim's designs.")
