"""Does a threshold bind in these runs? The precondition of a threshold-sensitivity contrast (DPPO paper App. F.4):
an objective can only be shown (in)sensitive to a threshold that acts, so the regime must be shown to contain
the cause — tokens the objective stops pushing — before the contrast's outcome is read.

It measures the cause, never the claim's outcome: per threshold value the per-run share of tokens the threshold
masks, mean over training steps: `objective/masked_frac` for a threshold that acts on every token (DPPO's δ), and
for one that acts on one sign of the advantage only the share of that sign's tokens (GRPO's ε_high masks only
tokens with A > 0: `objective/masked_frac_pos`; the fixed ε_low's masking of A < 0 tokens is not ε_high's doing).
The threshold binds when
(1) at its tightest value (the smallest: a narrower trust region masks more) the one-sided (1 − α) Student-t lower
bound of the mean over runs is ≥ BINDS (threshold_action.py: the share below which the sensitivity page says a
threshold barely acts), and (2) the masked shares at the tightest and the loosest value differ: the two-sided
(1 − α) paired-t interval of their per-seed difference excludes 0 (moving the threshold changes what it does).
A check that has fewer than 2 runs (resp. paired seeds) with the measure fails: not shown is not passed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from harness.reports.evidence.outcomes import whole_mean
from harness.reports.evidence.threshold_action import BINDS
from harness.reports.results.data import Run, SweepData, fmt
from harness.stats.intervals import Interval, t_interval

SHARE = (0.0, 1.0)  # a share of tokens, and so its mean
DIFFERENCE = (-1.0, 1.0)
MASKED = "objective/masked_frac"
ONE_SIDED = {"algo.eps_high": "objective/masked_frac_pos", "algo.eps_low": "objective/masked_frac_neg"}
RULE = (f"Precondition (the threshold binds; checked before the contrast is read, on the cause, never on the "
        f"accuracies; added after dppo_f4's first run, not declared in its sweep file): per variant, the per-run "
        f"share of tokens its threshold masked (mean over training steps; "
        f"objective/masked_frac for δ, which acts on every token; for GRPO's ε_high, which masks only tokens with "
        f"A > 0, objective/masked_frac_pos, the share of those) (1) at its tightest (smallest) value has a one-sided "
        f"(1 − α) Student-t lower bound over runs "
        f"≥ {BINDS:.0%} (BINDS, harness/reports/evidence/threshold_action.py: the share below which the sensitivity "
        "page already says a threshold barely acts), and (2) differs between its tightest and loosest value (the "
        "two-sided (1 − α) paired-t interval over seeds of tightest − loosest excludes 0). A variant that fails "
        "either check makes its comparison not testable here: an accuracy that does not move with a threshold "
        "that does not act is so by construction (README, 'Regimes that contain the cause': a regime must be shown to "
        "contain the claim's cause before a claim is reproduced or not).")


@dataclass(frozen=True)
class Binding:
    name: str
    symbol: str
    measure: str  # the metric read (measure_of)
    shares: Dict[float, Dict[object, float]]  # {value: {seed: masked share}}
    tightest: Interval  # at the smallest value; low = the one-sided (1 − α) lower bound
    change: Interval  # tightest − loosest, paired over seeds; (1 − α) two-sided
    tight_value: float
    loose_value: float

    @property
    def acts(self) -> bool:
        return self.tightest.low is not None and self.tightest.low >= BINDS

    @property
    def moves(self) -> bool:
        c = self.change
        return c.low is not None and (c.low > 0.0 or c.high < 0.0)

    @property
    def binds(self) -> bool:
        return self.acts and self.moves

    @property
    def text(self) -> str:
        t, c, s = self.tightest, self.change, self.symbol
        at = f"{s}={fmt(self.tight_value)}"
        acts = (f"masked share at {at} not measured (< 2 runs logged it)" if t.low is None else
                f"masked share at {at} {t.mean:.2%} (n={t.n}), lower bound {t.low:.2%} "
                f"{'≥' if self.acts else '<'} {BINDS:.0%}")
        moves = (f"{at} − {s}={fmt(self.loose_value)} not measured (< 2 paired seeds)" if c.low is None else
                 f"{at} − {s}={fmt(self.loose_value)} {c.mean:+.2%} [{c.low:+.2%}, {c.high:+.2%}] "
                 f"({'differs' if self.moves else 'not shown to differ'}, n={c.n})")
        return f"{self.name}: {acts}; {moves}"


def measure_of(param: str) -> str:
    """The metric of the tokens threshold `param` (e.g. 'algo.eps_high') can mask."""
    return ONE_SIDED.get(param, MASKED)


def binding(data: SweepData, name: str, param: str, symbol: str, by_value: Dict[float, Sequence[Run]],
            alpha: float) -> Binding:
    """The masked shares of one variant's runs per threshold value (≥ 2 values) and its two checks at α."""
    shares = {v: _per_seed(data, runs, measure_of(param)) for v, runs in sorted(by_value.items())}
    tight, loose = min(shares), max(shares)
    paired = [shares[tight][s] - shares[loose][s] for s in shares[tight] if s in shares[loose]]
    return Binding(name, symbol, measure_of(param), shares,
                   t_interval(list(shares[tight].values()), 1.0 - 2.0 * alpha, SHARE),
                   t_interval(paired, 1.0 - alpha, DIFFERENCE), tight, loose)


def unbound(bindings: Sequence[Binding]) -> List[Binding]:
    return [b for b in bindings if not b.binds]


def mean_share(shares: Dict[object, float]) -> Optional[float]:
    return sum(shares.values()) / len(shares) if shares else None


def _per_seed(data: SweepData, runs: Sequence[Run], key: str) -> Dict[object, float]:
    """{seed: the run's mean of `key` over training} (a repeated seed keeps the mean of its runs)."""
    out: Dict[object, list] = {}
    for run in runs:
        value = whole_mean(data, run, key)
        if value is not None:
            out.setdefault(run.seed, []).append(value)
    return {seed: float(np.mean(v)) for seed, v in out.items()}
