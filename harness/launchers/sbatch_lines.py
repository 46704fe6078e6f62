"""The `#SBATCH` lines a sweep's Slurm jobs would be submitted with, written by submitit's own batch-file writer
from the launcher profile (harness/config/profiles.py), without Slurm: what `--plan` prints for launcher=slurm.

The launcher (harness/launchers/submitit_launcher.py) hands `submitit_parameters(profile, "slurm")` to submitit's
AutoExecutor, which renames them (`_equivalence_dict`), converts the memory and writes the batch file with
`_make_sbatch_string`; the same three steps are taken here (submitit's SlurmExecutor itself refuses to start
where `srun` is missing)."""
from __future__ import annotations

from pathlib import Path
from typing import List

from submitit.slurm.slurm import SlurmExecutor, _convert_mem, _make_sbatch_string

from harness.config.profiles import ClusterProfile, submitit_parameters

SLURM_PREFIX = "slurm_"


def sbatch_keywords(profile: ClusterProfile) -> dict:
    """`_make_sbatch_string`'s keywords for the profile, as submitit's AutoExecutor makes them."""
    renamed = SlurmExecutor._equivalence_dict()
    keywords = {}
    for key, value in submitit_parameters(profile, "slurm").items():
        keywords[key[len(SLURM_PREFIX):] if key.startswith(SLURM_PREFIX) else renamed.get(key, key)] = value
    if "mem" in keywords:
        keywords["mem"] = _convert_mem(keywords["mem"])
    return keywords


def sbatch_lines(profile: ClusterProfile, job_name: str, tasks: int, folder: Path) -> List[str]:
    """The `#SBATCH` lines of the sweep's submission: one job, or an array of `tasks` jobs (one per ensemble or run
    alone), each task asking for what the profile gives one job; then the profile's `setup` lines."""
    keywords = sbatch_keywords(profile)
    setup = keywords.pop("setup", None) or []
    text = _make_sbatch_string(command="<submitit's job command>", folder=Path(folder) / ".submitit" / "%j",
                               job_name=job_name, map_count=tasks if tasks > 1 else None, **keywords)
    lines = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    return lines + [f"# setup: {line}" for line in setup]
