"""The harness's own command-line flags: those that become overrides, so they reach every job (and Slurm nodes)
as config; those that say how the command runs (`Options`, handed from the command line to the sweeper that
acts on them, changing no job's config nor its config hash); and Hydra's flags that print something and run
nothing. The command line is read in hydra_plugins/harness_launcher/arguments.py."""
from __future__ import annotations

from dataclasses import dataclass

HARNESS_FLAGS = {"--force": "force=true", "--detach": "launcher.detach=true", "--dry-run": "trainer.verl.dry_run=true",
                 "--reuse-across-versions": "reuse_across_versions=true"}

NEW_SWEEP_FLAG = "--new-sweep"
PLAN_FLAG = "--plan"
YES_FLAG = "--yes"
VERBOSE_FLAGS = ("-v", "--verbose")
# `-v` as Hydra's own setting: the harness logger at DEBUG in every process that runs a job (Hydra's
# configure_log), which `harness.tracking.quiet.verbose` reads; the `hydra` node is no part of a job's config
VERBOSE_OVERRIDE = "hydra.verbose=harness"

INFORMING_FLAGS = ("--cfg", "-c", "--info", "-i", "--hydra-help", "--shell-completion", "-sc")


@dataclass(frozen=True)
class Options:
    """How the command runs, none of it a job's config.
    plan: `--plan`, print what would run once every job is validated, start nothing (harness/launchers/plan.py);
    new_sweep: `--new-sweep`, a new sweep folder where re-running a stopped sweep's command would continue it
    (harness/sweeps/continued.py); any_size: `--yes`, a grid of any size runs (harness/config/limits.py)."""
    plan: bool = False
    new_sweep: bool = False
    any_size: bool = False

