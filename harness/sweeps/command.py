"""`python -m harness sweep <name> [overrides] [--force] [--detach]`: run a named sweep.

Every job of every grid is validated before the first one starts; then each grid runs as one Hydra
multirun into the sweep's folder, and the reports the sweep names are built when it ends."""
from __future__ import annotations

import sys
from typing import List

from harness.sweeps.grid_runs import prepare_jobs, run
from harness.sweeps.spec import available_sweeps, load_sweep


def _list() -> str:
    lines = ["named sweeps (python -m harness sweep <name> [overrides]):"]
    for name in available_sweeps():
        try:
            spec = load_sweep(name)
            lines.append(f"  {name:22s} {spec.hypothesis.strip().splitlines()[0]}  [reports: {', '.join(spec.reports)}]")
        except ValueError as err:
            lines.append(f"  {name:22s} (invalid: {err})")
    return "\n".join(lines)


USAGE = """usage: python -m harness sweep [<name> [overrides ...] [--force] [--detach]]

Run a named sweep: a YAML file in sweeps/, ./sweeps/ or $HARNESS_SWEEPS that states a hypothesis, the
reports it feeds and its grids. Every job is validated before the first starts; the reports are built
into <output_root>/multirun/<name>/<date>_<time>/reports/ when it ends. Without a name: list the sweeps.

  <name>        a named sweep (listed below)
  overrides     Hydra overrides added to every job (e.g. launcher=local_parallel 'seed=range(0,5)')
  --force       rerun jobs whose identical config already FINISHED (default: skip them)
  --detach      with launcher=slurm: return once submitted (follow with python -m harness status)
"""


def main(argv: List[str]) -> int:
    from harness.config.validate import ConfigError

    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
    if not argv or argv[0].startswith("-"):
        if argv and argv[0] not in ("-h", "--help"):
            print(f"harness sweep: error: unknown flag {argv[0]} (see --help)", file=sys.stderr)
            return 2
        print(_list())
        return 0
    try:
        spec = load_sweep(argv[0])
    except ValueError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return 2
    flags = [a for a in argv[1:] if a.startswith("--")]
    user = [a for a in argv[1:] if not a.startswith("--")]
    try:
        sweep_dir, grids, jobs = prepare_jobs(spec, user, flags)
    except (ConfigError, ValueError) as err:
        print(f"harness: error: sweep {spec.name}: {err}", file=sys.stderr)
        return 2
    if spec.design.adaptive and not any(o.split("=", 1)[0] == "seed" for o in user):
        from harness.sweeps.adaptive import run_adaptive

        return run_adaptive(spec, sweep_dir, user, flags)
    return run(spec, sweep_dir, grids, flags, jobs)
