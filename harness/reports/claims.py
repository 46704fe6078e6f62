"""What the claim reports (`kinds/claim_*.py`) share: per-run measures, the statistics behind a verdict,
and the verdict line itself.

A claim report never picks runs or thresholds after the fact: it reads every run of the sweep, computes
the measures its module declares, and applies the rule stated on its page. Verdict words:
reproduced (the effect is there, in the claimed direction, at 95%), not reproduced (the data contradict
it at 95%), inconclusive (neither)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np

from harness.reports.data import Run, SweepData, fmt
from harness.reports.page import Page
from harness.reports.stats import CONFIDENCE, Interval, t_quantile
from harness.reports.summary import EVAL, summarize, window_mean

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
VERDICT_PREFIX = "Verdict: "
DIFF_METHOD = ("Differences of means use Welch's t interval (95%, unequal variances); collapse counts use "
               "a one-sided Fisher exact test (p < 0.05).")


@dataclass(frozen=True)
class Verdict:
    word: str
    reason: str

    def line(self) -> str:
        return f"{VERDICT_PREFIX}{self.word} — {self.reason}"


def write_verdict(page: Page, verdict: Verdict) -> Verdict:
    page.text(verdict.line(), "verdict")
    return verdict


def combine(parts: Sequence[Verdict]) -> str:
    """Overall word of several required parts: reproduced if all are, not reproduced if any is, else inconclusive."""
    words = [p.word for p in parts]
    if words and all(w == REPRODUCED for w in words):
        return REPRODUCED
    if NOT_REPRODUCED in words:
        return NOT_REPRODUCED
    return INCONCLUSIVE


# -- per-run measures -------------------------------------------------------------------------------------
def finished(runs: Iterable[Run]) -> List[Run]:
    return [r for r in runs if r.status == "FINISHED"]


def last_window(data: SweepData, run: Run, key: str, frac: float = 0.1) -> Optional[float]:
    """Mean of the last `frac` of the run's logged values of `key` (None if never logged)."""
    return window_mean(data.curve(run, key)[1], first=False, frac=frac)


def first_window(data: SweepData, run: Run, key: str, frac: float = 0.1) -> Optional[float]:
    return window_mean(data.curve(run, key)[1], first=True, frac=frac)


def run_mean(data: SweepData, run: Run, key: str) -> Optional[float]:
    values = data.curve(run, key)[1]
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else None


def early_accuracy(data: SweepData, run: Run, upto: float = 0.5) -> Optional[float]:
    """Learning speed: mean eval accuracy over the evaluations after step 0 up to `upto` of the run's steps."""
    steps, values = data.curve(run, EVAL)
    if not len(steps):
        return None
    end = steps.max()
    keep = (steps > 0) & (steps <= upto * end)
    return float(values[keep].mean()) if keep.any() else None


def drop_from_best(data: SweepData, run: Run) -> Optional[float]:
    """Instability: best eval accuracy minus the final one (0 when the run ends at its best)."""
    s = summarize(data, run)
    if s.best_acc is None or s.last_acc is None:
        return None
    return s.best_acc - s.last_acc


def collapsed(data: SweepData, run: Run) -> bool:
    return summarize(data, run).collapse is not None


def values(data: SweepData, runs: Sequence[Run], measure) -> List[float]:
    out = [measure(data, r) for r in runs]
    return [float(v) for v in out if v is not None and np.isfinite(v)]


# -- statistics -----------------------------------------------------------------------------------------
def welch_difference(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Interval of mean(a) − mean(b) (Welch–Satterthwaite degrees of freedom); no bounds if either has < 2."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not len(x) or not len(y):
        return Interval(None, None, None, 0, None)
    diff = float(x.mean() - y.mean())
    if len(x) < 2 or len(y) < 2:
        return Interval(diff, None, None, min(len(x), len(y)), None)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:
        return Interval(diff, diff, diff, min(len(x), len(y)), 0.0)
    df = (vx + vy) ** 2 / ((vx ** 2) / (len(x) - 1) + (vy ** 2) / (len(y) - 1))
    half = t_quantile(0.5 + confidence / 2.0, df) * se
    return Interval(diff, diff - half, diff + half, min(len(x), len(y)), se)


def fisher_greater(k1: int, n1: int, k2: int, n2: int) -> float:
    """One-sided Fisher exact p-value that group 1's rate (k1 of n1) is greater than group 2's (k2 of n2)."""
    total, successes = n1 + n2, k1 + k2
    denominator = math.comb(total, successes)
    p = 0.0
    for k in range(k1, min(n1, successes) + 1):
        if successes - k <= n2:
            p += math.comb(n1, k) * math.comb(n2, successes - k) / denominator
    return min(1.0, p)


def direction(diff: Interval, what: str, claimed: str, opposite: str) -> Verdict:
    """Verdict on a difference whose claimed sign is positive: CI above 0 reproduces, below 0 contradicts."""
    text = f"{what}: {fmt_interval(diff)}"
    if diff.low is None:
        return Verdict(INCONCLUSIVE, f"{text} (fewer than 2 finished runs per group: no interval)")
    if diff.low > 0:
        return Verdict(REPRODUCED, f"{text} > 0: {claimed}")
    if diff.high < 0:
        return Verdict(NOT_REPRODUCED, f"{text} < 0: {opposite}")
    return Verdict(INCONCLUSIVE, f"{text} includes 0")


def at_least(diff: Interval, margin: float, what: str) -> Verdict:
    """'Matches or beats': the CI of the difference lies above −margin (equivalence margin)."""
    text = f"{what}: {fmt_interval(diff)}"
    if diff.low is None:
        return Verdict(INCONCLUSIVE, f"{text} (fewer than 2 finished runs per group: no interval)")
    if diff.low > -margin:
        return Verdict(REPRODUCED, f"{text}, above −{margin:g}: matches or beats")
    if diff.high < 0:
        return Verdict(NOT_REPRODUCED, f"{text} < 0: worse")
    return Verdict(INCONCLUSIVE, f"{text}: neither above −{margin:g} nor below 0")


def stability(data: SweepData, unstable: Sequence[Run], stable: Sequence[Run], label_unstable: str,
              label_stable: str) -> Verdict:
    """Is `unstable` less stable than `stable`? Evidence: more collapses (Fisher) or a larger drop from the
    best eval accuracy by the end (Welch). Reproduced if either shows it at 95% and neither contradicts it."""
    k1, n1 = sum(collapsed(data, r) for r in unstable), len(unstable)
    k2, n2 = sum(collapsed(data, r) for r in stable), len(stable)
    p_more = fisher_greater(k1, n1, k2, n2) if n1 and n2 else 1.0
    p_less = fisher_greater(k2, n2, k1, n1) if n1 and n2 else 1.0
    drop = welch_difference(values(data, unstable, drop_from_best), values(data, stable, drop_from_best))
    facts = (f"collapsed {k1}/{n1} ({label_unstable}) vs {k2}/{n2} ({label_stable}), one-sided Fisher "
             f"p = {p_more:.3f}; drop from best eval accuracy, difference {fmt_interval(drop)}")
    supports = p_more < 0.05 or (drop.low is not None and drop.low > 0)
    contradicts = p_less < 0.05 or (drop.high is not None and drop.high < 0)
    if supports and not contradicts:
        return Verdict(REPRODUCED, f"{label_unstable} less stable: {facts}")
    if contradicts and not supports:
        return Verdict(NOT_REPRODUCED, f"{label_stable} is the less stable one: {facts}")
    return Verdict(INCONCLUSIVE, f"no significant stability difference: {facts}")


def fmt_interval(interval: Interval, digits: int = 3) -> str:
    if interval.mean is None:
        return "—"
    if interval.low is None:
        return f"{fmt(interval.mean, digits)} (no CI)"
    return f"{fmt(interval.mean, digits)} [{fmt(interval.low, digits)}, {fmt(interval.high, digits)}]"


def group_by(runs: Iterable[Run], key) -> Dict[str, List[Run]]:
    out: Dict[str, List[Run]] = {}
    for run in runs:
        out.setdefault(key(run), []).append(run)
    return dict(sorted(out.items()))
