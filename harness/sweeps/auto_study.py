"""`python -m harness multirun <overrides> seed=auto budget.minutes=14`: a plain multirun that adds fresh seeds
in rounds until every verdict its reports give is decided, or until its budget is spent.

The overrides' grid, without seeds, is the study's design; its rounds run through the named studies' driver
(harness/sweeps/adaptive.py: one parent run, one folder `<output_root>/multirun/auto/<date>_<time>`, α spent
over the looks), sized and stopped by the sensitivity verdicts (harness/sweeps/report_looks.py). The budget,
declared before the first run (one line and exit 2 for a bad value):

  budget.runs=<n>        at most n runs in all (fixes the most seeds per value: n // runs per seed)
  budget.minutes=<m>     no round is started that would end after m minutes (only stops early)
  budget.max_seeds=<n>   the most seeds per value (default 40): the looks' information fraction is n_look / this
  budget.per_round=<n>   the planned looks are multiples of n seeds per value (default 4; the first round's size)

At least one of runs and minutes is required. The same command continues this command's latest stopped study in
its folder, from its next look, spending only the looks still to come (a study killed, or stopped by its
minutes budget); on an ended study (decided, or its budget spent) it says so and prints its verdicts;
`--new-sweep` starts a new study."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from harness.config.errors import ConfigError
from harness.config.flags import YES_FLAG
from harness.config.overrides import parse_overrides
from harness.infra.claim import held_by
from harness.infra.paths import LoopedPath
from harness.infra.refused import Refused
from harness.reports.evidence.design import Budget, Design
from harness.reports.evidence.sweep_spec import SweepSpec
from harness.reports.rendering.verdicts import sweep_answer
from harness.reports.results.thresholds import threshold_param
from harness.stats.grid_seeds import runs_per_seed
from harness.stats.look_plan import looks
from harness.sweeps.adaptive import run_adaptive
from harness.sweeps.auto_plan import print_plan
from harness.sweeps.design_identity import changes_computation
from harness.sweeps.grid_runs import prepare_jobs
from harness.sweeps.study_state import STATE_FILE, STUDY_LOCK, saved_state

AUTO_VALUE = "auto"
BUDGET_KEYS = {"runs": (int, "a whole number of runs ≥ 1"), "minutes": (float, "a number of minutes > 0"),
               "max_seeds": (int, "a whole number of seeds per value ≥ 2"),
               "per_round": (int, "a whole number of seeds per value ≥ 1")}
DEFAULTS = {"max_seeds": 40, "per_round": 4}
NAME, ALPHA, POWER = "auto", 0.05, 0.8
HYPOTHESIS = ("does the threshold matter? Fresh seeds are added in rounds until every sensitivity verdict is "
              "decided, sign and size (seed=auto)")


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def read(overrides: Sequence[str], multirun: bool) -> Tuple[Dict[str, float], List[str]]:
    """(the budget, the other overrides); ValueError, one line naming the key and what is allowed."""
    auto = [o for o in overrides if _key(o) == "seed" and o.partition("=")[2].strip() == AUTO_VALUE]
    budget: Dict[str, float] = dict(DEFAULTS)
    for o in overrides:
        key = _key(o)
        if not key.startswith("budget."):
            continue
        name, text = key[len("budget."):], o.partition("=")[2].strip()
        if name not in BUDGET_KEYS:
            raise ValueError(f"{key} is not a budget key; allowed: {', '.join('budget.' + k for k in BUDGET_KEYS)}")
        kind, allowed = BUDGET_KEYS[name]
        try:
            value = kind(text)
        except ValueError:
            value = None
        least = {"max_seeds": 2, "runs": 1, "per_round": 1}.get(name, 0)
        if value is None or value < least or (kind is float and (value == 0 or value != value or value == float("inf"))):
            raise ValueError(f"{key}={text}: allowed: {allowed}")
        budget[name] = value
    given = [o for o in overrides if _key(o).startswith("budget.")]
    if not auto:
        raise ValueError(f"{given[0]} goes with seed=auto (fresh seeds in rounds until the reports decide); "
                         "without it a sweep runs the seeds that seed= lists")
    if not multirun:
        raise ValueError("seed=auto adds seeds in rounds: it is for a sweep (python -m harness multirun ... seed=auto)")
    if "runs" not in budget and "minutes" not in budget:
        raise ValueError("seed=auto needs a budget: budget.minutes=<minutes> and/or budget.runs=<runs> "
                         "(e.g. budget.minutes=14)")
    rest = [o for o in overrides if o not in auto and o not in given]
    if any(_key(o) == "seed" for o in rest):
        raise ValueError("seed= is given twice: seed=auto chooses the seeds (drop the other seed=)")
    return budget, rest


class MultirunStudy(SweepSpec):
    """A multirun's overrides as a study's grid: they are its whole config (no experiment or common overrides)."""

    def common_overrides(self) -> List[str]:
        return []


def study_spec(rest: List[str], budget: Dict[str, float]):
    """The study's SweepSpec: its grid (for the runs per seed), seeds: auto and the budget; no declared test."""

    grid = {o.get_key_element(): list(o.sweep_string_iterator()) for o in parse_overrides(rest)
            if o.is_sweep_override() and o.is_discrete_sweep()}
    design = Design(alpha=ALPHA, power=POWER, seeds="auto",
                    budget=Budget(runs=budget.get("runs"), minutes=budget.get("minutes"),
                                  per_round=int(budget["per_round"]), max_seeds=int(budget["max_seeds"])))
    return MultirunStudy(name=NAME, hypothesis=HYPOTHESIS, reports=None, grids=[grid], design=design)


def sealed(spec, rest: List[str]) -> dict:
    """What makes two commands the same study: what the runs compute, α and the budget that plans the looks
    (not the minutes, which only stop early, nor where the runs run)."""

    b = spec.design.budget
    return {"multirun": sorted(o for o in rest if changes_computation(o)), "alpha": spec.design.alpha,
            "budget": {"runs": b.runs, "max_seeds": b.max_seeds, "per_round": b.per_round}}


def undecidable(jobs) -> Optional[str]:
    """Why the sweep's reports can decide nothing (no objective at ≥ 2 values of its threshold), or None."""

    values: Dict[str, set] = {}
    for job in jobs:
        objective = str(job.spec.algo.name)
        param = threshold_param(objective)
        if param is not None:
            values.setdefault(objective, set()).add(str(job.spec.algo.get(param)))
    if any(len(v) >= 2 for v in values.values()):
        return None
    return ("seed=auto adds seeds until the sweep's verdicts are decided, and this sweep has none to decide: it "
            "needs an objective run at ≥ 2 values of its threshold (e.g. delta=0.1,0.2)")


def latest_study(root: Path, design: dict) -> Optional[Tuple[Path, dict]]:
    """The latest study of this command under `root` (<output_root>/multirun/auto) not held by a driver now:
    (its folder, its state), or None."""

    for path in sorted(Path(root).glob(f"*/{STATE_FILE}"), reverse=True):
        try:
            state = saved_state(path.parent)
        except ValueError:
            continue
        if state and state.get("design") == design and not held_by(path.parent, STUDY_LOCK):
            return path.parent, state
    return None


def main(overrides: List[str], plan: bool = False, new_sweep: bool = False, any_size: bool = False,
         multirun: bool = True) -> int:
    """The study the command asks for (exit code); a refused check or output folder: one line, exit 2."""
    try:
        return _study(overrides, plan, new_sweep, any_size, multirun)
    except (LoopedPath, Refused) as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2


def _study(overrides: List[str], plan: bool, new_sweep: bool, any_size: bool, multirun: bool) -> int:

    try:
        budget, rest = read(overrides, multirun)
        spec = study_spec(rest, budget)
        per_seed = runs_per_seed(spec.grids)
        cap = spec.design.max_seeds(per_seed)
        if cap < 2:
            raise ValueError(f"budget.runs={budget['runs']} allows {cap} seed{'s' if cap != 1 else ''} per value of "
                             f"this sweep's {per_seed} runs per seed; allowed: at least {2 * per_seed} (2 seeds)")
        flags = [YES_FLAG] if any_size else []
        planned = looks(spec.design.budget.per_round, cap)
        sweep_dir, grids, jobs = prepare_jobs(spec, [*rest, f"seed=range(0,{planned[0]})"], flags)
        why = undecidable([job for grid in jobs for job in grid])
        if why:
            raise ValueError(why)
    except (ConfigError, ValueError) as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2
    design = sealed(spec, rest)
    found = None if new_sweep else latest_study(sweep_dir.parent, design)
    if plan:

        print_plan(spec, sweep_dir, grids, planned, per_seed, found)
        return 0

    if found and found[1].get("final"):

        print("\n".join([f"multirun seed=auto: this command's study in {found[0]} has ended ({found[1].get('stopped')})"
                         "; --new-sweep starts another", *sweep_answer(found[0])]))
        return 0
    if found:
        print(f"multirun seed=auto: continuing the stopped study {found[0]} after {found[1]['done']} seeds per value "
              "(its looks so far are spent; --new-sweep starts a new study)", flush=True)
        return run_adaptive(spec, found[0], rest, flags, done=int(found[1]["done"]), sealed=design)
    return run_adaptive(spec, sweep_dir, rest, flags, sealed=design)
