"""The looks of a `seed=auto` multirun (harness/sweeps/auto_study.py): a study with no declared tests, which
runs until every verdict its reports give is decided. Those are the sensitivity report's, one per objective run
at ≥ 2 values of its threshold (`threshold_effect.decide`, computed from the store exactly as the page computes
it, harness/reports/rendering/kinds/sensitivity.py), each at the look's α.

α is spent over the looks with the spending function of the named studies (harness/stats/sequential.py,
O'Brien–Fleming type, information fraction t = n / max seeds per value): the look at n seeds after the look at
n_prev spends f(n/N) − f(n_prev/N), so however many looks are taken and wherever they fall on the planned grid
(multiples of the round size up to N), the looks together spend at most f(1) = α. The next look is chosen from
the seeds per value the undecided verdicts still need (`seeds_for_insensitive`, `seeds_for_sensitive`: the
noisiest pair's spread and the collapse bound, not which way the means differ), each computed at the α that
look would have, a round adding at most twice the round size (`budget.per_round`); a look past what the budget
allows is not planned. A study whose only open parts are sizes at the SESOI, which even its last look would
decide with conditional power under FUTILE, stops (`futile`): a futility stop only gives up looks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from scipy.stats import norm

from harness.reports.evidence import threshold_effect, threshold_study
from harness.reports.evidence.outcomes import resolution
from harness.reports.rendering.kinds import sensitivity
from harness.reports.results.data import SweepData
from harness.stats.sequential import spent

MEASURE = "final_accuracy"


@dataclass
class Judged:
    """One objective's verdict at a look, with what it was computed from (to decide it again at another α)."""
    name: str
    symbol: str
    outcomes: Dict
    collapsed: Dict
    resolution: float
    verdict: threshold_effect.ThresholdVerdict
    gains: Optional[Dict] = None  # per value and seed: the gain over the run's first evaluation (failures)

    def at(self, alpha: float, sesoi: float, power: float) -> threshold_effect.ThresholdVerdict:
        """The same verdict decided at another level α."""
        return threshold_effect.decide(self.outcomes, sesoi, alpha, power, collapsed=self.collapsed,
                                       resolution=self.resolution, gains=self.gains)


def look_alpha(n: int, before: int, max_seeds: int, alpha: float) -> float:
    """The α the look at n seeds per value may spend after the look at `before` (0: the first look)."""
    return spent(n / max_seeds, alpha) - spent(before / max_seeds, alpha)


def design(data: SweepData):
    """(SESOI, power, last_k) the sensitivity page declares for this sweep (its α is the look's)."""
    sesoi, _, power, last_k = sensitivity.design_of(data)
    return sesoi, power, last_k


def judge(data: SweepData, alpha: float) -> List[Judged]:
    """Every sensitivity verdict of the sweep's runs at level α: the page's evidence (evidence/threshold_study.py),
    so the study stops on the verdict the page then shows."""
    sesoi, power, last_k = design(data)
    groups = sensitivity.compared(data)
    out = []
    for objective, members in zip(threshold_study.gather(data, groups, sesoi, alpha, power, last_k), groups.values()):
        fine = resolution(members, MEASURE, (1.0, -1.0), last_k)
        out.append(Judged(objective.name, objective.symbol, objective.outcomes, objective.collapsed, fine,
                          objective.result, objective.gains))
    return out


FUTILE = 0.2  # conditional power below which a size part is not worth the remaining looks


def size_power(needed_seeds: Optional[int], last: int, alpha: float, power: float) -> float:
    """The power the last look (`last` seeds per value, level α) has to decide a size that needs
    `needed_seeds` for `power` at that level, the difference seen so far taken as the truth (conditional power,
    from the normal approximation the seed counts come from: power ≈ Φ((z_α + z_power)·√(n/n_needed) − z_α))."""
    if not needed_seeds:
        return 1.0
    z_a, z_p = norm.ppf(1 - alpha), norm.ppf(power)
    return float(norm.cdf((z_a + z_p) * (last / needed_seeds) ** 0.5 - z_a))


def futile(judged: Sequence[Judged], done: int, max_seeds: int, alpha: float, sesoi: float,
           power: float) -> List[str]:
    """Per undecided verdict whose sign is decided and whose size (beyond the SESOI or within it) the last look
    would decide with conditional power below FUTILE: a line saying so, with the size and what deciding would
    take. Non-empty only when every undecided verdict is such: the study then stops (a futility stop never
    raises the error rates of what it decided: it only gives up looks)."""
    level = look_alpha(max_seeds, done, max_seeds, alpha)
    out = []
    for j in judged:
        if j.verdict.decided:
            continue
        if j.verdict.word != threshold_effect.DIFFERS:
            return []
        need = j.at(level, sesoi, power).seeds_for_sensitive
        chance = size_power(need, max_seeds, level, power)
        if chance >= FUTILE:
            return []
        size = j.verdict.size
        shown = f" {size.estimate.value:+.3f} [{size.low:+.3f}, {size.high:+.3f}]" if size is not None else ""
        out.append(f"    {j.name}: differs by{shown}, at the SESOI ±{sesoi:g}: {max_seeds} seeds per value would "
                   f"tell which side with probability {chance:.0%} (~{need} needed): stopped for futility")
    return out


def all_decided(judged: Sequence[Judged]) -> bool:
    return bool(judged) and all(j.verdict.decided for j in judged)


def needed(verdict: threshold_effect.ThresholdVerdict) -> Optional[int]:
    """Seeds per value the verdict needs to decide (the part still open: its size, or either answer)."""
    if verdict.word == threshold_effect.DIFFERS:
        return verdict.seeds_for_sensitive
    return min(filter(None, (verdict.seeds_for_insensitive, verdict.seeds_for_sensitive)), default=None)


def next_look(judged: Sequence[Judged], plan: Sequence[int], done: int, max_seeds: int, alpha: float,
              sesoi: float, power: float, most: int) -> int:
    """The smallest planned look past `done`, at most `most` seeds per value further, at which every undecided
    verdict, decided again at that look's α on the spread seen so far, has the seeds it needs (else the
    furthest of those looks: a spread from few seeds is a rough guide, and a round stays the size of a sweep
    that runs well)."""
    later = [m for m in plan if done < m <= done + most] or [m for m in plan if m > done][:1]
    for m in later:
        level = look_alpha(m, done, max_seeds, alpha)
        wants = [needed(j.at(level, sesoi, power)) for j in judged if not j.verdict.decided]
        if all(w is not None and w <= m for w in wants):
            return m
    return later[-1] if later else done


def fitting(plan: Sequence[int], done: int, wanted: int, minutes_left: Optional[float],
            minutes_per_seed: Optional[float]) -> Optional[int]:
    """The look to run next: `wanted`, or the largest planned look before it whose round fits the minutes left
    (None: not even the next planned look fits)."""
    if minutes_left is None or not minutes_per_seed:
        return wanted
    fits = [m for m in plan if done < m <= wanted and (m - done) * minutes_per_seed <= minutes_left]
    return fits[-1] if fits else None


def lines(judged: Sequence[Judged], look: int, n: int, alpha: float) -> List[str]:
    """The look's verdicts, one line per objective."""
    return [f"  look {look} (n={n} seeds per value, α={alpha:.2g}): {j.name}: {j.verdict.word}" for j in judged]


def missing(judged: Sequence[Judged], sesoi: float, power: float, alpha: float, which: str) -> List[str]:
    """Per undecided verdict: the objective, the part not decided, and the seeds per value it needs for the
    power target at level α (`which` says which look's α that is)."""
    out = []
    for j in judged:
        if j.verdict.decided:
            continue
        v = j.at(alpha, sesoi, power)
        if j.verdict.word == threshold_effect.TYPICAL:
            part, need = "the failure rate is not yet shown below its margin", \
                f"{v.seeds_for_insensitive or '?'} seeds per value"
        elif j.verdict.word == threshold_effect.DIFFERS:
            part, need = "the size of the difference (whether it exceeds the SESOI) is not decided", \
                f"{v.seeds_for_sensitive or '?'} seeds per value"
        else:
            part = f"neither a difference nor equivalence within ±{sesoi:g} is shown"
            need = (f"{v.seeds_for_insensitive or '?'} seeds per value to show insensitivity, "
                    f"{v.seeds_for_sensitive or '?'} to detect a difference of the SESOI")
        out.append(f"    missing: {j.name}: {part} (now {j.verdict.seeds}); for {power:.0%} power at {which} α "
                   f"({alpha:.2g}): {need}")
    return out
