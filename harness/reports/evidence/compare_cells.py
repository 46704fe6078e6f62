"""What two sweeps share and how they differ, for the compare page (`rendering/compare.py`): their cells
(objective × the settings either sweep varies, seeds being the replicates), each cell's final accuracy in both
with the difference B − A, and the settings in which the sweeps' runs differ.

A cell's difference is paired over the seeds both sweeps ran in it (same seed, same cell settings; the sweeps'
own differences, listed beside, apply to every pair) when there are at least 2 of them, else Welch over each
sweep's seeds (`harness.stats.inference.estimate`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from harness.reports.results.data import NOT_A_FACTOR, Run, SweepData, fmt, parse_value
from harness.reports.evidence.outcomes import per_seed
from harness.reports.results.summary import LAST_K, axis_name
from harness.stats.inference import Estimate, estimate, holm
from harness.stats.intervals import Interval, t_interval

Key = Tuple[str, Tuple[Tuple[str, str], ...]]  # (objective, ((axis key, value), ...))
CONFIDENCE_LEVEL = 0.025  # each side: a 95% interval of the difference


@dataclass
class Cell:
    key: Key
    label: str
    runs_a: List[Run]
    runs_b: List[Run]
    seeds_a: Dict[object, float]  # {seed: final accuracy} of the finished runs with a value
    seeds_b: Dict[object, float]
    a: Interval
    b: Interval
    diff: Optional[Estimate]  # B − A; None when a side has fewer than 2 seeds
    low: Optional[float] = None
    high: Optional[float] = None
    p: Optional[float] = None  # two-sided, B ≠ A
    differs: bool = False  # after Holm over the cells
    equivalent: bool = False  # |B − A| < SESOI shown (two one-sided tests at α)

    @property
    def test(self) -> str:
        if self.diff is None:
            return "none (a sweep has < 2 seeds)"
        if self.diff.paired:
            shared = sorted(set(self.seeds_a) & set(self.seeds_b), key=str)
            return f"paired over {self.diff.n} shared seeds ({', '.join(map(str, shared))})"
        return f"Welch ({len(self.seeds_a)} vs {len(self.seeds_b)} seeds)"

    def reading(self, sesoi: float) -> str:
        if self.diff is None:
            return "not tested"
        if self.differs:
            return "B higher" if self.diff.value > 0 else "B lower"
        return f"within ±{sesoi:g}" if self.equivalent else "undecided"


def _excluded(key: str) -> bool:
    return key == "algo.name" or any(key == n or key.startswith(n + ".") for n in NOT_A_FACTOR)


def axes(a: SweepData, b: SweepData) -> List[str]:
    """Keys either sweep varies (its axes, seeds and paths excluded) that both sweeps' runs record."""
    keys_a = {k for r in a.runs for k in r.params}
    keys_b = {k for r in b.runs for k in r.params}
    varied = set(a.factors(exclude=["algo.name"])) | set(b.factors(exclude=["algo.name"]))
    return sorted(k for k in varied & keys_a & keys_b if not _excluded(k))


def cell_key(run: Run, keys: Sequence[str]) -> Key:
    return run.objective, tuple((k, run.params[k]) for k in keys if k in run.params)


def cell_label(key: Key) -> str:
    objective, values = key
    return " ".join([objective] + [f"{axis_name(k)}={fmt(parse_value(v))}" for k, v in values])


def split(data: SweepData, keys: Sequence[str]) -> Dict[Key, List[Run]]:
    out: Dict[Key, List[Run]] = {}
    for run in data.runs:
        out.setdefault(cell_key(run, keys), []).append(run)
    return out


def cells(a: SweepData, b: SweepData, sesoi: float, alpha: float = 0.05) -> Tuple[List[Cell], Dict[Key, int],
                                                                                  Dict[Key, int]]:
    """(the shared cells with their differences, {cell only in A: runs}, {cell only in B: runs}). Holm over the
    shared cells that could be tested decides `differs`; `equivalent` is each cell's TOST at α."""
    keys = axes(a, b)
    by_a, by_b = split(a, keys), split(b, keys)
    shared = sorted(set(by_a) & set(by_b), key=cell_label)
    out = []
    for key in shared:
        sa = per_seed(a, by_a[key], "final_accuracy", LAST_K)
        sb = per_seed(b, by_b[key], "final_accuracy", LAST_K)
        cell = Cell(key, cell_label(key), by_a[key], by_b[key], sa, sb, t_interval(list(sa.values()), bounds=(0, 1)),
                    t_interval(list(sb.values()), bounds=(0, 1)), estimate([sb, sa], [1.0, -1.0]) if sa and sb else None)
        if cell.diff is not None:
            cell.low, cell.high = cell.diff.interval(CONFIDENCE_LEVEL, bounds=(-1.0, 1.0))
            if cell.diff.se > 0:
                cell.p = min(1.0, 2 * min(cell.diff.p_above(0.0), cell.diff.p_below(0.0)))
                cell.equivalent = max(cell.diff.p_above(-sesoi), cell.diff.p_below(sesoi)) < alpha
        out.append(cell)
    tested = [c for c in out if c.p is not None]
    for cell, rejected in zip(tested, holm([c.p for c in tested], alpha)):
        cell.differs = rejected
    only_a = {k: len(v) for k, v in by_a.items() if k not in by_b}
    only_b = {k: len(v) for k, v in by_b.items() if k not in by_a}
    return out, only_a, only_b


def _order(value: str) -> tuple:
    parsed = parse_value(value)
    number = isinstance(parsed, (int, float)) and not isinstance(parsed, bool)
    return (0, float(parsed), "") if number else (1, 0.0, str(value))


def _values(runs: Sequence[Run], key: str) -> str:
    found = sorted({r.params[key] for r in runs if key in r.params}, key=_order)
    return ", ".join(found) if len(found) <= 8 else ", ".join(found[:8]) + f", … ({len(found)} values)"


def _comparable(data: SweepData, other: SweepData, key: str) -> List[Run]:
    """The runs whose `key` is compared: an objective's own parameter (algo.*) only among the objectives both
    sweeps ran (another objective's parameters are not a difference in settings; its absence is listed apart)."""
    if not key.startswith("algo.") or key == "algo.name":
        return data.runs
    shared = {r.objective for r in data.runs} & {r.objective for r in other.runs}
    return [r for r in data.runs if r.objective in shared]


def config_differences(a: SweepData, b: SweepData) -> List[List[str]]:
    """[setting, A's values, B's values] for every recorded setting whose values differ between the sweeps'
    runs (paths and tracking excluded; an objective's parameters compared among the objectives both ran); a
    setting one sweep does not record shows '(not recorded)'. Seeds first."""
    rows = []
    seeds_a = ", ".join(sorted({str(r.seed) for r in a.runs}, key=_order))
    seeds_b = ", ".join(sorted({str(r.seed) for r in b.runs}, key=_order))
    if seeds_a != seeds_b:
        rows.append(["seed", seeds_a, seeds_b])
    keys = sorted({k for r in [*a.runs, *b.runs] for k in r.params})
    for key in keys:
        if key == "seed" or (_excluded(key) and key != "algo.name"):
            continue
        va, vb = _values(_comparable(a, b, key), key), _values(_comparable(b, a, key), key)
        if va != vb:
            rows.append([key, va or "(not recorded)", vb or "(not recorded)"])
    return rows


def only_in(data: SweepData, other: SweepData) -> Dict[str, List[str]]:
    """What `data` has that `other` lacks: objectives, and recorded settings (an objective's parameters among
    the objectives both ran)."""
    objectives = sorted({r.objective for r in data.runs} - {r.objective for r in other.runs})
    mine = {k for r in data.runs for k in r.params}
    theirs = {k for r in other.runs for k in r.params}
    keys = sorted(k for k in mine - theirs if any(k in r.params for r in _comparable(data, other, k)))
    return {"objectives": objectives, "settings": [k for k in keys if not _excluded(k)]}


def left_out(cell: Cell, which: str) -> Optional[str]:
    """A line naming the runs of one side of a cell that give no final accuracy (not finished, or no value)."""
    runs = cell.runs_a if which == "A" else cell.runs_b
    seeds = cell.seeds_a if which == "A" else cell.seeds_b
    missing = [r for r in runs if r.status != "FINISHED" or r.seed not in seeds]
    if not missing:
        return None
    statuses = ", ".join(sorted({r.status for r in missing}))
    return (f"{cell.label}: {len(missing)} of {len(runs)} runs of sweep {which} left out — no final accuracy "
            f"({statuses}).")
