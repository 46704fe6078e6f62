"""`python -m harness sweep <name> [overrides] [--force] [--detach]`: run a named sweep.

Every job of every grid is validated before the first one starts; then the grids run in this process, one
after another, into the sweep's folder under one parent run (harness/sweeps/grid_runs.py), and the reports
the sweep names are built when it ends."""
from __future__ import annotations

import sys
from typing import List

from harness.config.errors import ConfigError  # imports nothing
from harness.reports.evidence.sweep_spec import available_sweeps, load_sweep, sweep_path
from harness.stats.grid_seeds import runs_per_seed
from harness.stats.look_plan import looks
from harness.sweeps.study_state import continue_refusal, hold_study, saved_state


def _list() -> None:
    """One line per named sweep, the header first (each file is checked whole, with Hydra's override parser)."""
    print("named sweeps (python -m harness sweep <name> [overrides]):", flush=True)
    for name in available_sweeps():
        try:
            spec = load_sweep(name)
            print(f"  {name:22s} {spec.hypothesis.strip().splitlines()[0]}  [reports: {', '.join(spec.reports)}]")
        except ValueError as err:  # one broken file is listed as such, the others still are
            print(f"  {name:22s} BROKEN: {err}")


USAGE = """usage: python -m harness sweep [<name> [overrides ...] [--plan] [--force] [--detach] [--yes] [--continue=<folder>]]

Run a named sweep: a YAML file in sweeps/, ./sweeps/ or $HARNESS_SWEEPS that states a hypothesis, the
reports it feeds and its grids (a file elsewhere: give its path, ending in .yaml). Every job is validated before the first starts; the reports are built
into <output_root>/multirun/<name>/<date>_<time>/reports/ when it ends. Without a name: list the sweeps.

  <name>        a named sweep (listed below), or the path of a sweep file ending in .yaml
  overrides     Hydra overrides added to every job (e.g. launcher=local_parallel 'seed=range(0,5)')
  --force       rerun jobs whose identical config already FINISHED (default: skip them)
  --plan        print what it would do and start nothing: each grid's jobs, those already FINISHED, their
                ensembles and worker processes, an estimated time, and launcher=slurm's #SBATCH lines
  --yes         run a grid of more than 10,000 jobs ($HARNESS_MAX_JOBS)
  --verbose     (or -v before sweep) libraries' log lines too, in every job (Hydra's hydra.verbose=harness)
  --detach      with launcher=slurm: return once submitted (follow with python -m harness status)
  --continue=<folder>
                a `seeds: auto` sweep stopped by its minutes budget: run its next rounds in that folder,
                with the overrides it ran with (overrides given here are added: a launcher, not a change
                to what a run computes, which is refused, as are an edited sweep file, an ended
                study, another store or experiment, a deleted store and other resolved values),
                spending only the α of the looks still to come
"""


def main(argv: List[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
    if not argv or argv[0].startswith("-"):
        if argv and argv[0] not in ("-h", "--help"):
            print(f"harness sweep: error: unknown flag {argv[0]} (see --help)", file=sys.stderr)
            return 2
        _list()
        return 0
    try:
        spec = load_sweep(argv[0])
    except ValueError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2
    if argv[0].endswith((".yaml", ".yml")):  # a file given by its path, not a name from the sweep folders
        print(f"sweep {spec.name}: read from the file {sweep_path(argv[0])} (given as a path)")
    from harness.sweeps.grid_runs import prepare_jobs, run  # Hydra and the launchers: not for the listing

    flags = [a for a in argv[1:] if a.startswith("--")]
    user = [a for a in argv[1:] if not a.startswith("--")]
    resume = [f for f in flags if f == "--continue" or f.startswith("--continue=")]
    if resume:
        return _continue(spec, sweep_path(argv[0]), resume[-1].partition("=")[2], user)
    try:
        sweep_dir, grids, jobs = prepare_jobs(spec, user, flags)
    except (ConfigError, ValueError) as err:
        print(f"harness: error: sweep {spec.name}: {err}", file=sys.stderr)
        return 2
    if "--plan" in flags:
        return _plan(spec, sweep_dir, grids, user, prepare_jobs)
    if spec.design.adaptive and not any(o.split("=", 1)[0] == "seed" for o in user):
        from harness.sweeps.adaptive import run_adaptive

        return run_adaptive(spec, sweep_dir, user, flags, sweep_file=sweep_path(argv[0]))
    return run(spec, sweep_dir, grids, flags, jobs)


def _plan(spec, sweep_dir, grids: list, user: List[str], prepare_jobs) -> int:
    """`--plan`: each grid's plan (every job of every grid validated by `prepare_jobs`); nothing started. A
    `seeds: auto` study's plan is its first round's: the pilot's seeds, or the main seeds of its first look."""
    from harness.launchers.plan import print_plan  # hydra: not for the quick listing of the sweeps

    adaptive = spec.design.adaptive and not any(o.split("=", 1)[0] == "seed" for o in user)
    rounds = ""
    if adaptive:
        seeds, rounds = _first_round(spec)
        sweep_dir, grids, _ = prepare_jobs(spec, [*user, f"seed={seeds}"], [])
    jobs = [grid.jobs for grid in grids]
    print(f"sweep {spec.name}: {len(jobs)} grid{'s' if len(jobs) != 1 else ''}, {sum(map(len, jobs))} jobs, "
          f"into {sweep_dir}/ (the grids run one after another){rounds}", flush=True)
    for index, grid in enumerate(grids):
        print_plan(f"sweep {spec.name}, grid {index + 1} of {len(jobs)}", grid.launcher, grid.jobs, folder=sweep_dir)
    return 0


def _first_round(spec):
    """(the seeds of a `seeds: auto` study's first round as a seed= value, the line saying what follows)."""
    design = spec.design
    cap = design.max_seeds(runs_per_seed(spec.grids))
    planned = looks(design.budget.per_round, cap)
    later = (f"; later rounds add seeds up to {cap} per arm ({cap * runs_per_seed(spec.grids)} runs), looks at "
             f"{', '.join(map(str, planned))}, as its design decides")
    if design.pilot:
        return (",".join(map(str, design.pilot.seeds)),
                f"; seeds: auto: these are its pilot's jobs (seeds {', '.join(map(str, design.pilot.seeds))}, never "
                f"tested: they size the main runs){later}")
    first = design.main_seeds(0, planned[0])
    return (f"range({first.start},{first.stop})",
            f"; seeds: auto: these are its first round's jobs (seeds {first.start}..{first.stop - 1}){later}")


def _continue(spec, sweep_file, folder: str, user: List[str]) -> int:
    """`--continue=<folder>`: the next rounds of an adaptive study in its own folder (sweeps/adaptive.py)."""
    from pathlib import Path

    from harness.sweeps.adaptive import run_adaptive

    try:
        state = saved_state(Path(folder)) if folder else None
    except ValueError as err:
        print(f"harness: error: sweep {spec.name}: --continue {err}", file=sys.stderr)
        return 2
    problem = ("needs a folder: --continue=<the study's folder>" if not folder else
               f"{folder} is not the folder of an adaptive study (no adaptive.yaml)" if state is None else
               f"{folder} holds a study of sweep {state['sweep']!r}, not {spec.name!r}" if state["sweep"] != spec.name
               else f"sweep {spec.name!r} is not seeds: auto" if not spec.design.adaptive else
               "takes no seed=: the study's next rounds choose the seeds" if any(
                   o.split("=", 1)[0].lstrip("+~") == "seed" for o in user) else None)
    given = {o.split("=", 1)[0].lstrip("+~") for o in user if "=" in o}
    kept = [o for o in state["user"] if o.split("=", 1)[0].lstrip("+~") not in given] if state else []  # yours win
    if not problem:
        try:  # sealed: an ended study, a changed design, another store or experiment, other resolved values
            problem = continue_refusal(state, sweep_file, user) or _pins_refusal(spec, folder, state, [*kept, *user])
            if not problem:  # and a second driver are refused before anything runs
                hold_study(Path(folder))
        except ValueError as err:
            problem = str(err)
    if problem:
        print(f"harness: error: sweep {spec.name}: --continue {problem}", file=sys.stderr)
        return 2
    if user:  # e.g. another launcher or cache folder; what a run computes must stay the study's
        print(f"sweep {spec.name}: overrides added to the ones the study ran with: {' '.join(user)}")
    return run_adaptive(spec, Path(folder).resolve(), [*kept, *user], list(state["flags"]),
                        done=int(state["done"]), sweep_file=sweep_file)


def _pins_refusal(spec, folder: str, state: dict, user: List[str]):
    """Why the study's next round would run elsewhere or with other values (harness/sweeps/study_pins.py),
    from its jobs composed as they would run (one seed per arm); ValueError for a job that cannot run."""
    from pathlib import Path

    from harness.sweeps.grid_runs import prepare_jobs, store_of
    from harness.sweeps.study_pins import pins_of, pins_refusal, recorded_pins

    try:
        _, _, jobs = prepare_jobs(spec, [*user, "seed=0"], list(state["flags"]), into=Path(folder).resolve())
    except ConfigError as err:
        raise ValueError(str(err)) from None
    return pins_refusal(recorded_pins(state), pins_of(jobs), store_of(jobs))
