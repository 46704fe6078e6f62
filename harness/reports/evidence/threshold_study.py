"""The sensitivity report's evidence: per objective (variant) run at ≥ 2 values of its threshold, the runs per
value, their outcomes, gains and failures, the per-value intervals and the verdict (threshold_effect.decide).
The page, the terminal's verdict line, index.html and the MLflow parent run's tags all read this one object;
the renderer (rendering/kinds/sensitivity.py) computes no statistic of its own."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from harness.reports.evidence import threshold_action, threshold_effect
from harness.reports.evidence.outcomes import per_seed, resolution
from harness.reports.results.data import Run, SweepData, fmt
from harness.reports.results.summary import summarize
from harness.reports.results.thresholds import threshold, threshold_param
from harness.stats import failures
from harness.stats.intervals import Interval, t_interval


@dataclass(frozen=True)
class ValueRow:
    value: float
    runs: List[Run]
    final: Interval  # final accuracy over finished seeds (95% t, inside [0, 1])
    best: Interval
    unfinished: List[Run]
    no_value: int  # finished without a finite final accuracy


@dataclass
class Objective:
    objective: str
    name: str
    symbol: str
    param: str
    rows: List[ValueRow]
    outcomes: Dict[float, Dict[object, float]]
    gains: Dict[float, Dict[object, float]]
    collapsed: Dict[float, Dict[object, bool]]
    failed: Dict[float, Dict[object, bool]]
    gain_bar: float  # the gain below which a run did not learn (None: the typical run does not learn)
    result: threshold_effect.ThresholdVerdict
    actions: List[threshold_action.Action] = field(default_factory=list)


def gather(data: SweepData, groups: Dict, sesoi: float, alpha: float, power: float, last_k: int) -> List[Objective]:
    """One Objective per compared (objective, variant), in the groups' order."""
    out = []
    for (objective, name), members in groups.items():
        symbol = threshold(members[0])[1]
        by_value: Dict[float, List[Run]] = {}
        for run in members:
            by_value.setdefault(threshold(run)[2], []).append(run)
        rows = [_row(data, v, by_value[v]) for v in sorted(by_value, key=lambda v: (v is None, v))]
        outcomes = {v: per_seed(data, runs, "final_accuracy", last_k) for v, runs in by_value.items()}
        gains = {v: per_seed(data, runs, "gain", last_k) for v, runs in by_value.items()}
        collapsed = threshold_action.collapses(data, by_value)
        result = threshold_effect.decide(outcomes, sesoi, alpha, power, collapsed=collapsed,
                                         resolution=resolution(members, "final_accuracy", (1.0, -1.0), last_k),
                                         gains=gains)
        out.append(Objective(objective, name, symbol, threshold_param(objective), rows, outcomes, gains, collapsed,
                             failures.flags(gains, collapsed), failures.gain_bar(gains), result,
                             threshold_action.actions(data, by_value)))
    return out


def _row(data: SweepData, value, group: List[Run]) -> ValueRow:
    done = [r for r in group if r.status == "FINISHED" and summarize(data, r).final_acc is not None]
    unfinished = [r for r in group if r.status != "FINISHED"]
    return ValueRow(value, group, t_interval([summarize(data, r).final_acc for r in done], bounds=(0.0, 1.0)),
                    t_interval([summarize(data, r).best_acc for r in done], bounds=(0.0, 1.0)), unfinished,
                    len(group) - len(done) - len(unfinished))


def points(data: SweepData, members, which: str) -> Tuple[List[float], List[float], List[Tuple[float, float]],
                                                         List[bool]]:
    """(threshold values, means, (below, above) error-bar lengths, one-seed flags) of `which`
    (final_acc | best_acc) over the FINISHED runs of one objective, per threshold value."""
    xs, means, errs, hollow = [], [], [], []
    for v in sorted({threshold(r)[2] for r in members}):
        done = [r for r in members if threshold(r)[2] == v and r.status == "FINISHED"]
        ci = t_interval([getattr(summarize(data, r), which) for r in done], bounds=(0.0, 1.0))
        if ci.mean is None:
            continue
        xs.append(v), means.append(ci.mean), hollow.append(ci.n < 2)
        errs.append((ci.mean - ci.low, ci.high - ci.mean) if ci.low is not None else (0.0, 0.0))
    return xs, means, errs, hollow


def failed_runs(o: Objective) -> List[str]:
    """'δ=0.15 seed 3' for every run the verdict counts as failed."""
    return [f"{o.symbol}={fmt(v)} seed {s}" for v in sorted(o.failed) for s, f in sorted(o.failed[v].items(),
                                                                                        key=lambda kv: str(kv[0])) if f]
