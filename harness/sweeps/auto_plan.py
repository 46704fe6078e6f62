"""`--plan` of a `seed=auto` multirun (harness/sweeps/auto_study.py): its first round's jobs, as any sweep's plan
shows them, and its limits: the budget, the planned looks and the α each may spend."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

from harness.launchers.plan import print_plan as plan_of
from harness.sweeps.report_looks import look_alpha


def limit_lines(spec, planned: List[int], per_seed: int, found: Optional[Tuple[Path, dict]]) -> List[str]:
    design, budget = spec.design, spec.design.budget
    cap = planned[-1]
    levels = [look_alpha(m, planned[i - 1] if i else 0, cap, design.alpha) for i, m in enumerate(planned)]
    lines = [f"seed=auto: the first round runs seeds 0..{planned[0] - 1} ({planned[0] * per_seed} runs); later rounds "
             f"add fresh seeds until every sensitivity verdict is decided (sign and size), at most {cap} seeds per "
             f"value ({cap * per_seed} runs, {per_seed} per seed)",
             f"  budget: {budget.runs or 'no limit on'} runs, "
             f"{f'{budget.minutes:g} minutes' if budget.minutes else 'no limit on minutes'} (no round starts that "
             f"would end past it); SESOI and power as the sensitivity page declares them",
             f"  looks at {', '.join(map(str, planned))} seeds per value ({len(planned)} at most; a round may skip "
             f"looks, sized by the seeds the undecided verdicts need); α {design.alpha:g} spent over them "
             "(O'Brien–Fleming type), per look if each is taken: " + ", ".join(f"{a:.2g}" for a in levels)]
    if found:
        folder, state = found
        lines.append(f"  this command's study in {folder} has ended ({state.get('stopped')}): it would print its "
                     "verdicts (--new-sweep: a new study)" if state.get("final") else
                     f"  continues the stopped study {folder} after {state['done']} seeds per value (--new-sweep: "
                     "a new study)")
    return lines


def print_plan(spec, sweep_dir: Path, grids, planned: List[int], per_seed: int,
               found: Optional[Tuple[Path, dict]]) -> None:
    for grid in grids:
        task = [o for o in grid.task if o.partition("=")[0] != "seed"]
        plan_of(f"multirun {' '.join(task)} seed=auto, its first round", grid.launcher, grid.jobs,
                folder=found[0] if found else sweep_dir)
    print("\n".join(limit_lines(spec, planned, per_seed, found)), flush=True)
