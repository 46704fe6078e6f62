"""Decisions of the tests on two arms' event counts (a 0/1 measure such as `collapsed`): Fisher's exact test of
a higher rate, and the exact non-inferiority test of a rate difference against the SESOI."""
from __future__ import annotations

from harness.stats import inference, rate_difference, rates


def counts(arms, weights):
    """(events, runs) of the +1 arm and of the −1 arm of a two-arm test on a 0/1 measure."""
    (_, a), (_, b) = arms if weights[0] > 0 else arms[::-1]
    return rates.Count(int(sum(a.values())), len(a)), rates.Count(int(sum(b.values())), len(b))


def fisher(arms, weights, alpha) -> inference.Decision:
    """The +1 arm's rate above the −1 arm's (reproduced) or below it (not reproduced), one-sided Fisher tests."""
    a, b = counts(arms, weights)
    if not a.runs or not b.runs:
        return inference.Decision(inference.INCONCLUSIVE, "an arm has no runs", None, None, None, None, None,
                                  alpha, None)
    # the same one-sided test the designs are sized with (rates.fisher_power); "fewer" is it with the arms swapped
    p_more, p_less = rates.p_greater(a, b), rates.p_greater(b, a)
    facts = f"{a} vs {b}, one-sided Fisher p = {p_more:.3g} (more), {p_less:.3g} (fewer)"
    word = (inference.REPRODUCED if p_more < alpha else inference.NOT_REPRODUCED if p_less < alpha
            else inference.INCONCLUSIVE)
    return inference.Decision(word, f"{facts} at α {alpha:.3g}", None, None, None, p_more, p_less, alpha, None)


def noninferior_rates(arms, weights, sesoi, alpha, power: float = 0.8) -> inference.Decision:
    """Non-inferiority of two event rates: c = rate(+1 arm) − rate(−1 arm) > −SESOI shown (reproduced) or
    c < −SESOI shown (not reproduced), each by the exact unconditional score test (stats/rate_difference.py).
    Undecided: the runs per arm that give it `power` to show c > −SESOI when both arms share the pooled rate."""
    a, b = counts(arms, weights)
    if not a.runs or not b.runs:
        return inference.Decision(inference.INCONCLUSIVE, "an arm has no runs", None, None, None, None, None,
                                  alpha, None)
    p_effect = rate_difference.p_above(a, b, -sesoi)
    p_against = rate_difference.p_below(a, b, -sesoi)
    c = a.events / a.runs - b.events / b.runs
    facts = (f"{a} vs {b}: c = {c:+.3f}; exact score test p = {p_effect:.3g} (c > −{sesoi:g}), "
             f"{p_against:.3g} (c < −{sesoi:g})")
    word = (inference.REPRODUCED if p_effect < alpha else inference.NOT_REPRODUCED if p_against < alpha
            else inference.INCONCLUSIVE)
    needed = None
    if word == inference.INCONCLUSIVE:
        pooled = (a.events + b.events) / (a.runs + b.runs)
        needed = rate_difference.runs_for_power(
            lambda n: rate_difference.power_above(pooled, pooled, n, -sesoi, alpha), power)
    return inference.Decision(word, f"{facts} at α {alpha:.3g}", None, None, None, p_effect, p_against, alpha,
                              needed)


def greater_rates(arms, weights, sesoi, alpha) -> inference.Decision:
    """A higher event rate with a margin against it: c = rate(+1 arm) − rate(−1 arm) > 0 shown by the one-sided
    Fisher test (reproduced), or c < SESOI shown by the exact score test (not reproduced: any difference is
    below the margin). Absence of events is not evidence of no difference: 0/8 against 0/8 cannot rule out a
    10% runaway rate, and the score test says so."""
    a, b = counts(arms, weights)
    if not a.runs or not b.runs:
        return inference.Decision(inference.INCONCLUSIVE, "an arm has no runs", None, None, None, None, None,
                                  alpha, None)
    p_more = rates.p_greater(a, b)
    p_below = rate_difference.p_below(a, b, sesoi)
    c = a.events / a.runs - b.events / b.runs
    facts = (f"{a} vs {b}: c = {c:+.3f}; one-sided Fisher p = {p_more:.3g} (c > 0), exact score test p = "
             f"{p_below:.3g} (c < {sesoi:g})")
    word = (inference.REPRODUCED if p_more < alpha else inference.NOT_REPRODUCED if p_below < alpha
            else inference.INCONCLUSIVE)
    return inference.Decision(word, f"{facts} at α {alpha:.3g}", None, None, None, p_more, p_below, alpha, None)
