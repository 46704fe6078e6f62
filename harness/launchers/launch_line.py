"""What a sweep says when it launches: one line saying how its jobs run (ensembles, runs alone, where), and
the list of its jobs in the sweep folder (`jobs.txt`: number, overrides, folder) rather than on the terminal
(`-v` prints it too)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional, Sequence

from hydra.core.utils import filter_overrides

from harness.infra.secrets import mask_overrides
from harness.tracking.quiet import verbose

log = logging.getLogger("harness")
JOB_LIST = "jobs.txt"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def grouping(groups: Sequence[Sequence[int]]) -> str:
    """'2 ensembles of 24 runs', '1 ensemble of 4 runs and 2 runs alone', '6 runs, each alone'."""
    ensembles = [len(g) for g in groups if len(g) > 1]
    alone = sum(1 for g in groups if len(g) == 1)
    if not ensembles:
        return f"{_count(alone, 'run')}, each alone"
    sizes = sorted(set(ensembles))
    text = f"{_count(len(ensembles), 'ensemble')} of {' or '.join(map(str, sizes))} runs"
    return text + (f" and {_count(alone, 'run')} alone" if alone else "")


def launch_line(jobs: int, groups: Sequence[Sequence[int]], where: str, launcher: str,
                job_list: Optional[Path]) -> str:
    """The sweep's one line about its launch, e.g. 'launching 48 jobs (launcher=local): 2 ensembles of 24 runs
    on 2 worker processes; job list: <folder>/jobs.txt'."""
    hint = "; launcher.members=1 trains each run alone" if any(len(g) > 1 for g in groups) else ""
    listed = f"; job list: {job_list}" if job_list is not None else ""
    sep = "" if where.startswith(",") else " "
    return f"launching {_count(jobs, 'job')} (launcher={launcher}): {grouping(groups)}{sep}{where}{hint}{listed}"


def write_job_list(sweep_dir: Path, jobs: Sequence[tuple], folders: Sequence[Optional[Path]]) -> Optional[Path]:
    """`<sweep_dir>/jobs.txt`: '#<n> : <overrides> -> <folder>' per job, as Hydra would have printed them (also
    logged at DEBUG; printed with -v). None when the folder cannot be written (the sweep goes on)."""
    lines: List[str] = []
    for (overrides, idx), folder in zip(jobs, folders):
        shown = filter_overrides(mask_overrides(overrides))  # masked before Hydra escapes `:` (a URI's password)
        line = f"#{idx} : {' '.join(shown)}" + (f" -> {folder}" if folder else "")
        lines.append(line)
        log.debug("%s", line)
        if verbose():
            print(line, flush=True)
    path = Path(sweep_dir) / JOB_LIST
    try:
        with open(path, "a") as handle:  # a sweep continued in its folder adds its launches below
            handle.write("".join(f"{line}\n" for line in lines))
    except OSError as err:
        log.warning("could not write the job list %s: %s", path, err)
        return None
    return path
