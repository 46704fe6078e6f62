"""A named sweep's pre-registered design: its declared tests, α, power target, outcome window, and how
many seeds it may run (a fixed list, or `seeds: auto` with a budget).

    alpha: 0.05            # one-sided, per question (effect / opposite / equivalence)
    power: 0.8             # the target the printed seed counts are computed for
    last_k: 3              # evaluations averaged into an accuracy outcome
    sesoi: 0.05            # smallest effect of interest for reports that decide without declared tests
                           # (the sensitivity report: does the threshold matter?); default 0.05
    seeds: auto            # or a list; auto needs a budget
    budget: {runs: 72, per_round: 2, max_seeds: 12}   # and/or minutes: 90
    first_seed: 0          # seeds: auto runs first_seed, first_seed + 1, ... (a follow-up design on fresh seeds)
    sizing: "..."          # without a pilot: how the budget was sized (e.g. simulated from an earlier design's
                           # runs), printed on the report page in place of the pilot's section
    earlier_designs: 4     # designs of this claim tested before this one: the page accounts α over all of them
    tests:
      - name: dppo reaches the target
        measure: train_accuracy
        hypothesis: noninferior          # greater | less | noninferior | equivalent
        sesoi: 0.05                      # smallest effect of interest, in the measure's units
        contrast: {"algo.name=dppo": 1}  # arm selector ("key=value,key=value") -> weight
        offset: 0.95                     # tested quantity: Σ w·mean(arm) − offset
        method: t                        # t (paired over shared seeds, else Welch) | fisher (2 arms, 0/1 outcome)
                                         # | rate_difference (2 arms, collapsed | runaway; noninferior: the
                                         #   rate difference against −SESOI; greater: > 0 by Fisher, < SESOI
                                         #   by the exact score test: harness/stats/rate_difference.py)
                                         # | exact (valid when some runs collapse: harness/stats/robust.py)
                                         # | sign (the median per-seed contrast, exact sign tests: stats/robust.py)
        check: false                     # true: an implementation/regime check, shown but not in the verdict
        size: false                      # true: the hypothesis states a size (c ≥ SESOI): "reproduced" needs
                                         # c > SESOI shown; c > 0 alone is "direction reproduced, size not shown"
    parts: all                           # all: every test must hold | any: one suffices (stats/combine.py)
    history:                             # every earlier design of this claim that ran (design_gates.py)
      - {commit: 7b43aa0, showed: "not reproduced (5% power)"}
    preconditions:                       # regime checks that gate the verdict (preconditions.py)
      - name: the mismatch is LLM-like   # the claim's cause is present
        measure: mismatch                # mean over the arm's seeds of this outcome ...
        arm: "precision.mismatch_scale=8"   # (optional; default: every run)
        at_least: 0.01                   # ... must be ≥ this (or at_most: ≤ this)
    A failed precondition makes the verdict "not testable here", naming the check and its measured value;
    the declared tests are then not read.
    pilot: {seeds: [1000, 1001, 1002, 1003]}   # seeds: auto only; seeds the study never uses
    pilot: {seeds: [...], size_for: both}     # plan for the power to decide either way (see below)
    underpowered: accepted               # optional: run even if the power at the SESOI is below `power`
    The pilot runs first. A precondition that fails on its runs ends the study "not testable here" before any
    main run. Otherwise its per-seed spread plans the seeds per arm: the fewest whole rounds, up to the
    budget's cap (max_seeds and runs), at which every test reaches the power target at its SESOI
    (pilot.py); with `size_for: both` also the power to end "not reproduced" when there is
    no effect (greater/less: c = 0; noninferior: c = −2·SESOI; equivalent: c = 2·SESOI). Where even the cap falls short the main runs are refused, unless the design
    says `underpowered: accepted`; the power is printed either way. Pilot runs are reported, never tested.

Loading checks everything a rule needs to be able to succeed (exit 2 with one line otherwise): a Fisher
test whose smallest achievable p at the planned seeds is not below its α is refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from harness.config.selectors import parse_selector
from harness.reports.evidence.design_gates import (Earlier, Pilot, Precondition, parse_history, parse_parts,
                                                   parse_pilot, parse_preconditions)
from harness.stats.grid_seeds import fixed_seeds, runs_per_seed
from harness.stats.measures import MEASURES
from harness.stats.words import HYPOTHESES

METHODS = ("t", "fisher", "exact", "sign", "rate_difference")
RATE_METHODS = ("fisher", "rate_difference")  # tests on two arms' event counts, sized by stated rates (no pilot SD)
BINARY = ("collapsed", "runaway")  # 0/1 measures: event counts
DEFAULT_ALPHA, DEFAULT_POWER, DEFAULT_LAST_K = 0.05, 0.8, 3


@dataclass(frozen=True)
class TestSpec:
    name: str
    measure: str
    hypothesis: str
    sesoi: float
    contrast: Tuple[Tuple[Tuple[Tuple[str, Any], ...], float], ...]  # ((selector pairs, weight), ...)
    offset: float = 0.0
    method: str = "t"
    note: str = ""
    check: bool = False  # an implementation or regime check: shown, not part of the claim's verdict
    size: bool = False  # the hypothesis states a size: "reproduced" needs c > SESOI shown

    @property
    def arms(self) -> int:
        return len(self.contrast)


@dataclass(frozen=True)
class Budget:
    runs: Optional[int] = None
    minutes: Optional[float] = None
    per_round: int = 2
    max_seeds: int = 10


@dataclass(frozen=True)
class Design:
    alpha: float = DEFAULT_ALPHA
    power: float = DEFAULT_POWER
    last_k: int = DEFAULT_LAST_K
    seeds: Any = None  # "auto" | list of seeds | None (whatever the grids say)
    budget: Optional[Budget] = None
    tests: Tuple[TestSpec, ...] = field(default_factory=tuple)
    sesoi: Optional[float] = None
    preconditions: Tuple[Precondition, ...] = field(default_factory=tuple)
    pilot: Optional[Pilot] = None
    underpowered_accepted: bool = False
    first_seed: int = 0  # seeds: auto runs first_seed .. first_seed + max_seeds − 1
    sizing: str = ""  # without a pilot: how the budget was sized, stated before the runs
    earlier_designs: int = 0  # designs of the same claim that ran before this one (α over serial redesigns)
    history: Tuple[Earlier, ...] = field(default_factory=tuple)  # those designs, each with its commit
    parts: str = "all"  # how the tests combine into the verdict (stats/combine.py)

    def main_seeds(self, start: int, stop: int) -> range:
        """The study's seeds start..stop − 1, counted from first_seed."""
        return range(self.first_seed + start, self.first_seed + stop)

    @property
    def adaptive(self) -> bool:
        return self.seeds == "auto"

    def max_seeds(self, runs_per_seed: int = 1) -> Optional[int]:
        """Seeds per arm the design may reach: the budget's max_seeds, capped by its run budget."""
        if not self.adaptive:
            return len(self.seeds) if isinstance(self.seeds, list) else None
        cap = self.budget.max_seeds
        if self.budget.runs is not None:
            cap = min(cap, self.budget.runs // max(1, runs_per_seed))
        return cap


def parse_design(name: str, data: Dict[str, Any]) -> Design:
    """The design keys of a sweep file (popped from `data`); ValueError naming the key on bad input."""
    def bad(key, why):
        return ValueError(f"sweep {name!r}: {key} {why}")

    def number(source, key, default, kind=float, where=None):
        value = source.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise bad(f"'{where or key}'", f"is {value!r}; allowed: {'an integer' if kind is int else 'a number'}")
        return kind(value)

    alpha = number(data, "alpha", DEFAULT_ALPHA)
    power = number(data, "power", DEFAULT_POWER)
    last_k = number(data, "last_k", DEFAULT_LAST_K, int)
    for key in ("alpha", "power", "last_k"):
        data.pop(key, None)
    if not 0 < alpha < 0.5:
        raise bad("'alpha'", f"is {alpha}; allowed: 0 < alpha < 0.5")
    if not 0 < power < 1:
        raise bad("'power'", f"is {power}; allowed: 0 < power < 1")
    if last_k < 1:
        raise bad("'last_k'", f"is {last_k}; allowed: an integer ≥ 1")
    report_sesoi = None if data.get("sesoi") is None else number(data, "sesoi", None)
    data.pop("sesoi", None)
    if report_sesoi is not None and not report_sesoi > 0:
        raise bad("'sesoi'", f"is {report_sesoi!r}; allowed: a number > 0 (smallest effect of interest)")
    per_seed = runs_per_seed(data.get("grids") or [])
    seeds = data.pop("seeds", None)
    if seeds is not None and seeds != "auto" and not (isinstance(seeds, list) and seeds):
        raise bad("'seeds'", f"is {seeds!r}; allowed: auto or a non-empty list of seeds")
    budget = None
    raw_budget = data.pop("budget", None)
    if raw_budget is not None:
        if not isinstance(raw_budget, dict) or set(raw_budget) - {"runs", "minutes", "per_round", "max_seeds"}:
            raise bad("'budget'", "allowed keys: runs, minutes, per_round, max_seeds")
        budget = Budget(
            runs=None if raw_budget.get("runs") is None else number(raw_budget, "runs", None, int, "budget.runs"),
            minutes=None if raw_budget.get("minutes") is None else number(raw_budget, "minutes", None,
                                                                          where="budget.minutes"),
            per_round=number(raw_budget, "per_round", 2, int, "budget.per_round"),
            max_seeds=number(raw_budget, "max_seeds", 10, int, "budget.max_seeds"))
        if budget.runs is None and budget.minutes is None:
            raise bad("'budget'", "needs runs or minutes")
        if budget.per_round < 1 or budget.max_seeds < 2:
            raise bad("'budget'", "needs per_round ≥ 1 and max_seeds ≥ 2")
        if budget.runs is not None and budget.runs < 2 * per_seed:
            raise bad("'budget.runs'", f"is {budget.runs}; allowed: ≥ {2 * per_seed} (2 seeds of the {per_seed} "
                      "runs each seed takes: no test has fewer than 2 seeds per arm)")
    if seeds == "auto" and budget is None:
        raise bad("'seeds: auto'", "needs a 'budget' (runs and/or minutes)")
    tests = []
    for i, raw in enumerate(data.pop("tests", None) or []):
        where = f"tests[{i}]"
        if not isinstance(raw, dict):
            raise bad(where, "must be a mapping")
        unknown = set(raw) - {"name", "measure", "hypothesis", "sesoi", "contrast", "offset", "method", "note", "check",
                              "size"}
        if unknown:
            raise bad(f"{where} key {sorted(unknown)[0]!r}", "is not allowed; allowed: name, measure, hypothesis, "
                      "sesoi, contrast, offset, method, note, check, size")
        if raw.get("measure") not in MEASURES:
            raise bad(f"{where}.measure", f"is {raw.get('measure')!r}; allowed: {', '.join(MEASURES)}")
        if raw.get("hypothesis") not in HYPOTHESES:
            raise bad(f"{where}.hypothesis", f"is {raw.get('hypothesis')!r}; allowed: {', '.join(HYPOTHESES)}")
        method = raw.get("method", "t")
        if method not in METHODS:
            raise bad(f"{where}.method", f"is {method!r}; allowed: {', '.join(METHODS)}")
        sesoi = raw.get("sesoi")
        if not isinstance(sesoi, (int, float)) or sesoi <= 0:
            raise bad(f"{where}.sesoi", f"is {sesoi!r}; allowed: a number > 0 (smallest effect of interest)")
        contrast = raw.get("contrast")
        if not isinstance(contrast, dict) or not contrast:
            raise bad(f"{where}.contrast", "must map arm selectors ('key=value,...') to weights")
        arms = tuple((parse_selector(k), float(w)) for k, w in contrast.items())
        if method in RATE_METHODS and (len(arms) != 2 or sorted(w for _, w in arms) != [-1.0, 1.0]):
            raise bad(f"{where}.method", f"{method} compares exactly two arms with weights +1 and −1")
        if method == "rate_difference" and (raw["hypothesis"] not in ("noninferior", "greater")
                                            or raw["measure"] not in BINARY):
            raise bad(f"{where}.method", f"rate_difference tests hypothesis: noninferior | greater (against a margin) "
                      f"on measure: {' | '.join(BINARY)} (for less use method: fisher)")
        if raw.get("size") and (raw["hypothesis"] not in ("greater", "less") or method in RATE_METHODS):
            raise bad(f"{where}.size", "is for hypothesis: greater | less with method: t | exact | sign")
        tests.append(TestSpec(str(raw.get("name") or f"test {i + 1}"), raw["measure"], raw["hypothesis"],
                              float(sesoi), arms, float(raw.get("offset", 0.0)), method, str(raw.get("note", "")),
                              bool(raw.get("check", False)), bool(raw.get("size", False))))
    first_seed = data.pop("first_seed", None)
    first_seed = 0 if first_seed is None else first_seed
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        raise bad("'first_seed'", f"is {first_seed!r}; allowed: an integer ≥ 0")
    if first_seed and seeds != "auto":
        raise bad("'first_seed'", "needs seeds: auto (a list of seeds names its seeds itself)")
    sizing = data.pop("sizing", None) or ""
    if not isinstance(sizing, str):
        raise bad("'sizing'", f"is {sizing!r}; allowed: a text saying how the design was sized")
    underpowered = data.pop("underpowered", None)
    if underpowered not in (None, "accepted"):
        raise bad("'underpowered'", f"is {underpowered!r}; allowed: accepted")
    earlier = data.pop("earlier_designs", 0)
    if isinstance(earlier, bool) or not isinstance(earlier, int) or earlier < 0:
        raise bad("'earlier_designs'", f"is {earlier!r}; allowed: an integer ≥ 0 (designs of this claim tested "
                  "before this one)")
    history = parse_history(data.pop("history", None), bad)
    earlier = max(earlier, len(history))  # every design that ran counts (serial_designs.py)
    design = Design(alpha, power, last_k, seeds, budget, tuple(tests), report_sesoi,
                    parse_preconditions(data.pop("preconditions", None), bad, MEASURES),
                    parse_pilot(data.pop("pilot", None), bad, seeds == "auto"), underpowered == "accepted", first_seed,
                    " ".join(sizing.split()), earlier, history, parse_parts(data.pop("parts", None), bad))
    used = range(first_seed, first_seed + (design.max_seeds(per_seed) or 0))
    if design.pilot and set(design.pilot.seeds) & set(used):
        raise bad("'pilot.seeds'", f"are {list(design.pilot.seeds)}; allowed: seeds the study never uses (it uses "
                  f"{used.start}..{used.stop - 1}), e.g. {max(1000, used.stop)} and up")
    for test in design.tests:
        if test.method not in RATE_METHODS:
            continue
        from harness.stats.rate_difference import smallest_p  # (scipy: only for a test on rates, not to list sweeps)
        from harness.stats.sequential import level

        n = design.max_seeds(per_seed) or len(fixed_seeds(data.get("grids") or []) or [0])
        final = level(n, budget.per_round, n, alpha) if design.adaptive else alpha
        smallest = smallest_p(test.method, n, test.sesoi)
        if smallest >= final:
            raise bad(f"test {test.name!r}", f"can never succeed: a {test.method} test with {n} runs per arm has a "
                      f"smallest p of {smallest:.3g}, not below its α {final:.3g}; use more seeds")
    return design

