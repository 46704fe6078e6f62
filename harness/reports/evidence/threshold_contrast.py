"""Is DPPO less sensitive to its threshold than GRPO is to ε_high (DPPO paper App. F.4)? The evidence of the
threshold_contrast report: per objective variant run at ≥ 2 threshold values, the mean final accuracy per value,
its spread across values (stats/interaction.py), and per DPPO variant the interaction test against GRPO.

Verdict: **reproduced** when every DPPO variant is shown to spread less than GRPO (each at α: an
intersection–union test); **not reproduced** when some DPPO variant is shown not to spread less by the margin
(GRPO's extra spread below SESOI / √k at α/m, Bonferroni over the m variants); **not testable here** without
GRPO and a DPPO variant at ≥ 2 values of ≥ 4 seeds each, or when GRPO's threshold or a DPPO variant's does not
bind (threshold_binds.py: its masked share, the claim's cause, checked before the accuracies are read; a DPPO
variant that does not bind leaves its comparison untested, so "reproduced" cannot be reached); else
**inconclusive**, with the power of the test at these seeds to find GRPO's spread when one ε_high value is off by
twice the SESOI."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from harness.reports.evidence.outcomes import per_seed
from harness.reports.evidence.threshold_binds import Binding, binding
from harness.reports.results.data import Run, SweepData
from harness.reports.results.summary import variants
from harness.reports.results.thresholds import threshold, threshold_param
from harness.stats import interaction
from harness.stats.words import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

LESS, MORE = "dppo", "grpo"  # the objective claimed less sensitive, and the one it is compared with


@dataclass
class Variant:
    objective: str
    name: str
    symbol: str
    runs: List[Run]
    outcomes: Dict[float, Dict[object, float]]  # {value: {seed: final accuracy}}
    spread: Optional[float]
    binding: Binding  # does its threshold bind (the precondition)


@dataclass
class Evidence:
    word: str
    reason: str
    variants: List[Variant]
    tests: Dict[str, interaction.Contrast]  # per DPPO variant's name: its contrast with GRPO
    power: Optional[float]
    sesoi: float
    alpha: float


def groups(data: SweepData) -> Dict:
    runs = [r for r in data.runs if threshold(r)[0] is not None]
    compare = sorted({f"algo.{threshold_param(r.objective)}" for r in runs})
    return {k: v for k, v in variants(data, runs, compare).items() if len({threshold(r)[2] for r in v}) >= 2}


def gather(data: SweepData, sesoi: float, alpha: float, last_k: int) -> Evidence:
    found = []
    for (objective, name), members in groups(data).items():
        by_value: Dict[float, List[Run]] = {}
        for run in members:
            by_value.setdefault(threshold(run)[2], []).append(run)
        outcomes = {v: per_seed(data, rs, "final_accuracy", last_k) for v, rs in sorted(by_value.items())}
        param, symbol, _ = threshold(members[0])
        found.append(Variant(objective, name, symbol, members, outcomes, interaction.spread(outcomes),
                             binding(data, name, param, symbol, by_value, alpha)))
    less = [v for v in found if v.objective == LESS]
    more = [v for v in found if v.objective == MORE]
    if not less or not more:
        return Evidence(NOT_TESTABLE, f"needs {LESS} and {MORE} each at ≥ 2 values of its threshold", found, {}, None,
                        sesoi, alpha)
    grpo = more[0]
    unbound = [v for v in (grpo, *less) if not v.binding.binds]
    less = [v for v in less if v.binding.binds]
    gate = "precondition failed (the threshold does not bind): " + "; ".join(v.binding.text for v in unbound)
    if not grpo.binding.binds or not less:
        return Evidence(NOT_TESTABLE, gate, found, {}, None, sesoi, alpha)
    tests = {v.name: interaction.contrast(v.outcomes, grpo.outcomes, sesoi, alpha, seed=i)
             for i, v in enumerate(less)}
    missing = [n for n, t in tests.items() if t is None]
    if missing:
        return Evidence(NOT_TESTABLE, f"{', '.join(missing)} or {grpo.name}: fewer than 2 values with ≥ "
                        f"{interaction.MIN_SEEDS} finished seeds", found, {}, None, sesoi, alpha)
    m = len(tests)
    sd = interaction.pooled_sd(grpo.outcomes, *(v.outcomes for v in less))
    seeds = min(t.seeds for t in tests.values())
    k = len(grpo.outcomes)
    power = interaction.simulated_power(sd, seeds, k, sesoi, alpha, 2 * sesoi) if sd else None
    values = "; ".join(f"{n}: spread {t.less:.3f} vs {grpo.name} {t.more:.3f}, difference {t.difference:+.3f} "
                       f"[{t.low:+.3f}, {t.high:+.3f}], bootstrap p = {t.p_less:.3f}" for n, t in tests.items())
    if unbound:
        values += f"; {gate}"
    if all(t.shown for t in tests.values()) and unbound:
        return Evidence(NOT_TESTABLE, f"{', '.join(tests)} spread less than {grpo.name}, but {values}", found, tests,
                        power, sesoi, alpha)
    if all(t.shown for t in tests.values()):
        return Evidence(REPRODUCED, f"every DPPO variant spreads less than {grpo.name} (each at α {alpha:g}): {values}",
                        found, tests, power, sesoi, alpha)
    strict = {n: interaction.contrast(less[i].outcomes, grpo.outcomes, sesoi, alpha / m, seed=i)
              for i, n in enumerate(tests)}
    against = [n for n in tests if strict[n].excluded]
    if against:
        return Evidence(NOT_REPRODUCED, f"{', '.join(against)}: {grpo.name} spreads no more than "
                        f"{strict[against[0]].margin:.3f} beyond it (upper bound at α {alpha / m:.3g}, Bonferroni over "
                        f"{m}): {values}", found, tests, power, sesoi, alpha)
    return Evidence(INCONCLUSIVE, f"neither shown at α {alpha:g}: {values}", found, tests, power, sesoi, alpha)
