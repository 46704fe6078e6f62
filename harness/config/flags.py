"""The harness's own command-line flags, turned into overrides so they reach every job (and Slurm nodes) as
config, and Hydra's flags that print something and run nothing."""
from __future__ import annotations

import os
from typing import List

HARNESS_FLAGS = {"--force": "force=true", "--detach": "launcher.detach=true", "--dry-run": "trainer.verl.dry_run=true",
                 "--reuse-across-versions": "reuse_across_versions=true"}

# `--new-sweep`: a sweep starts in a new folder even where a stopped sweep of the same command could be continued
# (harness/sweeps/continued.py); an environment variable, so that it is no override of any job's config.
NEW_SWEEP_FLAG = "--new-sweep"
NEW_SWEEP_ENV = "HARNESS_NEW_SWEEP"

# `--plan`: print what the command would do (jobs, already FINISHED, ensembles, time, Slurm resources) once every
# job is composed and validated, and start nothing (harness/launchers/plan.py); an environment variable, so
# that it changes no job's config (nor its config hash, which skip-finished looks up).
PLAN_FLAG = "--plan"
PLAN_ENV = "HARNESS_PLAN"

INFORMING_FLAGS = ("--cfg", "-c", "--info", "-i", "--hydra-help", "--shell-completion", "-sc")


def harness_flags(argv: List[str]) -> List[str]:
    """argv with the harness's flags replaced by their overrides (at the end)."""
    return [a for a in argv if a not in HARNESS_FLAGS] + [HARNESS_FLAGS[a] for a in argv if a in HARNESS_FLAGS]


def informs_only(argv: List[str]) -> bool:
    return any(a in INFORMING_FLAGS or a.startswith(("--cfg=", "--info=")) for a in argv)


def take_new_sweep_flag(argv: List[str]) -> List[str]:
    """`--new-sweep` removed from `argv`; given, the sweep starts in a new folder (`HARNESS_NEW_SWEEP=1`)."""
    if NEW_SWEEP_FLAG in argv:
        os.environ[NEW_SWEEP_ENV] = "1"
    return [a for a in argv if a != NEW_SWEEP_FLAG]


def take_plan_flag(argv: List[str]) -> List[str]:
    """`--plan` removed from `argv`; given, the command prints its plan and starts nothing (`HARNESS_PLAN=1`)."""
    if PLAN_FLAG in argv:
        os.environ[PLAN_ENV] = "1"
    return [a for a in argv if a != PLAN_FLAG]


def plan_only() -> bool:
    return os.environ.get(PLAN_ENV, "") not in ("", "0")
