"""A claim's verdict from its parts' decisions (inference.Decision), under the design's rule (`parts:`).

- all (the default): the claim holds only if every part holds. Reproduced: every part reproduced at α (an
  intersection-union test: no correction is needed when every part must hold). Not reproduced: at least one
  part's contradiction survives Holm's correction over the parts.
- any: the claim holds if any part shows it (claim 3: a typical seed's mismatch ends higher, *or* the arm runs
  away more often). Reproduced: a part's effect survives Holm's correction over the parts (a union of
  questions). Not reproduced: every part contradicted at α (an intersection-union test), so one right-tailed
  part that cannot rule out its effect keeps the verdict from "not reproduced".

A part whose hypothesis states a size (`size: true`) and shows only its direction (words.DIRECTION_ONLY) makes
the claim "direction reproduced, size not shown" where every part would otherwise have been reproduced.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

from harness.stats.words import DIRECTION_ONLY, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

RULES = ("all", "any")


def holm(p_values: Sequence[float], alpha: float) -> List[bool]:
    """Holm's step-down procedure: which of the p-values are rejected with the family-wise error ≤ alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] >= alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


def combine(decisions: Sequence, alpha: float, rule: str = "all") -> Tuple[str, str]:
    """Overall verdict of a claim's parts under `rule` (see the module)."""
    if rule not in RULES:
        raise ValueError(f"rule {rule!r} is not allowed; allowed: {', '.join(RULES)}")
    if rule == "any":
        return _any(decisions, alpha)
    if decisions and all(d.word == REPRODUCED for d in decisions):
        return REPRODUCED, "every part reproduced (intersection-union test at α)"
    if decisions and all(d.word in (REPRODUCED, DIRECTION_ONLY) for d in decisions):
        return DIRECTION_ONLY, ("every part's direction shown, but a part whose hypothesis states a size did not "
                                "show it (c > SESOI)")
    against = [d.p_against if d.p_against is not None else 1.0 for d in decisions]
    rejected = holm(against, alpha)
    if any(r and d.word == NOT_REPRODUCED for r, d in zip(rejected, decisions)):
        if len(decisions) == 1:
            return NOT_REPRODUCED, f"its one part contradicted at α {alpha:.3g}"
        return NOT_REPRODUCED, (f"a part's contradiction holds after Holm's correction at α {alpha:.3g} over "
                                f"{len(decisions)} parts")
    return INCONCLUSIVE, "no part contradicted after Holm's correction, not every part reproduced"


def _any(decisions: Sequence, alpha: float) -> Tuple[str, str]:
    effect = [d.p_effect if d.p_effect is not None and d.word == REPRODUCED else 1.0 for d in decisions]
    if any(holm(effect, alpha)):
        return REPRODUCED, (f"a part's effect holds after Holm's correction at α {alpha:.3g} over {len(decisions)} "
                            "parts (the claim holds if any part does)")
    if decisions and all(d.word == NOT_REPRODUCED for d in decisions):
        return NOT_REPRODUCED, "every part contradicted at α (intersection-union test: each part must be ruled out)"
    return INCONCLUSIVE, ("no part's effect survives Holm's correction, and not every part is contradicted (the "
                          "claim is ruled out only when every part is)")
